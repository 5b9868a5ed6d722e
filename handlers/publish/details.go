package publish

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/review"
)

// maxHeads bounds the reviewed heads the advisory comment remembers for the details page.
const maxHeads = 30

var reSHA = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// detailsLink is the details page of one head of the pull request, or of its latest review
// when head is empty ("" when no page is configured). It is the one place that builds the
// link, for the check run's details_url and the advisory comment alike.
func (p *Publisher) detailsLink(info subjectInfo, head string) string {
	if p.detailsURL == "" || info.owner == "" || info.number <= 0 {
		return ""
	}
	u := strings.TrimSuffix(p.detailsURL, "/") + details.Path(info.owner, info.repo, info.number, head)
	if _, err := url.Parse(u); err != nil {
		return ""
	}
	return u
}

// DocsURL is the documentation of what lensgate publishes: a check run's details link when the
// App serves no details page (no public URL).
const DocsURL = "https://github.com/lensgate/lensgate/blob/main/docs/publishing.md"

// checkDetailsURL is a check run's details_url: the head's details page, else the docs.
func (p *Publisher) checkDetailsURL(info subjectInfo) string {
	if u := p.detailsLink(info, info.headSHA); u != "" {
		return u
	}
	return DocsURL
}

// setRecord renders the details record of this run's decision for the gate check run's text;
// placed says which findings sit inline.
func (r *run) setRecord(pub *publication.Publication, placed map[string]bool) {
	d := pub.Decision
	if d == nil {
		return
	}
	rec := details.Record{
		Head: r.info.headSHA, Base: r.info.baseSHA, ReviewedAt: r.p.now().UTC(),
		Gate:          details.Gate{State: string(d.Gate.State), Reason: d.Gate.Reason, Recommendation: d.Recommendation},
		FindingsTotal: len(d.Findings),
		Coverage: details.Coverage{Status: d.Coverage.Status, FilesTotal: d.Coverage.FilesTotal,
			FilesReviewed: d.Coverage.FilesReviewed, GapsTotal: len(d.Coverage.Gaps)},
		Policy: details.Policy{Origin: pub.Config.Origin, Source: pub.Config.Source, Path: pub.Config.Path, PlanDigest: d.PlanDigest},
	}
	runs := map[string]review.Run{}
	for _, run := range d.Runs {
		runs[run.Lens] = run
	}
	for _, l := range d.Lenses {
		run := runs[l.Name]
		rt := l.Runtime
		if rt == "" {
			rt = run.Runtime
		}
		rec.Lenses = append(rec.Lenses, details.Lens{
			Name: l.Name, Required: l.Required, Publication: l.Publication, Outcome: string(l.Outcome),
			Summary: l.Summary, Runtime: rt, Model: run.Model, Cause: l.Cause, Findings: len(l.Findings),
			Started: run.Started, Finished: run.Finished, Tokens: recordTokens(l.Tokens),
		})
	}
	for _, f := range sortedFindings(d.Findings) {
		placement := "summary"
		if placed[placeKey(f.Path, f.Line)] {
			placement = "inline"
		}
		// The receipt states every finding open; later dispositions come from later receipts.
		rec.Findings = append(rec.Findings, details.Finding{ID: f.ID, Lens: f.Lens, Severity: string(f.Severity),
			Path: f.Path, Line: f.Line, Title: f.Title, Body: f.Body, Disposition: "open", Placement: placement})
	}
	rec.Held = heldFindings(d.Verification)
	for _, g := range d.Coverage.Gaps {
		rec.Coverage.Gaps = append(rec.Coverage.Gaps, details.Gap{Path: g.Path, Reason: g.Reason})
	}
	for _, p := range pub.ConfigProblems {
		rec.Policy.Problems = append(rec.Policy.Problems, p.String())
	}
	if p := pub.Proposed; p != nil {
		pp := &details.Proposed{Path: p.Path}
		if p.Err != nil {
			pp.Error = p.Err.Error()
		}
		for _, pr := range p.Problems {
			pp.Problems = append(pp.Problems, pr.String())
		}
		rec.Policy.Proposed = pp
	}
	for _, m := range d.Intake.Messages {
		if !m.Passed {
			rec.Intake = append(rec.Intake, details.Intake{Check: m.Check, Passed: m.Passed, Message: m.Message})
		}
	}
	if d.Tokens.Total > 0 || len(d.Tokens.Calls) > 0 {
		rec.Tokens = recordTokens(&d.Tokens.TokenCount)
	}
	rec.Prose = recordProse(d)
	rec.Context = recordContext(d)
	line, err := details.EncodeRecord(rec)
	if err != nil {
		r.notes = append(r.notes, "details record not written: "+oneLine(err.Error(), 300))
		return
	}
	r.record = "\n" + line
}

// reviewedHeads is the list of heads the advisory comment names, newest last, with this run's
// head added: the details page finds each head's gate check run by it, even after a force push
// removed the commit from the pull request.
func (r *run) reviewedHeads(prior string) string {
	var heads []string
	for _, h := range strings.Split(prior, ",") {
		if reSHA.MatchString(h) && h != r.info.headSHA {
			heads = append(heads, h)
		}
	}
	if reSHA.MatchString(r.info.headSHA) {
		heads = append(heads, r.info.headSHA)
	}
	if len(heads) > maxHeads {
		heads = heads[len(heads)-maxHeads:]
	}
	if len(heads) == 0 {
		return ""
	}
	return markerHeads + strings.Join(heads, ",") + markerEnd + "\n"
}

// detailsLine links the advisory comment to the details page.
func (r *run) detailsLine() string {
	u := r.p.detailsLink(r.info, "")
	if u == "" {
		return ""
	}
	return fmt.Sprintf("[Details](%s): every lens, finding and coverage gap, the audit trail, and the receipt verified in your browser.\n\n", u)
}

func recordTokens(t *review.TokenCount) *details.Tokens {
	if t == nil {
		return nil
	}
	return &details.Tokens{Prompt: t.Prompt, Completion: t.Completion, Total: t.Total, Estimated: t.Estimated}
}

// heldFindings lists what was withdrawn on verification or suppressed by earlier feedback, for
// the details page: it is never published on the pull request itself.
func heldFindings(v review.Verification) []details.Held {
	var out []details.Held
	for _, w := range v.Withdrawn {
		f := w.Finding
		out = append(out, details.Held{ID: f.ID, Lens: f.Lens, Severity: string(f.Severity), Path: f.Path, Line: f.Line,
			Title: f.Title, Kind: details.HeldWithdrawn, Check: string(w.Check), Reason: w.Reason})
	}
	for _, s := range v.Suppressed {
		f := s.Finding
		out = append(out, details.Held{ID: f.ID, Lens: f.Lens, Severity: string(f.Severity), Path: f.Path, Line: f.Line,
			Title: f.Title, Kind: details.HeldSuppressed, Reason: s.Reason})
	}
	return out
}
