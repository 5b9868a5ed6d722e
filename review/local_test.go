package review

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.invalid",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestLocalSubject(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, dir, "init", "-q", "-b", "main")
	write("docs/old name.md", []byte(strings.Repeat("a stable line of text\n", 20)))
	write("gone.txt", []byte("bye\n"))
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "base")
	gitIn(t, dir, "mv", "docs/old name.md", "docs/new name.md")
	gitIn(t, dir, "rm", "-q", "gone.txt")
	write("logo.png", append([]byte{0x89, 'P', 'N', 'G', 0}, make([]byte, 3000)...))
	write("café.go", []byte("package x\n"))
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "Reorganise docs\n\nMoves the guide and adds a logo.")

	s, err := LocalSubject(context.Background(), dir, "HEAD~1", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Title != "Reorganise docs" || s.Body != "Moves the guide and adds a logo." || !s.Local || len(s.HeadSHA) != 40 || len(s.Commits) != 1 {
		t.Fatalf("subject %+v", s)
	}
	byPath := map[string]File{}
	for _, f := range s.Files {
		byPath[f.Path] = f
	}
	if f := byPath["docs/new name.md"]; f.Status != FileRenamed || f.PreviousPath != "docs/old name.md" {
		t.Errorf("rename %+v", f)
	}
	if f := byPath["gone.txt"]; f.Status != FileRemoved {
		t.Errorf("removal %+v", f)
	}
	if f := byPath["logo.png"]; !f.Binary || f.SizeBytes != 3005 || f.Status != FileAdded {
		t.Errorf("binary %+v", f)
	}
	if f := byPath["café.go"]; f.Status != FileAdded || f.Additions != 1 {
		t.Errorf("non-ASCII path %+v (all: %+v)", f, s.Files)
	}
	d, err := newTestPipeline(builtin.New(builtin.Options{})).Review(context.Background(), s, config.DefaultRepo())
	if err != nil {
		t.Fatal(err)
	}
	if d.Coverage.Status != CoveragePartial || len(d.Coverage.Gaps) != 1 || d.Coverage.Gaps[0].Path != "logo.png" {
		t.Fatalf("coverage %+v", d.Coverage)
	}
	if _, err := LocalSubject(context.Background(), dir, "-x", ""); err == nil {
		t.Fatal("option-like revision accepted")
	}
}

// A forge snapshot may carry per-file patches instead of one diff.
func TestPatchesWithoutDiff(t *testing.T) {
	key := "-----BEGIN " + "EC PRIVATE KEY-----"
	s := prSubject()
	s.Diff = nil
	s.Files = []File{
		{Path: "k.pem", Status: FileAdded, Patch: "@@ -0,0 +1,4 @@\n+" + key + "\n+" + strings.Repeat("MHcCAQEEIBkg4LVWM9nuwNSk", 3) +
			"\n+" + strings.Repeat("AwEHoUQDQgAE", 5) + "\n+-----END EC PRIVATE KEY-----"},
		{Path: "README.md", Status: FileModified, Patch: "@@ -1 +1 @@\n-a\n+b"},
	}
	d, err := newTestPipeline(builtin.New(builtin.Options{})).Review(context.Background(), s, config.DefaultRepo())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Findings) != 1 || d.Findings[0].Path != "k.pem" || d.Findings[0].Line != 1 || d.Gate.State != OutcomeFailed {
		t.Fatalf("findings %+v gate %s", d.Findings, d.Gate.State)
	}
}

// A local review reads changed workflows whole, so a pull_request_target trigger far above a
// newly added checkout of the pull request's head is seen.
func TestLocalSubjectReadsWholeWorkflows(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wf := "name: ci\non:\n  pull_request_target:\n    types: [opened]\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n" +
		strings.Repeat("      - run: echo step\n", 15) + "      - uses: actions/checkout@v4\n"
	gitIn(t, dir, "init", "-q", "-b", "main")
	write(".github/workflows/ci.yml", wf)
	write("notes.md", "notes\n")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "base")
	write(".github/workflows/ci.yml", wf+"        with:\n          ref: ${{ github.event.pull_request.head.sha }}\n      - run: make\n")
	write("notes.md", "more notes\n")
	gitIn(t, dir, "commit", "-q", "-am", "Build the change")

	s, err := LocalSubject(context.Background(), dir, "HEAD~1", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range s.Files {
		if (f.Path == ".github/workflows/ci.yml") != (f.HeadContent != nil) {
			t.Errorf("%s: head content %d bytes", f.Path, len(f.HeadContent))
		}
	}
	d, err := newTestPipeline(builtin.New(builtin.Options{})).Review(context.Background(), s, config.DefaultRepo())
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, f := range d.Findings {
		rules = append(rules, f.Rule+"@"+f.Path)
	}
	if !slices.Contains(rules, "workflow-pull-request-target-checkout@.github/workflows/ci.yml") || d.Gate.State != OutcomeFailed {
		t.Fatalf("findings %v gate %s", rules, d.Gate.State)
	}
}
