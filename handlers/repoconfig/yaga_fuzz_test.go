package repoconfig

import (
	"testing"
)

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
