package details

import (
	"fmt"
	"strings"
	"testing"
)

// TestRecordContextIsBounded: a context with more code ranges than fit is cut to fit the
// record, its count kept, and the rest of the record survives the round trip.
func TestRecordContextIsBounded(t *testing.T) {
	c := &Context{Digest: strings.Repeat("d", 64), Issues: []ContextIssue{{Number: 7, SHA256: strings.Repeat("3", 64)}}}
	for i := range 400 {
		c.Code = append(c.Code, ContextCode{Path: fmt.Sprintf("pkg/very/long/path/to/file%03d.go", i), Lines: "10-42", Kind: "function",
			SHA256: strings.Repeat("2", 64)})
	}
	c.Instructions = []ContextFile{{Path: "AGENTS.md", Commit: strings.Repeat("b", 40), SHA256: strings.Repeat("1", 64)}}
	line, err := EncodeRecord(Record{Head: "h", Gate: Gate{State: "passed"}, Context: c})
	if err != nil || len(line) > MaxRecordBytes {
		t.Fatalf("%d bytes, %v", len(line), err)
	}
	r, err := ParseRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Context
	if got == nil || got.CodeTotal != 400 || len(got.Code) == 0 || len(got.Code) >= 400 || got.Digest != c.Digest ||
		len(got.Instructions) != 1 || len(got.Issues) != 1 {
		t.Fatalf("context after the round trip: total %d, listed %d, %+v", got.CodeTotal, len(got.Code), got.Instructions)
	}
}
