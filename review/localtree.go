package review

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/lensgate/lensgate/review/modelctx"
)

// gitTree reads one commit of a local repository for the model context: `git ls-tree` lists a
// directory, `git cat-file` reads a file. Nothing of the working tree is read, so a local
// review reads the instruction files of --base exactly as the App reads the base branch's.
type gitTree struct {
	g      gitRunner
	commit string
}

var _ modelctx.Tree = gitTree{}

func (t gitTree) Commit() string { return t.commit }

// List implements modelctx.Tree.
func (t gitTree) List(ctx context.Context, dir string) ([]modelctx.Entry, error) {
	args := []string{"ls-tree", "-z", t.commit}
	if dir != "" {
		if strings.HasPrefix(dir, "-") {
			return nil, nil
		}
		args = append(args, "--", dir+"/")
	}
	out, err := t.g.run(ctx, 8<<20, args...)
	if err != nil {
		return nil, err
	}
	var entries []modelctx.Entry
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 3 {
			continue
		}
		entries = append(entries, modelctx.Entry{Name: path.Base(name), Dir: f[1] == "tree"})
	}
	return entries, nil
}

// Read implements modelctx.Tree.
func (t gitTree) Read(ctx context.Context, p string, limit int) ([]byte, bool, error) {
	if strings.ContainsAny(p, "\n\r") {
		return nil, false, nil
	}
	info, err := t.g.runInput(ctx, t.commit+":"+p+"\n", 4096, "cat-file", "--batch-check")
	if err != nil {
		return nil, false, err
	}
	f := strings.Fields(string(info))
	if len(f) != 3 || f[1] != "blob" {
		return nil, false, nil // "<object> missing", or a directory
	}
	size, err := strconv.Atoi(f[2])
	if err != nil {
		return nil, false, fmt.Errorf("git cat-file: unexpected size %q", f[2])
	}
	if size > limit {
		return nil, true, modelctx.ErrTooLarge
	}
	data, err := t.g.run(ctx, limit, "cat-file", "blob", f[0])
	if errors.Is(err, ErrUnusableInput) && data == nil {
		return nil, true, err
	}
	return data, true, err
}

// localContextSources reads the instruction files from the base revision and the code from
// the head. A local review has no forge, so no linked issue is read.
func localContextSources(g gitRunner, base, head string) *modelctx.Sources {
	return &modelctx.Sources{Base: gitTree{g: g, commit: base}, Head: gitTree{g: g, commit: head}}
}
