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
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review"
)

// Check-run conclusions. A pending required lens concludes action_required: it blocks a
// required check, where neutral and skipped would read as passing.
const (
	conclusionSuccess = "success"
	conclusionFailure = "failure"
	conclusionBlocked = "action_required"
	conclusionNeutral = "neutral"
)

// checksTarget is the PDP target of every check-run write of a run: creating, completing and
// annotating the gate and per-lens checks is one action (ASDD's set-status).
const checksTarget = "checks"

// gateConclusion maps the gate to a conclusion that is success only when the gate passed.
func gateConclusion(g review.Gate) string {
	switch {
	case g.State == review.OutcomePassed && len(g.BlockingPending) == 0 && len(g.BlockingFailures) == 0:
		return conclusionSuccess
	case g.State == review.OutcomeFailed:
		return conclusionFailure
	}
	return conclusionBlocked
}

// findCheck returns the App's newest check run of that name for the head, or nil.
func (r *run) findCheck(ctx context.Context, name string) (*github.CheckRun, error) {
	var found *github.CheckRun
	err := r.p.call(ctx, "list check runs", func(ctx context.Context) (*github.Response, error) {
		opts := &github.ListCheckRunsOptions{CheckName: github.String(name), Filter: github.String("latest"), ListOptions: github.ListOptions{PerPage: 100}}
		if r.info.appID != 0 {
			opts.AppID = github.Int64(r.info.appID)
		}
		res, resp, err := r.gh.Checks.ListCheckRunsForRef(ctx, r.info.owner, r.info.repo, r.info.headSHA, opts)
		if err != nil {
			return resp, err
		}
		found = nil
		for _, c := range res.CheckRuns {
			if c.GetName() == name && (found == nil || c.GetID() > found.GetID()) {
				found = c
			}
		}
		return resp, nil
	}, nil)
	return found, err
}

// gateKey is the record key of this head's gate check run.
func (r *run) gateKey() queue.CheckKey {
	repo := r.info.repoNodeID
	if repo == "" {
		repo = strings.ToLower(r.info.fullName)
	}
	return queue.CheckKey{App: r.info.appID, Repo: repo, Head: r.info.headSHA, Name: r.p.checkName}
}

// gateRecord reads the record of this head's gate check run. Without a record under the
// repository's node id, it reads the one under owner/name: a publication that could not read
// the pull request (a review reported not possible) knew only the job's owner and name, and
// wrote there.
func (r *run) gateRecord(ctx context.Context) (queue.CheckRecord, bool, error) {
	key := r.gateKey()
	rec, found, err := r.p.records.Check(ctx, key)
	if err != nil || found || r.info.repoNodeID == "" {
		return rec, found, err
	}
	key.Repo = strings.ToLower(r.info.fullName)
	return r.p.records.Check(ctx, key)
}

// knownGate returns the head's gate check run as the App last wrote it, from the record that
// outlives each job: a push, a re-run or a repeated review of the head lists no check runs,
// and no record means the App never began to create one (a create is recorded before it is
// sent). The head's check runs are listed instead when the record store fails, when the
// record says a create or write was left with an unknown outcome (its answer was lost, or its
// job ended first), and for a resumed job, whose first attempt may have begun on a replica
// that kept no record.
func (r *run) knownGate(ctx context.Context, resumed bool) (*github.CheckRun, error) {
	name := r.p.checkName
	if !resumed {
		rec, found, err := r.gateRecord(ctx)
		if found && r.p.now().Sub(rec.At) > queue.CheckRecordsKept {
			found = false // the run may have gone stale since; a new one is written
		}
		switch {
		case err != nil:
			zerolog.Ctx(ctx).Warn().Err(err).Msg("gate check record unreadable; listing the head's check runs")
		case !found:
			return nil, nil
		case rec.Status == queue.CheckStatusUnknown:
			zerolog.Ctx(ctx).Info().Int64("check_run_id", rec.ID).Msg("gate check write of unknown outcome; listing the head's check runs")
		default:
			return &github.CheckRun{
				ID: github.Int64(rec.ID), Name: github.String(name), HeadSHA: github.String(r.info.headSHA), Status: github.String(rec.Status),
				Output: &github.CheckRunOutput{Title: github.String(rec.Title), AnnotationsCount: github.Int(rec.Annotations)},
			}, nil
		}
	}
	cr, err := r.findCheck(ctx, name)
	if err == nil && cr != nil {
		r.recordGate(ctx, cr, cr.GetOutput().GetAnnotationsCount())
	}
	return cr, err
}

// recordGate keeps what a write (or a lookup) says of the gate check run.
func (r *run) recordGate(ctx context.Context, cr *github.CheckRun, annotations int) {
	r.putGateRecord(ctx, queue.CheckRecord{
		ID: cr.GetID(), Status: cr.GetStatus(), Title: cr.GetOutput().GetTitle(), Annotations: annotations, At: r.p.now(),
	})
}

// unsureGate records that GitHub may hold a gate check run, or a state of run known, that no
// record names: a create is about to be sent, or a write failed or lost its answer. The next
// review of the head lists its check runs rather than create a second one.
func (r *run) unsureGate(ctx context.Context, known int64) {
	r.putGateRecord(ctx, queue.CheckRecord{ID: known, Status: queue.CheckStatusUnknown, At: r.p.now()})
}

// putGateRecord writes rec even when the job's context has ended: what GitHub was sent by
// then is what the next review of the head must know.
func (r *run) putGateRecord(ctx context.Context, rec queue.CheckRecord) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gateRecordTimeout)
	defer cancel()
	if err := r.p.records.PutCheck(ctx, r.gateKey(), rec); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("status", rec.Status).Msg("gate check record not written")
	}
}

// gateRecordTimeout bounds a gate check record's write.
const gateRecordTimeout = 10 * time.Second

// forgetGate drops the record of a run GitHub no longer has.
func (r *run) forgetGate(ctx context.Context) {
	if err := r.p.records.ForgetCheck(ctx, r.gateKey()); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("gate check record not forgotten")
	}
}

// putCheck creates the check run or updates the existing one. Output annotations are the
// first batch; callers send further batches with addAnnotations.
func (r *run) putCheck(ctx context.Context, existing *github.CheckRun, name string, lenses []string, status, conclusion string, out *github.CheckRunOutput) error {
	err := r.writeCheck(ctx, existing, name, lenses, status, conclusion, out)
	if existing == nil || name != r.p.checkName || !isCallStatus(err, http.StatusNotFound) {
		return err
	}
	// The recorded run is gone (the repository was recreated, or the record is stale): the
	// head's check runs say which one to write, if any.
	r.forgetGate(ctx)
	r.p.takeCheck(r.checkKey(name))
	found, lerr := r.findCheck(ctx, name)
	if lerr != nil || found.GetID() == existing.GetID() {
		return err
	}
	r.errs, r.notes = r.errs[:len(r.errs)-1], r.notes[:len(r.notes)-1]
	if found != nil {
		r.recordGate(ctx, found, found.GetOutput().GetAnnotationsCount())
	}
	return r.writeCheck(ctx, found, name, lenses, status, conclusion, out)
}

// isCallStatus reports a call that failed with GitHub's answer status.
func isCallStatus(err error, status int) bool {
	var ce *CallError
	return errors.As(err, &ce) && ce.Status == status
}

func (r *run) writeCheck(ctx context.Context, existing *github.CheckRun, name string, lenses []string, status, conclusion string, out *github.CheckRunOutput) error {
	const target = checksTarget
	gate := name == r.p.checkName
	if existing == nil {
		if !r.authorize(ctx, pdp.Action{Kind: pdp.KindCheckRunCreate, Target: target, Lenses: lenses, Tokens: r.tokens}) {
			return nil
		}
		opts := github.CreateCheckRunOptions{Name: name, HeadSHA: r.info.headSHA, Status: github.String(status), Output: out}
		if conclusion != "" {
			opts.Conclusion = github.String(conclusion)
		}
		opts.DetailsURL = github.String(r.p.checkDetailsURL(r.info))
		var replaces int64
		if gate {
			// Recorded before it is sent: a create whose answer is lost, or whose job ends
			// before its record is written, leaves the next review to list, not create again.
			replaces = r.replaces
			r.unsureGate(ctx, replaces)
		}
		var written *github.CheckRun
		err := r.p.call(ctx, "create check run "+name, func(ctx context.Context) (*github.Response, error) {
			cr, resp, err := r.gh.Checks.CreateCheckRun(ctx, r.info.owner, r.info.repo, opts)
			if err == nil {
				r.p.rememberCheck(r.checkKey(name), cr)
				written = cr
			}
			return resp, err
		}, func(ctx context.Context) (bool, error) {
			c, err := r.findCheck(ctx, name)
			if c == nil || c.GetID() <= replaces {
				return false, err // only the run a re-run follows: the create did not land
			}
			r.p.rememberCheck(r.checkKey(name), c)
			written = c
			return true, err
		})
		if gate && written != nil {
			r.recordGate(ctx, written, written.GetOutput().GetAnnotationsCount())
		}
		if err != nil {
			r.fail(err)
		}
		return err
	}
	if !r.authorize(ctx, pdp.Action{Kind: pdp.KindCheckRunUpdate, Target: target, Lenses: lenses, Tokens: r.tokens}) {
		return nil
	}
	opts := github.UpdateCheckRunOptions{Name: name, Status: github.String(status), Output: out}
	opts.DetailsURL = github.String(r.p.checkDetailsURL(r.info))
	if conclusion != "" {
		opts.Conclusion = github.String(conclusion)
	}
	// GitHub appends the annotations of every update: a batch whose answer was lost must not
	// be sent again if it landed.
	var recheck func(context.Context) (bool, error)
	var written *github.CheckRun
	if n := len(out.Annotations); n > 0 {
		want := r.annotationCount(existing) + n
		recheck = func(ctx context.Context) (bool, error) {
			cr, _, err := r.gh.Checks.GetCheckRun(ctx, r.info.owner, r.info.repo, existing.GetID())
			if err != nil {
				return false, err
			}
			r.annotated[existing.GetID()] = cr.GetOutput().GetAnnotationsCount()
			if cr.GetOutput().GetAnnotationsCount() < want {
				return false, nil
			}
			// The update landed: the run as GitHub now has it is what this write recorded.
			r.p.rememberCheck(r.checkKey(name), cr)
			written = cr
			return true, nil
		}
	}
	err := r.p.call(ctx, "update check run "+name, func(ctx context.Context) (*github.Response, error) {
		cr, resp, err := r.gh.Checks.UpdateCheckRun(ctx, r.info.owner, r.info.repo, existing.GetID(), opts)
		if err == nil {
			r.p.rememberCheck(r.checkKey(name), cr)
			r.annotated[existing.GetID()] = cr.GetOutput().GetAnnotationsCount()
			written = cr
		}
		return resp, err
	}, recheck)
	if gate {
		if err != nil || written == nil {
			// The write may have landed in part (annotations are appended) or not at all.
			r.unsureGate(ctx, existing.GetID())
		} else {
			r.recordGate(ctx, written, written.GetOutput().GetAnnotationsCount())
		}
	}
	if err != nil {
		r.fail(err)
	}
	return err
}

// annotationCount is how many annotations a check run holds as far as this run knows.
func (r *run) annotationCount(cr *github.CheckRun) int {
	if n, ok := r.annotated[cr.GetID()]; ok {
		return n
	}
	return cr.GetOutput().GetAnnotationsCount()
}

// maxAnnotations bounds the annotations of one check run: 10 batches of 50 writes.
const maxAnnotations = 10 * annotationBatch

// annotations turns located findings into check annotations, worst first.
func annotations(fs []review.Finding) []*github.CheckRunAnnotation {
	var out []*github.CheckRunAnnotation
	for _, f := range sortedFindings(fs) {
		if f.Path == "" || f.Line <= 0 {
			continue
		}
		level := "notice"
		switch {
		case f.Severity.Blocks():
			level = "failure"
		case f.Severity == review.SeverityMedium:
			level = "warning"
		}
		a := &github.CheckRunAnnotation{
			Path: github.String(truncate(f.Path, 1000)), StartLine: github.Int(f.Line), EndLine: github.Int(f.Line),
			AnnotationLevel: github.String(level), Title: github.String(truncate(plainLine("["+f.Lens+"] "+f.Title), 255)),
			Message: github.String(truncate(plain(firstNonEmpty(f.Body, f.Title)), 64000)),
		}
		out = append(out, a)
	}
	return out
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return "finding"
}

// completeGate concludes the gate check run for the reviewed head, creating it when Begin
// could not. Annotations go in batches of 50 and only once per check run, so a re-run of the
// same head does not add them again.
func (r *run) completeGate(ctx context.Context, d *review.Decision, rc *receiptInfo, moved []string) {
	name := r.p.checkName
	// The gate check Begin created or re-opened in this job; listing is the fallback.
	existing := r.p.takeCheck(r.checkKey(name))
	if existing == nil {
		var err error
		if existing, err = r.findCheck(ctx, name); err != nil {
			r.fail(err)
			return
		}
	}
	receipt := ""
	if rc != nil {
		receipt = receiptSection(rc.envelope, rc.receiptDigest, rc.subjectDigest)
		if len(receipt) > maxCheckText/2 {
			receipt = ""
			r.notes = append(r.notes, fmt.Sprintf("the signed receipt (%d bytes) is too large for the check text and the comment; the Receipt line of the pull request body names its digest", len(rc.envelope)))
		} else if obs := observationSection(rc.observation, rc.observationDigest); len(receipt)+len(obs)+len(r.record)+4096 <= maxCheckText {
			receipt += obs
		} else if obs != "" {
			// Only beside a receipt near its bound: the comment still carries the observation.
			r.notes = append(r.notes, "the runner observation does not fit the check text beside the receipt; the advisory comment carries it")
		}
	}
	all := annotations(d.Findings)
	if len(all) > maxAnnotations {
		// Each batch is a write; an unbounded list would spend the run's write cap before the
		// advisory comment. Findings are ordered worst first, so the cut keeps the serious ones.
		r.notes = append(r.notes, fmt.Sprintf("%d annotations; the first %d are attached, every finding is listed below", len(all), maxAnnotations))
		all = all[:maxAnnotations]
	}
	// Notes so far (PDP denials, degraded parts) are part of what the run reports; they come
	// first and, like the receipt, survive the cut of the findings.
	var nb strings.Builder
	for i, n := range r.notes {
		if i == 0 {
			nb.WriteString("### Publication notes\n\n")
		}
		if i == 50 {
			fmt.Fprintf(&nb, "- … and %d more\n", len(r.notes)-i)
			break
		}
		nb.WriteString("- " + oneLine(n, 400) + "\n")
	}
	if nb.Len() > 0 {
		nb.WriteString("\n")
	}
	text := checkText(d, moved, nb.String(), receipt, r.record)
	batches := [][]*github.CheckRunAnnotation{nil}
	if existing == nil || existing.GetOutput().GetAnnotationsCount() == 0 {
		batches = batches[:0]
		for len(all) > annotationBatch {
			batches = append(batches, all[:annotationBatch])
			all = all[annotationBatch:]
		}
		batches = append(batches, all)
	}
	out := func(batch []*github.CheckRunAnnotation) *github.CheckRunOutput {
		return &github.CheckRunOutput{
			Title: github.String(truncate(gateTitle(d), 255)), Summary: github.String(summary(d)),
			Text: github.String(text), Annotations: batch,
		}
	}
	conclusion := gateConclusion(d.Gate)
	// The concluding write's audit record carries what the run's model calls cost.
	r.tokens = auditTokens(d)
	err := r.putCheck(ctx, existing, name, nil, "completed", conclusion, out(batches[0]))
	r.tokens = nil
	if err != nil || len(batches) == 1 {
		return
	}
	if existing == nil {
		existing = r.p.takeCheck(r.checkKey(name))
	}
	if existing == nil {
		var err error
		if existing, err = r.findCheck(ctx, name); err != nil || existing == nil {
			r.fail(fmt.Errorf("gate check run not found after creating it: %v", err))
			return
		}
	}
	for _, b := range batches[1:] {
		if err := r.putCheck(ctx, existing, name, nil, "completed", conclusion, out(b)); err != nil {
			return
		}
	}
}

// lensChecks publishes one check run per lens whose publication is check.
func (r *run) lensChecks(ctx context.Context, d *review.Decision) {
	for _, l := range d.Lenses {
		if l.Publication != config.PublicationCheck {
			continue
		}
		name := r.p.checkName + " / " + l.Name
		existing, err := r.findCheck(ctx, name)
		if err != nil {
			r.fail(err)
			continue
		}
		conclusion := conclusionNeutral
		switch {
		case l.Outcome == review.OutcomePassed:
			conclusion = conclusionSuccess
		case l.Outcome == review.OutcomeFailed && l.Required:
			conclusion = conclusionFailure
		case l.Outcome == review.OutcomePending && l.Required:
			conclusion = conclusionBlocked
		}
		var b strings.Builder
		b.WriteString(fmt.Sprintf("Lens **%s**: %s\n\n", oneLine(l.Name, 64), outcomeIcon(l.Outcome)))
		if l.Cause != "" {
			b.WriteString("Cause: " + oneLine(l.Cause, 500) + "\n\n")
		}
		for _, f := range sortedFindings(l.Findings) {
			b.WriteString(findingLine(f))
		}
		var anns []*github.CheckRunAnnotation
		if existing == nil || existing.GetOutput().GetAnnotationsCount() == 0 {
			anns = annotations(l.Findings)
			if len(anns) > annotationBatch {
				anns = anns[:annotationBatch]
			}
		}
		out := &github.CheckRunOutput{
			Title:   github.String(truncate(fmt.Sprintf("%s: %s", l.Name, l.Outcome), 255)),
			Summary: github.String(truncate(b.String(), maxCheckText)), Annotations: anns,
		}
		if existing != nil && existing.GetStatus() == "completed" && existing.GetConclusion() == conclusion &&
			existing.GetOutput().GetTitle() == out.GetTitle() && existing.GetOutput().GetSummary() == out.GetSummary() {
			continue // already says exactly this
		}
		_ = r.putCheck(ctx, existing, name, []string{l.Name}, "completed", conclusion, out)
	}
}

// receiptInfo is the receipt published by this run (or kept from the previous one).
type receiptInfo struct {
	envelope      []byte
	receiptDigest string // payload digest, the key for supersession
	fileDigest    string // sha256 of the envelope bytes, shown on the Receipt line
	// observation is the runner's signed observation beside the receipt (nil without a
	// witness key), and observationDigest its payload digest.
	observation       []byte
	observationDigest string
	subjectDigest     string
	fresh             bool
	state             string // stateKey of what the receipt states
}

func (r *run) receiptFromEnvelope(env []byte) *receiptInfo {
	if len(env) == 0 || r.p.signer == nil {
		return nil
	}
	pub, ok := r.p.signer.Key.Public().(ed25519.PublicKey)
	if !ok {
		return nil
	}
	// Only a receipt this App signed is kept or superseded; anything else in the comment is
	// ignored.
	rep := disclosure.Verify(env, disclosure.Options{PublicKey: pub})
	if rep.CryptoOK == nil || !*rep.CryptoOK || rep.ReceiptDigest == "" {
		return nil
	}
	return &receiptInfo{envelope: env, receiptDigest: rep.ReceiptDigest, fileDigest: digest.SHA256Hex(env), subjectDigest: rep.SubjectDigest}
}

// maxRememberedChecks bounds the check runs remembered between Begin and Publish.
const maxRememberedChecks = 1024

func (r *run) checkKey(name string) string {
	return fmt.Sprintf("%s#%d@%s/%s", r.info.fullName, r.info.number, r.info.headSHA, name)
}

// rememberCheck keeps the check run a write returned, so the same job's Publish needs no
// lookup (and does not depend on the list catching up with the create).
func (p *Publisher) rememberCheck(key string, cr *github.CheckRun) {
	if cr == nil || cr.GetID() == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.checks) >= maxRememberedChecks {
		clear(p.checks) // jobs that never published; a lookup replaces the entry
	}
	p.checks[key] = cr
}

// takeCheck returns and forgets a remembered check run.
func (p *Publisher) takeCheck(key string) *github.CheckRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	cr := p.checks[key]
	delete(p.checks, key)
	return cr
}
