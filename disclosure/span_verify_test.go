package disclosure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/internal/digest"
)

// The verifier hashes spans of a canonical payload instead of re-serialising the tree; both
// must give the same subject digest and findingsRoot on every receipt we have.
func TestCanonicalSpansAgreeWithTheTree(t *testing.T) {
	var envelopes [][]byte
	dir := filepath.Join(corpusDir, "published-receipts")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") {
			envelopes = append(envelopes, readFile(t, filepath.Join(dir, e.Name())))
		}
	}
	d, _ := disclosed(t)
	envelopes = append(envelopes, d.Receipt.Envelope)
	for i, raw := range envelopes {
		env, err := jcs.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		p, err := readParsed(env)
		if err != nil || !p.canonical {
			t.Fatalf("envelope %d: canonical=%v %v", i, p != nil && p.canonical, err)
		}
		pred := p.statement["predicate"].(map[string]any)
		canonPred := jcs.Member(p.payload, "predicate")
		want, err := SubjectDigest(pred["subjectContext"])
		if err != nil || digest.SHA256Hex(jcs.Member(canonPred, "subjectContext")) != want {
			t.Errorf("envelope %d: subject digest differs (%v)", i, err)
		}
		list, _ := asArr(pred["declaration"].(map[string]any)["findings"])
		spans, ok := canonicalFindings(canonPred, len(list))
		root, err := FindingsRoot(list)
		if !ok || err != nil || findingsRootOfCanonical(spans) != root {
			t.Errorf("envelope %d: findings root differs (ok=%v, %v)", i, ok, err)
		}
	}
}

func TestDefaultPolicyCopiesAreIndependent(t *testing.T) {
	a := DefaultPolicy()
	if a.Err != nil || a.Name != "agent-review/default" ||
		a.Digest != "sha256:248daae3a72020112479b3027d1ed269606e8cecb30ecad7c4226d28826b5280" {
		t.Fatalf("default policy: %+v", a)
	}
	a.RequireCoverage[0], a.Name = "UNKNOWN", "changed"
	a.NeverBlocking = append(a.NeverBlocking[:0], LimitIdentityUnbound)
	b := DefaultPolicy()
	if b.Name != "agent-review/default" || b.RequireCoverage[0] != CoverageComplete || b.NeverBlocking[0] == LimitIdentityUnbound {
		t.Fatalf("a change to one copy reached another: %+v", b)
	}
}
