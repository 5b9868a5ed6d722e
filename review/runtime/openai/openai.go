// Package openai reviews lenses with a model behind an OpenAI-compatible chat completions
// endpoint. The lens instructions are fixed text in the system message; the pull request is
// untrusted data in the user message, fenced by a random per-prompt nonce. Every review has a
// second, independent adversarial call that never sees the first call's conclusions: it judges
// the quality lenses, or, when the policy has none, re-judges every lens looking for reasons
// to refuse the change (ASDD §4.2: at least one anti-rubber-stamp pass per review).
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
	"time"

	goopenai "github.com/sashabaranov/go-openai"

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
	// (default 2).
	Retries int
	// Backoff is the first wait between attempts, doubled each time (default 1 s).
	Backoff time.Duration
	// MaxResponseBytes bounds an HTTP response body (default 1 MiB).
	MaxResponseBytes int64
	// MaxPromptBytes is the token budget of one prompt, in bytes (default 400,000, roughly
	// 100,000 tokens). A change that does not fit is not sent.
	MaxPromptBytes int
	// MaxTokens bounds the model's answer (default 4,096).
	MaxTokens int
	// Random is the nonce source (default crypto/rand).
	Random io.Reader
}

// Runtime is the OpenAI-compatible runtime.
type Runtime struct {
	opts   Options
	client *goopenai.Client
	host   string
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
	limited := *hc
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	limited.Transport = &recordTransport{next: &limitTransport{next: next, max: opts.MaxResponseBytes}}
	cfg := goopenai.DefaultConfig(opts.Token)
	cfg.BaseURL = base
	cfg.HTTPClient = &limited
	host := ""
	if u, err := url.Parse(base); err == nil {
		host = u.Host
	}
	return &Runtime{opts: opts, client: goopenai.NewClientWithConfig(cfg), host: host}, nil
}

// Identity implements runtime.Identified.
func (r *Runtime) Identity() runtime.Identity {
	return runtime.Identity{Kind: runtime.IdentityOpenAI, EndpointHost: r.host}
}

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return Name }

// IsQuality reports whether a lens is judged in the independent adversarial pass.
func IsQuality(l runtime.Lens) bool {
	for _, s := range []string{l.Name, l.Preset} {
		switch s {
		case "quality", "adversarial", "refute":
			return true
		}
	}
	return false
}

// Review implements runtime.Runtime: one call for the ordinary lenses, and a second,
// independent adversarial call for the quality lenses. Without a quality lens the adversarial
// call re-judges the ordinary lenses and the stricter answer wins for each of them, so a
// model that rubber-stamps in the first call is still contradicted.
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
	var main, quality []runtime.Lens
	for _, l := range req.Lenses {
		if IsQuality(l) {
			quality = append(quality, l)
		} else {
			main = append(main, l)
		}
	}
	adversarial := quality
	refuteMain := len(quality) == 0
	if refuteMain {
		adversarial = main
	}
	res := &runtime.Result{Model: model}
	byLens := map[string]int{}
	for _, pass := range []struct {
		lenses      []runtime.Lens
		adversarial bool
	}{{main, false}, {adversarial, true}} {
		if len(pass.lenses) == 0 {
			continue
		}
		rev, err := r.reviewPass(ctx, req, model, pass.lenses, pass.adversarial)
		if err != nil {
			kind := "review"
			if pass.adversarial {
				kind = "quality"
			}
			// One failed pass fails the whole request closed: the pipeline makes every lens
			// of it pending rather than publishing half a review.
			return nil, fmt.Errorf("%s pass: %w", kind, err)
		}
		wanted := map[string]bool{}
		for _, l := range pass.lenses {
			wanted[l.Name] = true
		}
		for _, rep := range rev.Reports() {
			// A pass may only speak for its own lenses: the main pass cannot answer for the
			// quality lens and the other way round.
			if !wanted[rep.Lens] {
				continue
			}
			if i, ok := byLens[rep.Lens]; ok {
				if pass.adversarial && refuteMain {
					res.Lenses[i] = skepticWins(res.Lenses[i], rep)
				}
				continue
			}
			byLens[rep.Lens] = len(res.Lenses)
			res.Lenses = append(res.Lenses, rep)
		}
	}
	return res, nil
}

// verdictRank orders verdicts from lenient to strict. A skipped lens ranks above ok: one
// pass declining to judge a lens must not let the other pass's ok through unchallenged.
var verdictRank = map[string]int{
	runtime.VerdictOK: 0, runtime.VerdictSkipped: 1, runtime.VerdictConcerns: 2, runtime.VerdictRequestChanges: 3,
}

// skepticWins merges the adversarial pass's report of a lens into the first pass's: the
// stricter verdict, the findings of both, and both summaries.
func skepticWins(first, adv runtime.LensReport) runtime.LensReport {
	out := first
	if verdictRank[adv.Verdict] > verdictRank[first.Verdict] {
		out.Verdict = adv.Verdict
		out.Cause = adv.Cause
	}
	out.Findings = append(append([]runtime.Finding(nil), first.Findings...), adv.Findings...)
	switch {
	case adv.Summary == "":
	case out.Summary == "":
		out.Summary = "Adversarial pass: " + adv.Summary
	default:
		out.Summary += " | Adversarial pass: " + adv.Summary
	}
	return out
}

func (r *Runtime) reviewPass(ctx context.Context, req *runtime.Request, model string, lenses []runtime.Lens, adversarial bool) (*asdd.Review, error) {
	nonce, err := r.nonce(req)
	if err != nil {
		return nil, err
	}
	system := systemPrompt(lenses, adversarial)
	user := userPrompt(req, nonce)
	if len(system)+len(user) > r.opts.MaxPromptBytes {
		return nil, fmt.Errorf("the change does not fit the prompt budget (%d bytes > %d); lower review.max_diff_lines",
			len(system)+len(user), r.opts.MaxPromptBytes)
	}
	text, err := r.complete(ctx, req, model, system, user)
	if err != nil {
		return nil, err
	}
	obj, err := ExtractJSON(text)
	if err != nil {
		return nil, err
	}
	return asdd.ParseReview(obj)
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
		if !bytes.Contains(req.Diff, []byte(n)) && !strings.Contains(req.Subject.Title, n) && !strings.Contains(req.Subject.Body, n) {
			return n, nil
		}
	}
	return "", errors.New("fence nonce: could not find a nonce absent from the data")
}

// complete sends one chat completion with bounded retries and returns the answer's text.
func (r *Runtime) complete(ctx context.Context, req *runtime.Request, model, system, user string) (string, error) {
	timeout := r.opts.Timeout
	if timeout <= 0 && req.Settings.TimeoutSeconds > 0 {
		timeout = time.Duration(req.Settings.TimeoutSeconds) * time.Second
	}
	if timeout <= 0 {
		timeout = 45 * time.Second
	}
	creq := goopenai.ChatCompletionRequest{
		Model: model,
		Messages: []goopenai.ChatCompletionMessage{
			{Role: goopenai.ChatMessageRoleSystem, Content: system},
			{Role: goopenai.ChatMessageRoleUser, Content: user},
		},
		MaxTokens:      r.opts.MaxTokens,
		ResponseFormat: &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject},
	}
	var lastErr error
	wait := r.opts.Backoff
	for attempt := 0; attempt <= r.opts.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return "", fmt.Errorf("%w (after: %v)", ctx.Err(), lastErr)
			case <-time.After(wait):
			}
			wait *= 2
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := r.client.CreateChatCompletion(actx, creq)
		cancel()
		if err == nil {
			if len(resp.Choices) == 0 {
				return "", errors.New("the model returned no choices")
			}
			return resp.Choices[0].Message.Content, nil
		}
		lastErr = describe(err)
		if ctx.Err() != nil || !retryable(err) {
			return "", lastErr
		}
	}
	return "", fmt.Errorf("gave up after %d attempts: %w", r.opts.Retries+1, lastErr)
}

// retryable reports whether a failed call may succeed if repeated: rate limits, server
// errors, timeouts of one attempt and network errors. Oversized answers and client errors are
// final.
func retryable(err error) bool {
	if errors.Is(err, errTooLarge) {
		return false
	}
	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode == http.StatusTooManyRequests || apiErr.HTTPStatusCode >= 500
	}
	var reqErr *goopenai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode == http.StatusTooManyRequests || reqErr.HTTPStatusCode >= 500
	}
	return true
}

// describe turns a client error into a short cause without echoing the response body.
func describe(err error) error {
	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) {
		return fmt.Errorf("model endpoint answered HTTP %d", apiErr.HTTPStatusCode)
	}
	var reqErr *goopenai.RequestError
	if errors.As(err, &reqErr) {
		return fmt.Errorf("model endpoint answered HTTP %d", reqErr.HTTPStatusCode)
	}
	if errors.Is(err, errTooLarge) {
		return errTooLarge
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("model call timed out")
	}
	return fmt.Errorf("model call failed: %w", err)
}

var errTooLarge = errors.New("model answer exceeds the response size limit")

// limitTransport fails a response whose body is larger than max.
type limitTransport struct {
	next http.RoundTripper
	max  int64
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, errTooLarge
	}
	resp.Body = &limitBody{rc: resp.Body, left: t.max}
	return resp, nil
}

type limitBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Probe one byte: exactly max bytes is fine, more is not.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitBody) Close() error { return b.rc.Close() }
