package pull

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/review/modelctx"
)

// ContentsTree reads one revision of a repository through GitHub's contents API for the model
// context: a directory listing per List, one file per Read, each under the Fetcher's retries.
type ContentsTree struct {
	Fetch       Fetcher
	Client      *github.Client
	Owner, Repo string
	// Ref is the revision: a commit SHA, or "" for the default branch.
	Ref string
}

var _ modelctx.Tree = ContentsTree{}

// Commit implements modelctx.Tree: the SHA read, or "default branch".
func (t ContentsTree) Commit() string {
	if t.Ref == "" {
		return "default branch"
	}
	return t.Ref
}

// List implements modelctx.Tree; a missing directory (or repository) has no entries.
func (t ContentsTree) List(ctx context.Context, dir string) ([]modelctx.Entry, error) {
	var out []modelctx.Entry
	err := t.Fetch.Do(ctx, fmt.Sprintf("list %q at %s", dir, t.Commit()), func(ctx context.Context) error {
		out = nil
		fc, entries, _, err := t.Client.Repositories.GetContents(ctx, t.Owner, t.Repo, dir, &github.RepositoryContentGetOptions{Ref: t.Ref})
		if IsNotFound(err) || err == nil && fc != nil {
			return nil // absent, or a file of that name
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			switch e.GetType() {
			case "file":
				out = append(out, modelctx.Entry{Name: e.GetName()})
			case "dir":
				out = append(out, modelctx.Entry{Name: e.GetName(), Dir: true})
			}
		}
		return nil
	})
	return out, err
}

// Read implements modelctx.Tree. The size is checked before the content is decoded.
func (t ContentsTree) Read(ctx context.Context, path string, limit int) ([]byte, bool, error) {
	data, found, large, err := t.Fetch.FileUpTo(ctx, t.Client, t.Owner, t.Repo, path, t.Ref, max(limit, 1))
	if err == nil && large {
		return nil, true, modelctx.ErrTooLarge
	}
	return data, found, err
}

// IssueReader reads the reviewed repository's issues for the model context.
type IssueReader struct {
	Fetch       Fetcher
	Client      *github.Client
	Owner, Repo string
}

var _ modelctx.IssueReader = IssueReader{}

// Issue implements modelctx.IssueReader: a missing or deleted issue, and a pull request (which
// GitHub's issues API also answers), are not linked issues.
func (r IssueReader) Issue(ctx context.Context, number int) (modelctx.Issue, bool, error) {
	is, err := r.Fetch.GetIssue(ctx, r.Client, r.Owner, r.Repo, number)
	var ge *github.ErrorResponse
	if IsNotFound(err) || errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusGone {
		return modelctx.Issue{}, false, nil
	}
	if err != nil {
		return modelctx.Issue{}, false, err
	}
	if is.IsPullRequest() {
		return modelctx.Issue{}, false, nil
	}
	return modelctx.NewIssue(number, is.GetTitle(), is.GetBody()), true, nil
}
