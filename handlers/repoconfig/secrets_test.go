package repoconfig_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/repoconfig"
	"github.com/lensgate/lensgate/internal/githubfake"
)

// The repository's gitleaks files come from the ref the policy is read at (the base branch),
// never from another ref such as a pull request's head; a file over the bound is not applied and
// says so; the shared server default is never changed.
func TestGitleaksFilesFromTheBaseBranch(t *testing.T) {
	gh := githubfake.New(t)
	gh.AddRepo(githubfake.Repo{Owner: "acme", Name: "app", DefaultBranch: "main"})
	gh.SetFile("acme/app", "main", ".gitleaksignore", "config/app.env:github-pat:2\n")
	gh.SetFile("acme/app", "main", ".gitleaks.toml", "[[allowlists]]\npaths = ['''^docs/''']\n")
	gh.SetFile("acme/app", "feature", ".gitleaksignore", "src/notify.py:slack-bot-token:10\n")
	gh.SetFile("acme/app", "feature", ".gitleaks.toml", "[[allowlists]]\npaths = ['''.*''']\n")
	gh.SetFile("acme/app", "big", ".gitleaksignore", strings.Repeat("x", config.MaxGitleaksFileBytes+1))
	fallback := config.DefaultRepo()
	l := repoconfig.NewConfigLoader("", fallback, nil, nil)
	client := gh.InstallationClient(t)

	tc, err := l.Load(context.Background(), client, 1, "acme", "app", "main")
	if err != nil {
		t.Fatal(err)
	}
	s := tc.Repo.Secrets
	if string(s.Ignore) != "config/app.env:github-pat:2\n" || !strings.Contains(string(s.Config), "^docs/") || s.Problems != "" {
		t.Fatalf("secrets settings %+v", s)
	}
	if fallback.Secrets.Ignore != nil || fallback.Secrets.Config != nil {
		t.Fatal("the server default was changed")
	}
	tc, err = l.Load(context.Background(), client, 1, "acme", "app", "big")
	if err != nil {
		t.Fatal(err)
	}
	if tc.Repo.Secrets.Ignore != nil || !strings.Contains(tc.Repo.Secrets.Problems, ".gitleaksignore is larger than") {
		t.Fatalf("oversized file: %+v", tc.Repo.Secrets.Problems)
	}
}
