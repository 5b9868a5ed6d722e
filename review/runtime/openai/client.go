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
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
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
func (r *Runtime) body(model string, p *prompt, level string, schemaJSON json.RawMessage) ([]byte, error) {
	cr := chatRequest{
		Model:     model,
		Messages:  []chatMessage{{Role: "system", Content: p.systemText(level)}, {Role: "user", Content: p.user}},
		MaxTokens: r.opts.MaxTokens,
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
// on a fallback; it is never shown.
type httpError struct {
	status int
	body   []byte
}

func (e *httpError) Error() string { return fmt.Sprintf("model endpoint answered HTTP %d", e.status) }

// refusesFormat reports whether a 400 answer names the response format: the endpoint does not
// support the level that was asked.
func (e *httpError) refusesFormat() bool {
	if e.status != http.StatusBadRequest && e.status != http.StatusUnprocessableEntity {
		return false
	}
	b := strings.ToLower(string(e.body))
	for _, w := range []string{"response_format", "json_schema", "json_object", "structured output", "responseformat"} {
		if strings.Contains(b, w) {
			return true
		}
	}
	return false
}

var errTooLarge = errors.New("model answer exceeds the response size limit")

// post sends one request with bounded retries on 429, 5xx and network errors, and returns the
// body of the 200 answer. attempts counts every request sent.
func (r *Runtime) post(ctx context.Context, body []byte, timeout time.Duration) (resp []byte, attempts int, err error) {
	wait := r.opts.Backoff
	var lastErr error
	for attempt := 0; attempt <= r.opts.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, attempts, fmt.Errorf("%w (after: %v)", ctx.Err(), lastErr)
			case <-time.After(wait):
			}
			wait *= 2
		}
		attempts++
		resp, err := r.once(ctx, body, timeout)
		if err == nil {
			return resp, attempts, nil
		}
		lastErr = err
		if ctx.Err() != nil || !retryable(err) {
			return nil, attempts, err
		}
	}
	return nil, attempts, fmt.Errorf("gave up after %d attempts: %w", attempts, lastErr)
}

func (r *Runtime) once(ctx context.Context, body []byte, timeout time.Duration) ([]byte, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, r.endpoint, bytes.NewReader(body))
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
		if errors.Is(err, context.DeadlineExceeded) || actx.Err() != nil && ctx.Err() == nil {
			return nil, errors.New("model call timed out")
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
		if actx.Err() != nil && ctx.Err() == nil {
			return nil, errors.New("model call timed out")
		}
		return nil, fmt.Errorf("model call failed while reading the answer: %w", err)
	}
	if int64(len(data)) > r.opts.MaxResponseBytes {
		return nil, errTooLarge
	}
	if hresp.StatusCode != http.StatusOK {
		return nil, &httpError{status: hresp.StatusCode, body: data}
	}
	return data, nil
}

// retryable reports whether a failed attempt may pass when repeated: rate limits, server
// errors, network errors and the timeout of one attempt. Other HTTP errors and oversized
// answers are final.
func retryable(err error) bool {
	if errors.Is(err, errTooLarge) {
		return false
	}
	var he *httpError
	if errors.As(err, &he) {
		return he.status == http.StatusTooManyRequests || he.status >= 500
	}
	return true
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
