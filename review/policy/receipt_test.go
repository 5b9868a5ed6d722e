package policy

import (
	"path/filepath"
	"strings"
	"testing"
)

const goodDigest = "9adadb5cca1a70c8fc2958c3c786551772fc588764d6d10d2842a03572f1edeb"

func receiptWith(results string) string {
	return `{"version": 1, "plan_digest": "` + goodDigest + `", "results": [` + results + `]}`
}

func TestLoadReceiptValid(t *testing.T) {
	tests := []struct {
		name, doc string
		check     func(t *testing.T, r Receipt)
	}{
		{"summary and order kept", receiptWith(`{"lens": "b", "outcome": "failed", "summary": "x"}, {"lens": "a", "outcome": "passed"}`), func(t *testing.T, r Receipt) {
			if len(r.Results) != 2 || r.Results[0].Lens != "b" || *r.Results[0].Summary != "x" || r.Results[1].Summary != nil {
				t.Errorf("%+v", r)
			}
		}},
		{"null summary is absent", receiptWith(`{"lens": "a", "outcome": "pending", "summary": null}`), func(t *testing.T, r Receipt) {
			if r.Results[0].Summary != nil {
				t.Error("summary should be nil")
			}
		}},
		{"empty results", receiptWith(``), func(t *testing.T, r Receipt) {
			if len(r.Results) != 0 {
				t.Error("want none")
			}
		}},
		{"BOM and whitespace", "\ufeff \n" + receiptWith(``) + "\n\t", nil},
		{"surrogate pair", receiptWith(`{"lens": "a", "outcome": "passed", "summary": "\ud83d\ude00 ok \u2028"}`), func(t *testing.T, r Receipt) {
			if *r.Results[0].Summary != "😀 ok \u2028" {
				t.Errorf("%q", *r.Results[0].Summary)
			}
		}},
		{"4096-byte summary", receiptWith(`{"lens": "a", "outcome": "passed", "summary": "` + strings.Repeat("é", 2048) + `"}`), nil},
		{"32 results", receiptWith(manyResults(32)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := LoadReceipt("r.json", []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func manyResults(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, `{"lens": "l`+strings.Repeat("x", i)+`", "outcome": "passed"}`)
	}
	return strings.Join(parts, ", ")
}

func TestLoadReceiptInvalid(t *testing.T) {
	const (
		notJSON   = "Agent review results are not valid JSON: r.json"
		entryObj  = "Agent review result entries must be objects in r.json"
		lensBad   = "Agent review result lens is invalid or repeated in r.json"
		outBad    = "Agent review result outcome is invalid in r.json"
		sumBad    = "Agent review result summary is invalid in r.json"
		sumUTF    = "Agent review result summary is not valid UTF-8 in r.json"
		versionEr = "Agent review results.version must be integer 1 in r.json"
		digestEr  = "Agent review results.plan_digest is invalid in r.json"
		resultsEr = "Agent review results.results is unbounded or invalid in r.json"
	)
	tests := []struct{ name, doc, msg string }{
		{"empty", ``, notJSON},
		{"array root", `[]`, "Agent review results must be an object in r.json"},
		{"trailing data", receiptWith(``) + "x", notJSON},
		{"trailing comma", `{"version": 1,}`, notJSON},
		{"single quotes", `{'version': 1}`, notJSON},
		{"NaN", `{"version": NaN}`, notJSON},
		{"Infinity", `{"version": Infinity}`, notJSON},
		{"minus Infinity", `{"version": -Infinity}`, notJSON},
		{"leading zero", `{"version": 01}`, notJSON},
		{"bare minus", `{"version": -}`, notJSON},
		{"raw control char", receiptWith(`{"lens": "a", "outcome": "passed", "summary": "a` + "\x01" + `"}`), notJSON},
		{"bad escape", receiptWith(`{"lens": "a", "outcome": "passed", "summary": "\q"}`), notJSON},
		{"short unicode escape", receiptWith(`{"lens": "a", "outcome": "passed", "summary": "\u12"}`), notJSON},
		{"duplicate root key", `{"version": 1, "version": 1}`, notJSON},
		{"duplicate nested key", receiptWith(`{"lens": "a", "lens": "a", "outcome": "passed"}`), notJSON},
		{"invalid UTF-8", "{\"version\": 1, \"x\": \"\xff\"}", notJSON},
		{"encoded surrogate", "{\"version\": 1, \"x\": \"\xed\xa0\x80\"}", notJSON},
		{"too deep for Python's decoder", strings.Repeat("[", 1001) + strings.Repeat("]", 1001), notJSON},
		{"deep but within Python's decoder: structural error", strings.Repeat("[", 200) + strings.Repeat("]", 200), "Agent review results must be an object in r.json"},
		{"deep version", `{"version": ` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}`, "Agent review results.version must be integer 1 in r.json"},
		{"integer beyond 64 bits", `{"version": 18446744073709551617}`, "Agent review results.version must be integer 1 in r.json"},
		{"integer of 4300 digits", `{"version": ` + strings.Repeat("1", 4300) + `}`, "Agent review results.version must be integer 1 in r.json"},
		{"integer of 4301 digits", `{"version": -` + strings.Repeat("1", 4301) + `}`, notJSON},
		{"float of 4301 digits", `{"version": ` + strings.Repeat("1", 4301) + `.0}`, "Agent review results.version must be integer 1 in r.json"},
		{"unterminated", `{"version": 1`, notJSON},
		{"unknown root key", `{"zeta": 1, "extra": 2, "version": 1}`, "Agent review results has unknown key extra in r.json"},
		{"version missing", `{"plan_digest": "` + goodDigest + `", "results": []}`, versionEr},
		{"version float", `{"version": 1.0, "plan_digest": "` + goodDigest + `", "results": []}`, versionEr},
		{"version exponent", `{"version": 1e0, "plan_digest": "` + goodDigest + `", "results": []}`, versionEr},
		{"version true", `{"version": true, "plan_digest": "` + goodDigest + `", "results": []}`, versionEr},
		{"version string", `{"version": "1", "plan_digest": "` + goodDigest + `", "results": []}`, versionEr},
		{"digest upper case", `{"version": 1, "plan_digest": "` + strings.ToUpper(goodDigest) + `", "results": []}`, digestEr},
		{"digest short", `{"version": 1, "plan_digest": "abc", "results": []}`, digestEr},
		{"results object", `{"version": 1, "plan_digest": "` + goodDigest + `", "results": {}}`, resultsEr},
		{"results missing", `{"version": 1, "plan_digest": "` + goodDigest + `"}`, resultsEr},
		{"33 results", receiptWith(manyResults(33)), resultsEr},
		{"entry not object", receiptWith(`"a"`), entryObj},
		{"entry unknown key", receiptWith(`{"lens": "a", "outcome": "passed", "zz": 1, "note": 2}`), "Agent review result has unknown key note in r.json"},
		{"lens missing", receiptWith(`{"outcome": "passed"}`), lensBad},
		{"lens upper case", receiptWith(`{"lens": "Bad Lens", "outcome": "passed"}`), lensBad},
		{"lens repeated", receiptWith(`{"lens": "a", "outcome": "passed"}, {"lens": "a", "outcome": "failed"}`), lensBad},
		{"lens lone surrogate", receiptWith(`{"lens": "a\udc00", "outcome": "passed"}`), lensBad},
		{"outcome missing", receiptWith(`{"lens": "a"}`), outBad},
		{"outcome unknown", receiptWith(`{"lens": "a", "outcome": "skipped"}`), outBad},
		{"outcome upper case", receiptWith(`{"lens": "a", "outcome": "PASSED"}`), outBad},
		{"summary blank", receiptWith(`{"lens": "a", "outcome": "passed", "summary": " \u3000\u001c "}`), sumBad},
		{"summary number", receiptWith(`{"lens": "a", "outcome": "passed", "summary": 3}`), sumBad},
		{"summary NUL", receiptWith(`{"lens": "a", "outcome": "passed", "summary": "a\u0000"}`), sumBad},
		{"summary 4097 bytes", receiptWith(`{"lens": "a", "outcome": "passed", "summary": "` + strings.Repeat("é", 2048) + `x"}`), sumBad},
		{"summary lone high surrogate", receiptWith(`{"lens": "a", "outcome": "passed", "summary": "\ud800"}`), sumUTF},
		{"summary lone low surrogate", receiptWith(`{"lens": "a", "outcome": "passed", "summary": "x\udfffy"}`), sumUTF},
		{"summary high then non-low", receiptWith(`{"lens": "a", "outcome": "passed", "summary": "\ud800\u0041"}`), sumUTF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadReceipt("r.json", []byte(tt.doc))
			if err == nil {
				t.Fatal("accepted")
			}
			pe := AsError(err)
			if pe.Kind != KindConfiguration || pe.Message != tt.msg {
				t.Errorf("got %s %q, want %q", pe.Kind, pe.Message, tt.msg)
			}
		})
	}
}

func TestLoadReceiptSizeCap(t *testing.T) {
	big := receiptWith(``) + strings.Repeat(" ", MaxReceiptBytes)
	_, err := LoadReceipt("r.json", []byte(big))
	if err == nil || AsError(err).Message != "Agent review results exceed 1048576 bytes: r.json" {
		t.Fatalf("got %v", err)
	}
	// Exactly at the cap is fine.
	exact := receiptWith(``)
	exact += strings.Repeat(" ", MaxReceiptBytes-len(exact))
	if _, err := LoadReceipt("r.json", []byte(exact)); err != nil {
		t.Fatal(err)
	}
}

func TestReadReceiptFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.json")
	_, err := ReadReceiptFile(missing)
	if err == nil || !strings.HasPrefix(err.Error(), "cannot read Agent review results "+missing+": ") {
		t.Fatalf("got %v", err)
	}
}

func TestReceiptDocRoundTrip(t *testing.T) {
	s := "line\u2028 <b> \"q\" \\ \t"
	r := Receipt{Version: 1, PlanDigest: goodDigest, Results: []Result{
		{Lens: "a", Outcome: Failed, Summary: &s}, {Lens: "b", Outcome: Pending},
	}}
	back, err := LoadReceipt("r.json", []byte(r.Doc()))
	if err != nil {
		t.Fatal(err)
	}
	if back.Results[0].Lens != "a" || *back.Results[0].Summary != s || back.Results[1].Summary != nil || back.Results[1].Outcome != Pending {
		t.Errorf("%+v", back)
	}
}
