package review

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/semaphore"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/modelctx"
	"github.com/lensgate/lensgate/review/policy"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// groupKey says which lenses share requests: those of one runtime and one scope.
type groupKey struct {
	runtime string
	// reused: the lenses' results of this head are taken from the earlier review.
	reused bool
	// incremental: the lenses review only the changes since the head they last reviewed.
	incremental bool
	// paths limits the lenses to the changed files matching these globs (nil: every file).
	paths []string
}

func (k groupKey) same(o groupKey) bool {
	return k.runtime == o.runtime && k.reused == o.reused && k.incremental == o.incremental && slices.Equal(k.paths, o.paths)
}

// lensGroup is the lenses reviewed in the same requests, and what those requests answered.
type lensGroup struct {
	key    groupKey
	lenses []int // indexes into reviewRun.lenses, in plan order
	chunks [][]diff.File

	model             string
	started, finished time.Time
	cause             string                           // why the group's runtime failed ("" when it did not)
	reports           map[string][]*runtime.LensReport // per lens name, one per part (nil for a missing report)
	parts             []*partCall                      // the requests of the group's parts, in part order
	partDiff          []byte                           // the diff the parts are cut from
	since             string                           // the head an incremental group reviews from
	pending           atomic.Int32                     // parts not over yet
	startOnce         sync.Once                        // stamps started when the first part starts
	failed            atomic.Bool                      // a part failed: the parts not started yet are not sent
	unchanged         bool                             // nothing changed since the lenses' last review
	outOfScope        bool                             // the lenses' paths match no changed file
}

// partCall is the request of one part of a group's change and what came back. Only the
// goroutine that makes the request writes it, before the review folds the answers.
type partCall struct {
	files    []diff.File
	n, total int // part n of total

	sent bool // the request was made
	res  *runtime.Result
	err  error
	call observation.Call
	// context is what the request was given besides the diff (nil: nothing).
	context *modelctx.Context
}

// reviewRun is one review of one subject: plan decides the lenses' runtimes, groups and parts
// of the change, prepare what every request shares, run calls the runtimes, and assemble turns
// their answers into the Decision.
type reviewRun struct {
	p    *Pipeline
	subj *Subject
	cfg  *config.Repo
	plan policy.Plan
	log  zerolog.Logger

	observed   *Observed
	diffBytes  []byte
	files      []diff.File
	changed    []runtime.Changed
	totalLines int

	lenses        []lensPlan
	groups        []*lensGroup
	usesPaid      bool
	secretRules   *builtin.SecretRules // what the model view redacts; loaded when a paid lens runs
	cfgDigest     string
	reused        map[string]LensRecord // per paid lens name, when the earlier results of this head stand
	incremental   map[string]bool       // the model lenses reviewed since their last head, by name
	sc            scope
	free, paid    budget
	maxChunksUsed int

	intake   Intake
	rtSubj   runtime.Subject
	settings runtime.Settings
	view     modelView
	wd       *workDir
	blobs    map[string]string
	session  *runtime.Session
	spend    *reviewBudget
	slots    *reviewSlots

	progress    *progress // nil when no one follows the review's progress
	calls       []ModelCall
	material    *modelctx.Material // what model requests' context is built from (nil: none)
	manifest    modelctx.Manifest  // the context the model requests were given
	withContext map[string]bool    // lenses whose requests were given context, by name
	reviewedBy  map[string]bool    // runtimes that completed their part of the review
	sentToModel bool
	modelRan    bool
	prose       *proseRun // the walkthrough and the answers
}

// planReview reads the change and decides, for every lens, its runtime, its group and the parts
// of the change its requests get.
func (p *Pipeline) planReview(subj *Subject, cfg *config.Repo, plan policy.Plan) *reviewRun {
	r := &reviewRun{
		p: p, subj: subj, cfg: cfg, plan: plan,
		log:      p.opts.Logger.With().Str("component", "review").Str("head", digest.Short(subj.HeadSHA)).Logger(),
		observed: &Observed{Started: p.opts.Now()}, incremental: map[string]bool{}, reviewedBy: map[string]bool{}, withContext: map[string]bool{},
	}
	r.diffBytes = subj.reviewedDiff()
	r.files = diff.Parse(r.diffBytes)
	r.changed = changedFiles(subj.Files, r.files)
	for i := range r.files {
		r.totalLines += r.files[i].Lines
	}

	r.lenses = p.chooseRuntimes(plan, cfg)
	for _, l := range r.lenses {
		if l.cause == "" && !p.free[l.runtime] {
			r.usesPaid = true
		}
	}
	r.cfgDigest = configDigest(cfg)
	var noReuse string
	r.reused, noReuse = p.reusable(subj, plan, r.cfgDigest, r.lenses, &r.log)
	r.sc = scopeOf(subj, plan)
	if noReuse != "" {
		// The record of this head cannot stand for the paid lenses: they review it all again.
		r.sc = scope{reason: "the earlier results of this head could not be reused: " + noReuse}
	}
	r.free = budgetByBytes(r.files, p.opts.FreeMaxDiffBytes)
	r.groupLenses()
	r.chunkGroups()
	return r
}

// groupLenses groups the usable lenses by runtime and scope, keeping plan order. A model lens
// is reviewed incrementally when the earlier review completed it at the head the changes
// start from; a lens limited to some paths gets its own requests.
func (r *reviewRun) groupLenses() {
	for i, l := range r.lenses {
		_, reuse := r.reused[l.item.Name]
		if l.cause == "" && !reuse && !r.p.free[l.runtime] && r.sc.incremental && r.subj.Prior.Lenses[l.item.Name] == r.sc.since {
			r.incremental[l.item.Name] = true
		}
		if l.cause != "" {
			continue
		}
		key := groupKey{runtime: l.runtime, reused: reuse, incremental: r.incremental[l.item.Name], paths: l.item.Paths}
		var g *lensGroup
		for _, have := range r.groups {
			if have.key.same(key) {
				g = have
				break
			}
		}
		if g == nil {
			g = &lensGroup{key: key, reports: map[string][]*runtime.LensReport{}}
			r.groups = append(r.groups, g)
		}
		g.lenses = append(g.lenses, i)
		r.lenses[i].group = g
	}
}

// chunkGroups cuts the part of the change each model group is sent into parts of one call
// each, and records the files the model runtimes get and what a cap left out.
func (r *reviewRun) chunkGroups() {
	maxChunks := r.cfg.Review.MaxChunks
	if maxChunks <= 0 {
		maxChunks = config.DefaultMaxChunks
	}
	paidFiles := map[string]bool{}
	gapSeen := map[string]bool{}
	for _, g := range r.groups {
		if r.p.free[g.key.runtime] {
			continue
		}
		in := r.files
		if g.key.incremental {
			in = r.sc.files
		}
		in = inPaths(in, g.key.paths)
		chunks, gaps := chunkFiles(in, r.cfg.Review.MaxDiffLines, r.p.opts.ChunkTokens, maxChunks)
		g.chunks = chunks
		r.maxChunksUsed = max(r.maxChunksUsed, len(chunks))
		for _, c := range chunks {
			for _, f := range c {
				if !paidFiles[f.Path()] {
					paidFiles[f.Path()] = true
					r.paid.files = append(r.paid.files, f)
				}
			}
		}
		for _, g := range gaps {
			if !gapSeen[g.Path] {
				gapSeen[g.Path] = true
				r.paid.gaps = append(r.paid.gaps, g)
			}
		}
	}
}

// prepare runs intake and builds what every request shares: the subject and settings the
// runtimes get, the model view, the work directory and the review's token budget. The caller
// closes the run.
func (r *reviewRun) prepare() {
	subj, cfg := r.subj, r.cfg
	var overBudget []Gap
	if r.usesPaid {
		overBudget = r.paid.gaps
	}
	r.intake = runIntake(subj, cfg, r.changed, overBudget, r.totalLines)

	r.rtSubj = runtime.Subject{
		Owner: subj.Owner, Repo: subj.Repo, Number: subj.Number, HeadSHA: subj.HeadSHA, BaseSHA: subj.BaseSHA,
		Title: subj.Title, Body: subj.Body, Author: subj.Author, Labels: subj.Labels,
	}
	for _, c := range subj.Commits {
		r.rtSubj.Commits = append(r.rtSubj.Commits, c.Message)
	}
	r.settings = runtime.Settings{
		ProtectedPaths: cfg.ProtectedPaths, ProtectedRequireOwner: cfg.CodeOwnerApproval(), IgnorePaths: cfg.IgnorePaths, RequireSpec: cfg.RequireSpec,
		SpecPaths: cfg.SpecPaths, TriageLabels: cfg.TriageLabels, Model: cfg.Models.Reviewer,
		TimeoutSeconds: cfg.Review.TimeoutSeconds, DelegateTimeout: cfg.Delegate.Timeout,
		OutcomeOnFindings: map[string]string{},
		SecretsIgnore:     cfg.Secrets.Ignore, SecretsConfig: cfg.Secrets.Config, SecretsProblems: cfg.Secrets.Problems,
		FixturePaths: cfg.FixturePaths, VendoredPaths: cfg.VendoredPaths,
	}
	for _, l := range cfg.Policy.Lenses {
		if l.OutcomeOnFindings != "" {
			r.settings.OutcomeOnFindings[l.Name] = l.OutcomeOnFindings
		}
	}
	if r.usesPaid {
		r.view = r.modelView()
	}
	if r.usesPaid && r.intake.Passed && !allReused(r.lenses, r.reused, r.p.free) {
		r.openWorkDir()
	}

	r.blobs = map[string]string{}
	for _, f := range subj.Files {
		if f.BlobSHA != "" {
			r.blobs[f.Path] = f.BlobSHA
		}
	}
	// What the review declares before its first call, for a runtime that records the calls of
	// the whole review (a runner in another process).
	r.session = &runtime.Session{DiffDigest: digest.SHA256Hex(r.diffBytes), PlanDigest: r.plan.Digest(), Blobs: r.blobs}
	// One budget for the whole review, shared by every model runtime it calls.
	r.spend = &reviewBudget{max: cfg.Models.MaxTokensPerReview, ledger: r.p.opts.Tokens, installation: subj.InstallationID,
		log: r.log.With().Int64("github_installation_id", subj.InstallationID).Logger()}
	r.slots = newReviewSlots(r.p.opts.MaxConcurrentCalls, r.p.opts.CallLimits, subj.InstallationID)
}

// modelView is what model and adapter runtimes get: excluded files left out, secrets replaced.
// The work directory holds the whole pull request when a lens reviews it whole, else the
// changes since the last reviewed head; every request gets the view of its own part.
func (r *reviewRun) modelView() modelView {
	var vf []diff.File
	vd := r.diffBytes
	for _, g := range r.groups {
		if r.p.free[g.key.runtime] || g.key.incremental {
			continue
		}
		for _, c := range g.chunks {
			vf = append(vf, c...)
		}
	}
	if vf == nil && len(r.incremental) > 0 {
		vd = r.sc.diff
		for _, g := range r.groups {
			for _, c := range g.chunks {
				vf = append(vf, c...)
			}
		}
	}
	return newModelView(r.secretRules, r.subj, r.rtSubj, vd, uniqueFiles(vf), r.changed, r.cfg.Models.ExcludePaths)
}

// openWorkDir writes the adapters' work directory. Without it they cannot run: a failure
// leaves every paid lens pending with the reason.
func (r *reviewRun) openWorkDir() {
	subj, cfg := r.subj, r.cfg
	meta := map[string]string{
		"pr_number": itoa(subj.Number), "base_sha": subj.BaseSHA, "head_sha": subj.HeadSHA,
		"require_spec": fmt.Sprint(cfg.RequireSpec), "max_open_prs": itoa(cfg.MaxOpenPRsPerAuthor),
		"open_pr_count": "", "override": "false",
	}
	if subj.OpenPRsByAuthor >= 0 && !subj.Local {
		meta["open_pr_count"] = itoa(subj.OpenPRsByAuthor)
	}
	wd, err := newWorkDir(r.p.opts.WorkRoot, r.view.workSubject, r.view.files, meta)
	if err != nil {
		r.log.Error().Err(err).Msg("work directory")
		for i := range r.lenses {
			if r.lenses[i].cause == "" && !r.p.free[r.lenses[i].runtime] {
				r.lenses[i].cause = "could not prepare the work directory: " + err.Error()
			}
		}
	}
	r.wd = wd
}

// close removes the work directory.
func (r *reviewRun) close() {
	if r.wd == nil {
		return
	}
	if err := r.wd.Close(); err != nil {
		r.log.Warn().Err(err).Msg("remove work directory")
	}
}

// run reviews every group: the requests of every part of every group go out at once, at most
// Options.MaxConcurrentCalls of them in flight (a free runtime's are not counted: they call no
// model), and their answers are folded in plan and part order once all are in, so the
// Decision is the same whichever answered first.
func (r *reviewRun) run(ctx context.Context) {
	r.gatherContext(ctx)
	var wg sync.WaitGroup
	r.startProse(ctx, &wg)
	inFlight := semaphore.NewWeighted(int64(r.p.opts.MaxConcurrentCalls))
	var sending []*lensGroup
	for _, g := range r.groups {
		if r.planGroup(g) {
			g.pending.Store(int32(len(g.parts)))
			sending = append(sending, g)
		}
	}
	r.progress = newProgress(ctx, r)
	for _, g := range sending {
		for _, pc := range g.parts {
			if r.p.free[g.key.runtime] {
				wg.Go(func() { r.callPart(ctx, g, pc) })
				continue
			}
			// Requests start in plan order: with one call at a time the review runs as it
			// would one call after another, and stops a group at its first failed part.
			if err := inFlight.Acquire(ctx, 1); err != nil {
				pc.err = fmt.Errorf("not sent: %w", err)
				r.partDone(g)
				continue
			}
			if g.failed.Load() {
				inFlight.Release(1)
				r.partDone(g)
				continue
			}
			wg.Go(func() {
				defer inFlight.Release(1)
				r.callPart(ctx, g, pc)
			})
		}
	}
	wg.Wait()
	for _, g := range r.groups {
		r.foldGroup(g)
	}
}

// planGroup decides what one group sends: nothing when its results are reused, its paths match
// nothing, it has nothing new to review or it cannot be sent; otherwise g.parts holds one
// request per part of the change. It reports whether the group makes requests.
func (r *reviewRun) planGroup(g *lensGroup) bool {
	rtName := g.key.runtime
	isFree := r.p.free[rtName]
	first := r.lenses[g.lenses[0]]
	if g.key.reused && r.intake.Passed {
		r.reviewedBy[rtName] = true
		return false
	}
	if !isFree && (!r.intake.Passed || r.wd == nil) {
		cause := "intake did not pass, so the change was not sent to the " + rtName + " runtime"
		if r.intake.Passed {
			cause = first.cause
		}
		for _, i := range g.lenses {
			if r.lenses[i].cause == "" {
				r.lenses[i].cause = cause
			}
		}
		return false
	}
	var parts [][]diff.File
	g.partDiff = r.diffBytes
	switch {
	case isFree:
		parts = [][]diff.File{inPaths(r.free.files, g.key.paths)}
	case g.key.incremental:
		parts, g.partDiff, g.since = g.chunks, r.sc.diff, r.sc.since
		if len(inPaths(r.sc.files, g.key.paths)) == 0 {
			g.unchanged = true
			r.reviewedBy[rtName] = true
			return false
		}
	default:
		parts = g.chunks
	}
	if len(g.key.paths) > 0 && len(inPaths(r.files, g.key.paths)) == 0 {
		g.outOfScope = true
		r.reviewedBy[rtName] = true
		return false
	}
	if len(parts) == 0 {
		parts = [][]diff.File{nil}
	}
	g.parts = make([]*partCall, len(parts))
	for n, part := range parts {
		g.parts[n] = &partCall{files: part, n: n + 1, total: len(parts)}
	}
	return true
}

// partStarts stamps the group's start when its first part starts.
func (r *reviewRun) partStarts(g *lensGroup) {
	g.startOnce.Do(func() { g.started = r.p.opts.Now() })
}

// partDone counts one part of g as over; the last one over stamps the group's end.
func (r *reviewRun) partDone(g *lensGroup) {
	r.partStarts(g)
	last := g.pending.Add(-1) == 0
	if last {
		g.finished = r.p.opts.Now()
	}
	r.progress.partOver(g, last)
}

// callPart makes the request of one part of a group and keeps what came back in pc. A paid
// runtime's request holds a call slot of the review, its installation and the process while it
// runs, unless the runtime takes one for each model call it makes (runtime.Paced).
func (r *reviewRun) callPart(ctx context.Context, g *lensGroup, pc *partCall) {
	r.partStarts(g)
	defer r.partDone(g)
	rtName := g.key.runtime
	rt, _ := r.p.opts.Runtimes.Get(rtName)
	req := &runtime.Request{
		Kind: runtime.KindReview, Subject: r.rtSubj, Files: pc.files, Diff: joinFiles(g.partDiff, pc.files),
		Changed: r.changed, Settings: r.settings, Delegation: r.subj.Delegation, Since: g.since, Chunk: pc.n, Chunks: pc.total,
	}
	if r.wd != nil {
		req.WorkDir = r.wd.path
	}
	given := pc.files
	if !r.p.free[rtName] {
		pv := newModelView(r.secretRules, r.subj, r.rtSubj, g.partDiff, pc.files, r.changed, r.cfg.Models.ExcludePaths)
		req.Subject, req.Files, req.Diff, req.Changed = pv.subject, pv.files, pv.diff, pv.changed
		req.Budget, req.Slots = r.spend, r.slots
		req.Context = r.partContext(pv.files)
		pc.context = req.Context
		given = pv.files
		if _, paced := rt.(runtime.Paced); !paced {
			release, err := r.slots.Acquire(ctx)
			if err != nil {
				pc.err = fmt.Errorf("not sent: %w", err)
				g.failed.Store(true)
				return
			}
			defer release()
		}
	}
	for _, i := range g.lenses {
		it := r.lenses[i].item
		pl, _ := r.cfg.Policy.Lens(it.Name)
		req.Lenses = append(req.Lenses, runtime.Lens{Name: it.Name, Preset: it.Preset, Instruction: pathInstruction(it, pc.files),
			Independent: pl.Independent})
	}
	res, err, call := r.p.runCall(runtime.WithSession(ctx, r.session), rt, req, filesGiven(given, r.blobs))
	pc.res, pc.err, pc.call, pc.sent = res, err, call, true
	if err != nil {
		g.failed.Store(true)
	}
}

// foldGroup records the answers of a group's parts in part order, as the requests were
// planned, whichever came back first. The first part that failed gives the group its cause;
// the parts after it count for nothing but what they cost.
func (r *reviewRun) foldGroup(g *lensGroup) {
	rtName := g.key.runtime
	if g.parts == nil {
		return
	}
	for _, pc := range g.parts {
		if pc.sent && !pc.context.Empty() {
			r.manifest.Add(pc.context)
			for _, i := range g.lenses {
				r.withContext[r.lenses[i].item.Name] = true
			}
		}
		if pc.sent {
			r.observed.Calls = append(r.observed.Calls, pc.call)
			if !r.p.free[rtName] {
				r.sentToModel = true
			}
		}
		if pc.res != nil {
			for _, c := range pc.res.Calls {
				r.calls = append(r.calls, ModelCall{Runtime: rtName, Call: c})
			}
		}
		if g.cause != "" || !pc.sent && pc.err == nil {
			continue
		}
		if pc.err != nil {
			r.log.Warn().Str("runtime", rtName).Int("chunk", pc.n).Int("chunks", pc.total).Err(pc.err).Msg("runtime failed; its lenses are pending")
			g.cause = "runtime " + rtName + " failed: " + boundText(pc.err.Error(), 500)
			if pc.total > 1 {
				g.cause = fmt.Sprintf("runtime %s failed on part %d of %d of the change: %s", rtName, pc.n, pc.total, boundText(pc.err.Error(), 500))
			}
			continue
		}
		r.foldReports(g, pc.res)
	}
	if g.cause == "" {
		r.reviewedBy[rtName] = true
		if !r.p.free[rtName] {
			r.modelRan = true
		}
	}
}

// foldReports keeps one part's report of each lens of g (nil for a lens it did not report).
func (r *reviewRun) foldReports(g *lensGroup, res *runtime.Result) {
	g.model = res.Model
	seen := map[string]bool{}
	for j := range res.Lenses {
		rep := &res.Lenses[j]
		if !seen[rep.Lens] {
			seen[rep.Lens] = true
			g.reports[rep.Lens] = append(g.reports[rep.Lens], rep)
		}
	}
	for _, i := range g.lenses {
		// A part without a report for a lens leaves that lens pending.
		if name := r.lenses[i].item.Name; !seen[name] {
			g.reports[name] = append(g.reports[name], nil)
		}
	}
}

// lensResult is the closed result of lens i, and whether its runtime asked for changes.
func (r *reviewRun) lensResult(i int) (LensResult, bool) {
	l := r.lenses[i]
	g := l.group
	if g == nil {
		g = &lensGroup{} // a lens without a usable runtime is in no group
	}
	lr := LensResult{
		Name: l.item.Name, Required: l.item.Required, Publication: l.item.Publication,
		Runtime: l.runtime, Outcome: OutcomePending,
	}
	requestChanges := false
	switch {
	case l.cause != "":
		lr.Cause = l.cause
	case g.cause != "":
		lr.Cause = g.cause
	case g.key.reused && r.intake.Passed:
		rec := r.reused[l.item.Name]
		lr.Outcome, lr.Summary = rec.Outcome, rec.Summary
		requestChanges = rec.RequestChanges
		if rec.Tokens != nil {
			t := *rec.Tokens
			t.Earlier = true
			lr.Tokens = &t
		}
		// Its findings are the ones the earlier review of this head left open.
		for _, f := range r.subj.Prior.Findings {
			if f.Lens == lr.Name && f.Open() {
				lr.Findings = append(lr.Findings, f)
			}
		}
	case g.outOfScope:
		lr.Outcome = OutcomePassed
		lr.Summary = "No changed file matches this lens's paths."
	case g.unchanged:
		lr.Outcome = OutcomePassed
		lr.Summary = "No changes since " + digest.Short(r.sc.since) + ", the head this lens last reviewed; its findings are carried forward."
	default:
		rep := mergeReports(g.reports[l.item.Name])
		lr = mapReport(lr, rep)
		requestChanges = rep != nil && rep.Verdict == runtime.VerdictRequestChanges
		if lr.Outcome != OutcomePending && r.incremental[l.item.Name] {
			lr.Summary = strings.TrimSpace("Changes since " + digest.Short(r.sc.since) + ": " + lr.Summary)
		}
	}
	if lr.Outcome == OutcomePending && lr.Summary == "" {
		lr.Summary = "Pending: " + lr.Cause
	}
	return lr, requestChanges
}

// assemble closes every lens, carries the earlier findings forward and builds the Decision.
func (r *reviewRun) assemble(ctx context.Context) (*Decision, error) {
	subj := r.subj
	results := make([]LensResult, len(r.lenses))
	requestChanges := make([]bool, len(r.lenses))
	runs := make([]Run, 0, len(r.lenses))
	pendingLens := map[string]bool{}
	for i, l := range r.lenses {
		results[i], requestChanges[i] = r.lensResult(i)
		lr := results[i]
		if lr.Outcome == OutcomePending {
			pendingLens[lr.Name] = true
		}
		run := Run{Lens: lr.Name, Runtime: lr.Runtime, Outcome: lr.Outcome, Cause: lr.Cause}
		if g := l.group; g != nil {
			run.Model, run.Started, run.Finished = g.model, g.started, g.finished
		}
		runs = append(runs, run)
	}
	verification := r.verify(ctx, results)
	r.suppress(ctx, results, &verification)
	carry(subj, r.sc, results, r.incremental, pendingLens, verification.held())
	for i := range results {
		reoutcome(&results[i], requestChanges[i])
		runs[i].Outcome = results[i].Outcome
	}

	r.observed.Finished = r.p.opts.Now()
	r.calls = append(r.calls, r.proseCalls()...)
	tokens := tallyTokens(r.calls, results)

	gate, err := evaluateGate(r.plan, results)
	if err != nil {
		return nil, fmt.Errorf("evaluate the gate: %w", err)
	}
	if !r.intake.Passed && gate.State != OutcomeFailed {
		gate.State = OutcomeFailed
		gate.Reason = "intake did not pass: " + intakeProblems(r.intake)
	}
	ownerApprovalGate(&gate, r.cfg, subj)

	dec := &Decision{
		Gate: gate, PlanDigest: r.plan.Digest(), Lenses: results, Intake: r.intake,
		Runs: runs, Observed: r.observed, Session: r.session, Tokens: tokens, ModelInput: ModelInput{WithheldFiles: []string{}},
		Subject: subj.Context(), Verification: verification,
	}
	dec.Findings = []Finding{}
	var open []Finding
	for i := range results {
		if results[i].Findings == nil {
			results[i].Findings = []Finding{} // JSON readers get [], not null
		}
		dec.Findings = append(dec.Findings, results[i].Findings...)
		for _, f := range results[i].Findings {
			if f.Open() {
				open = append(open, f)
			}
		}
	}
	r.decideCoverage(dec, results, requestChanges)
	r.finishProse(dec, results)
	if r.sentToModel {
		dec.ModelInput = r.view.input
	}
	r.recordContext(dec)
	dec.Recommendation = RecommendComment
	if gate.State == OutcomeFailed {
		dec.Recommendation = RecommendRequestChanges
	}
	for _, f := range open {
		if f.Severity.Blocks() {
			dec.Recommendation = RecommendRequestChanges
		}
	}
	dec.Inline = inlineComments(open, r.files)
	dec.Comment = RenderComment(dec)
	return dec, nil
}

// decideCoverage sets what the review covered, its scope and, for a pull request, the state
// the next review starts from.
func (r *reviewRun) decideCoverage(dec *Decision, results []LensResult, requestChanges []bool) {
	subj, sc := r.subj, r.sc
	dec.Coverage = coverage(r.changed, r.files, r.lenses, r.reviewedBy, r.p.free, r.paid, r.free, r.view.withheld, r.cfg,
		subj.UnlistedFiles, subj.UnlistedPaths)
	anyModel := false
	for _, l := range r.lenses {
		if l.cause == "" && !r.p.free[l.runtime] {
			anyModel = true
		}
	}
	if anyModel {
		dec.Coverage.Scope = ScopeFull
		dec.Coverage.ScopeReason = sc.reason
		if len(r.incremental) > 0 {
			dec.Coverage.Scope, dec.Coverage.Since, dec.Coverage.ScopeReason = ScopeIncremental, sc.since, ""
		}
		if r.maxChunksUsed > 1 {
			dec.Coverage.Chunks = r.maxChunksUsed
		}
	}
	if len(r.reused) > 0 && anyModel {
		// The model review of this head is the earlier one: its scope, not this run's.
		pr := subj.Prior.Reuse
		dec.Coverage.Scope, dec.Coverage.Since, dec.Coverage.Chunks = pr.Scope, pr.Since, pr.Chunks
		dec.Coverage.ScopeReason = ""
		if pr.Scope == ScopeFull {
			dec.Coverage.ScopeReason = sc.reason
		}
	}
	if !subj.Local {
		dec.State = nextState(subj, sc, r.plan, results, dec.Findings, r.changed, len(r.incremental) > 0, r.modelRan)
		if anyModel {
			dec.Coverage.Heads = headCoverage(subj, dec.State, r.changed)
		}
		dec.State.Reuse = r.p.reuseRecord(subj.HeadSHA, r.cfgDigest, dec.Coverage, r.lenses, results, requestChanges)
	}
}
