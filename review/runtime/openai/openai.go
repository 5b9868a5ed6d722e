// Package openai reviews lenses with a model behind an OpenAI-compatible chat completions
// endpoint. The lens instructions are fixed text in the system message; the pull request is
// untrusted data in the user message, fenced by a random per-prompt nonce. The answer is asked
// for as strict structured output (a JSON schema whose lens names are exactly the lenses
// asked), falling back to plain JSON mode and then to none for servers that refuse it, and it
// is held to that same schema in Go whatever the server honoured. An answer is used whole or
// not at all: prose around it, a second object, a truncated or refused answer leave its lenses
// pending with the cause named.
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
	// Timeout bounds each call (default: the repository's review.timeout_seconds, else 45 s).
	Timeout time.Duration
	// Retries is how many times a call is repeated after a 429, a 5xx or a network error
	// (default 2; negative for none).
	Retries int
	// Backoff is the first wait between attempts, doubled each time (default 1 s).
	Backoff time.Duration
	// MaxResponseBytes bounds an HTTP response body (default 1 MiB).
	MaxResponseBytes int64
	// MaxPromptBytes is the budget of one prompt, in bytes (default 400,000, roughly 100,000
	// tokens). A change that does not fit is not sent.
	MaxPromptBytes int
	// MaxTokens bounds the model's answer (default 4,096).
	MaxTokens int
	// Random is the nonce source (default crypto/rand).
	Random io.Reader
	// Logger receives one line when an endpoint refuses a response format.
	Logger zerolog.Logger
}

// Runtime is the OpenAI-compatible runtime. It is safe for concurrent use; the only state it
// keeps is the response format level each endpoint and model accepted.
type Runtime struct {
	opts     Options
	endpoint string
	host     string
	hc       *http.Client

	mu     sync.Mutex
	levels map[string]int // endpoint + model -> index into formats
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
	return &Runtime{opts: opts, endpoint: base + "/chat/completions", host: host, hc: &limited, levels: map[string]int{}}, nil
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
	model := req.Settings.Model
	if model == "" {
		model = r.opts.Model
	}
	if model == "" {
		return nil, errors.New("no reviewer model: set models.reviewer in .asdd.yml or ASDD_MODEL")
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
	res := &runtime.Result{Model: model}
	for _, pass := range []struct {
		lenses      []runtime.Lens
		independent bool
	}{{main, false}, {independent, true}} {
		if len(pass.lenses) == 0 {
			continue
		}
		reps, call := r.reviewPass(ctx, req, model, pass.lenses, pass.independent, paths)
		res.Calls = append(res.Calls, call)
		res.Lenses = append(res.Lenses, reps...)
	}
	return res, nil
}

// reviewPass makes one call for lenses and returns a report for each of them.
func (r *Runtime) reviewPass(ctx context.Context, req *runtime.Request, model string, lenses []runtime.Lens, independent bool,
	paths map[string]bool) ([]runtime.LensReport, runtime.Call) {
	names := make([]string, len(lenses))
	for i, l := range lenses {
		names[i] = l.Name
	}
	call := runtime.Call{Lenses: names, Independent: independent, Model: model}
	fail := func(err error) ([]runtime.LensReport, runtime.Call) {
		call.Cause = err.Error()
		kind := "model call"
		if independent {
			kind = "independent model call"
		}
		return skipAll(lenses, kind+": "+call.Cause), call
	}
	nonce, err := r.nonce(req)
	if err != nil {
		return fail(err)
	}
	sch := reviewSchema(names)
	p := &prompt{
		system: systemPrompt(lenses, independent), shape: answerShape, user: userPrompt(req, nonce),
		schema: sch, schemaName: "asdd_review",
	}
	if n := len(p.system) + len(p.shape) + len(p.user); n > r.opts.MaxPromptBytes {
		return fail(fmt.Errorf("the change does not fit the prompt budget (%d bytes > %d); lower review.max_diff_lines", n, r.opts.MaxPromptBytes))
	}
	text, err := r.ask(ctx, req, model, p, &call)
	if err != nil {
		return fail(err)
	}
	obj, err := answerValue(text)
	if err != nil {
		return fail(err)
	}
	reps, err := readReview(obj, lenses, paths)
	if err != nil {
		return fail(err)
	}
	return reps, call
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

// ask sends a prompt and returns the answer's text, filling call with what the call cost. It
// starts at the response format level remembered for the endpoint and model and steps down
// when the endpoint refuses it.
func (r *Runtime) ask(ctx context.Context, req *runtime.Request, model string, p *prompt, call *runtime.Call) (string, error) {
	timeout := r.opts.Timeout
	if timeout <= 0 && req.Settings.TimeoutSeconds > 0 {
		timeout = time.Duration(req.Settings.TimeoutSeconds) * time.Second
	}
	if timeout <= 0 {
		timeout = 45 * time.Second
	}
	key := r.endpoint + "\x00" + model
	schemaJSON := p.schema.encode()
	level := r.level(key)

	// The most this call can cost: its prompt and a full answer.
	reserved := estimatePrompt(p, formats[level], schemaJSON) + r.opts.MaxTokens
	if req.Budget != nil {
		if ok, cause := req.Budget.Reserve(ctx, reserved); !ok {
			return "", fmt.Errorf("%w: %s", errBudget, cause)
		}
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
		format := formats[level]
		call.Format = format
		body, err := r.body(model, p, format, schemaJSON)
		if err != nil {
			return "", err
		}
		resp, attempts, err := r.post(ctx, body, timeout)
		call.Attempts += attempts
		var he *httpError
		if errors.As(err, &he) && he.refusesFormat() && level+1 < len(formats) {
			level++
			r.lower(key, model, level)
			continue
		}
		if err != nil {
			// The prompt was sent and may have been processed (a timeout, a lost answer):
			// count it, estimated, so a cap is never undercut and no sent call reads zero.
			call.Usage = runtime.Tokens{PromptTokens: estimatePrompt(p, format, schemaJSON), Estimated: true}
			used = call.Usage.Total()
			return "", err
		}
		rp, perr := parseCompletion(resp)
		call.Usage = usageOf(rp, p, format, schemaJSON)
		used = call.Usage.Total()
		if perr != nil {
			return "", perr
		}
		return rp.text, nil
	}
}

// usageOf is the server's count when it sent one, otherwise an estimate from the bytes.
func usageOf(rp reply, p *prompt, format string, schemaJSON []byte) runtime.Tokens {
	if rp.hasUsage {
		return runtime.Tokens{PromptTokens: rp.prompt, CompletionTokens: rp.complete}
	}
	return runtime.Tokens{PromptTokens: estimatePrompt(p, format, schemaJSON),
		CompletionTokens: runtime.EstimateTokens(rp.producedBytes), Estimated: true}
}

// level is the response format level to start at for an endpoint and model.
func (r *Runtime) level(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.levels[key]
}

// lower remembers that an endpoint and model need at least the given level, and says so once.
func (r *Runtime) lower(key, model string, level int) {
	r.mu.Lock()
	changed := r.levels[key] < level
	if changed {
		r.levels[key] = level
	}
	r.mu.Unlock()
	if changed {
		r.opts.Logger.Warn().Str("runtime", Name).Str("model", model).Str("response_format", formats[level]).
			Str("refused", formats[level-1]).Msg("model endpoint refused a response format; using the next level for this endpoint and model")
	}
}

// Formats reports the response format level in use for each model that needed a fallback.
func (r *Runtime) Formats() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for k, l := range r.levels {
		_, model, _ := strings.Cut(k, "\x00")
		out[model] = formats[l]
	}
	return out
}

// nonce returns 32 random hex characters that do not occur in the untrusted data, so the data
// cannot contain the closing fence.
func (r *Runtime) nonce(req *runtime.Request) (string, error) {
	for i := 0; i < 4; i++ {
		var b [16]byte
		if _, err := io.ReadFull(r.opts.Random, b[:]); err != nil {
			return "", fmt.Errorf("fence nonce: %w", err)
		}
		n := hex.EncodeToString(b[:])
		if !bytes.Contains(req.Diff, []byte(n)) && !strings.Contains(req.Subject.Title, n) && !strings.Contains(req.Subject.Body, n) &&
			!changedContains(req.Changed, n) {
			return n, nil
		}
	}
	return "", errors.New("fence nonce: could not find a nonce absent from the data")
}

func changedContains(cs []runtime.Changed, n string) bool {
	for _, c := range cs {
		if strings.Contains(c.Path, n) {
			return true
		}
	}
	return false
}
