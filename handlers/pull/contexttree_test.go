package pull

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/review/modelctx"
)

// TestContentsTreeAndIssueReader: against the fake GitHub, a revision is listed and read at its
// ref only (another ref's files are not seen), a large file is refused by its size, a missing
// file or directory is absent; an issue is read with its digest, a pull request number and a
// missing issue are not linked issues.
func TestContentsTreeAndIssueReader(t *testing.T) {
	gh := githubfake.New(t)
	gh.AddRepo(githubfake.Repo{Owner: "acme", Name: "widgets"})
	base, head := strings.Repeat("b", 40), strings.Repeat("c", 40)
	gh.SetFile("acme/widgets", base, "AGENTS.md", "base rules\n")
	gh.SetFile("acme/widgets", base, "svc/AGENTS.md", "svc rules\n")
	gh.SetFile("acme/widgets", base, "big.md", strings.Repeat("x", 300<<10))
	gh.SetFile("acme/widgets", head, "AGENTS.md", "head rules\n")
	gh.AddIssue("acme/widgets", githubfake.Issue{Number: 7, Title: "Broken", Body: "It breaks."})
	gh.AddPullRequest("acme/widgets", githubfake.PullRequest{Number: 8, Title: "A pull request"})
	ctx := context.Background()
	f := Fetcher{Attempts: 1}
	tr := ContentsTree{Fetch: f, Client: gh.TokenClient(), Owner: "acme", Repo: "widgets", Ref: base}

	entries, err := tr.List(ctx, "")
	if err != nil || fmt.Sprint(entries) != "[{AGENTS.md false} {big.md false} {svc true}]" {
		t.Fatalf("root: %v %v", entries, err)
	}
	if entries, err := tr.List(ctx, "nowhere"); err != nil || len(entries) != 0 {
		t.Errorf("a missing directory: %v %v", entries, err)
	}
	data, ok, err := tr.Read(ctx, "AGENTS.md", 1<<20)
	if err != nil || !ok || string(data) != "base rules\n" {
		t.Errorf("AGENTS.md at the base: %q %v %v", data, ok, err)
	}
	if _, ok, err := tr.Read(ctx, "big.md", 256<<10); !ok || !errors.Is(err, modelctx.ErrTooLarge) {
		t.Errorf("a large file: %v %v", ok, err)
	}
	if _, ok, err := tr.Read(ctx, "missing.md", 1<<20); ok || err != nil {
		t.Errorf("a missing file: %v %v", ok, err)
	}
	if _, ok, err := tr.Read(ctx, "svc", 1<<20); ok || err != nil {
		t.Errorf("a directory read as a file: %v %v", ok, err)
	}

	ir := IssueReader{Fetch: f, Client: gh.TokenClient(), Owner: "acme", Repo: "widgets"}
	is, ok, err := ir.Issue(ctx, 7)
	if err != nil || !ok || is.Title != "Broken" || is.Body != "It breaks." || is.SHA256 != modelctx.NewIssue(7, "Broken", "It breaks.").SHA256 {
		t.Errorf("issue 7: %+v %v %v", is, ok, err)
	}
	for _, n := range []int{8, 99} {
		if _, ok, err := ir.Issue(ctx, n); ok || err != nil {
			t.Errorf("#%d is not a linked issue: %v %v", n, ok, err)
		}
	}
}
