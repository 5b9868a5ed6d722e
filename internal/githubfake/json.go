package githubfake

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

func (s *Server) apiURL(format string, args ...any) string {
	return s.srv.URL + apiPrefix + fmt.Sprintf(format, args...)
}

func (s *Server) userJSON(login string) *github.User {
	if login == s.BotLogin() {
		return s.botUser()
	}
	if b, ok := s.bots[login]; ok {
		return &github.User{Login: github.String(b.Login), Type: github.String("Bot"), ID: github.Int64(b.UserID)}
	}
	t := "User"
	return &github.User{Login: github.String(login), Type: github.String(t), ID: github.Int64(int64(len(login)) * 7919)}
}

func (s *Server) repoJSON(st *repoState) *github.Repository {
	return &github.Repository{
		ID:            github.Int64(st.id),
		NodeID:        github.String(st.nodeID),
		Name:          github.String(st.Name),
		FullName:      github.String(st.FullName()),
		Owner:         s.userJSON(st.Owner),
		Private:       github.Bool(st.Private),
		Fork:          github.Bool(false),
		DefaultBranch: github.String(st.DefaultBranch),
		HTMLURL:       github.String(s.srv.URL + "/" + st.FullName()),
		URL:           github.String(s.apiURL("/repos/%s", st.FullName())),
	}
}

func labelsJSON(names []string) []*github.Label {
	out := make([]*github.Label, 0, len(names))
	for _, n := range names {
		out = append(out, &github.Label{Name: github.String(n)})
	}
	return out
}

// pullAnswer is a pull request as GitHub serves it: the labels are there even when there are
// none (go-github's struct would leave an empty list out).
type pullAnswer struct {
	*github.PullRequest
	Labels []*github.Label `json:"labels"`
}

func (s *Server) prJSON(st *repoState, pr *PullRequest) pullAnswer {
	p := s.pullJSON(st, pr)
	return pullAnswer{PullRequest: p, Labels: p.Labels}
}

func (s *Server) pullJSON(st *repoState, pr *PullRequest) *github.PullRequest {
	add, del := 0, 0
	for _, f := range pr.Files {
		add += f.Additions
		del += f.Deletions
	}
	repo := s.repoJSON(st)
	headRepo := repo
	if pr.HeadRepo != "" {
		owner, name, _ := strings.Cut(pr.HeadRepo, "/")
		headRepo = &github.Repository{ID: github.Int64(st.id + 1_000_000), NodeID: github.String(fmt.Sprintf("R_fork%d", st.id)),
			FullName: github.String(pr.HeadRepo), Name: github.String(name), Owner: s.userJSON(owner),
			Private: github.Bool(false), Fork: github.Bool(true)}
	}
	return &github.PullRequest{
		ID:           github.Int64(pr.ID),
		NodeID:       github.String(pr.NodeID),
		Number:       github.Int(pr.Number),
		State:        github.String(pr.State),
		Title:        github.String(pr.Title),
		Body:         github.String(pr.Body),
		Draft:        github.Bool(pr.Draft),
		CreatedAt:    timestamp(pr.CreatedAt),
		UpdatedAt:    timestamp(pr.UpdatedAt),
		Merged:       github.Bool(pr.Merged),
		User:         s.userJSON(pr.User),
		Labels:       labelsJSON(pr.Labels),
		Additions:    github.Int(add),
		Deletions:    github.Int(del),
		ChangedFiles: github.Int(len(pr.Files)),
		Commits:      github.Int(len(pr.Commits)),
		// Like GitHub: how many issue comments and review comments the pull request has.
		Comments:       github.Int(s.countComments(st, pr.Number)),
		ReviewComments: github.Int(s.countReviewComments(st, pr.Number)),
		HTMLURL:        github.String(fmt.Sprintf("%s/%s/pull/%d", s.srv.URL, st.FullName(), pr.Number)),
		URL:            github.String(s.apiURL("/repos/%s/pulls/%d", st.FullName(), pr.Number)),
		Head: &github.PullRequestBranch{
			SHA: github.String(pr.HeadSHA), Ref: github.String(pr.HeadRef),
			Label: github.String(headRepo.GetOwner().GetLogin() + ":" + pr.HeadRef), Repo: headRepo, User: headRepo.GetOwner(),
		},
		Base: &github.PullRequestBranch{
			SHA: github.String(pr.BaseSHA), Ref: github.String(pr.BaseRef),
			Label: github.String(st.Owner + ":" + pr.BaseRef), Repo: repo, User: repo.GetOwner(),
		},
	}
}

func (s *Server) countComments(st *repoState, number int) int {
	n := 0
	for _, c := range st.comments {
		if c.Number == number {
			n++
		}
	}
	return n
}

func (s *Server) countReviewComments(st *repoState, number int) int {
	n := 0
	for _, rv := range st.reviews {
		if rv.Number == number {
			n += len(rv.Comments)
		}
	}
	return n
}

func (s *Server) issueJSON(st *repoState, number int) *github.Issue {
	if is, ok := st.issues[number]; ok {
		return &github.Issue{
			ID: github.Int64(is.ID), NodeID: github.String(is.NodeID), Number: github.Int(is.Number),
			State: github.String(is.State), Title: github.String(is.Title), Body: github.String(is.Body),
			User: s.userJSON(is.User), Labels: labelsJSON(is.Labels),
			Repository: s.repoJSON(st),
		}
	}
	pr := st.pulls[number]
	return &github.Issue{
		ID: github.Int64(pr.ID), NodeID: github.String(pr.NodeID), Number: github.Int(pr.Number),
		State: github.String(pr.State), Title: github.String(pr.Title), Body: github.String(pr.Body),
		User: s.userJSON(pr.User), Labels: labelsJSON(pr.Labels), Draft: github.Bool(pr.Draft),
		PullRequestLinks: &github.PullRequestLinks{
			URL: github.String(s.apiURL("/repos/%s/pulls/%d", st.FullName(), pr.Number)),
		},
		Repository: s.repoJSON(st),
	}
}

// issueCommentJSON adds what go-github does not model: the App a comment was made through.
type issueCommentJSON struct {
	*github.IssueComment
	PerformedViaGithubApp *github.App `json:"performed_via_github_app,omitempty"`
}

func (s *Server) commentJSON(st *repoState, c *Comment) issueCommentJSON {
	return issueCommentJSON{IssueComment: s.plainCommentJSON(st, c), PerformedViaGithubApp: s.viaApp(c.User)}
}

func (s *Server) plainCommentJSON(st *repoState, c *Comment) *github.IssueComment {
	return &github.IssueComment{
		ID: github.Int64(c.ID), NodeID: github.String(c.NodeID), Body: github.String(c.Body),
		User:      s.userJSON(c.User),
		CreatedAt: &github.Timestamp{Time: c.CreatedAt}, UpdatedAt: &github.Timestamp{Time: c.UpdatedAt},
		HTMLURL:  github.String(fmt.Sprintf("%s/%s/pull/%d#issuecomment-%d", s.srv.URL, st.FullName(), c.Number, c.ID)),
		IssueURL: github.String(s.apiURL("/repos/%s/issues/%d", st.FullName(), c.Number)),
		URL:      github.String(s.apiURL("/repos/%s/issues/comments/%d", st.FullName(), c.ID)),
	}
}

func (s *Server) checkRunJSON(st *repoState, c *CheckRun) *github.CheckRun {
	out := &github.CheckRun{
		ID: github.Int64(c.ID), NodeID: github.String(fmt.Sprintf("CR_fake%d", c.ID)),
		HeadSHA: github.String(c.HeadSHA), Name: github.String(c.Name), Status: github.String(c.Status),
		App:        s.appJSON(),
		CheckSuite: &github.CheckSuite{ID: github.Int64(c.SuiteID)},
		Output: &github.CheckRunOutput{
			Title: github.String(c.Title), Summary: github.String(c.Summary), Text: github.String(c.Text),
			AnnotationsCount: github.Int(len(c.Annotations)),
			AnnotationsURL:   github.String(s.apiURL("/repos/%s/check-runs/%d/annotations", st.FullName(), c.ID)),
		},
		HTMLURL: github.String(fmt.Sprintf("%s/%s/runs/%d", s.srv.URL, st.FullName(), c.ID)),
	}
	if c.Conclusion != "" {
		out.Conclusion = github.String(c.Conclusion)
	}
	if c.ExternalID != "" {
		out.ExternalID = github.String(c.ExternalID)
	}
	if c.DetailsURL != "" {
		out.DetailsURL = github.String(c.DetailsURL)
	}
	if !c.StartedAt.IsZero() {
		out.StartedAt = &github.Timestamp{Time: c.StartedAt}
	}
	if !c.CompletedAt.IsZero() {
		out.CompletedAt = &github.Timestamp{Time: c.CompletedAt}
	}
	for _, pr := range st.pulls {
		if pr.HeadSHA == c.HeadSHA && pr.State == "open" {
			out.PullRequests = append(out.PullRequests, &github.PullRequest{Number: github.Int(pr.Number), ID: github.Int64(pr.ID)})
		}
	}
	return out
}

func (s *Server) reviewJSON(st *repoState, r *Review) *github.PullRequestReview {
	return &github.PullRequestReview{
		ID: github.Int64(r.ID), NodeID: github.String(r.NodeID), User: s.userJSON(r.User),
		Body: github.String(r.Body), CommitID: github.String(r.CommitID), State: github.String(r.State),
		HTMLURL:     github.String(fmt.Sprintf("%s/%s/pull/%d#pullrequestreview-%d", s.srv.URL, st.FullName(), r.Number, r.ID)),
		SubmittedAt: timestamp(r.SubmittedAt),
	}
}

func timestamp(t time.Time) *github.Timestamp {
	if t.IsZero() {
		return nil
	}
	return &github.Timestamp{Time: t}
}

func (s *Server) reviewCommentJSON(st *repoState, number int, c *ReviewComment) *github.PullRequestComment {
	out := &github.PullRequestComment{
		ID: github.Int64(c.ID), PullRequestReviewID: github.Int64(c.ReviewID), Path: github.String(c.Path),
		Body: github.String(c.Body), User: s.userJSON(c.User), CommitID: github.String(c.CommitID),
		// The fake never moves a comment to a newer commit, so both ids stay the creating one.
		OriginalCommitID: github.String(c.CommitID),
		PullRequestURL:   github.String(s.apiURL("/repos/%s/pulls/%d", st.FullName(), number)),
	}
	if c.Line > 0 {
		out.Line = github.Int(c.Line)
		out.Side = github.String(c.Side)
	}
	if c.StartLine > 0 {
		out.StartLine = github.Int(c.StartLine)
	}
	if c.InReplyTo != 0 {
		out.InReplyTo = github.Int64(c.InReplyTo)
	}
	if c.Position > 0 {
		out.Position = github.Int(c.Position)
	}
	return out
}

// writePage answers with the requested page of items, as a JSON array even when it is empty.
func writePage[T any](w http.ResponseWriter, r *http.Request, items []T) {
	lo, hi := page(w, r, len(items))
	writeJSON(w, http.StatusOK, nonNil(items[lo:hi]))
}

// page slices n items by per_page/page and sets a Link header like GitHub's.
func page(w http.ResponseWriter, r *http.Request, n int) (lo, hi int) {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	if per > 100 {
		per = 100
	}
	p, err := strconv.Atoi(q.Get("page"))
	if err != nil || p <= 0 {
		p = 1
	}
	last := (n + per - 1) / per
	if last == 0 {
		last = 1
	}
	lo = (p - 1) * per
	if lo > n {
		lo = n
	}
	hi = lo + per
	if hi > n {
		hi = n
	}
	link := func(pg int, rel string) string {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		qq := url.Values{}
		for k, v := range q {
			qq[k] = v
		}
		qq.Set("page", strconv.Itoa(pg))
		qq.Set("per_page", strconv.Itoa(per))
		u.RawQuery = qq.Encode()
		return fmt.Sprintf(`<%s>; rel="%s"`, u.String(), rel)
	}
	var links []string
	if p < last {
		links = append(links, link(p+1, "next"), link(last, "last"))
	}
	if p > 1 {
		links = append(links, link(1, "first"), link(p-1, "prev"))
	}
	if len(links) > 0 {
		h := links[0]
		for _, l := range links[1:] {
			h += ", " + l
		}
		w.Header().Set("Link", h)
	}
	return lo, hi
}
