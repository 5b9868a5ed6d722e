package details

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	r := Record{
		Head: strings.Repeat("a", 40), Base: strings.Repeat("b", 40), ReviewedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Gate:   Gate{State: "failed", Reason: "required lens failed: security -->"},
		Lenses: []Lens{{Name: "security", Required: true, Outcome: "failed", Tokens: &Tokens{Prompt: 1, Completion: 2, Total: 3}}},
		Findings: []Finding{{ID: "f1", Lens: "security", Severity: "high", Path: "a.go", Line: 3, Title: "<b>x</b> -->",
			Disposition: "open", Placement: "inline"}},
		Policy: Policy{Origin: "repository", Source: "o/r@main", Path: ".asdd.yml", PlanDigest: strings.Repeat("c", 64),
			Proposed: &Proposed{Path: ".asdd.yml", Problems: []string{"line 3: unknown key"}}},
	}
	line, err := EncodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	// The record never ends the HTML comment it lives in early, whatever its text holds.
	if strings.Count(line, "-->") != 1 || !strings.HasSuffix(line, " -->\n") {
		t.Fatalf("marker line %q", line)
	}
	got, err := ParseRecord("text before\n" + line + "text after")
	if err != nil {
		t.Fatal(err)
	}
	if got.Findings[0].Title != r.Findings[0].Title || got.Lenses[0].Tokens.Total != 3 || got.Policy.Proposed.Problems[0] != "line 3: unknown key" ||
		got.FindingsTotal != 1 || got.Schema != RecordSchema {
		t.Fatalf("round trip: %+v", got)
	}
}

func TestRecordIsBounded(t *testing.T) {
	r := Record{Head: strings.Repeat("a", 40)}
	for i := 0; i < 5000; i++ {
		r.Findings = append(r.Findings, Finding{ID: fmt.Sprint(i), Title: strings.Repeat("t", 400), Body: strings.Repeat("é", 700)})
		r.Coverage.Gaps = append(r.Coverage.Gaps, Gap{Path: strings.Repeat("p", 400), Reason: "too large"})
	}
	line, err := EncodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(line) > MaxRecordBytes {
		t.Fatalf("record of %d bytes exceeds %d", len(line), MaxRecordBytes)
	}
	got, err := ParseRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	if got.FindingsTotal != 5000 || got.Coverage.GapsTotal != 5000 || len(got.Findings) == 0 || len(got.Findings) > maxRecordFinding {
		t.Fatalf("findings %d of %d, gaps total %d", len(got.Findings), got.FindingsTotal, got.Coverage.GapsTotal)
	}
}

func TestParseRecordErrors(t *testing.T) {
	enc := func(s string) string { return markerRecord + base64.StdEncoding.EncodeToString([]byte(s)) + markerEnd }
	cases := map[string]string{
		"none":         "just text",
		"unterminated": markerRecord + "abc",
		"not base64":   markerRecord + "!!!" + markerEnd,
		"not json":     enc("{"),
		"other schema": enc(`{"schema":"x/v9"}`),
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseRecord(text); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func FuzzParseRecord(f *testing.F) {
	line, _ := EncodeRecord(Record{Head: strings.Repeat("a", 40), Lenses: []Lens{{Name: "security"}}})
	f.Add(line)
	f.Add(markerRecord + "e30=" + markerEnd)
	f.Add("<!-- lensgate:receipt -->\n```json\n{}\n```")
	f.Fuzz(func(t *testing.T, text string) {
		r, err := ParseRecord(text)
		if err == nil && r.Schema != RecordSchema {
			t.Fatalf("accepted schema %q", r.Schema)
		}
		_ = ExtractEnvelope(text)
		_ = readReceipt([]byte(text))
	})
}
