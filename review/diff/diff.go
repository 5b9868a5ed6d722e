// Package diff splits a unified diff (git's format, a plain unified diff, or GitHub's
// header-less per-file patch) into files and walks their lines with line numbers. It works on
// sub-slices of the input, so a large diff is never copied.
//
// It is hand-written because the review needs what diff libraries do not give: each file's
// section as a sub-slice with its offset (to cut a change into parts for model calls), and a
// parse that never fails. A library such as go-diff refuses a whole diff, or a whole patch, for
// one line outside a counted hunk, which would leave a file without reviewable lines; here hunk
// lines are counted from the hunk header, so a removed "-- x" line ("--- x") or an added
// "++ x" line ("+++ x") is never taken for a file header. The publisher places inline
// comments with the same parser, so the review and the publication agree on which lines exist.
package diff

import (
	"bytes"
	"strconv"
	"strings"
)

// File statuses, in GitHub's vocabulary.
const (
	Added    = "added"
	Modified = "modified"
	Removed  = "removed"
	Renamed  = "renamed"
	Copied   = "copied"
)

// File is one file's section of a diff.
type File struct {
	OldPath string // "" when the file is new
	NewPath string // "" when the file is removed
	Status  string
	Binary  bool
	// Raw is the file's whole section of the input: headers and hunks.
	Raw []byte
	// Offset is where Raw starts in the input.
	Offset int
	// Lines counts the lines of Raw; Added and Deleted count '+' and '-' hunk lines.
	Lines   int
	Added   int
	Deleted int
}

// Path is the file's path after the change, or before it when the file was removed.
func (f *File) Path() string {
	if f.NewPath != "" {
		return f.NewPath
	}
	return f.OldPath
}

// Line is one line of a hunk.
type Line struct {
	Kind byte // '+', '-' or ' '
	// Old and New are the line's numbers in the old and new file; 0 on the side it is absent.
	Old, New int
	// Text is the line without its kind prefix and without the line ending.
	Text []byte
}

// Parse splits a diff into files. It never fails: unrecognised lines are kept inside the
// section they appear in, and a diff without any header yields no files.
func Parse(b []byte) []File {
	var (
		files     []File
		cur       *File
		oldLeft   int
		newLeft   int
		inHunk    bool
		sawGitHdr bool
		curHunk   bool // the current file already had a hunk
	)
	finish := func(end int) {
		if cur == nil {
			return
		}
		cur.Raw = b[cur.Offset:end]
		finalize(cur)
		files = append(files, *cur)
		cur = nil
	}
	start := func(off int) {
		cur = &File{Offset: off, Status: Modified}
		inHunk, curHunk = false, false
	}
	for off := 0; off < len(b); {
		line, next := nextLine(b, off)
		if inHunk && (oldLeft > 0 || newLeft > 0) {
			switch {
			case len(line) == 0:
				// An empty line inside a hunk is a context line whose space was stripped.
				oldLeft--
				newLeft--
			case line[0] == ' ':
				oldLeft--
				newLeft--
			case line[0] == '-':
				oldLeft--
				cur.Deleted++
			case line[0] == '+':
				newLeft--
				cur.Added++
			case line[0] == '\\':
			default:
				inHunk = false
			}
			if inHunk {
				cur.Lines++
				off = next
				continue
			}
		}
		if inHunk && len(line) > 0 && line[0] == '\\' {
			cur.Lines++
			off = next
			continue
		}
		inHunk = false
		switch {
		case bytes.HasPrefix(line, []byte("diff --git ")):
			finish(off)
			start(off)
			sawGitHdr = true
			cur.OldPath, cur.NewPath = gitHeaderPaths(line[len("diff --git "):])
		case bytes.HasPrefix(line, []byte("--- ")) && (cur == nil || (!sawGitHdr && curHunk)):
			// A plain unified diff: "--- " starts the next file when no git header is used.
			finish(off)
			start(off)
			cur.OldPath = headerPath(line[4:], "a/")
		case cur == nil && bytes.HasPrefix(line, []byte("@@ ")):
			// A header-less patch (GitHub's per-file patch field).
			start(off)
		}
		if cur == nil {
			off = next
			continue
		}
		cur.Lines++
		switch {
		case bytes.HasPrefix(line, []byte("--- ")):
			cur.OldPath = headerPath(line[4:], "a/")
		case bytes.HasPrefix(line, []byte("+++ ")):
			cur.NewPath = headerPath(line[4:], "b/")
		case bytes.HasPrefix(line, []byte("@@ ")):
			o, n, ok := hunkCounts(line)
			if ok {
				oldLeft, newLeft, inHunk, curHunk = o, n, true, true
			}
		case bytes.HasPrefix(line, []byte("new file mode")):
			cur.Status = Added
		case bytes.HasPrefix(line, []byte("deleted file mode")):
			cur.Status = Removed
		case bytes.HasPrefix(line, []byte("rename from ")):
			cur.Status = Renamed
			cur.OldPath = unquote(string(line[len("rename from "):]))
		case bytes.HasPrefix(line, []byte("rename to ")):
			cur.Status = Renamed
			cur.NewPath = unquote(string(line[len("rename to "):]))
		case bytes.HasPrefix(line, []byte("copy from ")):
			cur.Status = Copied
			cur.OldPath = unquote(string(line[len("copy from "):]))
		case bytes.HasPrefix(line, []byte("copy to ")):
			cur.Status = Copied
			cur.NewPath = unquote(string(line[len("copy to "):]))
		case bytes.HasPrefix(line, []byte("Binary files ")), bytes.HasPrefix(line, []byte("GIT binary patch")):
			cur.Binary = true
		}
		off = next
	}
	finish(len(b))
	return files
}

func finalize(f *File) {
	switch {
	case f.OldPath == "" && f.NewPath != "":
		if f.Status == Modified {
			f.Status = Added
		}
	case f.NewPath == "" && f.OldPath != "":
		if f.Status == Modified {
			f.Status = Removed
		}
	case f.Status == Modified && f.OldPath != f.NewPath && f.OldPath != "":
		f.Status = Renamed
	}
	if f.Status == Added {
		f.OldPath = ""
	}
	if f.Status == Removed {
		f.NewPath = ""
	}
}

// Walk calls fn for every hunk line of the file, in order, until fn returns false.
func (f *File) Walk(fn func(Line) bool) {
	b := f.Raw
	var (
		oldNo, newNo     int
		oldLeft, newLeft int
		inHunk           bool
	)
	for off := 0; off < len(b); {
		line, next := nextLine(b, off)
		off = next
		if inHunk && (oldLeft > 0 || newLeft > 0) {
			var l Line
			switch {
			case len(line) == 0:
				l = Line{Kind: ' ', Old: oldNo, New: newNo}
				oldNo++
				newNo++
				oldLeft--
				newLeft--
			case line[0] == ' ':
				l = Line{Kind: ' ', Old: oldNo, New: newNo, Text: line[1:]}
				oldNo++
				newNo++
				oldLeft--
				newLeft--
			case line[0] == '-':
				l = Line{Kind: '-', Old: oldNo, Text: line[1:]}
				oldNo++
				oldLeft--
			case line[0] == '+':
				l = Line{Kind: '+', New: newNo, Text: line[1:]}
				newNo++
				newLeft--
			case line[0] == '\\':
				continue
			default:
				inHunk = false
			}
			if inHunk {
				if !fn(l) {
					return
				}
				continue
			}
		}
		if bytes.HasPrefix(line, []byte("@@ ")) {
			o, n, ok := hunkCounts(line)
			if !ok {
				continue
			}
			os, ns := hunkStarts(line)
			oldNo, newNo = os, ns
			oldLeft, newLeft, inHunk = o, n, true
		}
	}
}

// nextLine returns the line at off without its line ending, and the offset after it.
func nextLine(b []byte, off int) ([]byte, int) {
	i := bytes.IndexByte(b[off:], '\n')
	if i < 0 {
		return trimCR(b[off:]), len(b)
	}
	return trimCR(b[off : off+i]), off + i + 1
}

func trimCR(l []byte) []byte {
	if n := len(l); n > 0 && l[n-1] == '\r' {
		return l[:n-1]
	}
	return l
}

// hunkCounts parses the line counts of "@@ -a,b +c,d @@".
func hunkCounts(line []byte) (oldCount, newCount int, ok bool) {
	o, n, ok := hunkRanges(line)
	if !ok {
		return 0, 0, false
	}
	return o[1], n[1], true
}

func hunkStarts(line []byte) (oldStart, newStart int) {
	o, n, _ := hunkRanges(line)
	return o[0], n[0]
}

func hunkRanges(line []byte) (o, n [2]int, ok bool) {
	s := string(line[3:])
	end := strings.Index(s, " @@")
	if end < 0 {
		return o, n, false
	}
	parts := strings.Fields(s[:end])
	if len(parts) != 2 || !strings.HasPrefix(parts[0], "-") || !strings.HasPrefix(parts[1], "+") {
		return o, n, false
	}
	var ok1, ok2 bool
	o, ok1 = parseRange(parts[0][1:])
	n, ok2 = parseRange(parts[1][1:])
	return o, n, ok1 && ok2
}

const maxCount = 1 << 30

func parseRange(s string) ([2]int, bool) {
	startS, countS, hasCount := strings.Cut(s, ",")
	start, err := strconv.Atoi(startS)
	if err != nil || start < 0 || start > maxCount {
		return [2]int{}, false
	}
	count := 1
	if hasCount {
		count, err = strconv.Atoi(countS)
		if err != nil || count < 0 || count > maxCount {
			return [2]int{}, false
		}
	}
	return [2]int{start, count}, true
}

// gitHeaderPaths reads the two paths of "diff --git a/x b/y". Paths with spaces are ambiguous
// there; the "---"/"+++" or rename lines that follow override them.
func gitHeaderPaths(rest []byte) (string, string) {
	s := string(rest)
	if strings.HasPrefix(s, `"`) {
		if a, tail, ok := splitQuoted(s); ok {
			return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(unquote(strings.TrimSpace(tail)), "b/")
		}
	}
	// Prefer the split where both halves name the same path ("a/p b/p").
	if i := strings.Index(s, " b/"); i >= 0 && strings.HasPrefix(s, "a/") {
		for j := i; j >= 0; {
			a, b := s[2:j], s[j+3:]
			if a == b {
				return a, b
			}
			k := strings.Index(s[j+1:], " b/")
			if k < 0 {
				break
			}
			j = j + 1 + k
		}
		return s[2:i], s[i+3:]
	}
	return "", ""
}

func splitQuoted(s string) (string, string, bool) {
	for i := 1; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '"' {
			return unquote(s[:i+1]), s[i+1:], true
		}
	}
	return "", "", false
}

// headerPath reads a "---"/"+++" path, dropping the a/ or b/ prefix and a trailing timestamp.
func headerPath(rest []byte, prefix string) string {
	s := string(rest)
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = unquote(strings.TrimSpace(s))
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, prefix)
}

// unquote decodes git's C-style quoted paths ("caf\303\251.txt").
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}
