// Package pull reads a pull request or an issue from GitHub for one review: the snapshot a
// review binds, the conversation (the App's own comments and the commands people wrote), and the
// retry and outage classification every GitHub read shares.
package pull

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/internal/retry"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// Bounds on what a snapshot reads, following GitHub's own caps.
const (
	maxFilePages   = 30 // 3000 files, the list-files API limit
	maxCommitPages = 3  // 250 commits, the list-commits API limit
	maxOpenPRPages = 10
	// PerPage is the page size of every list read.
	PerPage = 100
)

// OperationalError is a GitHub read that kept failing (5xx, 429, rate limits, timeouts) after
// every retry. It is an outage, not a verdict: the review is reported as pending.
type OperationalError struct {
	Op       string
	Attempts int
	Err      error
}

func (e *OperationalError) Error() string {
	return fmt.Sprintf("github unavailable: %s failed after %d attempt(s): %v", e.Op, e.Attempts, e.Err)
}

func (e *OperationalError) Unwrap() error { return e.Err }

// Fetcher reads from GitHub with retries: 5xx, 429, primary and secondary rate limits and
// timeouts are retried with exponential backoff (honouring Retry-After); other 4xx are not.
type Fetcher struct {
	// Attempts is the number of tries per read (at least 1).
	Attempts int
	// InitialBackoff and MaxBackoff shape the exponential backoff; zero takes 500ms and 10s.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
}

// Do runs op under lensgate's retry policy until it succeeds, fails with an answer no repeat
// can change, or runs out of attempts; running out is an *OperationalError (an outage).
func (f Fetcher) Do(ctx context.Context, what string, op func(context.Context) error) error {
	maxWait := f.MaxBackoff
	if maxWait <= 0 {
		maxWait = 10 * time.Second
	}
	policy := retry.Policy{Attempts: f.Attempts, Initial: f.InitialBackoff, MaxWait: maxWait}
	err := retry.Do(ctx, policy, classifyGitHub, func(ctx context.Context, _ int) error { return op(ctx) },
		retry.WithNotify(func(err error, _ int, wait time.Duration) {
			zerolog.Ctx(ctx).Warn().Err(err).Str("op", what).Dur("retry_in", wait).Msg("github read failed, retrying")
		}))
	var ex *retry.ExhaustedError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, err)
	case errors.As(err, &ex):
		return &OperationalError{Op: what, Attempts: ex.Attempts, Err: ex.Err}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// classifyGitHub is retry.GitHub, except that a removed installation is final: its token
// exchange fails like a network error, but it is an answer.
func classifyGitHub(err error) retry.Verdict {
	if InstallationGone(err) {
		return retry.Final()
	}
	return retry.GitHub(err)
}

// InstallationGone reports a token exchange GitHub answered 404: the installation was removed
// (or suspended) since the event was sent. No retry can succeed.
func InstallationGone(err error) bool {
	var he *ghinstallation.HTTPError
	return errors.As(err, &he) && he.Response != nil && he.Response.StatusCode == http.StatusNotFound
}

// isNotFound reports a 404 from GitHub.
func IsNotFound(err error) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound
}

// PullSnapshot is what one review reads from GitHub about a pull request.
type PullSnapshot struct {
	PR      *github.PullRequest
	Diff    []byte
	Files   []*github.CommitFile
	Commits []*github.RepositoryCommit
	// OpenPRsByAuthor is -1 when not counted.
	OpenPRsByAuthor int
	// FilesTruncated is set when the file list hit GitHub's 3000-file cap; Unlisted counts the
	// changed files beyond it.
	FilesTruncated bool
	Unlisted       int
	// UnlistedPaths names them, from the git trees of the merge base and the head (nil when
	// the trees could not be read).
	UnlistedPaths []string
	// DiffTooLarge is set when GitHub refused the diff media type as too large; the review then
	// works from the per-file patches.
	DiffTooLarge bool
	// HeadContents holds the whole head revision of changed CI workflows (path -> bytes), so a
	// trigger far from the changed lines is still seen. A file that could not be read is absent.
	HeadContents map[string][]byte
}

// maxWorkflowContents bounds the workflow files read whole per pull request.
const maxWorkflowContents = 50

// isDiffTooLarge reports GitHub's refusal to render a diff over its size limits (406, or 422
// with code too_large).
func isDiffTooLarge(err error) bool {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil {
		return false
	}
	if er.Response.StatusCode == http.StatusNotAcceptable {
		return true
	}
	for _, e := range er.Errors {
		if e.Code == "too_large" {
			return true
		}
	}
	return false
}

// GetPull reads a pull request.
func (f Fetcher) GetPull(ctx context.Context, c *github.Client, owner, repo string, number int) (*github.PullRequest, error) {
	var pr *github.PullRequest
	err := f.Do(ctx, fmt.Sprintf("get pull request %s/%s#%d", owner, repo, number), func(ctx context.Context) error {
		var err error
		pr, _, err = c.PullRequests.Get(ctx, owner, repo, number)
		return err
	})
	return pr, err
}

// GetIssue reads an issue.
func (f Fetcher) GetIssue(ctx context.Context, c *github.Client, owner, repo string, number int) (*github.Issue, error) {
	var is *github.Issue
	err := f.Do(ctx, fmt.Sprintf("get issue %s/%s#%d", owner, repo, number), func(ctx context.Context) error {
		var err error
		is, _, err = c.Issues.Get(ctx, owner, repo, number)
		return err
	})
	return is, err
}

// PullSnapshot reads the diff (exact bytes of the diff media type), files and commits of pr,
// and counts the author's open pull requests when countOpen is set.
func (f Fetcher) PullSnapshot(ctx context.Context, c *github.Client, pr *github.PullRequest, countOpen bool) (*PullSnapshot, error) {
	owner, repo, n := pr.GetBase().GetRepo().GetOwner().GetLogin(), pr.GetBase().GetRepo().GetName(), pr.GetNumber()
	s := &PullSnapshot{PR: pr, OpenPRsByAuthor: -1}
	err := f.Do(ctx, fmt.Sprintf("get diff of %s/%s#%d", owner, repo, n), func(ctx context.Context) error {
		raw, _, err := c.PullRequests.GetRaw(ctx, owner, repo, n, github.RawOptions{Type: github.Diff})
		s.Diff = []byte(raw)
		return err
	})
	switch {
	case isDiffTooLarge(err):
		s.Diff, s.DiffTooLarge = nil, true
		zerolog.Ctx(ctx).Warn().Msg("diff too large for GitHub's diff media type; reviewing the per-file patches")
	case err != nil:
		return nil, err
	}
	if !s.DiffTooLarge {
		// The diff holds every file's status, counts and patch: the files list would only
		// repeat it, so it is read only when GitHub refuses the diff.
		s.Files = filesFromDiff(s.Diff)
	}
	for page := 1; s.DiffTooLarge && page != 0 && page <= maxFilePages; {
		var files []*github.CommitFile
		var resp *github.Response
		err := f.Do(ctx, fmt.Sprintf("list files of %s/%s#%d page %d", owner, repo, n, page), func(ctx context.Context) error {
			var err error
			files, resp, err = c.PullRequests.ListFiles(ctx, owner, repo, n, &github.ListOptions{Page: page, PerPage: PerPage})
			return err
		})
		if err != nil {
			return nil, err
		}
		s.Files = append(s.Files, files...)
		page = resp.NextPage
		if page > maxFilePages {
			s.FilesTruncated = true
		}
	}
	for page := 1; page != 0 && page <= maxCommitPages; {
		var commits []*github.RepositoryCommit
		var resp *github.Response
		err := f.Do(ctx, fmt.Sprintf("list commits of %s/%s#%d page %d", owner, repo, n, page), func(ctx context.Context) error {
			var err error
			commits, resp, err = c.PullRequests.ListCommits(ctx, owner, repo, n, &github.ListOptions{Page: page, PerPage: PerPage})
			return err
		})
		if err != nil {
			return nil, err
		}
		s.Commits = append(s.Commits, commits...)
		page = resp.NextPage
	}
	// GitHub stops listing at 3,000 files without saying so; the pull request's own count tells.
	if n := pr.GetChangedFiles(); n > len(s.Files) {
		s.FilesTruncated = true
		s.Unlisted = n - len(s.Files)
		names, err := f.unlistedPaths(ctx, c, owner, repo, pr, s.Files)
		if err != nil {
			// The files are still counted and named as one gap; only their names are missing.
			zerolog.Ctx(ctx).Warn().Err(err).Int("unlisted", s.Unlisted).Msg("files beyond GitHub's list could not be named")
		}
		s.UnlistedPaths = names
	}
	s.HeadContents = f.workflowContents(ctx, c, owner, repo, pr.GetHead().GetSHA(), s.Files)
	if countOpen {
		author := pr.GetUser().GetLogin()
		count := 0
		for page := 1; page != 0 && page <= maxOpenPRPages; {
			var prs []*github.PullRequest
			var resp *github.Response
			err := f.Do(ctx, fmt.Sprintf("list open pull requests of %s/%s", owner, repo), func(ctx context.Context) error {
				var err error
				prs, resp, err = c.PullRequests.List(ctx, owner, repo, &github.PullRequestListOptions{
					State: "open", ListOptions: github.ListOptions{Page: page, PerPage: PerPage}})
				return err
			})
			if err != nil {
				return nil, err
			}
			for _, p := range prs {
				if strings.EqualFold(p.GetUser().GetLogin(), author) {
					count++
				}
			}
			page = resp.NextPage
		}
		s.OpenPRsByAuthor = count
	}
	return s, nil
}

// filesFromDiff describes a diff's files as the files API does: name, previous name, status,
// additions and deletions, and the patch (the hunks; none for a binary file).
func filesFromDiff(b []byte) []*github.CommitFile {
	var out []*github.CommitFile
	for _, f := range diff.Parse(b) {
		cf := &github.CommitFile{
			Filename: github.String(f.Path()), Status: github.String(f.Status),
			Additions: github.Int(f.Added), Deletions: github.Int(f.Deleted), Changes: github.Int(f.Added + f.Deleted),
		}
		if (f.Status == diff.Renamed || f.Status == diff.Copied) && f.OldPath != "" {
			cf.PreviousFilename = github.String(f.OldPath)
		}
		if i := bytes.Index(f.Raw, []byte("\n@@")); i >= 0 && !f.Binary {
			cf.Patch = github.String(strings.TrimSuffix(string(f.Raw[i+1:]), "\n"))
		} else if bytes.HasPrefix(f.Raw, []byte("@@")) && !f.Binary {
			cf.Patch = github.String(strings.TrimSuffix(string(f.Raw), "\n"))
		}
		out = append(out, cf)
	}
	return out
}

// workflowContents reads changed workflow files whole at the head commit (GitHub serves a pull
// request's head through the base repository, forks included). A read failure or a file over
// runtime.MaxHeadContentBytes leaves the file to its diff hunks; it never fails the snapshot.
func (f Fetcher) workflowContents(ctx context.Context, c *github.Client, owner, repo, head string, files []*github.CommitFile) map[string][]byte {
	out := map[string][]byte{}
	for _, file := range files {
		path := file.GetFilename()
		if file.GetStatus() == review.FileRemoved || !runtime.IsWorkflowPath(path) || head == "" {
			continue
		}
		if len(out) >= maxWorkflowContents {
			zerolog.Ctx(ctx).Info().Int("limit", maxWorkflowContents).Msg("more changed workflows than are read whole; the rest are reviewed from their diff")
			break
		}
		data, found, err := f.FileAt(ctx, c, owner, repo, path, head)
		switch {
		case err != nil:
			zerolog.Ctx(ctx).Warn().Err(err).Msg("a changed workflow could not be read whole; reviewed from its diff")
		case found && len(data) <= runtime.MaxHeadContentBytes:
			out[path] = data
		}
	}
	return out
}

// FileAt reads a file at ref; found is false for a 404.
func (f Fetcher) FileAt(ctx context.Context, c *github.Client, owner, repo, path, ref string) (data []byte, found bool, err error) {
	data, found, _, err = f.FileUpTo(ctx, c, owner, repo, path, ref, 0)
	return data, found, err
}

// FileUpTo reads a file at ref when it holds at most limit bytes (0: any size). found is false
// for a 404 and for a directory, submodule or link of that name; a larger file is found and
// tooLarge, with no data: its size is checked before its content is decoded.
func (f Fetcher) FileUpTo(ctx context.Context, c *github.Client, owner, repo, path, ref string, limit int) (data []byte, found, tooLarge bool, err error) {
	err = f.Do(ctx, fmt.Sprintf("read %s at %s", path, ref), func(ctx context.Context) error {
		fc, _, _, err := c.Repositories.GetContents(ctx, owner, repo, path, &github.RepositoryContentGetOptions{Ref: ref})
		switch {
		case IsNotFound(err):
			return nil
		case err != nil:
			return err
		case fc == nil, fc.Type != nil && fc.GetType() != "file":
			return nil
		}
		found = true
		if limit > 0 && fc.GetSize() > limit {
			tooLarge = true
			return nil
		}
		s, err := fc.GetContent()
		if err != nil {
			return fmt.Errorf("decode %s: %w", path, err) // not a GitHub failure: final
		}
		data = []byte(s)
		return nil
	})
	return data, found, tooLarge, err
}

// BindPull turns a snapshot into the review subject: identifiers and SHAs from the fresh pull
// request, the exact diff bytes, files, commits and labels.
func BindPull(s *PullSnapshot) *review.Subject {
	pr := s.PR
	subj := &review.Subject{
		Kind:             review.KindPullRequest,
		Owner:            pr.GetBase().GetRepo().GetOwner().GetLogin(),
		Repo:             pr.GetBase().GetRepo().GetName(),
		Number:           pr.GetNumber(),
		RepositoryNodeID: pr.GetBase().GetRepo().GetNodeID(),
		NodeID:           pr.GetNodeID(),
		Title:            pr.GetTitle(),
		Body:             pr.GetBody(),
		Author:           pr.GetUser().GetLogin(),
		AuthorIsBot:      IsBot(pr.GetUser()),
		Draft:            pr.GetDraft(),
		BaseRef:          pr.GetBase().GetRef(),
		HeadRef:          pr.GetHead().GetRef(),
		BaseSHA:          pr.GetBase().GetSHA(),
		HeadSHA:          pr.GetHead().GetSHA(),
		Diff:             s.Diff,
		OpenPRsByAuthor:  s.OpenPRsByAuthor,
		UnlistedFiles:    s.Unlisted,
		UnlistedPaths:    s.UnlistedPaths,
	}
	for _, l := range pr.Labels {
		subj.Labels = append(subj.Labels, l.GetName())
	}
	for _, c := range s.Commits {
		subj.Commits = append(subj.Commits, review.Commit{SHA: c.GetSHA(), Message: c.GetCommit().GetMessage()})
	}
	for _, f := range s.Files {
		subj.Files = append(subj.Files, review.File{
			Path:         f.GetFilename(),
			PreviousPath: f.GetPreviousFilename(),
			Status:       f.GetStatus(),
			Additions:    f.GetAdditions(),
			Deletions:    f.GetDeletions(),
			Patch:        f.GetPatch(),
			BlobSHA:      blobSHA(f.GetSHA()),
			// GitHub omits the patch of binary files (and of very large ones).
			Binary:      f.Patch == nil && f.GetChanges() == 0 && f.GetStatus() != review.FileRemoved,
			HeadContent: s.HeadContents[f.GetFilename()],
		})
	}
	return subj
}

// blobSHA keeps a blob SHA only in git's forms (40 or 64 lowercase hex); anything else is
// left out and the observation falls back to the digest of the file's diff section.
func blobSHA(s string) string {
	if (len(s) != 40 && len(s) != 64) || strings.Trim(s, "0123456789abcdef") != "" {
		return ""
	}
	return s
}

// BindIssue turns an issue into the triage subject.
func BindIssue(owner, repo, repoNodeID string, is *github.Issue) *review.Subject {
	subj := &review.Subject{
		Kind:             review.KindIssue,
		Owner:            owner,
		Repo:             repo,
		Number:           is.GetNumber(),
		RepositoryNodeID: repoNodeID,
		NodeID:           is.GetNodeID(),
		Title:            is.GetTitle(),
		Body:             is.GetBody(),
		Author:           is.GetUser().GetLogin(),
		AuthorIsBot:      IsBot(is.GetUser()),
		OpenPRsByAuthor:  -1,
	}
	for _, l := range is.Labels {
		subj.Labels = append(subj.Labels, l.GetName())
	}
	return subj
}

func IsBot(u *github.User) bool {
	return u.GetType() == "Bot" || strings.HasSuffix(u.GetLogin(), "[bot]")
}
