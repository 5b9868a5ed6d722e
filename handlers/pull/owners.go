package pull

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/hmarr/codeowners"

	"github.com/lensgate/lensgate/review"
)

// CodeOwnersPaths are where GitHub looks for a CODEOWNERS file, in its order: the first that
// exists is the one that applies.
var CodeOwnersPaths = []string{".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"}

// MaxCodeOwnersBytes bounds the CODEOWNERS file read: the contents API serves a file's content
// up to 1 MB, and a real CODEOWNERS is a few kilobytes.
const MaxCodeOwnersBytes = 1 << 20

// maxApprovalReviewPages bounds the reviews read (100 a page): a pull request with more reviews
// than that is not judged on a partial list.
const maxApprovalReviewPages = 10

// ApprovalRequest names what OwnerApproval judges: the changed protected files of a pull request
// at its head, with CODEOWNERS read from the base branch BaseRef.
type ApprovalRequest struct {
	Owner, Repo string
	Number      int
	BaseRef     string
	Head        string
	// Author wrote the pull request: their own approval never counts.
	Author string
	Files  []string
}

// OwnerApproval reads who may and who did approve the changed protected files: CODEOWNERS from
// the base branch (never the pull request's copy), the pull request's reviews, the approvers'
// write access and, for team owners, their team membership. A read that fails leaves the
// requirement unmet with the cause; it is never taken for an approval.
func (f Fetcher) OwnerApproval(ctx context.Context, c *github.Client, req ApprovalRequest) *review.OwnerApproval {
	out := &review.OwnerApproval{}
	rules, source, err := f.codeOwners(ctx, c, req.Owner, req.Repo, req.BaseRef)
	if err != nil {
		out.Cause = err.Error()
		return out
	}
	out.Source = source
	reviews, err := f.allReviews(ctx, c, req.Owner, req.Repo, req.Number)
	if err != nil {
		out.Cause = err.Error()
		return out
	}
	j := &approvalJudge{f: f, c: c, req: req, approvers: Approvers(reviews, req.Head, req.Author),
		writes: map[string]bool{}, members: map[string]bool{}}
	for _, path := range req.Files {
		af := review.ApprovalFile{Path: path}
		if rule, err := rules.Match(path); err == nil && rule != nil {
			for _, o := range rule.Owners {
				af.Owners = append(af.Owners, o.String())
			}
			af.ApprovedBy, err = j.approvedBy(ctx, rule.Owners)
			if err != nil {
				out.Cause = err.Error()
				return out
			}
		}
		out.Files = append(out.Files, af)
	}
	return out
}

// codeOwners reads and parses the base branch's CODEOWNERS ("" source and no rules when none
// exists).
func (f Fetcher) codeOwners(ctx context.Context, c *github.Client, owner, repo, ref string) (codeowners.Ruleset, string, error) {
	for _, path := range CodeOwnersPaths {
		data, found, tooLarge, err := f.FileUpTo(ctx, c, owner, repo, path, ref, MaxCodeOwnersBytes)
		switch {
		case err != nil:
			return nil, "", fmt.Errorf("read %s of the base branch: %w", path, err)
		case tooLarge:
			return nil, "", fmt.Errorf("%s on the base branch is larger than %d bytes", path, MaxCodeOwnersBytes)
		case found:
			return ParseCodeOwners(string(data)), path, nil
		}
	}
	return nil, "", nil
}

// ParseCodeOwners parses a CODEOWNERS file line by line: a line GitHub would reject (a bad
// pattern or owner) is skipped, as GitHub skips it, instead of discarding the whole file as the
// library's whole-file parser does.
func ParseCodeOwners(text string) codeowners.Ruleset {
	var out codeowners.Ruleset
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rs, err := codeowners.ParseFile(strings.NewReader(line))
		if err != nil || len(rs) != 1 {
			continue
		}
		rs[0].LineNumber = i + 1
		out = append(out, rs[0])
	}
	return out
}

// allReviews lists every review of a pull request, oldest first as GitHub lists them.
func (f Fetcher) allReviews(ctx context.Context, c *github.Client, owner, repo string, number int) ([]*github.PullRequestReview, error) {
	var out []*github.PullRequestReview
	for page := 1; page <= maxApprovalReviewPages; page++ {
		var batch []*github.PullRequestReview
		next := 0
		err := f.Do(ctx, "list reviews", func(ctx context.Context) error {
			var resp *github.Response
			var err error
			batch, resp, err = c.PullRequests.ListReviews(ctx, owner, repo, number, &github.ListOptions{PerPage: PerPage, Page: page})
			if err == nil {
				next = resp.NextPage
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list the pull request's reviews: %w", err)
		}
		out = append(out, batch...)
		if next == 0 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("the pull request has more than %d reviews", maxApprovalReviewPages*PerPage)
}

// Approvers returns the logins whose approval of head stands, by GitHub's rule that each
// reviewer's latest state counts: a later CHANGES_REQUESTED or a dismissal (the review's state
// then reads DISMISSED) cancels an approval, a later comment does not. An approval of another
// commit does not count, nor does the author's own, nor a bot's.
func Approvers(reviews []*github.PullRequestReview, head, author string) []string {
	type latest struct {
		login, state, commit string
	}
	byUser := map[string]*latest{}
	var order []string
	for _, rv := range reviews {
		login := rv.GetUser().GetLogin()
		key := strings.ToLower(login)
		switch rv.GetState() {
		case "APPROVED", "CHANGES_REQUESTED", "DISMISSED":
		default: // COMMENTED and PENDING leave the reviewer's state as it was
			continue
		}
		if _, seen := byUser[key]; !seen {
			order = append(order, key)
		}
		byUser[key] = &latest{login: login, state: rv.GetState(), commit: rv.GetCommitID()}
	}
	var out []string
	for _, key := range order {
		l := byUser[key]
		if l.state != "APPROVED" || l.commit != head || head == "" || l.login == "" ||
			strings.EqualFold(l.login, author) || strings.HasSuffix(key, "[bot]") {
			continue
		}
		out = append(out, l.login)
	}
	return out
}

// approvalJudge matches approvers against a file's code owners, reading each approver's write
// access and team memberships once.
type approvalJudge struct {
	f         Fetcher
	c         *github.Client
	req       ApprovalRequest
	approvers []string
	writes    map[string]bool
	members   map[string]bool
}

// approvedBy returns the first approver who is one of owners and may approve ("" when none).
func (j *approvalJudge) approvedBy(ctx context.Context, owners []codeowners.Owner) (string, error) {
	for _, login := range j.approvers {
		for _, o := range owners {
			ok, err := j.owns(ctx, o, login)
			if err != nil {
				return "", err
			}
			if !ok {
				continue
			}
			// GitHub counts a code owner's review only with write access to the repository.
			can, err := j.canWrite(ctx, login)
			if err != nil {
				return "", err
			}
			if can {
				return login, nil
			}
		}
	}
	return "", nil
}

// owns reports whether login is the owner o: the user itself, or an active member of the team.
// Owners named by e-mail are not resolved.
func (j *approvalJudge) owns(ctx context.Context, o codeowners.Owner, login string) (bool, error) {
	switch o.Type {
	case codeowners.UsernameOwner:
		return strings.EqualFold(o.Value, login), nil
	case codeowners.TeamOwner:
		org, slug, ok := strings.Cut(o.Value, "/")
		if !ok {
			return false, nil
		}
		key := strings.ToLower(o.Value + "\x00" + login)
		if m, seen := j.members[key]; seen {
			return m, nil
		}
		m, err := j.f.TeamMember(ctx, j.c, org, slug, login)
		if err != nil {
			return false, err
		}
		j.members[key] = m
		return m, nil
	}
	return false, nil
}

func (j *approvalJudge) canWrite(ctx context.Context, login string) (bool, error) {
	key := strings.ToLower(login)
	if w, seen := j.writes[key]; seen {
		return w, nil
	}
	level, err := j.f.Permission(ctx, j.c, j.req.Owner, j.req.Repo, login)
	if err != nil {
		return false, fmt.Errorf("read the permission of %s: %w", login, err)
	}
	j.writes[key] = CanWrite(level)
	return j.writes[key], nil
}

// TeamMember reports whether login is an active member of the team org/slug (members of child
// teams included, as GitHub answers). A 404 means not a member, or a team the App cannot see.
func (f Fetcher) TeamMember(ctx context.Context, c *github.Client, org, slug, login string) (bool, error) {
	var m *github.Membership
	err := f.Do(ctx, "get team membership of "+login, func(ctx context.Context) error {
		var err error
		m, _, err = c.Teams.GetTeamMembershipBySlug(ctx, org, slug, login)
		if IsNotFound(err) {
			m, err = nil, nil
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("read %s's membership of @%s/%s: %w", login, org, slug, err)
	}
	return m != nil && m.GetState() == "active", nil
}
