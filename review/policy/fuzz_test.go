package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadReceipt checks that no input panics the receipt loader, that every rejection is a
// configuration error naming the file, and that an accepted receipt survives a round trip.
func FuzzLoadReceipt(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "yaga", "examples", "*.json"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(receiptWith(`{"lens": "a", "outcome": "passed", "summary": "\ud800"}`)))
	f.Add([]byte(`{"version": 1, "version": 1}`))
	f.Add([]byte(`[[[[[[[[[[]]]]]]]]]]`))
	f.Add([]byte(`{"a": -0.5e+10, "b": [true, false, null]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := LoadReceipt("fuzz.json", data)
		if err != nil {
			pe := AsError(err)
			if pe.Kind != KindConfiguration || len(pe.Message) == 0 {
				t.Fatalf("bad error %+v", pe)
			}
			return
		}
		back, err := LoadReceipt("fuzz.json", []byte(r.Doc()))
		if err != nil {
			t.Fatalf("round trip: %v\n%s", err, r.Doc())
		}
		if len(back.Results) != len(r.Results) || back.PlanDigest != r.PlanDigest {
			t.Fatalf("round trip changed the receipt")
		}
		for i := range r.Results {
			a, b := r.Results[i], back.Results[i]
			if a.Lens != b.Lens || a.Outcome != b.Outcome || (a.Summary == nil) != (b.Summary == nil) || (a.Summary != nil && *a.Summary != *b.Summary) {
				t.Fatalf("result %d changed: %+v vs %+v", i, a, b)
			}
		}
	})
}
