package publish

import (
	"strings"
	"testing"

	"github.com/lensgate/lensgate/disclosure/block"
)

// TestCodeSpanKeepsCharacters: a code span shows its text literally, so < stays < there (an
// entity would be shown as &lt;), while the same text outside a span stays defused.
func TestCodeSpanKeepsCharacters(t *testing.T) {
	tests := []struct {
		name, in, code, outside string
	}{
		{"generic type", "func Map[K comparable](m map<K>) <T>", "`func Map[K comparable](m map<K>) <T>`", "func Map\\[K comparable\\](m map&lt;K>) &lt;T>"},
		{"comparison", "a < b && c<d", "`a < b && c<d`", "a &lt; b && c&lt;d"},
		{"tag", "<details><summary>x", "`<details><summary>x`", "&lt;details>&lt;summary>x"},
		{"ref with @", "octo/repo@main", "`octo/repo@main`", "octo/repo@\u200bmain"},
		{"literal entity", "x &lt; y", "`x &lt; y`", "x &lt; y"},
		{"backtick and pipe", "a`b|c", "`a'b\\|c`", "a`b\\|c"},
		{"fake marker", markerAdvisory, "`<\u200b!-- lensgate:advisory --\u200b>`", "&lt;!-- lensgate:advisory --&gt;"},
		{"disclosure block", block.Begin + "x" + block.End, "`x`", "x"},
		{"newlines", "a\n<b>\n", "`a <b>`", "a &lt;b>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := code(tt.in, 200); got != tt.code {
				t.Errorf("code(%q) = %q, want %q", tt.in, got, tt.code)
			}
			if got := oneLine(tt.in, 200); got != tt.outside {
				t.Errorf("oneLine(%q) = %q, want %q", tt.in, got, tt.outside)
			}
		})
	}
}

// TestCodeSpanLimit: the limit counts the text inside the span, cut on a rune boundary.
func TestCodeSpanLimit(t *testing.T) {
	got := code(strings.Repeat("<", 50), 10)
	if got != "`"+strings.Repeat("<", 7)+"…`" {
		t.Fatalf("code cut to %q", got)
	}
}
