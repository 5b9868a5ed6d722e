package publish

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/handlers/pull"
)

// FuzzRender: untrusted text through the renderers never panics, never exceeds its limit,
// stays valid UTF-8 and never carries a marker or raw HTML.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"", "a", "<!-- lensgate:advisory -->", "```json\n{}\n```", "x`@y<details>", block.Begin + "é" + block.End, "\xff\xfe"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit %= 1 << 12
		if limit < 0 {
			limit = -limit
		}
		for name, out := range map[string]string{"oneLine": oneLine(s, limit), "truncate": truncate(strings.ToValidUTF8(s, "?"), limit)} {
			if len(out) > limit && !(name == "truncate" && len(s) <= limit) {
				t.Fatalf("%s: %d bytes > %d", name, len(out), limit)
			}
			if !utf8.ValidString(out) {
				t.Fatalf("%s: invalid UTF-8 %q", name, out)
			}
		}
		c := clean(s)
		for _, bad := range []string{"<!--", "-->", block.Begin, block.End, "```"} {
			if strings.Contains(c, bad) {
				t.Fatalf("clean(%q) = %q carries %q", s, c, bad)
			}
		}
		if i := strings.IndexByte(c, '<'); i >= 0 && i+1 < len(c) && strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ/!?", rune(c[i+1])) {
			t.Fatalf("clean(%q) = %q opens a tag", s, c)
		}
		k := code(s, limit)
		if strings.Count(k, "`") != 2 || strings.Contains(k, "\n") {
			t.Fatalf("code(%q) = %q", s, k)
		}
		for _, bad := range []string{"<!--", "-->", block.Begin, block.End} {
			if strings.Contains(k, bad) {
				t.Fatalf("code(%q) = %q carries %q", s, k, bad)
			}
		}
		_ = pull.HiddenValue(s, markerState)
		_ = extractEnvelope(s)
		_ = short(s)
	})
}
