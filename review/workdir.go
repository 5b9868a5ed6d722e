package review

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lensgate/lensgate/review/diff"
)

// Work directory file names (the ASDD runtime contract plus lensgate's additions).
const (
	FileTitle   = "title.txt"
	FileBody    = "body.md"
	FileAuthor  = "author.txt"
	FileDiff    = "changes.diff"
	FileMeta    = "meta.env"
	FileLabels  = "labels.txt"
	FileCommits = "commits.txt"
	FileChanged = "changed.txt"
)

// workDir is a private directory of untrusted data files, removed by Close.
type workDir struct {
	path string
}

// newWorkDir writes the subject's untrusted data into a fresh private directory under root
// ("" for the system temporary directory). files is the part of the diff sent to runtimes.
func newWorkDir(root string, s *Subject, files []diff.File, meta map[string]string) (*workDir, error) {
	dir, err := os.MkdirTemp(root, "lensgate-work-")
	if err != nil {
		return nil, fmt.Errorf("create work directory: %w", err)
	}
	w := &workDir{path: dir}
	if err := os.Chmod(dir, 0o700); err != nil {
		w.Close()
		return nil, fmt.Errorf("restrict work directory: %w", err)
	}
	write := func(name string, data []byte) error {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		return nil
	}
	var labels, commits, changed bytes.Buffer
	for _, l := range s.Labels {
		labels.WriteString(oneLine(l))
		labels.WriteByte('\n')
	}
	for i, c := range s.Commits {
		if i > 0 {
			commits.WriteByte('\n')
		}
		commits.WriteString(c.Message)
		commits.WriteByte(0)
	}
	for _, f := range s.Files {
		changed.WriteString(statusLetter(f.Status))
		if f.PreviousPath != "" && (f.Status == FileRenamed || f.Status == FileCopied) {
			changed.WriteByte('\t')
			changed.WriteString(oneLine(f.PreviousPath))
		}
		changed.WriteByte('\t')
		changed.WriteString(oneLine(f.Path))
		changed.WriteByte('\n')
	}
	var m bytes.Buffer
	for _, k := range []string{"pr_number", "base_sha", "head_sha", "require_spec", "max_open_prs", "open_pr_count", "override"} {
		if v, ok := meta[k]; ok {
			fmt.Fprintf(&m, "%s=%s\n", k, oneLine(v))
		}
	}
	steps := []struct {
		name string
		data []byte
	}{
		{FileTitle, []byte(s.Title)},
		{FileBody, []byte(s.Body)},
		{FileAuthor, []byte(oneLine(s.Author))},
		{FileMeta, m.Bytes()},
		{FileLabels, labels.Bytes()},
		{FileCommits, commits.Bytes()},
		{FileChanged, changed.Bytes()},
	}
	for _, st := range steps {
		if err := write(st.name, st.data); err != nil {
			w.Close()
			return nil, err
		}
	}
	if err := writeDiff(filepath.Join(dir, FileDiff), files); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// writeDiff streams the files' sections to disk without building the whole diff in memory.
func writeDiff(path string, files []diff.File) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", FileDiff, err)
	}
	for i := range files {
		if _, err := f.Write(files[i].Raw); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", FileDiff, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", FileDiff, err)
	}
	return nil
}

// Close removes the directory and everything in it.
func (w *workDir) Close() error {
	if w == nil || w.path == "" {
		return nil
	}
	err := os.RemoveAll(w.path)
	w.path = ""
	return err
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == 0 {
			return ' '
		}
		return r
	}, s)
}

func statusLetter(status string) string {
	switch status {
	case FileAdded:
		return "A"
	case FileRemoved:
		return "D"
	case FileRenamed:
		return "R100"
	case FileCopied:
		return "C100"
	}
	return "M"
}

func itoa(n int) string { return strconv.Itoa(n) }
