package publish

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runner"
)

// maxListPages bounds paginated reads (100 items per page).
const maxListPages = 20

// maxListedFindings bounds the findings listed in the advisory comment.
const maxListedFindings = 100

// findSticky returns the App's advisory comment: the oldest comment by the App's own login
// that carries the hidden marker. A comment by anyone else with the marker is ignored. Any
// younger ones (two runs that raced to create the comment) are kept in r.duplicates and
// removed by writeSticky.
func (r *run) findSticky(ctx context.Context) (*github.IssueComment, error) {
	var found *github.IssueComment
	var all []*github.IssueComment
	err := r.p.call(ctx, "list comments", func(ctx context.Context) (*github.Response, error) {
		found, all = nil, nil
		opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{Page: 1, PerPage: 100}} // the worker's URL, so a repeat is a 304
		for page := 0; page < maxListPages; page++ {
			cs, resp, err := r.gh.Issues.ListComments(ctx, r.info.owner, r.info.repo, r.info.number, opts)
			if err != nil {
				return resp, err
			}
			for _, c := range cs {
				if r.info.botLogin != "" && c.GetUser().GetLogin() == r.info.botLogin && strings.HasPrefix(c.GetBody(), markerAdvisory) {
					all = append(all, c)
					if found == nil || c.GetID() < found.GetID() {
						found = c
					}
				}
			}
			if resp.NextPage == 0 {
				return resp, nil
			}
			opts.Page = resp.NextPage
		}
		return nil, nil
	}, nil)
	r.duplicates = r.duplicates[:0]
	for _, c := range all {
		if c.GetID() != found.GetID() {
			r.duplicates = append(r.duplicates, c.GetID())
		}
	}
	return found, err
}

// writeSticky updates the advisory comment in place, or creates it once. A create whose answer
// was lost is detected by listing again before retrying, so it is never duplicated.
func (r *run) writeSticky(ctx context.Context, existing *github.IssueComment, body string) {
	body = truncate(body, maxCommentBody)
	if r.info.botLogin == "" {
		// Without the App's login its own comment cannot be found again: creating one would
		// start a new comment every run.
		r.notes = append(r.notes, "advisory comment not written: the App's login is unknown")
		return
	}
	defer r.removeDuplicates(ctx)
	if existing != nil && existing.GetBody() == body {
		return
	}
	if !r.authorize(ctx, pdp.Action{Kind: pdp.KindCommentUpsert, Target: "advisory-comment", Lenses: r.commentLenses()}) {
		return
	}
	if existing != nil {
		r.editSticky(ctx, existing.GetID(), body)
		return
	}
	var created int64
	err := r.content(ctx, "create advisory comment", func(ctx context.Context) (*github.Response, error) {
		c, resp, err := r.gh.Issues.CreateComment(ctx, r.info.owner, r.info.repo, r.info.number, &github.IssueComment{Body: github.String(body)})
		created = c.GetID()
		return resp, err
	}, func(ctx context.Context) (bool, error) {
		c, err := r.findSticky(ctx)
		return c != nil, err
	})
	if err != nil {
		r.fail(err)
		return
	}
	// Another run may have created the comment at the same moment: the oldest one stays and
	// carries this body, the younger ones go.
	oldest, err := r.findSticky(ctx)
	if err != nil || oldest == nil || created == 0 || oldest.GetID() == created {
		return
	}
	r.notes = append(r.notes, "another run created the advisory comment at the same time; the older one is kept")
	if oldest.GetBody() != body && r.authorize(ctx, pdp.Action{Kind: pdp.KindCommentUpsert, Target: "advisory-comment", Lenses: r.commentLenses()}) {
		r.editSticky(ctx, oldest.GetID(), body)
	}
}

func (r *run) editSticky(ctx context.Context, id int64, body string) {
	r.fail(r.content(ctx, "update advisory comment", func(ctx context.Context) (*github.Response, error) {
		_, resp, err := r.gh.Issues.EditComment(ctx, r.info.owner, r.info.repo, id, &github.IssueComment{Body: github.String(body)})
		return resp, err
	}, nil))
}

// removeDuplicates deletes the App's younger advisory comments found by findSticky.
func (r *run) removeDuplicates(ctx context.Context) {
	for _, id := range r.duplicates {
		if !r.authorize(ctx, pdp.Action{Kind: pdp.KindCommentDedupe, Target: "advisory-comment"}) {
			return
		}
		err := r.content(ctx, "delete duplicate advisory comment", func(ctx context.Context) (*github.Response, error) {
			resp, err := r.gh.Issues.DeleteComment(ctx, r.info.owner, r.info.repo, id)
			if statusOf(resp, err) == http.StatusNotFound {
				return resp, nil // the other run removed it already
			}
			return resp, err
		}, nil)
		r.fail(err)
	}
	r.duplicates = nil
}

func (r *run) commentLenses() []string {
	var out []string
	for l := range r.info.publication {
		out = append(out, l)
	}
	return out
}

// upsertSticky renders the advisory comment: gate, lens table, findings of comment lenses and
// every finding not placed inline, the signed receipt, and the state key that lets a re-run
// recognise an unchanged publication.
func (r *run) upsertSticky(ctx context.Context, pub *publication.Publication, existing *github.IssueComment, rc *receiptInfo, plan inlinePlan) {
	d := pub.Decision
	var b strings.Builder
	b.WriteString(markerAdvisory + "\n")
	b.WriteString(walkthroughSection(d.Walkthrough))
	fmt.Fprintf(&b, "### %s\n\n", gateTitle(d))
	// The pipeline's own rendering (Decision.Comment) repeats the table and the findings this
	// comment lists with their inline placement, so only the gate's reason is taken from it.
	if d.Gate.Reason != "" && d.Gate.State != review.OutcomePassed {
		b.WriteString(clean(truncate(d.Gate.Reason, 4000)) + "\n\n")
	}
	b.WriteString(subjectLine(r.info, d) + "\n\n")
	b.WriteString(r.refusedBlockNotice())
	b.WriteString(r.detailsLine())
	if s := scopeLine(d); s != "" {
		b.WriteString(s + "\n\n")
	}
	b.WriteString(lensTable(d) + "\n")
	b.WriteString(configSection(pub))
	if len(plan.moved) > 0 {
		b.WriteString("#### Not placed inline\n\n" + strings.Join(plan.moved, "") + "\n")
	}
	b.WriteString(heldSection(plan))
	// Every finding, briefly: those placed inline are marked, so this comment alone tells the
	// current state even when older inline comments sit on outdated lines.
	var listed []string
	for i, f := range sortedFindings(d.Findings) {
		if i == maxListedFindings {
			listed = append(listed, fmt.Sprintf("- … and %d more in the check run\n", len(d.Findings)-i))
			break
		}
		line := findingLine(f)
		if plan.placed[placeKey(f.Path, f.Line)] {
			f.Body = "" // the detail is in the inline comment
			line = strings.TrimSuffix(findingLine(f), "\n") + " _(inline)_\n"
		}
		listed = append(listed, line)
	}
	if len(listed) > 0 {
		b.WriteString("#### Findings\n\n" + strings.Join(listed, "") + "\n")
	}
	if gaps := d.Coverage.Gaps; len(gaps) > 0 {
		b.WriteString("#### Not reviewed\n\n")
		for i, g := range gaps {
			if i == 50 {
				fmt.Fprintf(&b, "- … and %d more in the check run\n", len(gaps)-i)
				break
			}
			b.WriteString("- " + code(g.Path, 200) + ": " + oneLine(g.Reason, 200) + "\n")
		}
		b.WriteString("\n")
	}
	if len(d.Intake.Messages) > 0 {
		for _, m := range d.Intake.Messages {
			if !m.Passed {
				b.WriteString("- intake " + code(m.Check, 32) + ": " + oneLine(m.Message, 500) + "\n")
			}
		}
		b.WriteString("\n")
	}
	if m := modelSection(d); m != "" {
		b.WriteString(strings.TrimPrefix(m, "\n") + "\n")
	}
	b.WriteString("lensgate recommends; it never approves or merges. A human decides.\n\n")
	r.writeSticky(ctx, existing, fitComment(b.String(), r.stickyTail(rc, pull.HiddenValue(existing.GetBody(), markerHeads))))
}

// refusedBlockNotice says in the comment, not only in the check text, that the body's
// disclosure markers could not be told apart from a forged block, so no block was written and
// whatever block the body shows is not lensgate's.
func (r *run) refusedBlockNotice() string {
	if r.bodyRefused == "" {
		return ""
	}
	return "**No disclosure block was written this run.** The body holds lensgate's disclosure markers in a way that cannot be told apart from a forged block (" +
		oneLine(r.bodyRefused, 200) + "), so any block shown in it is not lensgate's. Remove the stray `proofbundle:agent-review` marker comments from the body and the next run writes the block.\n\n"
}

// stickyTail is the end of the advisory comment that must survive any cut: the signed receipt
// and the state marker a re-run recognises its own outcome by.
func (r *run) stickyTail(rc *receiptInfo, priorHeads string) string {
	state := r.state
	if rc != nil && rc.state != "" {
		state = rc.state
	}
	var tail string
	if rc != nil {
		tail = receiptSection(rc.envelope, rc.receiptDigest, rc.subjectDigest)
		if len(tail) > maxCommentBody/2 {
			// A receipt over so many findings does not fit a comment; say where it is bound.
			tail = fmt.Sprintf("The signed receipt (%d bytes) is too large for a comment; the `Receipt:` line of the pull request body names its digest.\n", len(rc.envelope))
			r.notes = append(r.notes, "signed receipt too large for the comment and the check text")
		} else {
			tail += observationSection(rc.observation, rc.observationDigest)
		}
	}
	tail += r.reviewedHeads(priorHeads)
	if state != "" {
		tail += markerState + state + markerEnd + "\n"
	}
	if r.memoText != "" {
		tail += pull.MarkerMemo + r.memoText + markerEnd + "\n"
	}
	return tail
}

// fitComment joins head and tail within GitHub's comment limit, cutting the head.
func fitComment(head, tail string) string {
	if len(head)+len(tail) <= maxCommentBody {
		return head + tail
	}
	const cut = "\n\n(truncated; the check run lists every finding)\n\n"
	return truncate(head, maxCommentBody-len(tail)-len(cut)) + cut + tail
}

// subjectLine names what was reviewed, so a reader can tell the comment is current.
func subjectLine(info subjectInfo, d *review.Decision) string {
	line := "Reviewed head `" + short(info.headSHA) + "`"
	if info.baseSHA != "" {
		line += " against base `" + short(info.baseSHA) + "`"
	}
	if c := d.Coverage; c.Status != "" {
		line += fmt.Sprintf("; coverage %s (%d of %d files)", oneLine(c.Status, 16), c.FilesReviewed, c.FilesTotal)
	}
	return line + "."
}

// short is a SHA as comments show it: abbreviated, and on one line whatever GitHub sent.
func short(sha string) string { return oneLine(digest.Short(sha), digest.ShortLen) }

// bodyTarget is a body that carries a disclosure block: a pull request's or an issue's.
type bodyTarget struct {
	// read returns the current body and when the subject was last revised.
	read func(ctx context.Context) (string, time.Time, error)
	// write replaces the body.
	write func(ctx context.Context, body string) (*github.Response, error)
	// state is the state key of this run's outcome over a body core digest.
	state func(core string) string
	// predicate builds the statement for a body revised at revisedAt.
	predicate func(revisedAt time.Time, prior, reason string) *disclosure.Predicate
	// reason explains why a new receipt supersedes prior.
	reason func(prior *receiptInfo) string
	// observe signs the runner's observation beside a new receipt (nil: none).
	observe func(ctx context.Context, rc *disclosure.Receipt, prior []byte) (*observation.Signed, error)
}

// disclose signs the receipt and splices its block into the body. It re-reads the body right
// before writing and starts over when the author edited it meanwhile, so no edit is lost and
// the signed body core matches what is published. An unchanged subject and outcome keep the
// previous receipt instead of signing a new one.
func (r *run) disclose(ctx context.Context, tgt bodyTarget, body string, revised time.Time, sticky *github.IssueComment) *receiptInfo {
	if r.p.signer == nil {
		return nil
	}
	var prior *receiptInfo
	var priorObservation []byte
	priorState := ""
	if sticky != nil {
		prior = r.receiptFromEnvelope(extractEnvelope(sticky.GetBody()))
		priorState = pull.HiddenValue(sticky.GetBody(), markerState)
		if prior != nil && tgt.observe != nil {
			// The runner checks the earlier observation itself (its own key, current or retired).
			priorObservation = extractObservation(sticky.GetBody())
			r.keepObservation(prior, priorObservation)
		}
	}
	body, revised = r.bodySinceOwnWrite(ctx, tgt, body, revised, prior, sticky)
	for attempt := 0; attempt < 3; attempt++ {
		prepared, err := block.Prepare(body)
		if err != nil {
			r.notes = append(r.notes, "disclosure block not written: the body is ambiguous ("+err.Error()+")")
			r.bodyRefused = err.Error()
			return prior
		}
		core, err := block.BodyCoreDigest(prepared)
		if err != nil {
			r.notes = append(r.notes, "disclosure block not written: "+err.Error())
			return prior
		}
		state := tgt.state(core)
		if prior != nil && priorState == state && bodyShowsReceipt(body, prior.fileDigest) {
			prior.state = state
			return prior
		}
		priorDigest, reason := "", ""
		if prior != nil {
			priorDigest, reason = prior.receiptDigest, tgt.reason(prior)
		}
		pred := tgt.predicate(revised, priorDigest, reason)
		// The receipt must fit the comment and the check text, or it is published nowhere and the
		// next receipt cannot name it: list the most severe findings, and say how many are not.
		if left, err := pred.BoundFindings(maxReceiptEnvelope); err == nil && left > 0 {
			r.notes = append(r.notes, fmt.Sprintf("the signed receipt lists the %d most severe findings; %d more are counted in it and named as a coverage gap", len(pred.Findings), left))
		}
		disc, err := disclosure.Disclose(body, pred, *r.p.signer)
		if err != nil {
			r.notes = append(r.notes, "receipt not signed: "+oneLine(err.Error(), 500))
			return prior
		}
		rc := &receiptInfo{
			envelope: disc.Receipt.Envelope, receiptDigest: disc.Receipt.ReceiptDigest,
			fileDigest: digest.SHA256Hex(disc.Receipt.Envelope), subjectDigest: disc.Receipt.SubjectDigest,
			fresh: true, state: state,
		}
		if tgt.observe != nil {
			if obs, err := tgt.observe(ctx, disc.Receipt, priorObservation); err != nil {
				r.notes = append(r.notes, "runner observation not signed: "+oneLine(err.Error(), 500))
			} else {
				rc.observation, rc.observationDigest = obs.Envelope, obs.Digest
			}
		}
		// Re-read just before writing: an author edit since the first read means starting over.
		current, rev, err := tgt.read(ctx)
		if err != nil {
			r.fail(err)
			return rc
		}
		if r.movedOn {
			return nil // the newer head's run writes the body
		}
		if current != body {
			body, revised = current, rev
			r.notes = append(r.notes, "the body changed while publishing; receipt re-signed over the new body")
			continue
		}
		if len(disc.Body) > maxCommentBody {
			r.notes = append(r.notes, "disclosure block not written: the body would exceed GitHub's 65,536 characters; the receipt is in the comment")
			return rc
		}
		if !r.authorize(ctx, pdp.Action{Kind: pdp.KindDisclosure, Target: "body", BodyBefore: body, BodyAfter: disc.Body}) {
			return rc
		}
		r.fail(r.p.call(ctx, "update body", func(ctx context.Context) (*github.Response, error) {
			return tgt.write(ctx, disc.Body)
		}, func(ctx context.Context) (bool, error) {
			return r.bodyLanded(ctx, tgt, disc.Body)
		}))
		return rc
	}
	r.notes = append(r.notes, "the body kept changing while publishing; disclosure block not written this run")
	return prior
}

// How long a body read that predates lensgate's own last body write is read again: GitHub's
// replicas can show the body from before that write for a moment after it.
const (
	ownWriteLagWait     = 10 * time.Second
	ownWriteLagMaxPause = time.Second
	// landedCheckWait bounds the re-reads that look for a body write whose answer was lost.
	landedCheckWait = 3 * time.Second
)

// bodySinceOwnWrite returns a body read no older than lensgate's own last publication. The body
// is written before the sticky comment, so a body that does not show the sticky's receipt and was
// not revised after the sticky was written predates that write (or was edited in the same
// second): it is read again until it shows the receipt or a later revision, or ownWriteLagWait
// passes. Splicing the block into the older body would sign and write a stale body, and would
// drop an author's edit made meanwhile from the next read.
func (r *run) bodySinceOwnWrite(ctx context.Context, tgt bodyTarget, body string, revised time.Time, prior *receiptInfo, sticky *github.IssueComment) (string, time.Time) {
	if prior == nil || sticky == nil || sticky.UpdatedAt == nil {
		return body, revised
	}
	written := sticky.GetUpdatedAt().Time
	stale := func(b string, rev time.Time) bool {
		return !bodyShowsReceipt(b, prior.fileDigest) && !rev.After(written)
	}
	if !stale(body, revised) {
		return body, revised
	}
	pause := 50 * time.Millisecond
	// Measured on the wall clock: the wait is for GitHub's replicas.
	for deadline := time.Now().Add(ownWriteLagWait); time.Now().Before(deadline); pause = min(2*pause, ownWriteLagMaxPause) {
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return body, revised
		}
		b, rev, err := tgt.read(ctx)
		if err != nil || r.movedOn {
			return body, revised
		}
		if body, revised = b, rev; !stale(b, rev) {
			return body, revised
		}
	}
	r.notes = append(r.notes, "the body read does not show the last receipt lensgate published; the block is written over the body as read")
	return body, revised
}

// bodyLanded reports whether a body write whose answer was lost landed. A read can show the body
// from before the write for a moment (GitHub's replicas lag), so a read without it is repeated
// for up to landedCheckWait before the write counts as lost: writing the same body again is
// harmless, but not when an author edit came in between.
func (r *run) bodyLanded(ctx context.Context, tgt bodyTarget, written string) (bool, error) {
	pause := 50 * time.Millisecond
	deadline := time.Now().Add(landedCheckWait) // the wall clock: the wait is for GitHub's replicas
	for {
		now, _, err := tgt.read(ctx)
		if err != nil || now == written {
			return err == nil, err
		}
		if !time.Now().Before(deadline) {
			return false, nil
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return false, ctx.Err()
		}
		pause = min(2*pause, ownWriteLagMaxPause)
	}
}

// pullTarget is the pull request body of a decision.
func (r *run) pullTarget(d *review.Decision) bodyTarget {
	return bodyTarget{
		read: func(ctx context.Context) (string, time.Time, error) {
			pr, err := r.getPull(ctx)
			if err == nil && (pr.GetHead().GetSHA() != r.info.headSHA || pr.GetState() != "open") {
				r.movedOn = true
			}
			return pr.GetBody(), pr.GetUpdatedAt().Time, err
		},
		write: func(ctx context.Context, body string) (*github.Response, error) {
			_, resp, err := r.gh.PullRequests.Edit(ctx, r.info.owner, r.info.repo, r.info.number, &github.PullRequest{Body: github.String(body)})
			return resp, err
		},
		state: func(core string) string { return stateKey(r.info, d, core) },
		predicate: func(_ time.Time, prior, reason string) *disclosure.Predicate {
			return predicate(r.info, d, r.p.now().UTC(), prior, reason)
		},
		observe: r.observer(d),
		reason: func(prior *receiptInfo) string {
			if priorHead(prior.envelope) != r.info.headSHA {
				return "new head " + r.info.headSHA
			}
			return "pull request body or outcome changed"
		},
	}
}

// observer signs the decision's observation with the witness key, or asks the runner in
// another process to sign it; nil without either.
func (r *run) observer(d *review.Decision) func(ctx context.Context, rc *disclosure.Receipt, prior []byte) (*observation.Signed, error) {
	if r.p.runnerKey != nil {
		rn := runner.RunOf(d.Session)
		if rn == nil {
			return func(context.Context, *disclosure.Receipt, []byte) (*observation.Signed, error) {
				return nil, errors.New("no runtime call of this review went to the runner, so it observed nothing")
			}
		}
		return func(ctx context.Context, rc *disclosure.Receipt, prior []byte) (*observation.Signed, error) {
			var earlier [][]byte
			if len(prior) > 0 {
				earlier = [][]byte{prior}
			}
			return rn.Observe(ctx, rc.Envelope, earlier, maxObservationEnvelope)
		}
	}
	if r.p.witness == nil || d.Observed == nil {
		return nil
	}
	return func(_ context.Context, rc *disclosure.Receipt, _ []byte) (*observation.Signed, error) {
		return review.SignObservation(d, rc, r.p.runnerVersion, *r.p.witness, maxObservationEnvelope)
	}
}

// witnessKey is the public key observations beside this publisher's receipts are signed with.
func (p *Publisher) witnessKey() ed25519.PublicKey {
	if p.runnerKey != nil {
		return p.runnerKey
	}
	if p.witness != nil {
		return p.witness.Key.Public().(ed25519.PublicKey)
	}
	return nil
}

// keepObservation keeps the observation published beside a kept receipt, when it is this
// runner's own and bound to that receipt.
func (r *run) keepObservation(prior *receiptInfo, env []byte) {
	if len(env) == 0 {
		return
	}
	res := observation.Verify(env, observation.Options{
		WitnessKey: r.p.witnessKey(), Receipt: prior.envelope,
	})
	if res.RunnerObservation == observation.Match {
		prior.observation, prior.observationDigest = env, res.ObservationDigest
	}
}

// bodyShowsReceipt reports whether the body's block carries the Receipt line of fileDigest.
func bodyShowsReceipt(body, fileDigest string) bool {
	lines, err := block.Parse(body)
	return err == nil && block.ReceiptDigest(lines) == fileDigest
}

// issueTarget is the issue body of a triage decision.
func (r *run) issueTarget(t *review.TriageDecision) bodyTarget {
	return bodyTarget{
		read: func(ctx context.Context) (string, time.Time, error) {
			var is *github.Issue
			err := r.p.call(ctx, "get issue", func(ctx context.Context) (*github.Response, error) {
				var resp *github.Response
				var err error
				is, resp, err = r.gh.Issues.Get(ctx, r.info.owner, r.info.repo, r.info.number)
				return resp, err
			}, nil)
			return is.GetBody(), is.GetUpdatedAt().Time, err
		},
		write: func(ctx context.Context, body string) (*github.Response, error) {
			_, resp, err := r.gh.Issues.Edit(ctx, r.info.owner, r.info.repo, r.info.number, &github.IssueRequest{Body: github.String(body)})
			return resp, err
		},
		state: func(core string) string { return triageStateKey(t, core) },
		predicate: func(revised time.Time, prior, reason string) *disclosure.Predicate {
			return issuePredicate(r.info, t, revised, r.p.now().UTC(), prior, reason)
		},
		reason: func(*receiptInfo) string { return "issue body or triage outcome changed" },
	}
}

// configSection says where the policy came from and, when the pull request changes the
// configuration file, what is wrong with the proposed one: it is validated, never applied.
func configSection(pub *publication.Publication) string {
	var b strings.Builder
	if src := pub.Config; src.Origin != "" {
		where := src.Origin
		if src.Source != "" {
			at := src.Source
			if src.Path != "" {
				at += ":" + src.Path
			}
			where += " " + code(at, 400)
		}
		b.WriteString("Policy from: " + where + ".\n\n")
	}
	if p := pub.Proposed; p != nil {
		fmt.Fprintf(&b, "#### This pull request changes %s\n\nThe new file is checked, not applied: the review uses the base branch's policy.\n", code(p.Path, 200))
		switch {
		case p.Err != nil:
			b.WriteString("The new file could not be read: " + oneLine(p.Err.Error(), 300) + "\n")
		case len(p.Problems) == 0:
			b.WriteString("The new file is valid.\n")
		default:
			for i, pr := range p.Problems {
				if i == 50 {
					fmt.Fprintf(&b, "- … and %d more\n", len(p.Problems)-i)
					break
				}
				b.WriteString("- " + oneLine(pr.String(), 500) + "\n")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
