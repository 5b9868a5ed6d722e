package eval_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/eval"
)

// TestImportMartian reads a golden-comment file in the benchmark's format: one case per pull
// request, reviewed from the merge base of the default branch and the pull request's head ref,
// with the comments as defects known only by their description.
func TestImportMartian(t *testing.T) {
	repos := t.TempDir()
	shop := filepath.Join(repos, "shop")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", shop, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+repos)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(shop, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "Base")
	git("update-ref", "refs/pull/12/head", "HEAD")
	fork := t.TempDir()
	c, warnings, err := eval.ImportMartian(context.Background(), []string{"testdata/martian/shop.json"},
		eval.MartianOptions{Repos: repos, RepoDirs: map[string]string{"example-org/shop-fork": fork}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cases) != 2 {
		t.Fatalf("cases %+v", c.Cases)
	}
	a, b := c.Cases[0], c.Cases[1]
	if a.ID != "shop-12" || a.Repo != shop || a.Head != "refs/pull/12/head" || a.Base != "HEAD" || !a.MergeBase ||
		a.Title != "Checkout: apply discount codes before tax" || len(a.Golden) != 2 || a.Golden[0].Severity != review.SeverityMedium ||
		a.Golden[1].Severity != review.SeverityHigh || a.Golden[0].Located() || !strings.HasPrefix(a.Golden[0].Description, "The discount") {
		t.Errorf("first case %+v", a)
	}
	if b.ID != "shop-fork-3" || b.Repo != fork || b.Golden[0].Severity != review.SeverityCritical || b.Golden[1].Severity != review.SeverityLow ||
		b.Provenance == nil || !strings.Contains(b.Provenance.Note, "https://github.com/example-org/shop/pull/40") ||
		b.Provenance.URL != "https://github.com/example-org/shop-fork/pull/3" {
		t.Errorf("second case %+v %+v", b, b.Provenance)
	}
	// The first repository has both revisions; the fork directory is no repository.
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "shop-fork-3: ") {
		t.Errorf("warnings %q", warnings)
	}
	// The manifest it writes reads back as the same corpus.
	var buf bytes.Buffer
	if err := c.WriteYAML(&buf); err != nil {
		t.Fatal(err)
	}
	again, err := eval.Parse(buf.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if len(again.Cases) != 2 || again.Cases[1].Golden[0].Description != b.Golden[0].Description {
		t.Errorf("round trip %+v", again.Cases)
	}
}

func TestImportMartianRejectsBadFiles(t *testing.T) {
	for name, body := range map[string]string{
		"not an array":    `{"pr_title":"x"}`,
		"not a PR URL":    `[{"pr_title":"x","url":"https://github.com/o/r/issues/1","comments":[{"comment":"c","severity":"Low"}]}]`,
		"not GitHub":      `[{"pr_title":"x","url":"https://example.com/o/r/pull/1","comments":[{"comment":"c","severity":"Low"}]}]`,
		"unknown level":   `[{"pr_title":"x","url":"https://github.com/o/r/pull/1","comments":[{"comment":"c","severity":"Blocker"}]}]`,
		"empty comment":   `[{"pr_title":"x","url":"https://github.com/o/r/pull/1","comments":[{"comment":" ","severity":"Low"}]}]`,
		"no comments":     `[{"pr_title":"x","url":"https://github.com/o/r/pull/1","comments":[]}]`,
		"same PR twice":   `[{"pr_title":"x","url":"https://github.com/o/r/pull/1","comments":[{"comment":"c","severity":"Low"}]},{"pr_title":"y","url":"https://github.com/o/r/pull/1","comments":[{"comment":"c","severity":"Low"}]}]`,
		"number not a PR": `[{"pr_title":"x","url":"https://github.com/o/r/pull/abc","comments":[{"comment":"c","severity":"Low"}]}]`,
	} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "golden.json")
			if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, _, err := eval.ImportMartian(context.Background(), []string{f}, eval.MartianOptions{Repos: t.TempDir()}); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
