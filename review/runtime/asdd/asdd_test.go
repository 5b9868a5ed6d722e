package asdd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/review/runtime"
)

// TestReferenceReviews parses the review.json documents produced by the ASDD reference
// scripts (testdata/reviews, Apache-2.0, see testdata/LICENSE and NOTICE).
func TestReferenceReviews(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "reviews", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no reference reviews: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ParseReview(b)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		for _, rep := range r.Reports() {
			if !runtime.ValidVerdict(rep.Verdict) {
				t.Errorf("%s: verdict %q", f, rep.Verdict)
			}
			for _, fd := range rep.Findings {
				if fd.Severity != runtime.SeverityHigh && fd.Severity != runtime.SeverityMedium && fd.Severity != runtime.SeverityInfo {
					t.Errorf("%s: severity %q", f, fd.Severity)
				}
			}
		}
	}
}

func TestReportsMapping(t *testing.T) {
	r, err := ParseReview([]byte(`{"schema":"asdd/review/v0.1","recommendation":"request-changes","summary":"s","lenses":[
		{"lens":"security","verdict":"request-changes","findings":[
			{"severity":"block","message":"Key committed","path":"a/b.go:12","rule":"secret-private-key","tool":"deterministic"},
			{"severity":"warn","message":"eval","path":"x.py"},
			{"severity":"note","message":"fine","path":"PR body"}]},
		{"lens":"spec","verdict":"skipped","findings":[]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reps := r.Reports()
	f := reps[0].Findings
	if f[0].Severity != "high" || f[0].Path != "a/b.go" || f[0].Line != 12 || f[0].Rule != "secret-private-key" {
		t.Errorf("finding 0 %+v", f[0])
	}
	if f[1].Severity != "medium" || f[1].Path != "x.py" || f[1].Line != 0 || f[2].Severity != "info" {
		t.Errorf("findings %+v", f)
	}
	if reps[1].Verdict != "skipped" || reps[1].Cause == "" {
		t.Errorf("skipped %+v", reps[1])
	}
}

func TestRejects(t *testing.T) {
	ok := `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[]}`
	if _, err := ParseReview([]byte(ok)); err != nil {
		t.Fatalf("minimal document rejected: %v", err)
	}
	deep := `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[],"stats":` +
		strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40) + "}"
	many := `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[`
	for i := 0; i < 40; i++ {
		if i > 0 {
			many += ","
		}
		many += `{"lens":"l` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `","verdict":"ok","findings":[]}`
	}
	many += "]}"
	cases := map[string]string{
		"empty":              ``,
		"array":              `[]`,
		"prose":              `looks good`,
		"trailing data":      ok + ` {}`,
		"wrong schema":       `{"schema":"asdd/review/v0.2","recommendation":"comment","summary":"","lenses":[]}`,
		"approve":            `{"schema":"asdd/review/v0.1","recommendation":"approve","summary":"","lenses":[]}`,
		"no lenses":          `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":""}`,
		"unknown key":        `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[],"approved":true}`,
		"duplicate key":      `{"schema":"asdd/review/v0.1","schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[]}`,
		"nested duplicate":   `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[{"lens":"a","verdict":"ok","verdict":"ok","findings":[]}]}`,
		"bad verdict":        `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[{"lens":"a","verdict":"approve","findings":[]}]}`,
		"bad severity":       `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[{"lens":"a","verdict":"ok","findings":[{"severity":"critical","message":"m"}]}]}`,
		"empty message":      `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[{"lens":"a","verdict":"ok","findings":[{"severity":"note","message":" "}]}]}`,
		"repeated lens":      `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[{"lens":"a","verdict":"ok","findings":[]},{"lens":"a","verdict":"ok","findings":[]}]}`,
		"empty lens name":    `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[{"lens":"","verdict":"ok","findings":[]}]}`,
		"invalid UTF-8":      "{\"schema\":\"asdd/review/v0.1\",\"recommendation\":\"comment\",\"summary\":\"\xff\",\"lenses\":[]}",
		"too deep":           deep,
		"too many lenses":    many,
		"oversized":          `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"` + strings.Repeat("a", MaxBytes) + `","lenses":[]}`,
		"string number line": `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[{"lens":"a","verdict":"ok","findings":[{"severity":"note","message":"m","line":"3"}]}]}`,
	}
	for name, doc := range cases {
		if _, err := ParseReview([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestTriage(t *testing.T) {
	tr, err := ParseTriage([]byte(`{"schema":"asdd/triage/v0.1","issue_number":3,"mode":"live","labels":["bug"],"welcome":true,"comment":"hi"}`))
	if err != nil || tr.Labels[0] != "bug" {
		t.Fatalf("%+v %v", tr, err)
	}
	if _, err := ParseTriage([]byte(`{"schema":"asdd/review/v0.1","labels":[],"comment":""}`)); err == nil {
		t.Fatal("wrong schema accepted")
	}
}

func FuzzParseReview(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "reviews", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[{"lens":"a","verdict":"ok","findings":[{"severity":"block","message":"m","path":"f.go:9"}]}]}`))
	f.Add([]byte(`{"a":[{"b":{}}],"a":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseReview(b)
		if err != nil {
			return
		}
		// Whatever is accepted is valid data: closed verdicts and severities, and a document that
		// survives a round trip.
		for _, rep := range r.Reports() {
			if !runtime.ValidVerdict(rep.Verdict) {
				t.Fatalf("accepted verdict %q", rep.Verdict)
			}
			for _, fd := range rep.Findings {
				if fd.Severity == "" || fd.Line < 0 {
					t.Fatalf("accepted finding %+v", fd)
				}
			}
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseReview(out); err != nil {
			t.Fatalf("round trip rejected: %v\n%s", err, out)
		}
	})
}
