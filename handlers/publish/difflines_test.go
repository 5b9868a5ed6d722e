package publish

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/lensgate/lensgate/review"
)

// lineSets writes the lines of each file on each side, for comparison.
func lineSets(d diffLines) map[string]string {
	out := map[string]string{}
	for path, fl := range d {
		var r, l []int
		for n := range fl.right {
			r = append(r, n)
		}
		for n := range fl.left {
			l = append(l, n)
		}
		slices.Sort(r)
		slices.Sort(l)
		out[path] = fmt.Sprintf("R%v L%v", r, l)
	}
	return out
}

// A diff as git writes it (git diff -M --binary of a commit): an added file, a binary change
// with its literal patch, CRLF content, a new empty file, a deleted file, a mode change, a
// rename with changes and a pure rename, a change at a file end without a newline, a quoted
// path with a space and non-ASCII, and removed or added lines that read like file headers
// ("--- old comment", "+++ counter").
func TestDiffLinesOfARealGitDiff(t *testing.T) {
	raw, err := os.ReadFile("testdata/renames-binary-crlf-noeol.diff")
	if err != nil {
		t.Fatal(err)
	}
	got := lineSets(linesFromSubject(&review.Subject{Diff: raw}))
	want := map[string]string{
		"added.txt":    "R[1 2 3] L[]",
		"blob.bin":     "R[] L[]",
		"crlf.txt":     "R[1 2 3] L[1 2 3]",
		"empty.txt":    "R[] L[]",
		"gone.txt":     "R[] L[1 2 3]",
		"mode.sh":      "R[] L[]",
		"moved2.txt":   "R[1 2 3 4 5 6 7] L[1 2 3 4 5 6 7]",
		"noeol.txt":    "R[1 2] L[1 2]",
		"pure2.txt":    "R[] L[]",
		"sp ace é.txt": "R[1 2 3] L[1 2]",
		"inc.txt":      "R[1] L[1 2]",
		"inc2.txt":     "R[1 2] L[]",
		"q.sql":        "R[1 2] L[1 2 3]",
	}
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s: %s, want %s", path, got[path], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d files, want %d: %v", len(got), len(want), got)
	}
}

// GitHub's per-file patches: header-less hunks, with the shapes they take.
func TestDiffLinesOfPatches(t *testing.T) {
	cases := []struct{ name, patch, want string }{
		{"plain", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c", "R[1 2 3] L[1 2 3]"},
		{"CRLF content", "@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r", "R[1 2 3] L[1 2 3]"},
		{"CRLF everywhere", "@@ -1,3 +1,3 @@\r\n a\r\n-b\r\n+B\r\n c\r\n", "R[1 2 3] L[1 2 3]"},
		{"two hunks", "@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -10,2 +10,3 @@\n x\n+y\n z", "R[1 2 10 11 12] L[1 2 10 11]"},
		{"context line without its space", "@@ -1,3 +1,3 @@\n a\n\n-b\n+B", "R[1 2 3] L[1 2 3]"},
		{"no newline at end of file", "@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+z\n\\ No newline at end of file", "R[1 2] L[1 2]"},
		{"removed line that reads like a header", "@@ -1,3 +1,2 @@\n select 1;\n--- old\n select 2;", "R[1 2] L[1 2 3]"},
		{"added line that reads like a header", "@@ -0,0 +1,2 @@\n+keep\n+++ counter", "R[1 2] L[]"},
		{"deleted file", "@@ -1,2 +0,0 @@\n-a\n-b", "R[] L[1 2]"},
		{"counts omitted", "@@ -3 +3 @@\n-a\n+A", "R[3] L[3]"},
		{"function context in the header", "@@ -5,2 +5,2 @@ func main() {\n-a\n+A\n b", "R[5 6] L[5 6]"},
		// Lines past the hunk's counts are not part of it; the hunk's own lines still are.
		{"text after the hunk", "@@ -1,2 +1,2 @@\n-a\n+A\n b\ntrailing text\n more", "R[1 2] L[1 2]"},
		// A hunk cut short (a truncated patch) keeps the lines it has.
		{"truncated hunk", "@@ -1,5 +1,5 @@\n-a\n+A\n b", "R[1 2] L[1 2]"},
	}
	for _, c := range cases {
		got := lineSets(linesFromFiles(map[string]string{"f": c.patch}))["f"]
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if d := linesFromFiles(map[string]string{"f": ""}); d["f"] != nil {
		t.Errorf("an empty patch gives lines %v", lineSets(d))
	}
	// A file's own patch wins over the raw diff; files without one come from the raw diff.
	s := &review.Subject{
		Files: []review.File{{Path: "a.txt", Patch: "@@ -1 +1 @@\n-x\n+y"}},
		Diff:  []byte("diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -5 +5 @@\n-x\n+y\ndiff --git a/b.txt b/b.txt\n--- a/b.txt\n+++ b/b.txt\n@@ -2 +2 @@\n-p\n+q\n"),
	}
	got := lineSets(linesFromSubject(s))
	if got["a.txt"] != "R[1] L[1]" || got["b.txt"] != "R[2] L[2]" {
		t.Errorf("patch and raw diff: %v", got)
	}
}
