package config

import (
	"os"
	"strings"
	"testing"
)

// TestEveryKeyIsDocumented: docs/configuration.md names every key lensgate acts on, and every
// top-level key it accepts, so an admin finds each key's meaning and default there.
func TestEveryKeyIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for key, ignored := range KeyPaths() {
		top, _, nested := strings.Cut(key, ".")
		if ignored && nested {
			continue // ignored sub-keys are covered by their section's entry
		}
		// A section is documented through its keys ("`audit.sink`").
		if !strings.Contains(text, "`"+key+"`") && !strings.Contains(text, "`"+key+":") && !strings.Contains(text, "`"+key+".") &&
			!(nested && strings.Contains(text, "`"+top+"`") && strings.Contains(text, "`"+key[len(top)+1:]+"`")) {
			t.Errorf("docs/configuration.md does not name %s", key)
		}
	}
}
