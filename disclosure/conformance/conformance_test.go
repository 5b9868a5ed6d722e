package conformance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const corpus = "../testdata/proofbundle/agent_review"

func TestUpstreamCorpusPasses(t *testing.T) {
	results, err := Run(context.Background(), corpus)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 35 {
		t.Fatalf("%d cases, want 35", len(results))
	}
	for _, r := range results {
		if !r.Passed {
			t.Errorf("%s: got %v, expected %v (%s)", r.CaseID, r.Got, r.Expected, r.Detail)
		}
	}
}

// copyCorpus copies the corpus so a test can change it.
func copyCorpus(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(corpus, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(corpus, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestFlippedExpectationFails(t *testing.T) {
	dir := copyCorpus(t)
	flips := map[string][2]string{
		"agent-review-positive-control-emit-verify-roundtrip":                     {`"classification": "valid"`, `"classification": "refused"`},
		"agent-review-v02-counter-proof-blocking-policy-rejects":                  {`"policyDecision": "reject"`, `"policyDecision": "accept"`},
		"agent-review-counter-proof-introducing-the-first-block-moves-the-digest": {`"bodyCoreStable": false`, `"bodyCoreStable": true`},
		"agent-review-v02-positive-control-legacy-v01-is-marked-legacy":           {`"versionStatus": "legacy"`, `"versionStatus": "current"`},
	}
	for id, f := range flips {
		p := filepath.Join(dir, id, "case.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), f[0]) {
			t.Fatalf("%s: %s not found", id, f[0])
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), f[0], f[1], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	results, err := Run(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, r := range results {
		_, flipped := flips[r.CaseID]
		if r.Passed == flipped {
			t.Errorf("%s: passed=%v", r.CaseID, r.Passed)
		}
		if !r.Passed {
			failed++
		}
	}
	if failed != len(flips) {
		t.Errorf("%d failed, want %d", failed, len(flips))
	}
}

// TestPredicateCasesIgnoreAPlantedKey: predicate-only cases are verified with the test seed's
// own public key, so a publickey.hex that lies cannot make them pass or fail.
func TestPredicateCasesIgnoreAPlantedKey(t *testing.T) {
	dir := copyCorpus(t)
	attacker := "79b5562e8fe654f94078b112e8a98ba7901f853ae695bed7e0e3910bad049664\n" // seed 0x20..0x3f
	if err := os.WriteFile(filepath.Join(dir, "publickey.hex"), []byte(attacker), 0o644); err != nil {
		t.Fatal(err)
	}
	results, err := Run(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		b, _ := os.ReadFile(filepath.Join(dir, r.CaseID, "case.json"))
		if strings.Contains(string(b), `"input": "predicate.json"`) && !r.Passed {
			t.Errorf("%s depends on publickey.hex", r.CaseID)
		}
		if r.CaseID == "agent-review-positive-control-valid-self-declared" && r.Passed {
			t.Error("an envelope case passed under the wrong corpus key")
		}
	}
}

func TestUnusableInput(t *testing.T) {
	if _, err := Run(context.Background(), t.TempDir()); err == nil {
		t.Error("empty directory accepted")
	}
	dir := t.TempDir()
	c := filepath.Join(dir, "bad-case")
	_ = os.MkdirAll(c, 0o755)
	_ = os.WriteFile(filepath.Join(c, "case.json"), []byte(`{"caseId":"bad-case","input":"body.json","expected":{"a":1,"b":2}}`), 0o644)
	results, err := Run(context.Background(), dir)
	var ce *CaseError
	if !errors.As(err, &ce) || len(results) != 1 || results[0].Passed {
		t.Errorf("corpus error not reported: %v %v", err, results)
	}
}

// TestProducedThenRejectedIsInvalid: a predicate the reference emitter signs and its verifier
// rejects (two reviewCompleted claims that conflict) is "invalid", as the reference runner
// classifies it, although lensgate's own emitter refuses to publish it.
func TestProducedThenRejectedIsInvalid(t *testing.T) {
	dir := copyCorpus(t)
	const src = "agent-review-v02-positive-control-emitter-default-is-v02"
	pred, err := os.ReadFile(filepath.Join(dir, src, "predicate.json"))
	if err != nil {
		t.Fatal(err)
	}
	claims := `"findings": [],
    "timeClaims": [
      {"assertedBy": "x", "assurance": "selfDeclared", "kind": "reviewCompleted", "value": "2026-09-04T00:00:00Z"},
      {"assertedBy": "x", "assurance": "selfDeclared", "kind": "reviewCompleted", "value": "2026-09-05T00:00:00Z"}
    ],`
	conflicting := strings.Replace(string(pred), `"findings": [],`, claims, 1)
	for _, want := range []string{"invalid", "refused"} {
		id := "time-claims-conflict-" + want
		c := filepath.Join(dir, id)
		if err := os.MkdirAll(c, 0o755); err != nil {
			t.Fatal(err)
		}
		caseJSON := `{"caseId": "` + id + `", "input": "predicate.json", "kind": "agent_review_predicate", "predicateVersion": "v0.2", "expected": {"classification": "` + want + `"}}`
		_ = os.WriteFile(filepath.Join(c, "case.json"), []byte(caseJSON), 0o644)
		_ = os.WriteFile(filepath.Join(c, "predicate.json"), []byte(conflicting), 0o644)
	}
	results, err := Run(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, r := range results {
		switch r.CaseID {
		case "time-claims-conflict-invalid":
			seen++
			if got, _ := r.Got.(map[string]any); !r.Passed || got["classification"] != "invalid" {
				t.Errorf("conflicting claims: got %v (%s), want invalid", r.Got, r.Detail)
			}
		case "time-claims-conflict-refused":
			seen++
			if r.Passed {
				t.Error("conflicting claims classified as refused")
			}
		default:
			if !r.Passed {
				t.Errorf("%s: got %v, expected %v", r.CaseID, r.Got, r.Expected)
			}
		}
	}
	if seen != 2 || len(results) != 37 {
		t.Fatalf("%d results, %d new cases", len(results), seen)
	}
}
