package pull

import (
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestCanWrite(t *testing.T) {
	for perm, want := range map[string]bool{"admin": true, "maintain": true, "write": true, "triage": false, "read": false, "none": false, "": false} {
		if got := CanWrite(&github.RepositoryPermissionLevel{Permission: &perm}); got != want {
			t.Errorf("CanWrite(%q) = %v", perm, got)
		}
	}
}
