package review

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/lensgate/lensgate/review/runtime"
)

// maxLocalDiffBytes bounds the diff read from a local repository.
const maxLocalDiffBytes = 512 << 20

// LocalSubject builds a pull-request subject from a local git repository: the change from
// base to head (head defaults to HEAD), as "git diff base head" shows it. The title and body
// come from the head commit's message.
func LocalSubject(ctx context.Context, dir, base, head string) (*Subject, error) {
	if head == "" {
		head = "HEAD"
	}
	if strings.HasPrefix(base, "-") || strings.HasPrefix(head, "-") {
		return nil, fmt.Errorf("%w: a revision may not start with '-'", ErrUnusableInput)
	}
	g := gitRunner{dir: dir}
	if _, err := g.run(ctx, 4096, "rev-parse", "--git-dir"); err != nil {
		return nil, fmt.Errorf("%q is not a git repository: %w", dir, err)
	}
	baseSHA, err := g.revParse(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	headSHA, err := g.revParse(ctx, head)
	if err != nil {
		return nil, fmt.Errorf("head: %w", err)
	}
	d, err := g.run(ctx, maxLocalDiffBytes, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "--full-index",
		baseSHA, headSHA, "--")
	if err != nil {
		return nil, err
	}
	s := Subject{
		Kind: KindPullRequest, BaseRef: base, HeadRef: head, BaseSHA: baseSHA, HeadSHA: headSHA,
		Diff: d, Local: true, OpenPRsByAuthor: -1,
	}
	if top, err := g.run(ctx, 4096, "rev-parse", "--show-toplevel"); err == nil {
		s.Repo = lastSegment(strings.TrimSpace(string(top)))
	}
	msg, err := g.run(ctx, 1<<20, "log", "-1", "--format=%B", headSHA)
	if err == nil {
		title, body, _ := strings.Cut(strings.TrimSpace(string(msg)), "\n")
		s.Title, s.Body = strings.TrimSpace(title), strings.TrimSpace(body)
	}
	if author, err := g.run(ctx, 4096, "log", "-1", "--format=%an", headSHA); err == nil {
		s.Author = strings.TrimSpace(string(author))
	}
	if log, err := g.run(ctx, 16<<20, "log", "--no-merges", "--format=%H%x00%B%x1e", baseSHA+".."+headSHA); err == nil {
		for _, rec := range strings.Split(string(log), "\x1e") {
			sha, m, ok := strings.Cut(strings.TrimLeft(rec, "\n"), "\x00")
			if ok {
				s.Commits = append(s.Commits, Commit{SHA: sha, Message: strings.TrimSpace(m)})
			}
		}
	}
	files, err := g.files(ctx, baseSHA, headSHA)
	if err != nil {
		return nil, err
	}
	s.Files = files
	s.ContextSources = localContextSources(g, baseSHA, headSHA)
	return &s, nil
}

type gitRunner struct{ dir string }

func (g gitRunner) run(ctx context.Context, limit int, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", g.dir, "-c", "core.quotePath=false"}, args...)...)
	var out bytes.Buffer
	var stderr bytes.Buffer
	cmd.Stdout = &limitWriter{w: &out, n: limit}
	cmd.Stderr = &limitWriter{w: &stderr, n: 4096}
	if err := cmd.Run(); err != nil {
		var lw *limitWriter
		if lw, _ = cmd.Stdout.(*limitWriter); lw != nil && lw.over {
			return nil, fmt.Errorf("%w: git %s output exceeds %d bytes", ErrUnusableInput, args[0], limit)
		}
		return nil, fmt.Errorf("%w: git %s: %s", ErrUnusableInput, args[0], strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}

func (g gitRunner) revParse(ctx context.Context, rev string) (string, error) {
	out, err := g.run(ctx, 4096, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("%w: %q names no commit in %s (a branch, tag, SHA or HEAD~N is expected)",
			ErrUnusableInput, rev, g.dir)
	}
	return strings.TrimSpace(string(out)), nil
}

// files lists the changed files with their status, line counts, binary flag and head size.
func (g gitRunner) files(ctx context.Context, base, head string) ([]File, error) {
	ns, err := g.run(ctx, 64<<20, "diff", "--no-color", "-M", "--name-status", "-z", base, head, "--")
	if err != nil {
		return nil, err
	}
	num, err := g.run(ctx, 64<<20, "diff", "--no-color", "-M", "--numstat", "-z", base, head, "--")
	if err != nil {
		return nil, err
	}
	var files []File
	fields := strings.Split(strings.TrimSuffix(string(ns), "\x00"), "\x00")
	for i := 0; i < len(fields); {
		st := fields[i]
		if st == "" {
			i++
			continue
		}
		f := File{}
		switch st[0] {
		case 'R', 'C':
			if i+2 >= len(fields) {
				return files, nil
			}
			f.PreviousPath, f.Path = fields[i+1], fields[i+2]
			f.Status = FileRenamed
			if st[0] == 'C' {
				f.Status = FileCopied
			}
			i += 3
		default:
			if i+1 >= len(fields) {
				return files, nil
			}
			f.Path = fields[i+1]
			switch st[0] {
			case 'A':
				f.Status = FileAdded
			case 'D':
				f.Status = FileRemoved
			default:
				f.Status = FileModified
			}
			i += 2
		}
		files = append(files, f)
	}
	stats := parseNumstat(num)
	var query strings.Builder
	var asked []int
	for i := range files {
		if st, ok := stats[files[i].Path]; ok {
			files[i].Additions, files[i].Deletions, files[i].Binary = st.add, st.del, st.binary
		}
		if files[i].Status != FileRemoved && !strings.ContainsAny(files[i].Path, "\n\r") {
			query.WriteString(head + ":" + files[i].Path + "\n")
			asked = append(asked, i)
		}
	}
	if len(asked) > 0 {
		// One cat-file process answers every size: "<oid> <type> <size>" or "<object> missing".
		out, err := g.runInput(ctx, query.String(), 16<<20, "cat-file", "--batch-check")
		if err == nil {
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			for k, line := range lines {
				if k >= len(asked) {
					break
				}
				f := strings.Fields(line)
				if len(f) == 3 {
					files[asked[k]].SizeBytes, _ = strconv.ParseInt(f[2], 10, 64)
				}
			}
		}
	}
	g.workflowContents(ctx, head, files)
	return files, nil
}

// maxWorkflowContents bounds how many changed workflow files are read whole.
const maxWorkflowContents = 50

// workflowContents reads the head version of each changed workflow file, so the workflow
// checks see the whole file and not only the diff hunks. A file that cannot be read is
// reviewed from its diff alone.
func (g gitRunner) workflowContents(ctx context.Context, head string, files []File) {
	n := 0
	for i := range files {
		f := &files[i]
		if f.Status == FileRemoved || f.Binary || !runtime.IsWorkflowPath(f.Path) ||
			f.SizeBytes > runtime.MaxHeadContentBytes || n >= maxWorkflowContents {
			continue
		}
		n++
		if b, err := g.run(ctx, runtime.MaxHeadContentBytes, "cat-file", "blob", head+":"+f.Path); err == nil {
			f.HeadContent = b
		}
	}
}

func (g gitRunner) runInput(ctx context.Context, stdin string, limit int, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", g.dir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &limitWriter{w: &out, n: limit}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: git %s: %v", ErrUnusableInput, args[0], err)
	}
	return out.Bytes(), nil
}

type numstat struct {
	add, del int
	binary   bool
}

// parseNumstat reads "git diff --numstat -z": "add\tdel\tpath\0", or for renames
// "add\tdel\t\0old\0new\0".
func parseNumstat(b []byte) map[string]numstat {
	out := map[string]numstat{}
	fields := strings.Split(string(b), "\x00")
	for i := 0; i < len(fields); i++ {
		parts := strings.SplitN(fields[i], "\t", 3)
		if len(parts) != 3 {
			continue
		}
		st := numstat{}
		if parts[0] == "-" && parts[1] == "-" {
			st.binary = true
		} else {
			st.add, _ = strconv.Atoi(parts[0])
			st.del, _ = strconv.Atoi(parts[1])
		}
		path := parts[2]
		if path == "" && i+2 < len(fields) {
			path = fields[i+2]
			i += 2
		}
		out[path] = st
	}
	return out
}

func lastSegment(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// limitWriter keeps at most n bytes and remembers whether more came.
type limitWriter struct {
	w    *bytes.Buffer
	n    int
	over bool
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.w.Len()+len(p) > l.n {
		l.over = true
		return 0, errors.New("output limit exceeded")
	}
	return l.w.Write(p)
}
