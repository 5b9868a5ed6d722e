package eval

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Fixture layout: the files of the base revision under base/, the change as a git patch.
const (
	fixtureBase  = "base"
	fixturePatch = "change.patch"
)

// maxFixtureBytes bounds the files of one fixture.
const maxFixtureBytes = 64 << 20

// checkout is a change ready to review: a git repository and two revisions.
type checkout struct {
	dir, base, head string
	// cleanup removes a repository built from a fixture (nil for a repository of the corpus).
	cleanup func()
}

// buildFixture makes a throw-away git repository from a fixture directory: one commit with the
// base files, and one with the patch applied whose message is the case's title. Author, committer
// and dates are fixed, so the same fixture always gives the same commits.
func buildFixture(ctx context.Context, fixture, title string) (*checkout, error) {
	tmp, err := os.MkdirTemp("", "lensgate-eval-")
	if err != nil {
		return nil, fmt.Errorf("fixture %s: %w", fixture, err)
	}
	co := &checkout{dir: tmp, base: "HEAD~1", head: "HEAD", cleanup: func() { _ = os.RemoveAll(tmp) }}
	fail := func(err error) (*checkout, error) {
		co.cleanup()
		return nil, fmt.Errorf("fixture %s: %w", fixture, err)
	}
	if err := copyTree(filepath.Join(fixture, fixtureBase), tmp); err != nil {
		return fail(err)
	}
	patch, err := filepath.Abs(filepath.Join(fixture, fixturePatch))
	if err != nil {
		return fail(err)
	}
	if _, err := os.Stat(patch); err != nil {
		return fail(err)
	}
	if strings.TrimSpace(title) == "" {
		title = "Change"
	}
	steps := [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "--allow-empty", "-m", "Base"},
		{"apply", "--index", "--whitespace=nowarn", patch},
		{"commit", "-q", "-m", title},
	}
	for _, args := range steps {
		if err := fixtureGit(ctx, tmp, args...); err != nil {
			return fail(err)
		}
	}
	return co, nil
}

// fixtureGit runs git in a fixture repository, isolated from the user's and the system's git
// configuration (no hooks, no signing, no templates).
func fixtureGit(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "HOME="+dir,
		"GIT_AUTHOR_NAME=lensgate eval", "GIT_AUTHOR_EMAIL=eval@lensgate.invalid",
		"GIT_COMMITTER_NAME=lensgate eval", "GIT_COMMITTER_EMAIL=eval@lensgate.invalid",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// copyTree copies the regular files and directories under src into dst. Anything else (a
// symbolic link, a device) is refused: a fixture is plain files.
func copyTree(src, dst string) error {
	var total int64
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if total += info.Size(); total > maxFixtureBytes {
			return fmt.Errorf("the base files exceed %d bytes", maxFixtureBytes)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
