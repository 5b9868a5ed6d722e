package disclosure

import (
	"strings"
	"testing"

	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

func TestTruthyFollowsTheReference(t *testing.T) {
	tests := []struct {
		v    any
		want bool
	}{
		{nil, false}, {false, false}, {true, true}, {"", false}, {"x", true},
		{[]any{}, false}, {[]any{nil}, true}, {map[string]any{}, false}, {map[string]any{"a": nil}, true},
		{jcs.Number("0"), false}, {jcs.Number("-0"), false}, {jcs.Number("0.0"), false}, {jcs.Number("0e5"), false},
		{jcs.Number("1e-400"), false}, {jcs.Number("7"), true}, {jcs.Number("0.5"), true},
		{jcs.Number("100000000000000000000000"), true},
	}
	for _, tt := range tests {
		if got := truthy(tt.v); got != tt.want {
			t.Errorf("truthy(%#v) = %v", tt.v, got)
		}
	}
}

func TestTimestampForms(t *testing.T) {
	for s, want := range map[string]bool{
		"2026-11-29T18:00:00Z": true, "2026-11-29T18:00:00.123Z": true, "2026-13-99T99:99:99Z": true,
		"2026-11-29T18:00:00": false, "2026-11-29T18:00:00+00:00": false, "2026-11-29 18:00:00Z": false,
		"2026-11-29T18:00:00.Z": false, "\u0662026-11-29T18:00:00Z": true, // Arabic-Indic digit, as \d in the reference
	} {
		if got := isTimestamp(s); got != want {
			t.Errorf("isTimestamp(%q) = %v", s, got)
		}
	}
}

func TestRenderCompact(t *testing.T) {
	tree, err := typicalPredicate().Tree()
	if err != nil {
		t.Fatal(err)
	}
	digest := strings.Repeat("ab", 32)
	line, err := RenderCompact(tree, digest, CompactLine{ReceiptURL: "https://example.test/r.json", LogURL: "https://log.test/1"})
	if err != nil {
		t.Fatal(err)
	}
	want := "- Agent review receipt: [abababababab](https://example.test/r.json) \u00b7 `sha256:" + digest +
		"` \u00b7 5 findings \u00b7 assurance selfDeclared, not independently witnessed \u00b7 " +
		"[transparency log entry](https://log.test/1), not yet in a witnessed checkpoint"
	if line != want {
		t.Fatalf("got\n%s\nwant\n%s", line, want)
	}
	// Inside a block, both the label and the digest are masked in the disclosure core.
	other := strings.Repeat("cd", 32)
	line2, _ := RenderCompact(tree, other, CompactLine{ReceiptURL: "https://example.test/r.json", LogURL: "https://log.test/1"})
	d1, _ := DisclosureCoreDigest(block.Begin + "\n" + line + "\n" + block.End)
	d2, _ := DisclosureCoreDigest(block.Begin + "\n" + line2 + "\n" + block.End)
	if d1 != d2 {
		t.Fatal("compact line digest is not masked")
	}
	if _, err := RenderCompact(tree, "short", CompactLine{}); err == nil {
		t.Fatal("rendered a malformed digest")
	}
}
