// Package publish is lensgate's GitHub publisher: the only code that writes to GitHub, and only
// what the policy decision point allowed. For a pull request it keeps one gate check run per
// head SHA, one sticky advisory comment, one review per run with inline comments that are
// never repeated, and the disclosure block with a signed receipt in the body. Every write is
// retried on transient failures, degraded when GitHub rejects part of it, and never duplicated.
package publish

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review"
)

// DefaultCheckName is the gate check run's name.
const DefaultCheckName = details.DefaultCheckName

// Options configure a Publisher.
type Options struct {
	// Signer signs receipts with the App's Ed25519 key. Nil publishes no receipt and no
	// disclosure block (the comment and check still appear).
	Signer *disclosure.Signer
	// Witness signs the review-run observation published beside each pull request receipt
	// with the runner's witness key. Nil publishes receipts without an observation.
	Witness *observation.Signer
	// Runner, when set, is the public witness key of a runner in another process that ran the
	// review's runtimes: the observation beside each pull request receipt is then signed by
	// that runner, which checks the receipt against its own record of the review first. The
	// publisher holds no witness key. Witness must be nil with it.
	Runner ed25519.PublicKey
	// RunnerVersion is the lensgate version named in observations ("dev" when empty).
	RunnerVersion string
	// Audit receives every PDP decision. Required.
	Audit pdp.Sink
	// CheckName is the gate check run's name (DefaultCheckName when empty).
	CheckName string
	// DetailsURL is the App's public base URL (https://lensgate.example.com): check runs and the
	// advisory comment link to its details page, /details/{owner}/{repo}/{number}/{head}.
	// Empty links nothing.
	DetailsURL string
	// AllowRequestChanges lets a failing gate publish its review as REQUEST_CHANGES.
	AllowRequestChanges bool
	// Retry bounds retries of GitHub calls (DefaultRetry() when zero).
	Retry Retry
	// CallTimeout bounds one GitHub request (30s when zero).
	CallTimeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// ContentSpacing is the least time between two content-creating writes (comments, reviews,
	// reactions, labels) of one installation, as GitHub asks to stay clear of its secondary
	// rate limits. Zero takes DefaultContentSpacing; a negative value turns spacing off. Check
	// runs are never spaced: the gate check is what branch protection waits for.
	ContentSpacing time.Duration
	// WriteSlots, when set, spaces the content-creating writes of each installation across
	// every process sharing it (durable.WriteSlots: the durable queue's database) instead of
	// within this process only.
	WriteSlots WriteSlots
	// Sleep waits for d or until ctx ends (a timer when nil); tests pass a clock of their own.
	Sleep func(ctx context.Context, d time.Duration) error
	// Checks records the gate check run of each head beyond the job that wrote it, so a later
	// review of the head finds it without a lookup and a new head needs none (in memory,
	// bounded, when nil; the durable queue's database shares it between replicas).
	Checks queue.CheckRecords
	// ProgressInterval is the least time between two writes of a running review's gate check
	// (DefaultProgressInterval when zero; negative: no progress updates, the check says which
	// lenses run until it concludes). MaxProgressWrites bounds the updates of one review
	// (DefaultMaxProgressWrites when zero).
	ProgressInterval  time.Duration
	MaxProgressWrites int
	// GraphQLURL is GitHub's GraphQL endpoint (GitHub's V4 API URL); empty means "graphql"
	// next to the REST base URL, as on github.com.
	GraphQLURL string
	// Feedback, when set, records the repositories' feedback on lensgate's findings and the
	// events of the quality figures (see learn).
	Feedback review.FeedbackStore
}

// Publisher implements publication.Publisher.
type Publisher struct {
	signer              *disclosure.Signer
	witness             *observation.Signer
	runnerKey           ed25519.PublicKey
	runnerVersion       string
	audit               pdp.Sink
	checkName           string
	detailsURL          string
	allowRequestChanges bool
	retry               Retry
	callTimeout         time.Duration
	now                 func() time.Time
	graphQL             string
	progressInterval    time.Duration
	maxProgressWrites   int

	mu     sync.Mutex
	checks map[string]*github.CheckRun // gate check runs between Begin and Publish
	pace   *pacer
	slots  WriteSlots
	// records outlive the job: the gate check run of every head written.
	records  queue.CheckRecords
	feedback review.FeedbackStore
	// gateLocks order Begin and MarkQueued on a head within this process (by checkKey).
	gateLocks headLocks
}

var _ publication.Publisher = (*Publisher)(nil)

// New builds a Publisher.
func New(o Options) (*Publisher, error) {
	if o.Audit == nil {
		return nil, errors.New("publish: an audit sink is required")
	}
	if o.Runner != nil && o.Witness != nil {
		return nil, errors.New("publish: with a runner in another process the publisher holds no witness key")
	}
	p := &Publisher{
		signer: o.Signer, witness: o.Witness, runnerKey: o.Runner, runnerVersion: o.RunnerVersion, audit: o.Audit, checkName: o.CheckName, detailsURL: o.DetailsURL,
		allowRequestChanges: o.AllowRequestChanges, retry: o.Retry, callTimeout: o.CallTimeout, now: o.Now,
		checks: map[string]*github.CheckRun{}, graphQL: o.GraphQLURL, records: o.Checks, feedback: o.Feedback,
	}
	if p.records == nil {
		p.records = queue.NewMemoryChecks(0)
	}
	if p.checkName == "" {
		p.checkName = DefaultCheckName
	}
	if p.retry.Attempts == 0 {
		p.retry = DefaultRetry()
	}
	if p.callTimeout == 0 {
		p.callTimeout = 30 * time.Second
	}
	if p.now == nil {
		p.now = time.Now
	}
	p.progressInterval, p.maxProgressWrites = o.ProgressInterval, o.MaxProgressWrites
	if p.progressInterval == 0 {
		p.progressInterval = DefaultProgressInterval
	}
	if p.maxProgressWrites <= 0 {
		p.maxProgressWrites = DefaultMaxProgressWrites
	}
	p.pace = newPacer(o.ContentSpacing, p.now, o.Sleep)
	p.slots = o.WriteSlots
	return p, nil
}

// subjectInfo is the bound subject of one publication.
type subjectInfo struct {
	owner, repo        string
	number             int
	headSHA, baseSHA   string
	nodeID, repoNodeID string
	author             string
	fullName, botLogin string
	appID              int64
	installation       int64
	publication        map[string]string // lens -> publication mode
	triageLabels       []string
	maxActions         int
	findingLens        map[string]string // "path:line" -> lens
	quality            config.ReviewQuality
}

// run is one Begin or Publish call: its PDP, client and what it had to give up on.
type run struct {
	p      *Publisher
	gh     *github.Client
	pdp    *pdp.PDP
	info   subjectInfo
	notes  []string
	errs   []error
	source string
	// unchanged is true when the advisory comment already states this outcome for this subject.
	unchanged bool
	// duplicates are younger advisory comments of the App's own (ids), to be removed.
	duplicates []int64
	// annotated is the annotation count of check runs this run updated, by id.
	annotated map[int64]int
	state     string
	// movedOn is set when the read right before the body write finds a newer head or a closed
	// pull request.
	movedOn bool
	// bodyRefused is why the body's disclosure markers were refused ("" when they were not).
	bodyRefused string
	// record is the hidden details record for the gate check run's text ("" when none).
	record string
	// tokens is set while the gate's concluding write is authorised.
	tokens *pdp.Tokens
	// memoText is the review state written into the advisory comment.
	memoText string
	// inline indexes the App's inline comments and thread replies, read by planInline.
	inline inlineIndex
	// replaces is the completed gate check run a re-run's new run follows (0: none): a list
	// that shows only it does not show the new run.
	replaces int64
}

func (p *Publisher) newRun(ctx context.Context, gh *github.Client, pub *publication.Publication, phase string) *run {
	s := pub.Subject
	info := subjectInfo{
		owner: s.Owner, repo: s.Repo, number: s.Number, headSHA: s.HeadSHA, baseSHA: s.BaseSHA,
		nodeID: s.NodeID, repoNodeID: s.RepositoryNodeID, author: s.Author,
		fullName: s.Owner + "/" + s.Repo, botLogin: pub.App.BotLogin(), appID: pub.App.ID, installation: pub.Job.InstallationID,
		publication: map[string]string{}, findingLens: map[string]string{},
		triageLabels: config.DefaultTriageLabels(), maxActions: config.DefaultMaxActionsPerRun,
	}
	if rc := pub.Repo; rc != nil {
		// The repository's trusted configuration bounds what this run may write: its own
		// triage labels (an empty list allows none) and its max_actions_per_run.
		info.triageLabels = append([]string{}, rc.TriageLabels...)
		if rc.MaxActionsPerRun > 0 {
			info.maxActions = rc.MaxActionsPerRun
		}
		info.quality = rc.Review.Quality
	}
	if d := pub.Decision; d != nil {
		for _, l := range d.Lenses {
			info.publication[l.Name] = l.Publication
		}
		for _, f := range d.Findings {
			key := fmt.Sprintf("%s:%d", f.Path, f.Line)
			if _, ok := info.findingLens[key]; !ok {
				info.findingLens[key] = f.Lens
			}
		}
	}
	policy := pdp.Policy{
		TriageLabels: info.triageLabels, Publication: info.publication,
		// Begin and Publish are separate runs. All check-run writes of a run are one action
		// (ASDD's set-status), so a full publication is checks, body, review, comment and a
		// reaction: five, the default max_actions_per_run.
		MaxActions:          info.maxActions,
		AllowRequestChanges: p.allowRequestChanges,
		// The gate check is what branch protection reads: it keeps its room under any cap.
		Reserved: []string{checksTarget},
	}
	runID := pub.Job.DeliveryID + "/" + phase
	return &run{
		p: p, gh: gh, info: info, source: "publisher", annotated: map[int64]int{},
		pdp: pdp.New(pdp.Config{Policy: policy, RunID: runID, Sink: p.audit, Logger: *zerolog.Ctx(ctx), Now: p.now}),
	}
}

// authorize asks the PDP; a denial becomes a note, never an error.
func (r *run) authorize(ctx context.Context, a pdp.Action) bool {
	a.Repo, a.Number, a.HeadSHA = r.info.fullName, r.info.number, r.info.headSHA
	if a.Source == "" {
		a.Source = r.source
	}
	d := r.pdp.Authorize(ctx, a)
	if !d.Allowed {
		r.notes = append(r.notes, fmt.Sprintf("not published (%s): %s", a.Kind, d.Reason))
	}
	return d.Allowed
}

func (r *run) fail(err error) {
	if err != nil {
		r.errs = append(r.errs, err)
		r.notes = append(r.notes, "GitHub write failed: "+oneLine(err.Error(), 300))
	}
}

// Begin marks the review as started: the gate check run for the head is in_progress.
func (p *Publisher) Begin(ctx context.Context, gh *github.Client, pub *publication.Publication) error {
	if pub == nil || pub.Subject == nil || pub.Subject.Kind == review.KindIssue || pub.Subject.HeadSHA == "" {
		return nil
	}
	r := p.newRun(ctx, gh, pub, "begin")
	// The reaction to a review command is a spaced write: it comes after the gate check.
	defer r.acknowledgeCommand(ctx, pub)
	defer p.lockGate(r.checkKey(p.checkName))()
	out := reviewingOutput(r.info.headSHA, policyLenses(pub.Repo, pub.ConfigProblems), nil)
	if n := pub.Job.Resumed; n > 0 {
		out = resumingOutput(r.info.headSHA, fmt.Sprintf("the worker running it stopped; another worker resumed it (%d×)", n))
	}
	cr, err := r.knownGate(ctx, pub.Job.Resumed > 0)
	if err != nil {
		return err
	}
	if cr != nil && cr.GetStatus() == "in_progress" && (pub.Job.Resumed == 0 || cr.GetOutput().GetTitle() == out.GetTitle()) {
		p.rememberCheck(r.checkKey(p.checkName), cr)
		return nil
	}
	if cr.GetStatus() == "completed" {
		// GitHub does not reopen a completed check run. Its Checks guide answers a re-run (and
		// so a review command) with a new run, which branch protection then reads; any other
		// review of the same head (an edited body, a delegated answer) concludes the completed
		// run in place rather than add a run per look.
		if !pub.Job.Reason.OpensCheckRun() {
			p.rememberCheck(r.checkKey(p.checkName), cr)
			return nil
		}
		r.replaces, cr = cr.GetID(), nil
	}
	return r.putCheck(ctx, cr, p.checkName, nil, "in_progress", "", out)
}

// resumingOutput is the gate check of a review that was interrupted and runs again.
func resumingOutput(head, why string) *github.CheckRunOutput {
	return &github.CheckRunOutput{
		Title:   github.String("lensgate: review interrupted, resuming"),
		Summary: github.String("The review of head `" + head + "` was interrupted (" + why + "); it resumes and this check concludes when it finishes."),
	}
}

// Abandon implements publication.Publisher: the gate check Begin opened for this head concludes
// cancelled, saying which head superseded it or that the review was interrupted, or, when the
// queue resumes the job, stays in progress saying so. A check run that is already completed is
// left alone, and so is the head's check when a newer job reviews the same head again.
func (p *Publisher) Abandon(ctx context.Context, gh *github.Client, pub *publication.Publication, why publication.Interruption) error {
	if pub == nil || pub.Subject == nil || pub.Subject.Kind == review.KindIssue || pub.Subject.HeadSHA == "" {
		return nil
	}
	if why.Superseded && why.SupersededBy == pub.Subject.HeadSHA {
		return nil
	}
	r := p.newRun(ctx, gh, pub, "abandon")
	// Read it again rather than trust what Begin remembered: another job may have concluded it.
	p.takeCheck(r.checkKey(p.checkName))
	cr, err := r.findCheck(ctx, p.checkName)
	if err != nil {
		return err
	}
	if cr == nil || cr.GetStatus() == "completed" {
		return nil
	}
	head := r.info.headSHA
	var out *github.CheckRunOutput
	status, conclusion := "completed", "cancelled"
	switch {
	case why.Superseded && why.SupersededBy != "":
		out = &github.CheckRunOutput{
			Title:   github.String("lensgate: superseded by " + digest.Short(why.SupersededBy)),
			Summary: github.String("The review of head `" + head + "` stopped because head `" + why.SupersededBy + "` arrived; that head's own check run reports its review."),
		}
	case why.Superseded:
		out = &github.CheckRunOutput{
			Title:   github.String("lensgate: superseded by a newer head"),
			Summary: github.String("The review of head `" + head + "` stopped because a newer head arrived; that head's own check run reports its review."),
		}
	case why.Resuming:
		status, conclusion = "in_progress", ""
		out = resumingOutput(head, "the server stopped")
	default:
		out = &github.CheckRunOutput{
			Title:   github.String("lensgate: review interrupted"),
			Summary: github.String("The review of head `" + head + "` was interrupted before it finished and will not resume. Re-run this check or push again to review it."),
		}
	}
	if why.Cause != nil {
		out.Text = github.String("Cause: " + oneLine(why.Cause.Error(), 400))
	}
	if status == cr.GetStatus() && cr.GetOutput().GetTitle() == out.GetTitle() {
		return nil
	}
	if err := r.putCheck(ctx, cr, p.checkName, nil, status, conclusion, out); err != nil {
		return err
	}
	return r.finish(ctx)
}

// acknowledgeCommand reacts with eyes to the comment that asked for this review, so the
// person who typed the command sees it was taken even when the outcome does not change.
func (r *run) acknowledgeCommand(ctx context.Context, pub *publication.Publication) {
	x := queue.ParseExtra(pub.Job.Extra)
	if x.CommentID == 0 || !r.authorize(ctx, pdp.Action{Kind: pdp.KindReactionAdd, Target: "reaction:command", Reaction: "eyes"}) {
		return
	}
	err := r.content(ctx, "react to the review command", func(ctx context.Context) (*github.Response, error) {
		_, resp, err := r.gh.Reactions.CreateIssueCommentReaction(ctx, r.info.owner, r.info.repo, x.CommentID, "eyes")
		return resp, err
	}, nil)
	if err != nil {
		// An acknowledgement is a courtesy: its failure does not fail the review.
		zerolog.Ctx(ctx).Warn().Err(err).Msg("could not react to the review command")
	}
}

// Publish writes a run's outcome. It returns an error only for GitHub writes that failed
// after retries; PDP denials and degraded parts are logged and shown in the check run.
func (p *Publisher) Publish(ctx context.Context, gh *github.Client, pub *publication.Publication) error {
	if pub == nil || pub.Subject == nil {
		return nil
	}
	switch {
	case pub.Decision != nil && pub.Subject.Kind != review.KindIssue:
		r := p.newRun(ctx, gh, pub, "publish")
		r.publishPull(ctx, pub)
		return r.finish(ctx)
	case pub.Triage != nil:
		r := p.newRun(ctx, gh, pub, "publish")
		r.publishTriage(ctx, pub)
		return r.finish(ctx)
	}
	return nil
}

func (r *run) finish(ctx context.Context) error {
	actions, writes := r.pdp.Counts()
	ev := zerolog.Ctx(ctx).Info()
	if len(r.errs) > 0 {
		ev = zerolog.Ctx(ctx).Warn()
	}
	ev.Int("pdp_actions", actions).Int("pdp_writes", writes).Int("notes", len(r.notes)).
		Int("errors", len(r.errs)).Msg("publication finished")
	if len(r.errs) > 0 {
		return fmt.Errorf("publish %s#%d: %w", r.info.fullName, r.info.number, errors.Join(r.errs...))
	}
	return nil
}

// publishPull publishes a pull request decision. Order: disclosure (so the receipt exists),
// review (so what could not be placed inline is known), gate check, advisory comment,
// reactions and per-lens checks.
func (r *run) publishPull(ctx context.Context, pub *publication.Publication) {
	d := pub.Decision
	r.setRecord(pub, nil)
	var pr *github.PullRequest
	if r.p.signer != nil {
		// The worker read the pull request when the job started, and the body write below
		// reads it again right before writing and stops there for a head that moved on: no
		// read is needed here.
		s := pub.Subject
		pr = &github.PullRequest{Body: github.String(s.Body), State: github.String("open"), Head: &github.PullRequestBranch{SHA: github.String(s.HeadSHA)}}
	} else {
		var err error
		if pr, err = r.getPull(ctx); err != nil {
			r.fail(err)
			r.completeGate(ctx, d, nil, nil)
			return
		}
	}
	// A durable queue can learn after the job started that a newer one replaced it.
	superseded := errors.Is(queue.CheckCurrent(ctx), queue.ErrNotCurrent)
	stale := superseded || pr.GetHead().GetSHA() != r.info.headSHA || pr.GetState() != "open"
	if stale {
		// The reviewed head is still described truthfully by its own check run; the comment,
		// review and body belong to the newer head's run.
		r.notes = append(r.notes, "pull request moved on (head or state changed); only the check run for the reviewed head is updated")
		r.completeGate(ctx, d, nil, nil)
		return
	}
	var sticky *github.IssueComment
	var err error
	if c := pub.Counts; c == nil || c.IssueComments > 0 {
		// A pull request without a comment has no advisory comment to find.
		sticky, err = r.findSticky(ctx)
	}
	stickyKnown := err == nil
	if err != nil {
		r.fail(err)
		// Without knowing whether the comment exists, creating one could duplicate it.
		r.notes = append(r.notes, "advisory comment not written: the existing comments could not be listed")
	}
	r.memoText = r.memo(pub)
	plan, err := r.planInline(ctx, pub.Subject, d, pub.Counts)
	if err != nil {
		r.fail(err)
	}
	r.unchanged = sticky != nil && pull.HiddenValue(sticky.GetBody(), markerState) == r.stateOf(d, pr.GetBody())
	rc := r.disclose(ctx, r.pullTarget(d), pr.GetBody(), pr.GetUpdatedAt().Time, sticky)
	if r.movedOn {
		r.notes = append(r.notes, "pull request moved on (head or state changed); only the check run for the reviewed head is updated")
		r.completeGate(ctx, d, nil, nil)
		return
	}
	// The gate check goes before the spaced writes (review, comment, reactions), so spacing
	// never delays what branch protection reads. It counts the planned inline comments as
	// placed; when GitHub refuses some, it is written again with where they went.
	expected := maps.Clone(plan.placed)
	for _, pl := range plan.post {
		expected[placeKey(pl.c.Path, pl.c.Line)] = true
	}
	r.setRecord(pub, expected)
	if err == nil {
		r.closeThreads(ctx, d, r.inline)
	}
	r.completeGate(ctx, d, rc, plan.moved)
	if len(plan.post) > 0 {
		moved := len(plan.moved)
		r.postReview(ctx, d, &plan)
		if len(plan.moved) != moved {
			r.setRecord(pub, plan.placed)
			r.completeGate(ctx, d, rc, plan.moved)
		}
	}
	if stickyKnown {
		r.upsertSticky(ctx, pub, sticky, rc, plan)
	}
	r.answerCommands(ctx, pub.Answers)
	r.learn(ctx, d, plan)
	if !r.unchanged {
		r.reactions(ctx, d) // reacting again to the same outcome would only repeat a write
	}
	r.lensChecks(ctx, d)
}

// getPull re-reads the pull request (GitHub's current head, state and body).
func (r *run) getPull(ctx context.Context) (*github.PullRequest, error) {
	var pr *github.PullRequest
	err := r.p.call(ctx, "get pull request", func(ctx context.Context) (*github.Response, error) {
		var resp *github.Response
		var err error
		pr, resp, err = r.gh.PullRequests.Get(ctx, r.info.owner, r.info.repo, r.info.number)
		return resp, err
	}, nil)
	return pr, err
}

// publishTriage applies triage labels, the disclosure block with a signed receipt in the
// issue body, and the sticky triage comment.
func (r *run) publishTriage(ctx context.Context, pub *publication.Publication) {
	t := pub.Triage
	sticky, err := r.findSticky(ctx)
	if err != nil {
		r.fail(err)
		return
	}
	tgt := r.issueTarget(t)
	body, revised, err := tgt.read(ctx)
	if err != nil {
		r.fail(err)
		return
	}
	r.unchanged = false
	if prepared, perr := block.Prepare(body); perr == nil {
		if core, cerr := block.BodyCoreDigest(prepared); cerr == nil {
			r.state = tgt.state(core)
			r.unchanged = sticky != nil && pull.HiddenValue(sticky.GetBody(), markerState) == r.state
		}
	}
	if len(t.Labels) > 0 && !r.unchanged && r.authorize(ctx, pdp.Action{Kind: pdp.KindLabelsAdd, Target: "labels", Labels: t.Labels}) {
		r.fail(r.content(ctx, "add labels", func(ctx context.Context) (*github.Response, error) {
			_, resp, err := r.gh.Issues.AddLabelsToIssue(ctx, r.info.owner, r.info.repo, r.info.number, t.Labels)
			return resp, err
		}, nil))
	}
	rc := r.disclose(ctx, tgt, body, revised, sticky)
	var b strings.Builder
	b.WriteString(markerAdvisory + "\n### lensgate triage\n\n")
	b.WriteString(r.refusedBlockNotice())
	if t.Cause != "" {
		b.WriteString("Triage did not complete: " + oneLine(t.Cause, 500) + "\n")
	} else {
		if t.Comment != "" {
			b.WriteString(clean(truncate(t.Comment, 4000)) + "\n\n")
		}
		if len(t.Labels) > 0 {
			b.WriteString("Suggested labels: " + oneLine(strings.Join(t.Labels, ", "), 500) + "\n\n")
		}
	}
	b.WriteString("\nThis comment is written by an automated triage bot; a maintainer decides.\n\n")
	state := r.state
	if rc != nil {
		b.WriteString(receiptSection(rc.envelope, rc.receiptDigest, rc.subjectDigest))
		state = rc.state
	}
	if state != "" {
		b.WriteString(markerState + state + markerEnd + "\n")
	}
	r.writeSticky(ctx, sticky, b.String())
}

// lensByFinding names the lens that reported a finding at path:line ("" if none).
func (r *run) lensByFinding(path string, line int) string {
	return r.info.findingLens[fmt.Sprintf("%s:%d", path, line)]
}

// stateOf is the state key of a decision over the current body ("" when the body is
// ambiguous).
func (r *run) stateOf(d *review.Decision, body string) string {
	prepared, err := block.Prepare(body)
	if err != nil {
		return ""
	}
	core, err := block.BodyCoreDigest(prepared)
	if err != nil {
		return ""
	}
	r.state = stateKey(r.info, d, core)
	return r.state
}
