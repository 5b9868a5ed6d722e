package config

import (
	"testing"
)

func FuzzParseRepo(f *testing.F) {
	for _, name := range []string{".asdd.example.yml", ".asdd.yml", "dev-equals-tester.yml"} {
		f.Add(readTestdata(f, "asdd", name))
	}
	f.Add([]byte("agent_review:\n  version: 1\n  required: [a]\n  agents:\n    a: {preset: p, instruction: \"i\\u2028\"}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("review: {max_diff_lines: 0x10, timeout_seconds: 1_0}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRepo("f.yml", data)
		if err != nil {
			probs, ok := err.(Problems)
			if !ok || len(probs) == 0 {
				t.Fatalf("error %v (%T) is not a non-empty Problems", err, err)
			}
			for _, p := range probs {
				if p.Message == "" || p.File != "f.yml" {
					t.Fatalf("bad problem %+v", p)
				}
			}
			return
		}
		checkPolicy(t, r.Policy)
	})
}

func FuzzParseYAGATOML(f *testing.F) {
	for _, name := range []string{"agent-review-policy.toml", "any-required-policy.toml", "test_plan-publication-policy.toml", "test_results-three-lens-policy.toml"} {
		f.Add("policy.toml", readTestdata(f, "yaga", name))
	}
	f.Add("pyproject.toml", []byte("[tool.yaga.agent-review]\nversion = 1\nrequired = [\"a\"]\nagents = { a = { preset = \"p\", instruction = \"i\" } }\n"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		if name != "pyproject.toml" {
			name = "policy.toml"
		}
		p, err := ParseYAGATOML(name, data)
		if err != nil {
			probs, ok := err.(Problems)
			if !ok || len(probs) != 1 || probs[0].Message == "" {
				t.Fatalf("error %v (%T) is not one Problem", err, err)
			}
			return
		}
		checkPolicy(t, p)
	})
}

// checkPolicy asserts the invariants every accepted policy satisfies.
func checkPolicy(t *testing.T, p Policy) {
	t.Helper()
	if p.Version != 1 || len(p.Lenses) == 0 || len(p.Lenses) > MaxLenses || len(p.Required) == 0 {
		t.Fatalf("accepted an invalid policy %+v", p)
	}
	required := 0
	for _, l := range p.Lenses {
		if !ValidName(l.Name) || !ValidName(l.Preset) || IsBlank(l.Instruction) || len(l.Instruction) > MaxInstructionBytes {
			t.Fatalf("accepted an invalid lens %+v", l)
		}
		if l.Required {
			required++
			if l.Outcome != OutcomeReview {
				t.Fatalf("required advisory lens %+v", l)
			}
		}
	}
	if required != len(p.Required) {
		t.Fatalf("required flags %d vs list %v", required, p.Required)
	}
}
