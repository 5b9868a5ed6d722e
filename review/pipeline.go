package review

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/pathglob"
	"github.com/lensgate/lensgate/review/policy"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// Defaults of Options.
const (
	// DefaultFreeMaxDiffBytes bounds the diff the offline runtimes scan.
	DefaultFreeMaxDiffBytes = 16 << 20
	// MaxFindingsPerLens bounds what one lens may report; the rest is counted in its summary.
	MaxFindingsPerLens = 200
	maxSummaryBytes    = policy.MaxSummaryBytes
	maxTitleBytes      = 300
	maxMessageBytes    = 2000
	maxReasonBytes     = 300
	// maxReusedSummaryBytes bounds a paid lens's summary in the state's reuse record.
	maxReusedSummaryBytes = 1000
)

// Options configure a Pipeline.
type Options struct {
	// Runtimes are the runtimes the operator enabled. A policy can only choose among them.
	Runtimes *runtime.Registry
	Logger   zerolog.Logger
	// WorkRoot is where work directories are created ("" for the system temporary directory).
	WorkRoot string
	// FreeRuntimes name the runtimes that cost nothing (no model, no network). They run even
	// when intake fails and get the FreeMaxDiffBytes budget instead of review.max_diff_lines.
	// Default: builtin and dryrun.
	FreeRuntimes []string
	// FreeMaxDiffBytes bounds the diff the free runtimes scan (default 16 MiB); files beyond
	// it are coverage gaps.
	FreeMaxDiffBytes int64
	// Now is the clock (default time.Now). The calls of a review run at once, so it must be
	// safe for concurrent use.
	Now func() time.Time
	// DefaultRuntime reviews lenses of a repository whose runtime: is ASDD's "generic" (the
	// operator's choice of adapter). Default: builtin.
	DefaultRuntime string
	// Version is lensgate's version, named by the builtin runtime's observed identity.
	Version string
	// ChunkTokens is the per-call budget, in estimated tokens, of one part of a change too
	// large for one model call (default DefaultChunkTokens).
	ChunkTokens int
	// EnableHint is appended to the cause of a lens whose runtime is not enabled: how to enable
	// one where the pipeline runs (the server config, or environment variables for the CLI).
	EnableHint string
	// Tokens, when set, caps each installation's model tokens per day (the server's
	// runtimes.max_tokens_per_installation_per_day) on top of models.max_tokens_per_review.
	// TokenLedger counts in memory; the server gives the durable queue's ledger when it has one.
	Tokens DailyTokens
	// MaxConcurrentCalls bounds the model calls one review makes at once: its parts of the
	// change, its runtime groups and a runtime's independent pass (the server's
	// runtimes.max_concurrent_calls; default DefaultMaxConcurrentCalls). 1 makes them one
	// after another.
	MaxConcurrentCalls int
	// CallLimits, when set, bounds the model calls of every review of the process together,
	// in all and per installation.
	CallLimits *CallLimits
}

// Pipeline reviews subjects. It holds no per-review state and is safe for concurrent use.
type Pipeline struct {
	opts Options
	free map[string]bool
	self *selfDigest
}

// NewPipeline returns a pipeline.
func NewPipeline(opts Options) *Pipeline {
	if opts.FreeRuntimes == nil {
		// delegate sends nothing anywhere: it judges what another bot already answered.
		opts.FreeRuntimes = []string{"builtin", "dryrun", "delegate"}
	}
	if opts.FreeMaxDiffBytes <= 0 {
		opts.FreeMaxDiffBytes = DefaultFreeMaxDiffBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ChunkTokens <= 0 {
		opts.ChunkTokens = DefaultChunkTokens
	}
	if opts.MaxConcurrentCalls <= 0 {
		opts.MaxConcurrentCalls = DefaultMaxConcurrentCalls
	}
	if opts.Runtimes == nil {
		opts.Runtimes = runtime.NewRegistry()
	}
	if opts.DefaultRuntime == "" {
		opts.DefaultRuntime = config.DefaultRuntime
	}
	free := map[string]bool{}
	for _, n := range opts.FreeRuntimes {
		free[n] = true
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	return &Pipeline{opts: opts, free: free, self: &selfDigest{}}
}

// ErrUnusableInput wraps every error Review returns: the subject or configuration cannot be
// reviewed at all. Operational failures of a runtime are never errors; they make lenses pending.
var ErrUnusableInput = errors.New("unusable review input")

func unusable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnusableInput, fmt.Sprintf(format, args...))
}

// budget is the part of the diff one class of runtime gets.
type budget struct {
	files []diff.File
	gaps  []Gap
}

// lensPlan is one policy lens with the runtime chosen for it.
type lensPlan struct {
	item    policy.Item
	runtime string
	cause   string     // set when no usable runtime could be chosen
	group   *lensGroup // the requests this lens is reviewed in (nil without a usable runtime)
}

// Review runs the whole pipeline on a pull request. It returns an error only for unusable
// input; a runtime that fails, hangs or answers garbage leaves its lenses pending.
func (p *Pipeline) Review(ctx context.Context, subj *Subject, cfg *config.Repo) (*Decision, error) {
	if subj == nil {
		return nil, unusable("no subject")
	}
	if cfg == nil {
		return nil, unusable("no repository configuration")
	}
	if subj.Kind != KindPullRequest {
		return nil, unusable("subject kind %q is not a pull request", subj.Kind)
	}
	plan, err := policy.NewPlan(cfg.Policy)
	if err != nil {
		return nil, unusable("invalid review policy: %v", err)
	}
	r := p.planReview(subj, cfg, plan)
	if r.usesPaid {
		// Nothing leaves for a model unredacted: without the rule set there is no review.
		if r.secretRules, err = builtin.LoadSecretRules(); err != nil {
			return nil, fmt.Errorf("review: redaction before model calls: %w", err)
		}
	}
	r.prepare()
	defer r.close()
	r.run(ctx)
	dec, err := r.assemble()
	if err != nil {
		return nil, err
	}
	r.log.Info().Str("gate", string(dec.Gate.State)).Int("findings", len(dec.Findings)).
		Str("coverage", dec.Coverage.Status).Msg("review finished")
	return dec, nil
}

// configDigest identifies a repository configuration ("" when it cannot be encoded, which
// makes no record reusable).
func configDigest(cfg *config.Repo) string {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return ""
	}
	return digest.SHA256Hex(raw)
}

// reusable returns the paid lenses whose result the earlier review of this very head may
// stand for. It is all or nothing: when the subject is a settled delegated lens's review and
// every paid lens completed at this head under the same plan, base and configuration, the
// records are reused; otherwise none is, and it returns (and logs) why.
func (p *Pipeline) reusable(subj *Subject, plan policy.Plan, cfgDigest string, lenses []lensPlan, log *zerolog.Logger) (map[string]LensRecord, string) {
	if !subj.Settled {
		return nil, ""
	}
	var paid []string
	for _, l := range lenses {
		if l.cause == "" && !p.free[l.runtime] {
			paid = append(paid, l.item.Name)
		}
	}
	if len(paid) == 0 {
		return nil, ""
	}
	pr := subj.Prior
	why := ""
	switch {
	case pr == nil:
		why = "no readable state of the earlier review"
	case pr.Reuse == nil:
		why = "the earlier review recorded no lens results"
	case pr.Reuse.Head != subj.HeadSHA:
		why = "the recorded results are of head " + digest.Short(pr.Reuse.Head) + ", not this one"
	case pr.PlanDigest != plan.Digest():
		why = "the review policy changed (plan digest " + digest.Short(pr.PlanDigest) + " -> " + digest.Short(plan.Digest()) + ")"
	case pr.BaseSHA != subj.BaseSHA:
		why = "the base moved since the recorded review"
	case cfgDigest == "" || pr.Reuse.Config != cfgDigest:
		why = "the repository configuration changed since the recorded review"
	}
	out := map[string]LensRecord{}
	if why == "" {
		for _, name := range paid {
			rec, ok := pr.Reuse.Lenses[name]
			if !ok || rec.Runtime != lenses[indexOfLens(lenses, name)].runtime {
				why = "lens " + name + " has no completed result for this head on its runtime"
				break
			}
			out[name] = rec
		}
	}
	if why != "" {
		log.Info().Str("reason", why).Msg("delegated lens settled; the paid lenses run again in full")
		return nil, why
	}
	log.Info().Int("lenses", len(out)).Msg("delegated lens settled; the paid lenses' results of this head are reused, not billed again")
	return out, ""
}

func indexOfLens(lenses []lensPlan, name string) int {
	for i, l := range lenses {
		if l.item.Name == name {
			return i
		}
	}
	return -1
}

// allReused reports whether no paid lens needs a model call.
func allReused(lenses []lensPlan, reused map[string]LensRecord, free map[string]bool) bool {
	for _, l := range lenses {
		if _, ok := reused[l.item.Name]; l.cause == "" && !free[l.runtime] && !ok {
			return false
		}
	}
	return true
}

// reuseRecord is what the paid lenses of this review concluded at head.
func (p *Pipeline) reuseRecord(head, cfgDigest string, cov Coverage, lenses []lensPlan, results []LensResult, requestChanges []bool) *Reuse {
	r := &Reuse{Head: head, Config: cfgDigest, Scope: cov.Scope, Since: cov.Since, Chunks: cov.Chunks, Lenses: map[string]LensRecord{}}
	for i, l := range lenses {
		lr := results[i]
		if l.cause != "" || p.free[l.runtime] || lr.Outcome == OutcomePending {
			continue
		}
		// The summary is bounded so that the record stays small in the advisory comment.
		rec := LensRecord{Runtime: l.runtime, Outcome: lr.Outcome, Summary: boundText(lr.Summary, maxReusedSummaryBytes), RequestChanges: requestChanges[i]}
		if lr.Tokens != nil {
			t := *lr.Tokens
			t.Earlier = false
			rec.Tokens = &t
		}
		r.Lenses[lr.Name] = rec
	}
	if len(r.Lenses) == 0 || cfgDigest == "" {
		return nil
	}
	return r
}

// tallyTokens totals the calls of a review and gives each lens its share: a call that judged
// several lenses is split evenly among them (the first takes the remainder), so the lens
// shares add up to the review's total.
func tallyTokens(calls []ModelCall, results []LensResult) Tokens {
	t := Tokens{Calls: calls}
	if t.Calls == nil {
		t.Calls = []ModelCall{}
	}
	type lensOf struct{ runtime, lens string }
	byLens := map[lensOf]int{}
	for i := range results {
		byLens[lensOf{results[i].Runtime, results[i].Name}] = i
	}
	for _, c := range calls {
		t.add(c.Usage)
		var idx []int
		for _, name := range c.Lenses {
			if i, ok := byLens[lensOf{c.Runtime, name}]; ok {
				idx = append(idx, i)
			}
		}
		n := len(idx)
		for k, i := range idx {
			share := runtime.Tokens{PromptTokens: c.Usage.PromptTokens / n, CompletionTokens: c.Usage.CompletionTokens / n,
				Estimated: c.Usage.Estimated}
			if k == 0 {
				share.PromptTokens += c.Usage.PromptTokens % n
				share.CompletionTokens += c.Usage.CompletionTokens % n
			}
			if results[i].Tokens == nil {
				results[i].Tokens = &TokenCount{}
			}
			results[i].Tokens.add(share)
		}
	}
	return t
}

// chooseRuntimes picks the runtime of every lens: the preset when it names an enabled runtime
// or an operator-defined preset, otherwise the repository's default runtime. Only enabled
// runtimes can be chosen; anything else leaves the lens pending with the reason.
func (p *Pipeline) chooseRuntimes(plan policy.Plan, cfg *config.Repo) []lensPlan {
	out := make([]lensPlan, len(plan.Items))
	def := p.defaultRuntime(cfg)
	for i, it := range plan.Items {
		lp := lensPlan{item: it}
		switch {
		case p.enabled(it.Preset):
			lp.runtime = it.Preset
		default:
			if rt, ok := p.opts.Runtimes.Preset(it.Preset); ok {
				lp.runtime = rt
			} else {
				lp.runtime = def
			}
		}
		if !p.enabled(lp.runtime) {
			lp.cause = fmt.Sprintf("runtime %q is not enabled (enabled: %s)",
				lp.runtime, strings.Join(p.opts.Runtimes.Names(), ", "))
			if p.opts.EnableHint != "" {
				lp.cause += "; " + p.opts.EnableHint
			}
		}
		out[i] = lp
	}
	return out
}

// defaultRuntime is the repository's runtime:, with ASDD's "generic" meaning the operator's
// default.
func (p *Pipeline) defaultRuntime(cfg *config.Repo) string {
	switch cfg.Runtime {
	case "", "generic":
		return p.opts.DefaultRuntime
	}
	return cfg.Runtime
}

func (p *Pipeline) enabled(name string) bool {
	_, ok := p.opts.Runtimes.Get(name)
	return ok
}

// safeReview runs one runtime with an overall deadline and turns a panic into an error, so
// that nothing a runtime does can take the pipeline down.
func safeReview(ctx context.Context, rt runtime.Runtime, req *runtime.Request, timeoutSeconds int) (res *runtime.Result, err error) {
	if timeoutSeconds <= 0 {
		timeoutSeconds = config.DefaultTimeoutSeconds
	}
	// Room for two passes of three attempts each inside a runtime, plus backoff.
	limit := time.Duration(timeoutSeconds)*7*time.Second + 30*time.Second
	if b, ok := rt.(runtime.Bounded); ok {
		limit = max(limit, b.MaxReview(req)+30*time.Second)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("runtime crashed: %v", r)
		}
	}()
	res, err = rt.Review(ctx, req)
	if err == nil && res == nil {
		err = errors.New("runtime returned no result")
	}
	return res, err
}

// mapReport turns one runtime report into a closed lens outcome. Verdicts: request-changes
// fails the lens; ok and concerns pass it unless a high or critical finding is reported (the
// finding wins); skipped, an unknown verdict or a missing report leave it pending.
func mapReport(lr LensResult, rep *runtime.LensReport) LensResult {
	if rep == nil {
		lr.Cause = "runtime " + lr.Runtime + " returned no result for this lens"
		return lr
	}
	if !runtime.ValidVerdict(rep.Verdict) {
		lr.Cause = fmt.Sprintf("runtime %s returned an invalid verdict %q", lr.Runtime, boundText(rep.Verdict, 40))
		return lr
	}
	seen := map[string]bool{}
	blocking := false
	dropped := 0
	for _, f := range rep.Findings {
		sev := Severity(f.Severity)
		if sev.Rank() < 0 {
			lr.Cause = fmt.Sprintf("runtime %s returned an invalid severity %q", lr.Runtime, boundText(f.Severity, 40))
			lr.Findings = nil
			return lr
		}
		if sev.Blocks() {
			blocking = true
		}
		fd := Finding{
			Lens: lr.Name, Rule: boundText(f.Rule, 80), Severity: sev, Path: cleanPath(f.Path), Line: f.Line,
			Title: boundText(f.Title, maxTitleBytes), Body: boundText(f.Message, maxMessageBytes),
		}
		if fd.Line < 0 {
			fd.Line = 0
		}
		if sg := f.Suggestion; sg != nil && sg.StartLine > 0 && sg.EndLine >= sg.StartLine && fd.Path != "" &&
			len(sg.Replacement) <= maxMessageBytes && utf8.ValidString(sg.Replacement) && !strings.ContainsRune(sg.Replacement, 0) {
			fd.Suggestion = &Suggestion{StartLine: sg.StartLine, EndLine: sg.EndLine, Replacement: sg.Replacement}
		}
		if fd.Title == "" {
			fd.Title = boundText(firstLine(fd.Body), maxTitleBytes)
		}
		key := f.Key
		if key == "" {
			key = fd.Title + "\x00" + fd.Body
		}
		fd.ID = findingID(lr.Name, fd.Rule, fd.Path, key)
		if seen[fd.ID] {
			continue
		}
		seen[fd.ID] = true
		if len(lr.Findings) >= MaxFindingsPerLens {
			dropped++
			continue
		}
		lr.Findings = append(lr.Findings, fd)
	}
	sort.SliceStable(lr.Findings, func(i, j int) bool {
		return lr.Findings[i].Severity.Rank() > lr.Findings[j].Severity.Rank()
	})
	lr.Summary = boundText(rep.Summary, maxSummaryBytes-200)
	if dropped > 0 {
		lr.Summary = strings.TrimSpace(lr.Summary + fmt.Sprintf(" (%d more finding(s) not listed)", dropped))
	}
	switch {
	case rep.Verdict == runtime.VerdictSkipped:
		lr.Outcome = OutcomePending
		lr.Cause = rep.Cause
		if lr.Cause == "" {
			lr.Cause = "runtime " + lr.Runtime + " skipped this lens"
		}
		lr.Cause = boundText(lr.Cause, 500)
	case rep.Verdict == runtime.VerdictRequestChanges || blocking:
		lr.Outcome = OutcomeFailed
	default:
		lr.Outcome = OutcomePassed
	}
	return lr
}

// evaluateGate aggregates the lens outcomes through the policy model.
func evaluateGate(plan policy.Plan, results []LensResult) (Gate, error) {
	rc := policy.Receipt{Version: plan.Version, PlanDigest: plan.Digest()}
	for _, lr := range results {
		res := policy.Result{Lens: lr.Name, Outcome: policy.Outcome(lr.Outcome)}
		if s := receiptSummary(lr.Summary); s != "" {
			res.Summary = &s
		}
		rc.Results = append(rc.Results, res)
	}
	ev, err := policy.Evaluate(plan, rc)
	if err != nil {
		return Gate{}, err
	}
	g := Gate{
		State: Outcome(ev.State), BlockingFailures: ev.BlockingFailures, BlockingPending: ev.BlockingPending,
		AdvisoryFailures: ev.AdvisoryFailures, AdvisoryPending: ev.AdvisoryPending,
	}
	switch g.State {
	case OutcomePassed:
		g.Reason = "the required lenses passed"
	case OutcomeFailed:
		g.Reason = "required lens(es) failed: " + strings.Join(g.BlockingFailures, ", ")
	default:
		g.Reason = "required lens(es) pending: " + strings.Join(g.BlockingPending, ", ")
	}
	return g, nil
}

// receiptSummary makes a summary acceptable to the receipt rules (non-blank, bounded, no NUL).
func receiptSummary(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	s = boundText(s, maxSummaryBytes)
	if config.IsBlank(s) {
		return ""
	}
	return s
}

func intakeProblems(in Intake) string {
	var checks []string
	for _, m := range in.Messages {
		if !m.Passed {
			checks = append(checks, m.Check)
		}
	}
	return strings.Join(checks, ", ")
}

// inPaths keeps the files matching one of a lens's path globs (all of them when it has none).
func inPaths(files []diff.File, globs []string) []diff.File {
	if len(globs) == 0 {
		return files
	}
	set := pathglob.Compile(globs)
	var out []diff.File
	for _, f := range files {
		if set.Match(f.Path()) || f.OldPath != "" && set.Match(f.OldPath) {
			out = append(out, f)
		}
	}
	return out
}

// pathInstruction is a lens's instruction with the path instructions whose globs match a file
// of the part it is sent, each naming the files it is for.
func pathInstruction(it policy.Item, part []diff.File) string {
	out := it.Instruction
	for _, pi := range it.PathInstructions {
		set := pathglob.Compile(pi.Paths)
		for _, f := range part {
			if set.Match(f.Path()) {
				out += "\n\nFor files matching " + strings.Join(pi.Paths, ", ") + ": " + strings.TrimSpace(pi.Instruction)
				break
			}
		}
	}
	return out
}

// uniqueFiles drops repeated paths, keeping the first.
func uniqueFiles(files []diff.File) []diff.File {
	seen := map[string]bool{}
	var out []diff.File
	for _, f := range files {
		if !seen[f.Path()] {
			seen[f.Path()] = true
			out = append(out, f)
		}
	}
	return out
}

// budgetByBytes keeps files in diff order while their bytes fit in max; every other file is a
// gap. A file too large on its own does not stop smaller later files.
func budgetByBytes(files []diff.File, max int64) budget {
	var b budget
	var used int64
	for i := range files {
		n := int64(len(files[i].Raw))
		if used+n <= max {
			used += n
			b.files = append(b.files, files[i])
			continue
		}
		b.gaps = append(b.gaps, Gap{Path: files[i].Path(),
			Reason: fmt.Sprintf("beyond the offline reviewer's %d MiB diff budget: not scanned", max>>20)})
	}
	return b
}

// joinFiles returns the diff bytes of the chosen files. When they are a contiguous run of the
// input, the input is sliced rather than copied.
func joinFiles(all []byte, files []diff.File) []byte {
	if len(files) == 0 {
		return nil
	}
	start := files[0].Offset
	end := start
	contiguous := true
	for i := range files {
		if files[i].Offset != end {
			contiguous = false
			break
		}
		end += len(files[i].Raw)
	}
	if contiguous && end <= len(all) {
		return all[start:end:end]
	}
	n := 0
	for i := range files {
		n += len(files[i].Raw)
	}
	out := make([]byte, 0, n)
	for i := range files {
		out = append(out, files[i].Raw...)
	}
	return out
}

// patchesToDiff builds a git-style diff from per-file patches when no full diff was given.
func patchesToDiff(files []File) []byte {
	var b strings.Builder
	for _, f := range files {
		if f.Patch == "" {
			continue
		}
		oldP, newP := f.Path, f.Path
		if f.PreviousPath != "" {
			oldP = f.PreviousPath
		}
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n", oldP, newP)
		switch f.Status {
		case FileAdded:
			fmt.Fprintf(&b, "new file mode 100644\n--- /dev/null\n+++ b/%s\n", newP)
		case FileRemoved:
			fmt.Fprintf(&b, "deleted file mode 100644\n--- a/%s\n+++ /dev/null\n", oldP)
		default:
			fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", oldP, newP)
		}
		b.WriteString(f.Patch)
		if !strings.HasSuffix(f.Patch, "\n") {
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// changedFiles lists the changed files from the forge's file list, or from the diff when the
// subject has none.
func changedFiles(files []File, parsed []diff.File) []runtime.Changed {
	if len(files) > 0 {
		out := make([]runtime.Changed, len(files))
		for i, f := range files {
			out[i] = runtime.Changed{Path: f.Path, PreviousPath: f.PreviousPath, Status: f.Status, Binary: f.Binary, SizeBytes: f.SizeBytes,
				HeadContent: f.HeadContent}
		}
		return out
	}
	out := make([]runtime.Changed, len(parsed))
	for i := range parsed {
		f := &parsed[i]
		c := runtime.Changed{Path: f.Path(), Status: f.Status, Binary: f.Binary}
		if f.Status == FileRenamed || f.Status == FileCopied {
			c.PreviousPath = f.OldPath
		}
		out[i] = c
	}
	return out
}

func findingID(lens, rule, path, key string) string {
	h := sha256.Sum256([]byte(lens + "\x00" + rule + "\x00" + path + "\x00" + key))
	return "LG-" + hex.EncodeToString(h[:6])
}

// boundText cuts s to at most n bytes on a rune boundary and drops invalid UTF-8.
func boundText(s string, n int) string {
	s = strings.ToValidUTF8(strings.TrimSpace(s), "")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// cleanPath keeps a reported path only if it is a plain relative path. Git allows newlines and
// other control characters in file names, so they are kept here (a finding must still name its
// file); every renderer shows paths through DisplayPath.
func cleanPath(p string) string {
	if strings.TrimSpace(p) == "" || len(p) > 1024 || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return ""
	}
	return p
}
