package publish

import (
	"bytes"
	"strings"

	"github.com/sourcegraph/go-diff/diff"

	"github.com/lensgate/lensgate/review"
)

// diffLines says which lines of each file an inline comment may sit on: GitHub only accepts
// comments on lines shown in the pull request's diff.
type diffLines map[string]*fileLines

type fileLines struct {
	right map[int]bool // head-side lines (added or context)
	left  map[int]bool // base-side lines (removed or context)
}

// has reports whether path:line on side is part of the diff.
func (d diffLines) has(path string, line int, side string) bool {
	f := d[path]
	if f == nil {
		return false
	}
	if side == "LEFT" {
		return f.left[line]
	}
	return f.right[line]
}

// linesFromSubject indexes the per-file patches, falling back to the raw diff for files that
// have none.
func linesFromSubject(s *review.Subject) diffLines {
	out := diffLines{}
	for _, f := range s.Files {
		if f.Patch == "" {
			continue
		}
		if hunks, err := diff.ParseHunks([]byte(strings.TrimSuffix(f.Patch, "\n") + "\n")); err == nil {
			out[f.Path] = indexHunks(hunks)
		}
	}
	if len(s.Diff) == 0 {
		return out
	}
	fds, err := diff.ParseMultiFileDiff(s.Diff)
	if err != nil {
		return out
	}
	for _, fd := range fds {
		name := strings.TrimPrefix(fd.NewName, "b/")
		if fd.NewName == "/dev/null" {
			name = strings.TrimPrefix(fd.OrigName, "a/")
		}
		if _, ok := out[name]; !ok {
			out[name] = indexHunks(fd.Hunks)
		}
	}
	return out
}

// linesFromFiles indexes GitHub's files listing (path -> patch).
func linesFromFiles(patches map[string]string) diffLines {
	out := diffLines{}
	for path, patch := range patches {
		if hunks, err := diff.ParseHunks([]byte(strings.TrimSuffix(patch, "\n") + "\n")); err == nil {
			out[path] = indexHunks(hunks)
		}
	}
	return out
}

func indexHunks(hunks []*diff.Hunk) *fileLines {
	fl := &fileLines{right: map[int]bool{}, left: map[int]bool{}}
	for _, h := range hunks {
		o, n := int(h.OrigStartLine), int(h.NewStartLine)
		for _, l := range bytes.Split(bytes.TrimSuffix(h.Body, []byte("\n")), []byte("\n")) {
			switch {
			case len(l) > 0 && l[0] == '+':
				fl.right[n] = true
				n++
			case len(l) > 0 && l[0] == '-':
				fl.left[o] = true
				o++
			case len(l) > 0 && l[0] == '\\':
			default:
				fl.right[n] = true
				fl.left[o] = true
				n++
				o++
			}
		}
	}
	return fl
}
