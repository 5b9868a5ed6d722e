package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lensgate/lensgate/internal/retry"
	"github.com/lensgate/lensgate/review/runtime"
)

// Response format levels, from the strictest. An endpoint that refuses one is asked with the
// next, and the level that worked is remembered for the endpoint and model.
const (
	FormatJSONSchema = "json_schema"
	FormatJSONObject = "json_object"
	FormatNone       = "none"
)

var formats = []string{FormatJSONSchema, FormatJSONObject, FormatNone}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type responseFormat struct {
	Type       string        `json:"type"`
	JSONSchema *schemaFormat `json:"json_schema,omitempty"`
}

type schemaFormat struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
}

type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []chatMessage   `json:"messages"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	Seed           *int            `json:"seed,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

// sampling is what a request says about sampling; nil fields are not sent.
type sampling struct {
	temperature *float64
	seed        *int
}

// prompt is one call's messages and the schema its answer must match.
type prompt struct {
	system, user string
	// shape describes the answer in words; it is sent only when the schema is not, since a
	// strict schema already says it.
	shape      string
	schema     *schema
	schemaName string
}

// systemText is the system message at a response format level.
func (p *prompt) systemText(level string) string {
	if level == FormatJSONSchema {
		return p.system
	}
	return p.system + p.shape
}

// body encodes the request at a response format level.
func (r *Runtime) body(model string, p *prompt, level string, schemaJSON json.RawMessage, smp sampling) ([]byte, error) {
	cr := chatRequest{
		Model:       model,
		Messages:    []chatMessage{{Role: "system", Content: p.systemText(level)}, {Role: "user", Content: p.user}},
		MaxTokens:   r.opts.MaxTokens,
		Temperature: smp.temperature, Seed: smp.seed,
	}
	switch level {
	case FormatJSONSchema:
		cr.ResponseFormat = &responseFormat{Type: FormatJSONSchema, JSONSchema: &schemaFormat{Name: p.schemaName, Strict: true, Schema: schemaJSON}}
	case FormatJSONObject:
		cr.ResponseFormat = &responseFormat{Type: FormatJSONObject}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cr); err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	return buf.Bytes(), nil
}

// estimatePrompt is the prompt tokens of a request as lensgate counts them when the server does
// not: the messages, the schema when it is sent, and a few tokens of framing per message.
func estimatePrompt(p *prompt, level string, schemaJSON []byte) int {
	n := len(p.systemText(level)) + len(p.user)
	if level == FormatJSONSchema {
		n += len(schemaJSON)
	}
	return runtime.EstimateTokens(n) + 8
}

// httpError is an HTTP status other than 200 with the start of its body, kept only to decide
// on a fallback and to name a cause; the body is never shown.
type httpError struct {
	status int
	body   []byte
	// header is the answer's header (its Retry-After counts).
	header http.Header
}

func (e *httpError) Error() string { return fmt.Sprintf("model endpoint answered HTTP %d", e.status) }

// names reports whether the error body contains any of words (case-insensitive).
func (e *httpError) names(words ...string) bool {
	b := strings.ToLower(string(e.body))
	for _, w := range words {
		if strings.Contains(b, w) {
			return true
		}
	}
	return false
}

// refusesFormat reports whether the endpoint does not support the response format level that
// was asked: a 400 or 422 naming it, or a 500 naming the schema or the grammar made from it
// (a server whose schema-to-grammar conversion failed), which repeating would not change.
func (e *httpError) refusesFormat() bool {
	switch e.status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return e.names("response_format", "json_schema", "json_object", "structured output", "responseformat")
	case http.StatusInternalServerError:
		return e.names("response_format", "json_schema", "json schema", "grammar", "invalid schema")
	}
	return false
}

// refusesParam reports whether a 400 or 422 names a sampling parameter as not supported
// (OpenAI's "Unsupported parameter: 'seed'", LiteLLM's "does not support parameters: ['seed']",
// a validator's "Extra inputs are not permitted" at "seed"): the parameter must be named and
// refused, so that an error about something else that echoes the request does not drop it.
func (e *httpError) refusesParam(name string) bool {
	if e.status != http.StatusBadRequest && e.status != http.StatusUnprocessableEntity {
		return false
	}
	return e.names(`'`+name+`'`, `"`+name+`"`, "`"+name+"`", "param: "+name) &&
		e.names("unsupported", "not supported", "does not support", "not permitted", "unrecognized", "unknown parameter", "not allowed")
}

// modelNotFound reports a 404 that says the model does not exist (Ollama, vLLM and OpenAI
// answer "model 'x' not found" or "The model `x` does not exist").
func (e *httpError) modelNotFound() bool {
	return e.status == http.StatusNotFound && e.names("model") && e.names("not found", "does not exist", "model_not_found")
}

// contextExceeded reports a 400 that says the prompt does not fit the model's context (vLLM's
// "maximum context length", llama.cpp's exceed_context_size_error, OpenAI's
// context_length_exceeded).
func (e *httpError) contextExceeded() bool {
	return (e.status == http.StatusBadRequest || e.status == http.StatusRequestEntityTooLarge) &&
		e.names("context length", "context_length", "context size", "context window", "exceed_context_size")
}

var (
	errTooLarge = errors.New("model answer exceeds the response size limit")
	errTimedOut = errors.New("model call timed out")
)

// post sends one request, repeating it after a 429, a 5xx or a network error while the call's
// deadline (ctx) allows, and returns the body of the 200 answer. attempts counts every request
// sent. The retry policy is lensgate's one policy for outbound calls: waits grow exponentially
// with jitter, and a 429 or 503 that says Retry-After is waited out as it asks; when that wait
// would end past the deadline the call ends now instead of waiting for a deadline it cannot meet.
func (r *Runtime) post(ctx context.Context, body []byte) (resp []byte, attempts int, err error) {
	pol := retry.Policy{Attempts: r.opts.Retries + 1, Initial: r.opts.Backoff, MaxWait: maxRetryWait}
	tooLate := time.Duration(0)
	judge := func(err error) retry.Verdict {
		v := classify(err)
		if dl, ok := ctx.Deadline(); ok && v.After > 0 && time.Until(dl) < v.After {
			tooLate = v.After
			return retry.Final()
		}
		return v
	}
	var last error
	err = retry.Do(ctx, pol, judge, func(ctx context.Context, attempt int) error {
		attempts = attempt
		resp, last = r.once(ctx, body)
		return last
	}, retry.WithNotify(func(_ error, _ int, wait time.Duration) { r.waited(wait) }))
	switch {
	case err == nil:
		return resp, attempts, nil
	case tooLate > 0:
		return nil, attempts, fmt.Errorf("%w; the server asked to retry after %s, past the call's deadline", last, tooLate.Round(time.Second))
	case errors.Is(last, errTimedOut):
		return nil, attempts, last
	case errors.Is(err, context.DeadlineExceeded):
		// The deadline passed while waiting to repeat a failed attempt.
		return nil, attempts, fmt.Errorf("%w while waiting to repeat a failed attempt (%d so far, the last: %v)", errTimedOut, attempts, last)
	}
	return nil, attempts, err
}

// maxRetryWait is the longest wait between attempts, a server's Retry-After included; a
// server that asks for longer is reported as busy at once.
const maxRetryWait = 2 * time.Minute

// classify judges a failed attempt by lensgate's retry policy: rate limits, server errors and
// network errors are worth repeating (after the server's Retry-After when it gives one). A
// timeout is never repeated: the deadline is the whole call's, so no time is left for a
// repeat, and a server that does not stop generating when its client leaves would be handed
// the same prompt twice. Other HTTP errors, a 500 that refuses the schema, and oversized
// answers are final.
func classify(err error) retry.Verdict {
	var he *httpError
	switch {
	case errors.Is(err, errTooLarge) || errors.Is(err, errTimedOut):
		return retry.Final()
	case errors.As(err, &he):
		if he.refusesFormat() {
			return retry.Final()
		}
		return retry.HTTPStatus(he.status, he.header)
	}
	return retry.Network(err)
}

// once sends one request. ctx carries the call's deadline, which bounds every attempt
// together.
func (r *Runtime) once(ctx context.Context, body []byte) ([]byte, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, r.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("model request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("Authorization", "Bearer "+r.opts.Token)
	hresp, err := r.hc.Do(hreq)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, errTooLarge
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, errTimedOut
		}
		return nil, fmt.Errorf("model call failed: %w", redactURL(err))
	}
	defer hresp.Body.Close()
	if hresp.ContentLength > r.opts.MaxResponseBytes {
		return nil, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(hresp.Body, r.opts.MaxResponseBytes+1))
	if errors.Is(err, errTooLarge) {
		return nil, errTooLarge
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, errTimedOut
		}
		return nil, fmt.Errorf("model call failed while reading the answer: %w", err)
	}
	if int64(len(data)) > r.opts.MaxResponseBytes {
		return nil, errTooLarge
	}
	if hresp.StatusCode != http.StatusOK {
		return nil, &httpError{status: hresp.StatusCode, body: data, header: hresp.Header}
	}
	return data, nil
}

// redactURL drops the URL from a transport error: it is the operator's endpoint and may carry
// a key in its query.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

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
