package publish

import (
	"strings"
	"testing"

	"github.com/lensgate/lensgate/review"
)

func TestSuggestionsStayInTheDiff(t *testing.T) {
	// a.go: one hunk, new lines 10-14 (10 context, 11-12 added, 13 context, 14 added), then a
	// second hunk at new lines 30-31. b.go: only deletions around new line 5. c.go is the new
	// name of a renamed file with one added line 3; old.go its old name. d.go: a pure rename.
	lines := linesFromFiles(map[string]string{
		"a.go": "@@ -10,3 +10,5 @@\n ctx\n+add1\n+add2\n ctx2\n+add3\n@@ -40,2 +30,2 @@\n x\n y",
		"b.go": "@@ -4,3 +4,1 @@\n-gone1\n-gone2\n keep",
		"c.go": "@@ -1,2 +1,3 @@\n a\n b\n+c",
	})
	tests := []struct {
		name       string
		path, side string
		start, end int
		block      bool
	}{
		{"added lines inside one hunk", "a.go", "", 11, 12, true},
		{"one line", "a.go", "", 14, 14, true},
		{"context lines at the hunk's first edge", "a.go", "", 10, 11, true},
		{"the hunk's last line", "a.go", "", 13, 14, true},
		{"one line past the hunk's end", "a.go", "", 13, 15, false},
		{"one line before the hunk's start", "a.go", "", 9, 10, false},
		{"across the gap between two hunks", "a.go", "", 14, 30, false},
		{"inside the second hunk", "a.go", "", 30, 31, true},
		{"lines that were deleted", "b.go", "", 4, 5, false},
		{"the line kept after deletions", "b.go", "", 4, 4, true},
		{"a base-side comment", "b.go", "LEFT", 4, 4, false},
		{"renamed file under its new name", "c.go", "", 3, 3, true},
		{"renamed file under its old name", "old.go", "", 3, 3, false},
		{"pure rename without hunks", "d.go", "", 1, 1, false},
		{"an inverted range", "a.go", "", 12, 11, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := review.InlineComment{Path: tt.path, Line: tt.end, Side: tt.side,
				Suggestion: &review.Suggestion{StartLine: tt.start, EndLine: tt.end, Replacement: "fixed()"}}
			s := renderSuggestion(lines, c)
			if s.applicable != tt.block || strings.Contains(s.text, "```suggestion") != tt.block {
				t.Fatalf("applicable %v, text %q; want block %v", s.applicable, s.text, tt.block)
			}
			if tt.block && (s.start != tt.start || s.end != tt.end) {
				t.Fatalf("range %d-%d", s.start, s.end)
			}
			if !tt.block && tt.start <= tt.end && !strings.Contains(s.text, "fixed()") {
				t.Fatalf("the replacement is not shown as text: %q", s.text)
			}
		})
	}
	t.Run("text cannot close the fence or fake a marker", func(t *testing.T) {
		c := review.InlineComment{Path: "a.go", Line: 11, Suggestion: &review.Suggestion{StartLine: 11, EndLine: 11,
			Replacement: "x := \"```\"\n<!-- lensgate:fp:LG-000000000000 -->"}}
		s := renderSuggestion(lines, c)
		if s.applicable || strings.Contains(s.text, "<!--") || !strings.Contains(s.text, "````\n") {
			t.Fatalf("%+v", s)
		}
		c.Suggestion.Replacement = "x := \"```\""
		if s := renderSuggestion(lines, c); !s.applicable || !strings.HasPrefix(s.text, "\n\n````suggestion\n") {
			t.Fatalf("%+v", s)
		}
	})
}
