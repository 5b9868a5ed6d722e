// Package openai reviews lenses with a model behind an OpenAI-compatible chat completions
// endpoint. The lens instructions are fixed text in the system message; the pull request is
// untrusted data in the user message, fenced by a random per-prompt nonce. The answer is asked
// for as strict structured output (a JSON schema whose lens names are exactly the lenses
// asked), falling back to plain JSON mode and then to none for servers that refuse it, and it
// is held to that same schema in Go whatever the server honoured. An answer's text is one JSON
// object or nothing: prose around it, a second object, a truncated or refused answer leave its
// lenses pending with the cause named. Within the object, each lens entry stands on its own: a
// malformed verdict, severity or blocking finding leaves that lens pending, a malformed
// optional field is dropped with a note in the lens's summary.
//
// Every call samples at temperature 0 with a fixed seed (the same prompt, the same answer),
// has one deadline for all its attempts, and is checked for a prompt the server did not read
// whole; where the server says the model's context length, a change too large for it is sent
// in parts that fit.
//
// Lenses that need an independent inference (the quality preset, or independent: true) are
// judged in a second, adversarial call that sees neither the other lenses nor the first
// answer (ASDD §4.2); a review without such a lens makes one call.
package openai

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/asdd"
)

// Name is the runtime's name.
const Name = "openai"

// Options configure the runtime. Zero values take the defaults noted.
type Options struct {
	// BaseURL is the endpoint: an API base such as https://host/v1, or the full
	// .../chat/completions URL (ASDD_MODEL_URL).
	BaseURL string
	// Token is the API key (ASDD_RUNTIME_TOKEN). It is sent only as a bearer token.
	Token string
	// Model is the fallback model when models.reviewer is unset (ASDD_MODEL).
	Model string
	// HTTPClient sends the requests (default: a client without its own timeout).
	HTTPClient *http.Client
	// Timeout is the deadline of one whole call: every attempt, every wait between them and
	// every response-format fallback (default: the repository's review.timeout_seconds, else
	// 45 s). The operator sets it for servers slower than the repositories expect, such as
	// CPU-hosted models.
	Timeout time.Duration
	// Retries is how many times a request is repeated after a 429, a 5xx or a network error,
	// within the call's deadline (default 2; negative for none).
	Retries int
	// Backoff is the first wait between attempts, which grows with each attempt, with jitter
	// of half either way (default 1 s). A Retry-After is waited out as it asks.
	Backoff time.Duration
	// Temperature is the sampling temperature of every call (nil: 0, so the same prompt gets
	// the same answer).
	Temperature *float64
	// Seed is the sampling seed sent with every call (nil: 1). A server that answers 400
	// naming temperature or seed is asked again without it, and the call record says what
	// was sent.
	Seed *int
	// MaxResponseBytes bounds an HTTP response body (default 1 MiB).
	MaxResponseBytes int64
	// MaxPromptBytes is the budget of one prompt, in bytes (default 400,000, roughly 100,000
	// tokens). A change that does not fit is not sent.
	MaxPromptBytes int
	// MaxTokens bounds the model's answer (default 4,096).
	MaxTokens int
	// LearnContext asks the server, once per model, which context length it runs the model
	// with (vLLM's /v1/models, llama.cpp's /props, Ollama's /api/ps and /api/show), and splits
	// a change whose prompt would not fit into calls that do.
	LearnContext bool
	// Random is the nonce source (default crypto/rand).
	Random io.Reader
	// Logger receives one line when an endpoint refuses a response format.
	Logger zerolog.Logger
}

// Runtime is the OpenAI-compatible runtime. It is safe for concurrent use; the only state it
// keeps is the response format level each endpoint and model accepted.
type Runtime struct {
	opts     Options
	base     string // the API base, without /chat/completions
	endpoint string
	// waited is told each wait between attempts before it is taken (tests watch it).
	waited func(time.Duration)
	host   string
	hc     *http.Client

	mu     sync.Mutex
	states map[string]endpointState // endpoint + model
	randMu sync.Mutex               // guards opts.Random
}

// endpointState is what a runtime learned about one endpoint and model: the response format
// level it accepts and the sampling parameters it refused.
type endpointState struct {
	level         int // index into formats
	noTemperature bool
	noSeed        bool
	// probed is set once the server was asked about the model's context; context is what it
	// said.
	probed  bool
	context contextInfo
}

// New returns the runtime. It fails when the endpoint or token is missing.
func New(opts Options) (*Runtime, error) {
	if opts.BaseURL == "" || opts.Token == "" {
		return nil, errors.New("openai runtime: an endpoint (ASDD_MODEL_URL) and a token (ASDD_RUNTIME_TOKEN) are required")
	}
	base := strings.TrimRight(opts.BaseURL, "/")
	base = strings.TrimSuffix(base, "/chat/completions")
	if opts.Retries < 0 {
		opts.Retries = 0
	} else if opts.Retries == 0 {
		opts.Retries = 2
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = 1 << 20
	}
	if opts.MaxPromptBytes <= 0 {
		opts.MaxPromptBytes = 400_000
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = 4096
	}
	if opts.Random == nil {
		opts.Random = rand.Reader
	}
	if opts.Temperature == nil {
		zero := 0.0
		opts.Temperature = &zero
	}
	if opts.Seed == nil {
		one := 1
		opts.Seed = &one
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	// Every response is bounded, and every exchange is handed to the call's recorder when the
	// pipeline observes the call.
	limited := *hc
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	limited.Transport = &recordTransport{next: &limitTransport{next: next, max: opts.MaxResponseBytes}}
	host := ""
	if u, err := url.Parse(base); err == nil {
		host = u.Host
	}
	return &Runtime{opts: opts, waited: func(time.Duration) {}, base: base, endpoint: base + "/chat/completions", host: host, hc: &limited, states: map[string]endpointState{}}, nil
}

// MaxReview implements runtime.Bounded: the longest one review can take, every call at its
// whole deadline (two passes, each in as many parts as a small context needs) and the
// questions about the model's context.
func (r *Runtime) MaxReview(req *runtime.Request) time.Duration {
	return 2*maxParts*r.callTimeout(req) + 2*probeTimeout
}

// Identity implements runtime.Identified.
func (r *Runtime) Identity() runtime.Identity {
	return runtime.Identity{Kind: runtime.IdentityOpenAI, EndpointHost: r.host}
}

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return Name }

// NeedsIndependent reports whether a lens is judged in the independent adversarial call: a
// quality lens (by name or preset; adversarial and refute too) or one the policy marks
// independent.
func NeedsIndependent(l runtime.Lens) bool {
	if l.Independent {
		return true
	}
	for _, s := range []string{l.Name, l.Preset} {
		switch s {
		case "quality", "adversarial", "refute":
			return true
		}
	}
	return false
}

// Review implements runtime.Runtime: one call for the ordinary lenses and, when some lens needs
// it, one independent adversarial call for those lenses. Every lens asked gets a report; a lens
// whose call failed is skipped with the cause, which the pipeline shows as pending. Every call
// made is in Result.Calls with its tokens, answered or not.
func (r *Runtime) Review(ctx context.Context, req *runtime.Request) (*runtime.Result, error) {
	model := r.reviewerModel(req.Settings)
	if model == "" {
		return nil, errNoModel
	}
	if req.Kind == runtime.KindTriage {
		return r.triage(ctx, req, model)
	}
	var main, independent []runtime.Lens
	for _, l := range req.Lenses {
		if NeedsIndependent(l) {
			independent = append(independent, l)
		} else {
			main = append(main, l)
		}
	}
	paths := diffPaths(req)
	passes := []*pass{{lenses: main}, {lenses: independent, independent: true}}
	// The passes go out at once, each recording what crossed the wire on its own, and are
	// gathered in a fixed order: the main pass first, whichever answered first.
	// The independent pass starts once the main pass's first call has taken its share of the
	// token budget, so that under a tight cap the same call is refused whichever is faster.
	var wg sync.WaitGroup
	turn := make(chan struct{})
	reserved := sync.OnceFunc(func() { close(turn) })
	for k, ps := range passes {
		if len(ps.lenses) == 0 {
			if k == 0 {
				reserved()
			}
			continue
		}
		wg.Go(func() {
			pctx := ctx
			if k == 0 {
				defer reserved()
				pctx = context.WithValue(ctx, reservedKey{}, reserved)
			} else {
				select {
				case <-turn:
				case <-ctx.Done():
				}
			}
			rec := &runtime.Recorder{}
			ps.reports, ps.calls = r.reviewPass(runtime.WithRecorder(pctx, rec), req, model, ps.lenses, ps.independent, paths)
			ps.seen = rec.Snapshot()
		})
	}
	wg.Wait()
	res := &runtime.Result{Model: model}
	for _, ps := range passes {
		if len(ps.lenses) > 0 {
			res.Calls = append(res.Calls, ps.calls...)
			res.Lenses = append(res.Lenses, ps.reports...)
			runtime.RecorderFrom(ctx).Merge(ps.seen)
		}
	}
	return res, nil
}

// reservedKey carries the function a call runs once its token reservation is decided.
type reservedKey struct{}

// pass is the lenses judged in one inference, and what it answered and recorded.
type pass struct {
	lenses      []runtime.Lens
	independent bool

	reports []runtime.LensReport
	calls   []runtime.Call
	seen    runtime.Observed
}

// PacesCalls implements runtime.Paced: every model call takes a slot of Request.Slots.
func (r *Runtime) PacesCalls() {}

// reviewPass reviews lenses in one call, or, when the server says the model's context is too
// small for the prompt, in one call per part of the change that fits it. Every lens gets a
// report; every call made is returned.
func (r *Runtime) reviewPass(ctx context.Context, req *runtime.Request, model string, lenses []runtime.Lens, independent bool,
	paths map[string]bool) ([]runtime.LensReport, []runtime.Call) {
	names := make([]string, len(lenses))
	for i, l := range lenses {
		names[i] = l.Name
	}
	sch := reviewSchema(names)
	system := systemPrompt(lenses, independent, req.Context.RenderRules())
	info := r.contextOf(ctx, r.endpoint+"\x00"+model, model)
	whole := estimatePrompt(&prompt{system: system, user: userPrompt(req, strings.Repeat("0", 32))}, FormatJSONSchema, sch.encode())
	fixed := whole - runtime.EstimateTokens(len(req.Diff))
	parts, err := r.fitParts(req, whole, fixed, info)
	if err != nil {
		call := runtime.Call{Lenses: names, Independent: independent, Model: model, Cause: err.Error()}
		return skipAll(lenses, callKind(independent)+": "+call.Cause), []runtime.Call{call}
	}
	var calls []runtime.Call
	var reports [][]runtime.LensReport
	for _, part := range parts {
		reps, call := r.reviewCall(ctx, part, model, lenses, independent, sch, system, paths)
		calls = append(calls, call)
		reports = append(reports, reps)
	}
	if len(reports) == 1 {
		return reports[0], calls
	}
	return mergeParts(reports, lenses), calls
}

func callKind(independent bool) string {
	if independent {
		return "independent model call"
	}
	return "model call"
}

// reviewCall makes one call for lenses and returns a report for each of them.
func (r *Runtime) reviewCall(ctx context.Context, req *runtime.Request, model string, lenses []runtime.Lens, independent bool,
	sch *schema, system string, paths map[string]bool) ([]runtime.LensReport, runtime.Call) {
	names := make([]string, len(lenses))
	for i, l := range lenses {
		names[i] = l.Name
	}
	call := runtime.Call{Lenses: names, Independent: independent, Model: model}
	fail := func(err error) ([]runtime.LensReport, runtime.Call) {
		call.Cause = err.Error()
		return skipAll(lenses, callKind(independent)+": "+call.Cause), call
	}
	nonce, err := r.nonce(req)
	if err != nil {
		return fail(err)
	}
	p := &prompt{system: system, shape: answerShape, user: userPrompt(req, nonce), schema: sch, schemaName: "asdd_review"}
	if err := r.overBudget(p); err != nil {
		return fail(fmt.Errorf("the change does not fit the prompt budget (%w); lower review.max_diff_lines", err))
	}
	rp, err := r.ask(ctx, req, model, p, &call)
	if err != nil {
		return fail(err)
	}
	obj, err := answerValue(rp.text)
	if err != nil {
		return fail(rp.explainUnparsed(err))
	}
	reps, err := readReview(obj, lenses, paths)
	if err != nil {
		return fail(err)
	}
	return reps, call
}

// overBudget says by how much p is over the budget of one prompt; nil when it fits.
func (r *Runtime) overBudget(p *prompt) error {
	if n := len(p.system) + len(p.shape) + len(p.user); n > r.opts.MaxPromptBytes {
		return fmt.Errorf("%d bytes > %d", n, r.opts.MaxPromptBytes)
	}
	return nil
}

// schemaAnswer reads a reply as one JSON object held to sch (the lensgate-own calls: verdicts,
// prose), explaining an answer that could not be read.
func schemaAnswer(rp reply, sch *schema) (map[string]any, error) {
	obj, err := ExtractAnswer(rp.text)
	if err != nil {
		return nil, rp.explainUnparsed(err)
	}
	v, err := decodeValue(obj)
	if err != nil {
		return nil, err
	}
	if err := sch.validate(v); err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// answerValue turns an answer's text into a decoded JSON value: one whole JSON object within
// the bounds of asdd/review/v0.1.
func answerValue(text string) (any, error) {
	obj, err := ExtractAnswer(text)
	if err != nil {
		return nil, err
	}
	if err := asdd.CheckJSON(obj); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	return decodeValue(obj)
}

func skipAll(lenses []runtime.Lens, cause string) []runtime.LensReport {
	out := make([]runtime.LensReport, len(lenses))
	for i, l := range lenses {
		out[i] = runtime.LensReport{Lens: l.Name, Verdict: runtime.VerdictSkipped, Cause: cause}
	}
	return out
}

// diffPaths are the files a finding may name: both sides of every file in the diff sent.
func diffPaths(req *runtime.Request) map[string]bool {
	out := map[string]bool{}
	for i := range req.Files {
		for _, p := range []string{req.Files[i].NewPath, req.Files[i].OldPath} {
			if p != "" {
				out[p] = true
			}
		}
	}
	return out
}

// errBudget marks a call that a token cap did not allow.
var errBudget = errors.New("token budget")

// errNoModel answers a call when neither the repository nor the server names a reviewer model.
var errNoModel = errors.New("no reviewer model: set models.reviewer in .asdd.yml or ASDD_MODEL")

// reviewerModel is the repository's reviewer model, else the server's ("" when neither names one).
func (r *Runtime) reviewerModel(s runtime.Settings) string {
	if s.Model != "" {
		return s.Model
	}
	return r.opts.Model
}

// callTimeout is the deadline of one whole call.
func (r *Runtime) callTimeout(req *runtime.Request) time.Duration {
	switch {
	case r.opts.Timeout > 0:
		return r.opts.Timeout
	case req.Settings.TimeoutSeconds > 0:
		return time.Duration(req.Settings.TimeoutSeconds) * time.Second
	}
	return 45 * time.Second
}

// ask sends a prompt and returns the server's reply, filling call with what the call cost and
// how it was sampled. One deadline bounds the whole call. It starts at the response format
// level and sampling remembered for the endpoint and model, and steps down when the endpoint
// refuses one of them.
func (r *Runtime) ask(ctx context.Context, req *runtime.Request, model string, p *prompt, call *runtime.Call) (reply, error) {
	// Waiting for a slot of the review's bound on concurrent calls is not part of the call's
	// deadline; the review's own deadline still bounds it.
	release, err := runtime.AcquireSlot(ctx, req.Slots)
	if err != nil {
		return reply{}, fmt.Errorf("no call slot: %w", err)
	}
	defer release()
	timeout, byReview := r.callTimeout(req), false
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		// The review's own deadline ends first: a timeout is then the review's.
		timeout, byReview = time.Until(dl), true
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	key := r.endpoint + "\x00" + model
	schemaJSON := p.schema.encode()
	st := r.state(key)

	// The most this call can cost: its prompt and a full answer.
	reserved := estimatePrompt(p, formats[st.level], schemaJSON) + r.opts.MaxTokens
	ok, cause := true, ""
	if req.Budget != nil {
		ok, cause = req.Budget.Reserve(ctx, reserved)
	}
	if done, _ := ctx.Value(reservedKey{}).(func()); done != nil {
		done()
	}
	if !ok {
		return reply{}, fmt.Errorf("%w: %s", errBudget, cause)
	}
	var used int
	defer func() {
		if req.Budget != nil {
			req.Budget.Settle(ctx, reserved, used)
		}
	}()

	call.Started = time.Now()
	defer func() { call.Duration = time.Since(call.Started) }()
	for {
		format := formats[st.level]
		smp := r.sampling(st)
		call.Format, call.Temperature, call.Seed = format, smp.temperature, smp.seed
		body, err := r.body(model, p, format, schemaJSON, smp)
		if err != nil {
			return reply{}, err
		}
		resp, attempts, err := r.post(ctx, body)
		call.Attempts += attempts
		if next, ok := r.adapt(key, model, st, err); ok {
			st = next
			continue
		}
		if err != nil {
			// The prompt was sent and may have been processed (a timeout, a lost answer):
			// count it, estimated, so a cap is never undercut and no sent call reads zero.
			call.Usage = runtime.Tokens{PromptTokens: estimatePrompt(p, format, schemaJSON), Estimated: true}
			used = call.Usage.Total()
			return reply{}, r.explain(err, model, timeout, byReview)
		}
		rp, perr := parseCompletion(resp)
		call.Usage = usageOf(rp, p, format, schemaJSON)
		used = call.Usage.Total()
		if perr != nil {
			return rp, perr
		}
		return rp, checkPromptRead(rp, estimatePrompt(p, format, schemaJSON), r.contextOf(ctx, key, model))
	}
}

// sampling is what a request to an endpoint in state st says about sampling.
func (r *Runtime) sampling(st endpointState) sampling {
	var smp sampling
	if !st.noTemperature {
		t := *r.opts.Temperature
		smp.temperature = &t
	}
	if !st.noSeed {
		s := *r.opts.Seed
		smp.seed = &s
	}
	return smp
}

// adapt steps an endpoint's state down after it refused part of a request: a sampling
// parameter it named, else the response format. ok is false when there is nothing to change.
func (r *Runtime) adapt(key, model string, st endpointState, err error) (endpointState, bool) {
	var he *httpError
	if !errors.As(err, &he) {
		return st, false
	}
	next := st
	var what []string
	if !st.noTemperature && he.refusesParam("temperature") {
		next.noTemperature = true
		what = append(what, "temperature")
	}
	if !st.noSeed && he.refusesParam("seed") {
		next.noSeed = true
		what = append(what, "seed")
	}
	if len(what) == 0 && he.refusesFormat() && st.level+1 < len(formats) {
		next.level++
		what = append(what, "response_format "+formats[st.level])
	}
	if len(what) == 0 {
		return st, false
	}
	r.remember(key, model, next, strings.Join(what, ", "))
	return next, true
}

// explain turns a failed call's error into a cause the operator can act on.
func (r *Runtime) explain(err error, model string, timeout time.Duration, byReview bool) error {
	var he *httpError
	switch {
	case errors.Is(err, errTimedOut) && byReview:
		return fmt.Errorf("%w: the review's own deadline ended the call after %s (review.job_timeout)", err, roundDuration(timeout))
	case errors.Is(err, errTimedOut):
		return fmt.Errorf("%w after %s (the deadline of the whole call, retries included): raise review.timeout_seconds, "+
			"or runtimes.openai_timeout for a slow (CPU-hosted) model server", err, roundDuration(timeout))
	case !errors.As(err, &he):
		return err
	case he.modelNotFound():
		return fmt.Errorf("the model server has no model %q (HTTP 404, model not found): pull or serve it (ollama pull %s; vLLM --served-model-name), "+
			"or set models.reviewer or runtimes.openai_model to a model it serves", bounded(model, 80), bounded(model, 80))
	case he.status == http.StatusNotFound:
		return fmt.Errorf("%w: check runtimes.openai_base_url (an API base such as http://host:port/v1)", err)
	case he.contextExceeded():
		return fmt.Errorf("%w: the prompt does not fit the model's context; raise it (vLLM --max-model-len, llama.cpp -c, Ollama num_ctx "+
			"or OLLAMA_CONTEXT_LENGTH) or lower review.max_diff_lines", err)
	}
	return err
}

// roundDuration is d to the second, or to the millisecond below a second.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// usageOf is the server's count when it sent one, otherwise an estimate from the bytes.
func usageOf(rp reply, p *prompt, format string, schemaJSON []byte) runtime.Tokens {
	if rp.hasUsage {
		return runtime.Tokens{PromptTokens: rp.prompt, CompletionTokens: rp.complete, CachedPromptTokens: rp.cached}
	}
	return runtime.Tokens{PromptTokens: estimatePrompt(p, format, schemaJSON),
		CompletionTokens: runtime.EstimateTokens(rp.producedBytes), Estimated: true}
}

// state is what the runtime learned about an endpoint and model so far.
func (r *Runtime) state(key string) endpointState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.states[key]
}

// remember keeps what an endpoint and model refused, and says so once.
func (r *Runtime) remember(key, model string, st endpointState, refused string) {
	r.mu.Lock()
	old := r.states[key]
	changed := old.level < st.level || !old.noTemperature && st.noTemperature || !old.noSeed && st.noSeed
	if changed {
		st.level = max(st.level, old.level)
		st.noTemperature = st.noTemperature || old.noTemperature
		st.noSeed = st.noSeed || old.noSeed
		r.states[key] = st
	}
	r.mu.Unlock()
	if changed {
		r.opts.Logger.Warn().Str("runtime", Name).Str("model", model).Str("response_format", formats[st.level]).
			Str("refused", refused).Msg("model endpoint refused a response format or a sampling parameter; later calls to this endpoint and model go without it")
	}
}

// Formats reports the response format level in use for each model that needed a fallback.
func (r *Runtime) Formats() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for k, st := range r.states {
		if st.level == 0 {
			continue
		}
		_, model, _ := strings.Cut(k, "\x00")
		out[model] = formats[st.level]
	}
	return out
}

// nonce returns 32 random hex characters that do not occur in the untrusted data, so the data
// cannot contain the closing fence.
func (r *Runtime) nonce(req *runtime.Request) (string, error) {
	for i := 0; i < 4; i++ {
		var b [16]byte
		// The passes of a review draw their nonces at once; Options.Random need not be safe
		// for concurrent use.
		r.randMu.Lock()
		_, err := io.ReadFull(r.opts.Random, b[:])
		r.randMu.Unlock()
		if err != nil {
			return "", fmt.Errorf("fence nonce: %w", err)
		}
		n := hex.EncodeToString(b[:])
		if !bytes.Contains(req.Diff, []byte(n)) && !strings.Contains(req.Subject.Title, n) && !strings.Contains(req.Subject.Body, n) &&
			!changedContains(req.Changed, n) && !textsContain(req.Context.Texts(), n) {
			return n, nil
		}
	}
	return "", errors.New("fence nonce: could not find a nonce absent from the data")
}

func textsContain(ts []string, n string) bool {
	for _, t := range ts {
		if strings.Contains(t, n) {
			return true
		}
	}
	return false
}

func changedContains(cs []runtime.Changed, n string) bool {
	for _, c := range cs {
		if strings.Contains(c.Path, n) {
			return true
		}
	}
	return false
}
