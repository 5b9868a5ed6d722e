package details

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/lensgate/lensgate/internal/digest"
)

// Markers of the advisory comment the page reads.
const (
	markerAdvisory = "<!-- lensgate:advisory -->"
	markerHeads    = "<!-- lensgate:heads "
)

// Bounds of one page view's GitHub reads.
const (
	maxCommentPages = 10
	maxHeadsShown   = 30
)

// headView is one reviewed head: its gate check run, the record and the receipt in it.
type headView struct {
	SHA        string
	Short      string
	Current    bool // the pull request's head now
	Selected   bool
	Link       string
	CheckURL   string
	Status     string
	Conclusion string
	Record     *Record
	RecordErr  string
	envelope   []byte
	// observation is the runner's signed observation beside the receipt (nil when none).
	observation []byte
	Receipt     *receiptFacts
	// SupersededBy is the head whose receipt names this one's as prior.
	SupersededBy string
	// Supersedes describes what this head's receipt replaced.
	Supersedes []supersedeView
}

type supersedeView struct {
	Digest string
	Reason string
	Head   string // the head of the prior receipt when the page knows it
}

// view is everything the template shows.
type view struct {
	Owner, Repo    string
	Number         int
	Title          string
	PRURL          string
	State          string
	Author         string
	CurrentHead    string
	Heads          []*headView
	Selected       *headView
	Stale          string // why the page thinks the review is behind ("" when current)
	Server         *serverVerification
	Observation    *observationView
	Audit          auditView
	KeysPath       string
	ReceiptURL     string
	ObservationURL string
	PolicyURL      string
	PagePath       string

	Viewer       string
	CanRerun     bool
	CSRF         string
	RerunQueued  bool
	LoginEnabled bool
	Now          time.Time
}

// load reads everything the page shows for t.
func (h *Handler) load(ctx context.Context, a *access, t target) (*view, error) {
	gh := a.gh
	pr, resp, err := gh.PullRequests.Get(ctx, t.owner, t.repo, t.number)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return nil, errNotFound
		}
		return nil, fmt.Errorf("get pull request: %w", err)
	}
	v := &view{
		Owner: t.owner, Repo: t.repo, Number: t.number, Title: pr.GetTitle(), PRURL: pr.GetHTMLURL(),
		State: pr.GetState(), Author: pr.GetUser().GetLogin(), CurrentHead: pr.GetHead().GetSHA(),
		KeysPath: h.o.KeysPath, PagePath: Path(t.owner, t.repo, t.number, ""), Now: h.o.Now().UTC(),
	}
	if pr.GetMerged() {
		v.State = "merged"
	}
	heads, err := h.reviewedHeads(ctx, gh, t)
	if err != nil {
		return nil, err
	}
	if v.CurrentHead != "" && !slices.Contains(heads, v.CurrentHead) {
		heads = append(heads, v.CurrentHead)
	}
	if t.head != "" && !slices.Contains(heads, t.head) {
		// A head this pull request never had: another pull request's gate must not be shown
		// under this one's title.
		return nil, errNotFound
	}
	if len(heads) > maxHeadsShown {
		heads = heads[len(heads)-maxHeadsShown:]
		if t.head != "" && !slices.Contains(heads, t.head) {
			heads = append(heads, t.head) // an older head asked for by its link
		}
	}
	byDigest := map[string]*headView{}
	for i := len(heads) - 1; i >= 0; i-- {
		hv, err := h.loadHead(ctx, gh, t, heads[i])
		if err != nil {
			return nil, err
		}
		if hv == nil {
			if heads[i] != v.CurrentHead && heads[i] != t.head {
				continue
			}
			hv = &headView{SHA: heads[i]}
		}
		hv.Short = digest.Short(hv.SHA)
		hv.Current = hv.SHA == v.CurrentHead
		hv.Link = Path(t.owner, t.repo, t.number, hv.SHA)
		if hv.Receipt != nil && hv.Receipt.PayloadDigest != "" {
			byDigest[hv.Receipt.PayloadDigest] = hv
		}
		v.Heads = append(v.Heads, hv)
	}
	for _, hv := range v.Heads {
		if hv.Receipt == nil {
			continue
		}
		for _, s := range hv.Receipt.Supersedes {
			sv := supersedeView{Digest: s.Digest, Reason: s.Reason}
			if prior := byDigest[s.Digest]; prior != nil {
				sv.Head = prior.SHA
				if prior.SupersededBy == "" {
					prior.SupersededBy = hv.SHA
				}
			}
			hv.Supersedes = append(hv.Supersedes, sv)
		}
	}
	// The selected head: the one asked for, else the newest with a record.
	for _, hv := range v.Heads {
		if (t.head != "" && hv.SHA == t.head) || (t.head == "" && v.Selected == nil && hv.Record != nil) {
			v.Selected = hv
		}
	}
	if t.head != "" && v.Selected == nil {
		return nil, errNotFound
	}
	if v.Selected == nil && len(v.Heads) > 0 {
		v.Selected = v.Heads[0]
	}
	if v.Selected != nil {
		v.Selected.Selected = true
		if len(v.Selected.envelope) > 0 {
			v.ReceiptURL = v.Selected.Link + "/receipt.json"
			body := (*string)(nil)
			if v.Selected.Current {
				b := pr.GetBody()
				body = &b
			}
			v.Server = h.verifyServer(v.Selected.envelope, pr, body)
			if len(v.Selected.observation) > 0 {
				v.ObservationURL = v.Selected.Link + "/observation.json"
				v.Observation = h.verifyObservation(v.Selected.observation, v.Selected.envelope, v.Server)
			}
		}
		if rec := v.Selected.Record; rec != nil && rec.Policy.Source != "" && rec.Policy.Path != "" {
			v.PolicyURL = policyURL(h.o.WebURL, rec.Policy.Source, rec.Policy.Path)
		}
	}
	v.Stale = staleness(v)
	v.Audit = h.readAudit(ctx, t)
	return v, nil
}

// staleness says why the newest review does not describe the pull request's head now.
func staleness(v *view) string {
	if v.State != "open" || v.CurrentHead == "" {
		return ""
	}
	var current *headView
	for _, hv := range v.Heads {
		if hv.Current {
			current = hv
		}
	}
	switch {
	case current == nil || (current.Record == nil && current.Status == ""):
		return "The pull request's head " + digest.Short(v.CurrentHead) + " has not been reviewed: no review of it has started (a webhook may have been missed)."
	case current.Record == nil && current.Status != "completed":
		return "The review of head " + digest.Short(v.CurrentHead) + " has not finished yet (" + current.Status + ")."
	case current.Record == nil:
		return "The check run of head " + digest.Short(v.CurrentHead) + " carries no review record."
	}
	return ""
}

// belongs reports whether head is the pull request's head now or one the App reviewed for it.
func (h *Handler) belongs(ctx context.Context, gh *github.Client, t target, head string) (bool, error) {
	pr, resp, err := gh.PullRequests.Get(ctx, t.owner, t.repo, t.number)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return false, nil
		}
		return false, fmt.Errorf("get pull request: %w", err)
	}
	if pr.GetHead().GetSHA() == head {
		return true, nil
	}
	heads, err := h.reviewedHeads(ctx, gh, t)
	if err != nil {
		return false, err
	}
	return slices.Contains(heads, head), nil
}

// reviewedHeads reads the heads the App's advisory comment names, oldest first.
func (h *Handler) reviewedHeads(ctx context.Context, gh *github.Client, t target) ([]string, error) {
	_, slug := h.o.App()
	bot := slug + "[bot]"
	var found *github.IssueComment
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; page < maxCommentPages; page++ {
		cs, resp, err := gh.Issues.ListComments(ctx, t.owner, t.repo, t.number, opts)
		if err != nil {
			return nil, fmt.Errorf("list comments: %w", err)
		}
		for _, c := range cs {
			// Only the App's own comment counts: anyone can write the marker.
			if slug != "" && c.GetUser().GetLogin() == bot && strings.HasPrefix(c.GetBody(), markerAdvisory) {
				if found == nil || c.GetID() < found.GetID() {
					found = c
				}
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if found == nil {
		return nil, nil
	}
	body := found.GetBody()
	i := strings.Index(body, markerHeads)
	if i < 0 {
		return nil, nil
	}
	rest := body[i+len(markerHeads):]
	j := strings.Index(rest, markerEnd)
	if j < 0 {
		return nil, nil
	}
	var out []string
	for _, s := range strings.Split(rest[:j], ",") {
		if reHead.MatchString(s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// loadHead reads the App's gate check run of one head (nil when there is none).
func (h *Handler) loadHead(ctx context.Context, gh *github.Client, t target, head string) (*headView, error) {
	appID, _ := h.o.App()
	opts := &github.ListCheckRunsOptions{CheckName: github.String(h.o.CheckName), Filter: github.String("latest"), ListOptions: github.ListOptions{PerPage: 100}}
	if appID != 0 {
		opts.AppID = github.Int64(appID)
	}
	res, resp, err := gh.Checks.ListCheckRunsForRef(ctx, t.owner, t.repo, head, opts)
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnprocessableEntity) {
			return nil, nil // a head GitHub no longer knows
		}
		return nil, fmt.Errorf("list check runs of %s: %w", digest.Short(head), err)
	}
	var cr *github.CheckRun
	for _, c := range res.CheckRuns {
		// The App filter is GitHub's; the name and app are checked again so that no other App's
		// check run of the same name is read as lensgate's.
		if c.GetName() != h.o.CheckName || c.GetHeadSHA() != head || (appID != 0 && c.GetApp().GetID() != 0 && c.GetApp().GetID() != appID) {
			continue
		}
		if cr == nil || c.GetID() > cr.GetID() {
			cr = c
		}
	}
	if cr == nil {
		return nil, nil
	}
	hv := &headView{SHA: head, CheckURL: cr.GetHTMLURL(), Status: cr.GetStatus(), Conclusion: cr.GetConclusion()}
	text := cr.GetOutput().GetText()
	rec, err := ParseRecord(text)
	switch {
	case err == nil && rec.Head == head:
		hv.Record = rec
	case err == nil:
		hv.RecordErr = "the record names another head"
	case !errors.Is(err, ErrNoRecord):
		hv.RecordErr = err.Error()
	}
	hv.envelope = ExtractEnvelope(text)
	if len(hv.envelope) > 0 {
		hv.Receipt = readReceipt(hv.envelope)
		hv.observation = ExtractObservation(text)
	}
	return hv, nil
}

// policyURL links the policy file at the ref it was read from ("owner/repo@ref").
func policyURL(webURL, source, path string) string {
	repo, ref, ok := strings.Cut(source, "@")
	if !ok || webURL == "" || !strings.Contains(repo, "/") {
		return ""
	}
	return strings.TrimSuffix(webURL, "/") + "/" + repo + "/blob/" + ref + "/" + strings.TrimPrefix(path, "/")
}

// FirstStep is the one thing a reviewer should do first, read from the selected head's state.
func (v *view) FirstStep() string {
	h := v.Selected
	switch {
	case h == nil:
		return "No review of this pull request was published yet. Wait for the lensgate check run, then reload this page."
	case !h.Current:
		return "This is the review of an earlier head; it no longer describes the pull request. Open the review of the current head under History of heads."
	case v.Stale != "":
		return "The review is behind the pull request: re-run it, or push again, and read the new result."
	case v.Server != nil && !v.Server.OK:
		return "The signed receipt of this review does not verify: do not rely on this page until you know why. Open Receipt and verification below."
	case h.Record == nil:
		return "The review of this head has not finished. Reload this page when the check run completes."
	}
	r := h.Record
	n := len(r.Findings)
	switch strings.ToLower(r.Gate.State) {
	case "failed", "failure":
		if n > 0 {
			return fmt.Sprintf("Fix or answer the findings below, worst first (%d in all); the gate passes once every required lens does.", r.FindingsTotal)
		}
		return "A required lens failed: read its cause in the Lenses table."
	case "pending":
		return "A required lens has not given a result. Read its cause in the Lenses table; re-run the review when it is fixed."
	}
	if n > 0 {
		return fmt.Sprintf("The gate passed. Read the %d finding(s) below before deciding; lensgate does not approve.", r.FindingsTotal)
	}
	return "The gate passed and no finding was reported. Read the change yourself: no finding does not mean no defect."
}
