package handlers

import (
	"testing"

	"github.com/lensgate/lensgate/config"
)

// TestLocateTOML: a YAGA policy problem gets the line of its key, or of the nearest written
// table when the key is missing; multi-line strings and inline tables do not mislead it.
func TestLocateTOML(t *testing.T) {
	const doc = "# policy\n" + // 1
		"[agent-review]\n" + // 2
		"version = 1\n" + // 3
		"required = [\n  \"sec\",\n]\n" + // 4-6
		"[agent-review.agents.sec]\n" + // 7
		"instruction = \"\"\"\nversion = 9\n[fake]\n\"\"\"\n" + // 8-11
		"outcome = \"nope\"\n" + // 12
		"[agent-review.agents]\n" + // 13
		"docs = { preset = \"docs\", outcome = \"x\" }\n" + // 14
		"\"quoted\".publication = \"y\"\n" // 15
	tests := []struct {
		key  string
		want int
	}{
		{"agent-review.version", 3},
		{"agent-review.required", 4},
		{"agent-review.agents.sec.outcome", 12},
		{"agent-review.agents.sec.preset", 7},
		{"agent-review.agents.docs.outcome", 14},
		{"agent-review.agents.quoted.publication", 15},
		{"agent-review.aggregation", 2},
		{"nowhere.at.all", 0},
	}
	for _, tt := range tests {
		got := locateTOML(YAGAPath, []byte(doc), config.Problems{{File: YAGAPath, Key: tt.key, Message: "m"}})
		if got[0].Line != tt.want {
			t.Errorf("%s: line %d, want %d", tt.key, got[0].Line, tt.want)
		}
	}
	// In a pyproject.toml the policy sits under tool.yaga.
	py := "[project]\nname = \"x\"\n[tool.yaga.agent-review]\nversion = 3\n"
	if got := locateTOML(PyprojectPath, []byte(py), config.Problems{{Key: "agent-review.version"}}); got[0].Line != 4 {
		t.Errorf("pyproject: line %d, want 4", got[0].Line)
	}
	// A syntax error takes the decoder's position; a position already known is kept.
	bad := "[agent-review]\nversion = 1\nrequired = [\"a\"\n"
	_, err := config.ParseYAGATOML(YAGAPath, []byte(bad))
	got := locateTOML(YAGAPath, []byte(bad), asProblems(YAGAPath, err))
	if got[0].Line != 3 {
		t.Errorf("syntax error at line %d, want 3: %+v", got[0].Line, got[0])
	}
	if got := locateTOML(YAGAPath, []byte(doc), config.Problems{{Key: "agent-review.version", Line: 8}}); got[0].Line != 8 {
		t.Errorf("known line replaced by %d", got[0].Line)
	}
}

// FuzzYAGAPolicy: any base-branch policy file is parsed and located without a panic, and every
// problem it yields names the file.
func FuzzYAGAPolicy(f *testing.F) {
	for _, s := range []string{"", "[agent-review]\nversion = 2\n", "[[x]]\n[]\n=\n\"\"\"\n", "[tool.yaga.agent-review]\nrequired = [\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, path := range []string{YAGAPath, PyprojectPath} {
			for _, p := range ValidateProposed(path, []byte(s)) {
				if p.File != path || p.Line < 0 || p.Line > len(s)+1 {
					t.Fatalf("%s: problem %+v", path, p)
				}
			}
		}
	})
}
