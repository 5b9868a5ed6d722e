package modelctx

import (
	"context"
	"sort"
	"strings"
)

// MapTree is a revision held in memory, for callers that already have the files (a test, a
// command that read them some other way). Paths are slash-separated and repository-relative.
type MapTree struct {
	CommitID string
	Files    map[string][]byte
}

var _ Tree = MapTree{}

// Commit implements Tree.
func (t MapTree) Commit() string { return t.CommitID }

// List implements Tree.
func (t MapTree) List(_ context.Context, dir string) ([]Entry, error) {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	seen := map[string]bool{}
	var out []Entry
	for p := range t.Files {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok || rest == "" {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		if !seen[name] {
			seen[name] = true
			out = append(out, Entry{Name: name, Dir: isDir})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Read implements Tree.
func (t MapTree) Read(_ context.Context, p string, limit int) ([]byte, bool, error) {
	b, ok := t.Files[p]
	switch {
	case !ok:
		return nil, false, nil
	case len(b) > limit:
		return nil, true, ErrTooLarge
	}
	return b, true, nil
}
