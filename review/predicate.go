package review

import (
	"fmt"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/internal/digest"
)

// ProducerID names lensgate as the producer of receipts.
const ProducerID = "lensgate"

// Predicate builds the agent-review predicate of a decision: subject binding, one review run
// per lens, the findings (all open), and coverage with every gap named. Forge-less (local)
// subjects are bound to "local:" identifiers.
func Predicate(d *Decision, subj *Subject, now time.Time) *disclosure.Predicate {
	sc := disclosure.SubjectContext{
		Kind: disclosure.KindPullRequest, Forge: "github.com",
		RepositoryID: d.Subject.RepositoryNodeID, PullRequestNodeID: d.Subject.NodeID,
		HeadSHA: d.Subject.HeadSHA, BaseSHA: d.Subject.BaseSHA,
		ReviewedDiffDigest: d.Subject.ReviewedDiffDigest, BodyCoreDigest: d.Subject.BodyCoreDigest,
	}
	if subj.Owner != "" && subj.Repo != "" && subj.Number > 0 {
		sc.HumanRef = fmt.Sprintf("github-pr:%s/%s#%d", subj.Owner, subj.Repo, subj.Number)
	}
	if subj.Local {
		sc.Forge = "local"
		if sc.RepositoryID == "" {
			sc.RepositoryID = "local:" + subj.Repo
		}
		if sc.PullRequestNodeID == "" {
			sc.PullRequestNodeID = "local:" + subj.BaseSHA + ".." + subj.HeadSHA
		}
	}
	p := &disclosure.Predicate{
		ReviewID:   "lensgate:" + digest.Short(d.Subject.HeadSHA) + ":" + digest.Short(d.Subject.ReviewedDiffDigest),
		Subject:    sc,
		Authoring:  []disclosure.AssuredItem{{AssertedBy: "author:" + nonEmpty(subj.Author, "unknown")}},
		DeclaredAt: now.UTC(),
		PlanDigest: d.PlanDigest,
		Producer:   &disclosure.Producer{ID: ProducerID},
		NonClaims: []string{
			"The review does not claim the change is correct, complete or safe.",
			"No human approved this change through this receipt; lensgate never approves or merges.",
		},
		Limitations: []string{
			"Automated review: lens outcomes are recommendations from the runtimes named in reviewRuns.",
			"Only the diff between baseSha and headSha was reviewed, not the rest of the repository.",
		},
	}
	for _, r := range d.Runs {
		by := "lensgate/" + r.Runtime
		if r.Model != "" {
			by += "/" + r.Model
		}
		// A lens given context beyond the diff points at the context manifest by its digest.
		p.ReviewRuns = append(p.ReviewRuns, disclosure.AssuredItem{AssertedBy: by + ":" + r.Lens + ":" + string(r.Outcome),
			EvidenceSHA256: r.ContextDigest})
	}
	for _, f := range d.Findings {
		title := f.Title
		if f.Path != "" {
			title = fmt.Sprintf("%s (%s:%d)", f.Title, f.Path, f.Line)
		}
		p.Findings = append(p.Findings, ReceiptFinding(f, title))
	}
	p.FindingsTotal = len(p.Findings)
	status, pending := d.ReportedCoverage()
	expected := len(d.Lenses)
	observed := expected - pending
	cov := disclosure.Coverage{Status: status, ObservedRuns: &observed, ExpectedRuns: &expected}
	switch {
	case d.Coverage.Status == CoverageComplete && pending > 0:
		cov.KnownGaps = []string{fmt.Sprintf("%d of %d lens(es) pending", pending, expected)}
	case d.Coverage.Status == CoverageComplete:
		cov.Window = d.Subject.BaseSHA + ".." + d.Subject.HeadSHA
		cov.Sources = []string{"diff"}
		cov.CollectionMethod = "lensgate review pipeline"
	}
	for _, g := range d.Coverage.Gaps {
		cov.KnownGaps = append(cov.KnownGaps, g.Path+": "+g.Reason)
	}
	if cov.Status == CoveragePartial && len(cov.KnownGaps) == 0 {
		cov.KnownGaps = []string{"coverage incomplete"}
	}
	p.Coverage = cov
	return p
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ReceiptFinding is a finding as the receipt lists it: open, fixed with the full SHA of the
// head it was gone at, or dismissed with the reason given.
func ReceiptFinding(f Finding, title string) disclosure.Finding {
	out := disclosure.Finding{ID: f.ID, Severity: string(f.Severity), Title: title, Disposition: DispositionOpen}
	switch {
	case f.Disposition == DispositionFixed && reSHA.MatchString(f.FixCommit):
		out.Disposition, out.FixCommit = DispositionFixed, f.FixCommit
	case f.Disposition == DispositionDismissed && !config.IsBlank(f.Reason):
		out.Disposition, out.Reason = DispositionDismissed, DismissalReason(f)
	}
	return out
}

// DismissalReason is a dismissal as the receipt records it: who dismissed the finding (when
// known) and why. The predicate's finding has one free-text reason, so the person is named in
// it, in the form the receipt names people elsewhere ("github:<login>").
func DismissalReason(f Finding) string {
	if config.IsBlank(f.DismissedBy) {
		return f.Reason
	}
	return "dismissed by github:" + f.DismissedBy + ": " + f.Reason
}
