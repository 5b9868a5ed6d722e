package repoconfig

import "testing"

func TestValidRelPath(t *testing.T) {
	for p, want := range map[string]bool{".asdd.yml": true, "policies/web.yml": true, "refs/heads/main": true,
		"": false, "../x": false, "a/../b": false, "/abs": false, "a//b": false, "a/./b": false, "a b": false, "a?b": false, "a%2e": false} {
		if got := validRelPath(p); got != want {
			t.Errorf("validRelPath(%q) = %v", p, got)
		}
	}
}
