package diff

import (
	"bytes"
	"fmt"
	"testing"
)

const gitDiff = `diff --git a/old name.txt b/new name.txt
similarity index 90%
rename from old name.txt
rename to new name.txt
index 1111111..2222222 100644
--- a/old name.txt
+++ b/new name.txt
@@ -1,3 +1,4 @@
 one
-two
+deux
+three
 four
diff --git a/img.png b/img.png
new file mode 100644
index 0000000..3333333
Binary files /dev/null and b/img.png differ
diff --git a/gone.go b/gone.go
deleted file mode 100644
index 4444444..0000000
--- a/gone.go
+++ /dev/null
@@ -1,2 +0,0 @@
-package gone
--- not a header, a removed line
diff --git "a/caf\303\251.md" "b/caf\303\251.md"
new file mode 100644
--- /dev/null
+++ "b/caf\303\251.md"
@@ -0,0 +1 @@
+++ starts like a header
\ No newline at end of file
`

func TestParseGitDiff(t *testing.T) {
	files := Parse([]byte(gitDiff))
	want := []struct {
		old, new, status string
		binary           bool
		added, deleted   int
	}{
		{"old name.txt", "new name.txt", Renamed, false, 2, 1},
		{"", "img.png", Added, true, 0, 0},
		{"gone.go", "", Removed, false, 0, 2},
		{"", "café.md", Added, false, 1, 0},
	}
	if len(files) != len(want) {
		t.Fatalf("%d files, want %d: %+v", len(files), len(want), files)
	}
	for i, w := range want {
		f := files[i]
		if f.OldPath != w.old || f.NewPath != w.new || f.Status != w.status || f.Binary != w.binary || f.Added != w.added || f.Deleted != w.deleted {
			t.Errorf("file %d = {%q %q %s bin=%v +%d -%d}, want %+v", i, f.OldPath, f.NewPath, f.Status, f.Binary, f.Added, f.Deleted, w)
		}
	}
	var lines []string
	files[0].Walk(func(l Line) bool {
		lines = append(lines, fmt.Sprintf("%c%d/%d:%s", l.Kind, l.Old, l.New, l.Text))
		return true
	})
	wantLines := []string{" 1/1:one", "-2/0:two", "+0/2:deux", "+0/3:three", " 3/4:four"}
	if fmt.Sprint(lines) != fmt.Sprint(wantLines) {
		t.Errorf("walk = %q, want %q", lines, wantLines)
	}
	var joined []byte
	for _, f := range files {
		joined = append(joined, f.Raw...)
	}
	if !bytes.Equal(joined, []byte(gitDiff)) {
		t.Error("file sections do not cover the diff exactly")
	}
}

func TestParsePlainAndHeaderless(t *testing.T) {
	plain := "--- a/x.txt\t2024-01-01\n+++ b/x.txt\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n--- a/y.txt\n+++ b/y.txt\n@@ -1,0 +1,1 @@\n+c\n"
	files := Parse([]byte(plain))
	if len(files) != 2 || files[0].Path() != "x.txt" || files[1].Path() != "y.txt" || files[1].Added != 1 {
		t.Fatalf("plain: %+v", files)
	}
	patch := "@@ -10,2 +10,3 @@ func f() {\n a\n+b\n c\n"
	files = Parse([]byte(patch))
	if len(files) != 1 || files[0].Added != 1 {
		t.Fatalf("header-less: %+v", files)
	}
	var got []int
	files[0].Walk(func(l Line) bool { got = append(got, l.New); return true })
	if fmt.Sprint(got) != "[10 11 12]" {
		t.Fatalf("line numbers %v", got)
	}
}

// TestParseNeverFails: malformed input yields sections inside the input with sane line
// numbers, never a panic; input with no diff header yields no file.
func TestParseNeverFails(t *testing.T) {
	for _, in := range []string{"", "garbage\n", "@@ nonsense @@\n+x\n", "diff --git \n", "@@ -99999999999 +1 @@\n"} {
		files := Parse([]byte(in))
		if in == "" || in == "garbage\n" {
			if len(files) != 0 {
				t.Errorf("%q: %d file(s) from no diff", in, len(files))
			}
		}
		for i := range files {
			f := &files[i]
			if f.Offset < 0 || f.Offset+len(f.Raw) > len(in) {
				t.Errorf("%q: section [%d,+%d) leaves the input", in, f.Offset, len(f.Raw))
			}
			f.Walk(func(l Line) bool {
				if l.New < 0 || l.Old < 0 {
					t.Errorf("%q: negative line number %+v", in, l)
				}
				return true
			})
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(gitDiff))
	f.Add([]byte("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"))
	f.Add([]byte("@@ -1,2 +1,2 @@\n a\r\n-b\n+c\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		files := Parse(b)
		end := 0
		for i := range files {
			f := &files[i]
			if f.Offset < end || f.Offset+len(f.Raw) > len(b) {
				t.Fatalf("file %d section [%d,%d) overlaps or leaves the input", i, f.Offset, f.Offset+len(f.Raw))
			}
			end = f.Offset + len(f.Raw)
			added, deleted := 0, 0
			f.Walk(func(l Line) bool {
				switch l.Kind {
				case '+':
					added++
					if l.New < 0 {
						t.Fatal("negative line number")
					}
				case '-':
					deleted++
				case ' ':
				default:
					t.Fatalf("kind %q", l.Kind)
				}
				return true
			})
			if added != f.Added || deleted != f.Deleted {
				t.Fatalf("file %d: walk +%d -%d, parse +%d -%d", i, added, deleted, f.Added, f.Deleted)
			}
		}
	})
}
