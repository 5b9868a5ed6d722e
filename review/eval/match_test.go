package eval

import (
	"context"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/review"
)

func TestNear(t *testing.T) {
	g := Golden{Path: "pkg/a.go", StartLine: 10, EndLine: 12}
	for _, c := range []struct {
		path string
		line int
		want bool
	}{
		{"pkg/a.go", 7, true}, {"pkg/a.go", 6, false}, {"./pkg/a.go", 15, true}, {"pkg/a.go", 16, false},
		{"pkg/b.go", 11, false}, {"pkg/a.go", 0, false},
	} {
		if got := near(g, review.Finding{Path: c.path, Line: c.line}, 3); got != c.want {
			t.Errorf("%s:%d near %+v = %v", c.path, c.line, g, got)
		}
	}
	whole := Golden{Path: "pkg/a.go"}
	if !near(whole, review.Finding{Path: "pkg/a.go"}, 0) || !near(whole, review.Finding{Path: "pkg/a.go", Line: 900}, 0) {
		t.Error("a defect without lines is anywhere in its file")
	}
	if near(Golden{Description: "x"}, review.Finding{Path: "pkg/a.go", Line: 1}, 5) {
		t.Error("a defect without a path matched by location")
	}
}

// TestMaxMatching: one finding per defect and one defect per finding, as many pairs as
// possible, whatever the order the candidates come in.
func TestMaxMatching(t *testing.T) {
	// Finding 0 could stand for defect 0 or 1, finding 1 only for defect 0: both defects are
	// found, and the greedy choice (finding 0 for defect 0) is undone.
	m := maxMatching([][]int{{0, 1}, {0}}, 2)
	if m[0] != 1 || m[1] != 0 {
		t.Fatalf("matching %v", m)
	}
	// Two findings on one defect: one hit, one duplicate.
	golden := []Golden{{Path: "a.go", StartLine: 5, EndLine: 5, Description: "d"}}
	findings := []review.Finding{{Path: "a.go", Line: 5}, {Path: "a.go", Line: 6}, {Path: "a.go", Line: 30}}
	c, matched, err := score(context.Background(), golden, findings, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c != (Counts{Golden: 1, Findings: 3, Matched: 1, Unmatched: 2, Missed: 0}) || matched[0] != 0 {
		t.Fatalf("counts %+v matched %v", c, matched)
	}
	r := c.rates()
	if *r.Recall != 1 || *r.Precision != 1.0/3 || *r.F1 != 0.5 {
		t.Fatalf("rates %v %v %v", *r.Recall, *r.Precision, *r.F1)
	}
	// Nothing to find and nothing found: no rate is defined.
	if r := (Counts{}).rates(); r.Recall != nil || r.Precision != nil || r.F1 != nil {
		t.Fatalf("rates of nothing %+v", r)
	}
	// Nothing found on a case with defects: recall 0, precision undefined.
	if r := (Counts{Golden: 2, Missed: 2}).rates(); *r.Recall != 0 || r.Precision != nil || r.F1 != nil {
		t.Fatalf("rates of a silent review %+v", r)
	}
}

func TestParseRejects(t *testing.T) {
	good := "version: 1\ncases:\n  - id: a\n    fixture: x\n    golden: []\n"
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatal(err)
	}
	for want, doc := range map[string]string{
		"version 2":                  "version: 2\ncases:\n  - id: a\n    fixture: x\n    golden: []\n",
		"no cases":                   "version: 1\ncases: []\n",
		"field gloden not found":     "version: 1\ncases:\n  - id: a\n    fixture: x\n    gloden: []\n",
		"the id is used twice":       "version: 1\ncases:\n  - {id: a, fixture: x}\n  - {id: a, fixture: y}\n",
		"has no id":                  "version: 1\ncases:\n  - {fixture: x}\n",
		"not both":                   "version: 1\ncases:\n  - {id: a, fixture: x, repo: r, base: b, head: h}\n",
		"needs a fixture":            "version: 1\ncases:\n  - {id: a, repo: r, base: b}\n",
		"has no description":         "version: 1\ncases:\n  - {id: a, fixture: x, golden: [{path: a.go, severity: high}]}\n",
		"are not a range":            "version: 1\ncases:\n  - {id: a, fixture: x, golden: [{path: a.go, start_line: 5, end_line: 3, severity: high, description: d}]}\n",
		"has lines but no path":      "version: 1\ncases:\n  - {id: a, fixture: x, golden: [{start_line: 5, severity: high, description: d}]}\n",
		"severity \"blocker\"":       "version: 1\ncases:\n  - {id: a, fixture: x, golden: [{path: a.go, severity: blocker, description: d}]}\n",
		"needs a repository and a l": "version: 1\ncases:\n  - {id: a, fixture: x, provenance: {repository: r}}\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v", want, err)
		}
	}
}
