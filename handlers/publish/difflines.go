package publish

import (
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/diff"
)

// diffLines says which lines of each file an inline comment may sit on: GitHub only accepts
// comments on lines shown in the pull request's diff. It is read with review/diff, the parser
// the review placed its findings with, so both agree on which lines exist.
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
		if fl := patchLines(f.Patch); fl != nil {
			out[f.Path] = fl
		}
	}
	files := diff.Parse(s.Diff)
	for i := range files {
		if _, ok := out[files[i].Path()]; !ok {
			out[files[i].Path()] = indexLines(&files[i])
		}
	}
	return out
}

// linesFromFiles indexes GitHub's files listing (path -> patch).
func linesFromFiles(patches map[string]string) diffLines {
	out := diffLines{}
	for path, patch := range patches {
		if fl := patchLines(patch); fl != nil {
			out[path] = fl
		}
	}
	return out
}

// patchLines indexes one file's header-less patch (nil when it holds no hunk).
func patchLines(patch string) *fileLines {
	files := diff.Parse([]byte(patch))
	if len(files) == 0 {
		return nil
	}
	return indexLines(&files[0])
}

func indexLines(f *diff.File) *fileLines {
	fl := &fileLines{right: map[int]bool{}, left: map[int]bool{}}
	f.Walk(func(l diff.Line) bool {
		if l.Kind != '-' {
			fl.right[l.New] = true
		}
		if l.Kind != '+' {
			fl.left[l.Old] = true
		}
		return true
	})
	return fl
}
