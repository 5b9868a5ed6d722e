package publish

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review"
)

var reHex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// predicate maps a decision to the agent-review predicate. Everything is self-declared: the
// receipt says what lensgate did and found, not that the change is safe.
func predicate(pub subjectInfo, d *review.Decision, now time.Time, prior string, priorReason string) *disclosure.Predicate {
	p := &disclosure.Predicate{
		ReviewID: fmt.Sprintf("lensgate:%s/%s#%d@%s:%d", pub.owner, pub.repo, pub.number, pub.headSHA, now.Unix()),
		Subject: disclosure.SubjectContext{
			Kind:               disclosure.KindPullRequest,
			Forge:              "github.com",
			RepositoryID:       pub.repoNodeID,
			PullRequestNodeID:  pub.nodeID,
			HeadSHA:            pub.headSHA,
			BaseSHA:            pub.baseSHA,
			ReviewedDiffDigest: d.Subject.ReviewedDiffDigest,
			HumanRef:           fmt.Sprintf("github-pr:%s/%s#%d", pub.owner, pub.repo, pub.number),
		},
		NonClaims: []string{
			"lensgate does not approve or merge; a human reviewer decides",
			"the findings are what automated review lenses reported; no finding does not mean no defect",
		},
		Limitations: []string{"self-declared review by automated lenses, no independent witness"},
		DeclaredAt:  now,
		SignedAt:    now,
		Producer:    &disclosure.Producer{ID: "lensgate"},
	}
	if pub.author != "" {
		p.Authoring = []disclosure.AssuredItem{{AssertedBy: "github:" + pub.author}}
	}
	for _, r := range d.Runs {
		by := fmt.Sprintf("lensgate/%s/%s", r.Lens, r.Runtime)
		// The head the lens last completed on: this head, or an earlier one for a lens that
		// is pending now. It is what the next push is reviewed incrementally from.
		if d.State != nil && d.State.Lenses[r.Lens] != "" {
			by += "@" + d.State.Lenses[r.Lens]
		}
		// A lens given context beyond the diff points at the context manifest by its digest.
		p.ReviewRuns = append(p.ReviewRuns, disclosure.AssuredItem{AssertedBy: by, EvidenceSHA256: r.ContextDigest})
	}
	var last time.Time
	for _, r := range d.Runs {
		if r.Finished.After(last) {
			last = r.Finished
		}
	}
	if !last.IsZero() {
		p.TimeClaims = []disclosure.TimeClaim{{Kind: "reviewCompleted", Value: last.UTC().Format(time.RFC3339), AssertedBy: "lensgate"}}
	}
	seen := map[string]bool{}
	for _, f := range d.Findings {
		id := f.ID
		if id == "" || seen[id] {
			id = fmt.Sprintf("%s#%d", f.ID, len(seen))
		}
		seen[id] = true
		sev := string(f.Severity)
		if f.Severity.Rank() < 0 {
			sev = string(review.SeverityInfo)
		}
		title := strings.TrimSpace(f.Title)
		if title == "" {
			title = "untitled finding"
		}
		rf := review.ReceiptFinding(f, title)
		rf.ID, rf.Severity = id, sev
		p.Findings = append(p.Findings, rf)
	}
	p.Coverage = coverage(pub, d)
	if reHex64.MatchString(d.PlanDigest) {
		p.PlanDigest = d.PlanDigest
	}
	if d.Gate.State == review.OutcomePending {
		what := "a required lens did not finish: "
		if slices.Contains(d.Gate.BlockingPending, review.OwnerApprovalName) {
			what = "the gate is pending: "
		}
		p.Limitations = append(p.Limitations, what+oneLine(d.Gate.Reason, 300))
	}
	if prior != "" {
		p.Supersession = &disclosure.Supersession{Supersedes: []disclosure.Relation{{PriorDigest: prior, Reason: priorReason}}}
	}
	return p
}

// coverage counts lens runs: every planned lens is an expected run, every lens that reached a
// passed or failed outcome an observed one; pending lenses and skipped files are gaps.
func coverage(pub subjectInfo, d *review.Decision) disclosure.Coverage {
	expected, observed := len(d.Lenses), 0
	var gaps []string
	for _, l := range d.Lenses {
		if l.Outcome == review.OutcomePending {
			// Plain text: the receipt is data, not Markdown, and its readers escape it themselves.
			gaps = append(gaps, "lens "+l.Name+" pending: "+truncate(plainLine(l.Cause), 200))
			continue
		}
		observed++
	}
	for _, g := range d.Coverage.Gaps {
		gaps = append(gaps, "file "+g.Path+": "+g.Reason)
	}
	sources := []string{"pull request diff"}
	switch cv := d.Coverage; cv.Scope {
	case review.ScopeIncremental:
		// Model lenses saw the compare since the last reviewed head; files untouched since keep
		// the review of the head named for them.
		sources = append(sources, "model lenses: compare "+cv.Since+"..."+pub.headSHA)
		for _, h := range cv.Heads {
			if h.Head != pub.headSHA {
				sources = append(sources, fmt.Sprintf("model lenses: %d unchanged file(s) reviewed at %s", h.Files, h.Head))
			}
		}
	case review.ScopeFull:
		sources = append(sources, "model lenses: the whole pull request")
	}
	c := disclosure.Coverage{
		Window:           "head " + pub.headSHA + " against base " + pub.baseSHA,
		Sources:          sources,
		CollectionMethod: "lensgate review of the GitHub pull request snapshot",
		ObservedRuns:     &observed,
		ExpectedRuns:     &expected,
		KnownGaps:        gaps,
	}
	switch {
	case expected == 0 || d.Coverage.Status == review.CoverageUnknown || d.Coverage.Status == "":
		c.Status = disclosure.CoverageUnknown
	case len(gaps) == 0 && d.Coverage.Status == review.CoverageComplete:
		c.Status = disclosure.CoverageComplete
	default:
		c.Status = disclosure.CoveragePartial
		if len(c.KnownGaps) == 0 {
			c.KnownGaps = []string{"review coverage reported as partial"}
		}
	}
	if c.KnownGaps == nil {
		c.KnownGaps = []string{}
	}
	return c
}

// stateKey identifies what a receipt says about: the subject bytes and the outcome. The same
// key means a re-run would sign the same statement again, so nothing is republished.
func stateKey(pub subjectInfo, d *review.Decision, bodyCore string) string {
	type lens struct {
		Name    string
		Outcome review.Outcome
	}
	var ls []lens
	for _, l := range d.Lenses {
		ls = append(ls, lens{l.Name, l.Outcome})
	}
	var ids []string
	for _, f := range d.Findings {
		ids = append(ids, f.ID+"|"+string(f.Severity)+"|"+f.Title+"|"+f.Disposition+"|"+f.FixCommit+"|"+f.Reason)
	}
	sort.Strings(ids)
	b, _ := json.Marshal(struct {
		Head, Base, Diff, Body string
		Gate                   review.Outcome
		Lenses                 []lens
		Findings               []string
	}{pub.headSHA, pub.baseSHA, d.Subject.ReviewedDiffDigest, bodyCore, d.Gate.State, ls, ids})
	return digest.SHA256Hex(b)
}

// priorHead reads the head SHA a receipt's predicate is bound to ("" when unreadable).
func priorHead(envelope []byte) string {
	var env struct {
		Payload string `json:"payload"`
	}
	if json.Unmarshal(envelope, &env) != nil {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return ""
	}
	var st struct {
		Predicate struct {
			SubjectContext struct {
				HeadSHA string `json:"headSha"`
			} `json:"subjectContext"`
		} `json:"predicate"`
	}
	if json.Unmarshal(raw, &st) != nil {
		return ""
	}
	return st.Predicate.SubjectContext.HeadSHA
}

// issuePredicate is the triage receipt of an issue: which runtime looked at it and what it
// suggested is in the comment; the receipt binds the issue body it saw.
func issuePredicate(info subjectInfo, t *review.TriageDecision, revised, now time.Time, prior, reason string) *disclosure.Predicate {
	if revised.IsZero() {
		revised = now
	}
	p := &disclosure.Predicate{
		ReviewID: fmt.Sprintf("lensgate:%s/%s#%d:triage:%d", info.owner, info.repo, info.number, now.Unix()),
		Subject: disclosure.SubjectContext{
			Kind: disclosure.KindIssue, Forge: "github.com", RepositoryID: info.repoNodeID,
			IssueNodeID: info.nodeID, RevisedAt: revised.UTC().Format(time.RFC3339),
			HumanRef: fmt.Sprintf("github-issue:%s/%s#%d", info.owner, info.repo, info.number),
		},
		NonClaims: []string{
			"labels are suggestions of an automated triage runtime; a maintainer decides",
			"lensgate does not close, prioritise or speak for maintainers",
		},
		Limitations: []string{"self-declared triage by an automated runtime, no independent witness"},
		Coverage:    disclosure.Coverage{Status: disclosure.CoverageUnknown},
		DeclaredAt:  now,
		SignedAt:    now,
		Producer:    &disclosure.Producer{ID: "lensgate"},
	}
	if info.author != "" {
		p.Authoring = []disclosure.AssuredItem{{AssertedBy: "github:" + info.author}}
	}
	for _, r := range t.Runs {
		p.ReviewRuns = append(p.ReviewRuns, disclosure.AssuredItem{AssertedBy: fmt.Sprintf("lensgate/triage/%s", r.Runtime)})
	}
	// Triage reads the whole body in one run: complete when that run finished, a named gap
	// when it did not, unknown when no run was recorded.
	expected, observed := 1, 0
	if t.Cause == "" && len(t.Runs) > 0 {
		observed = 1
	}
	switch {
	case t.Cause != "":
		p.Limitations = append(p.Limitations, "triage did not complete: "+oneLine(t.Cause, 300))
		p.Coverage = disclosure.Coverage{Status: disclosure.CoveragePartial, ExpectedRuns: &expected, ObservedRuns: &observed,
			KnownGaps: []string{"triage run did not complete"}}
	case observed == 1:
		p.Coverage = disclosure.Coverage{Status: disclosure.CoverageComplete, ExpectedRuns: &expected, ObservedRuns: &observed,
			Window: "issue body revised at " + p.Subject.RevisedAt, Sources: []string{"issue title and body"},
			CollectionMethod: "lensgate triage of the GitHub issue", KnownGaps: []string{}}
	}
	if prior != "" {
		p.Supersession = &disclosure.Supersession{Supersedes: []disclosure.Relation{{PriorDigest: prior, Reason: reason}}}
	}
	return p
}

// triageStateKey identifies a triage outcome over one issue body core.
func triageStateKey(t *review.TriageDecision, core string) string {
	labels := append([]string(nil), t.Labels...)
	sort.Strings(labels)
	b, _ := json.Marshal(struct {
		Labels         []string
		Comment, Cause string
		Body           string
	}{labels, t.Comment, t.Cause, core})
	return digest.SHA256Hex(b)
}
