// Package modelfake is a strict local fake of an OpenAI-compatible chat completions endpoint for
// tests (never linked into the binary). It answers POST /v1/chat/completions with a bearer
// token, a JSON body naming a model and a system and a user message, like the servers lensgate
// talks to; anything else gets the status such a server gives (401, 404, 405, 400). What it
// answers is decided by the test, from the request: helpers read the lenses asked, the diff in
// the fenced user message, and write review and judge answers in the shapes lensgate asks for.
//
// Options make it imitate a given server (WithKind: OpenAI, the default, Ollama, vLLM,
// llama.cpp) with the habits the real one has: the models it serves, the context it runs them
// with and what it does with a longer prompt, parameters it refuses, schemas its grammar cannot
// take, the paths that tell the context. As OpenAI it refuses fields it does not know and a
// strict schema that OpenAI's structured outputs would not take. A Reply scripts one answer's
// quirks: an error status, an exact or malformed body, missing usage or finish reason, a delay,
// an answer held back until the test releases it.
package modelfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Request is one chat completion request, as the fake read it.
type Request struct {
	// N is the request's place among the chat requests the fake has read (1 for the first).
	N      int
	Model  string
	System string
	User   string
	// SchemaName and Schema are the structured-output schema asked for ("" and nil when none).
	SchemaName string
	Schema     json.RawMessage
	// Format is response_format.type ("" when none); Strict is json_schema.strict.
	Format string
	Strict bool
	// MaxTokens, Temperature and Seed are the parameters of that name (0 and nil when absent).
	MaxTokens   int
	Temperature *float64
	Seed        *int64
	// PromptTokens is the fake's own count of the prompt (three bytes a token, more than
	// lensgate's estimate, as tokenizers count code), after any cut. Truncated says the server
	// cut the prompt to its context (Ollama): the start of the system message is gone.
	PromptTokens int
	Truncated    bool
	// Body is the request body as sent.
	Body []byte
}

// Has reports whether the request body names a top-level parameter (such as "seed").
func (r Request) Has(param string) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(r.Body, &top) != nil {
		return false
	}
	_, ok := top[param]
	return ok
}

// Reply is what the fake answers: the message content and the token counts it reports.
type Reply struct {
	Content          string
	PromptTokens     int
	CompletionTokens int
	// CachedTokens, when set, is reported as usage.prompt_tokens_details.cached_tokens, as
	// servers with a prefix cache do; NullDetails sends prompt_tokens_details: null instead.
	// Neither sends no prompt_tokens_details, as most servers.
	CachedTokens *int
	NullDetails  bool
	// NoUsage leaves usage out (servers that do not count); NullFinish sends finish_reason:
	// null (Ollama's repeat guard).
	NoUsage    bool
	NullFinish bool
	// Status, when set, answers with that HTTP status and an error in the server's shape whose
	// message is Content (an empty body when Content is "").
	Status int
	// Header is added to the answer (Retry-After, for one).
	Header http.Header
	// Raw, when set, is written as the body as it is, with Status (200 when 0) and the
	// Content-Type of Header (JSON when it has none): a body no server should send, or an
	// exact one.
	Raw []byte
	// Hold, when set, delays the answer until it is closed, and Delay by that long (a slow
	// server); a client that gives up meanwhile gets nothing.
	Hold  <-chan struct{}
	Delay time.Duration
}

// Server is the fake endpoint. URL is the API base to configure (…/v1).
type Server struct {
	URL   string
	Token string

	srv    *httptest.Server
	answer func(Request) Reply
	quirks quirks
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	requests []Request
	probes   []string
	loaded   bool
}

// Option sets how the fake behaves beyond answering requests.
type Option func(*Server)

// New starts a fake endpoint that accepts token and answers each request with answer (called
// from concurrent requests; it may block to hold a request). Close it when done.
func New(token string, answer func(Request) Reply, opts ...Option) *Server {
	s := &Server{Token: token, answer: answer, closed: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	return s
}

// Root is the server's address without the API path (…, not …/v1).
func (s *Server) Root() string { return s.srv.URL }

// Close stops the server; answers still held are given up. Closing again does nothing.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closed)
		s.srv.Close()
	})
}

// Requests returns the well-formed chat completion requests read so far, those the server then
// refused for one of its habits included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Probes returns the requests other than chat completions ("GET /v1/models", …), in order.
func (s *Server) Probes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.probes...)
}

// maxBody is the largest request body the fake reads, as servers have a limit.
const maxBody = 8 << 20

type chatBody struct {
	Model    *string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens      int      `json:"max_tokens"`
	Temperature    *float64 `json:"temperature"`
	Seed           *int64   `json:"seed"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", "unreadable body")
		return
	}
	if len(raw) > maxBody {
		s.apiError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request body too large")
		return
	}
	if r.URL.Path != "/v1/chat/completions" {
		s.probe(w, r, raw)
		return
	}
	if r.Method != http.MethodPost {
		s.apiError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
		return
	}
	if !s.authorized(w, r) {
		return
	}
	req, ok := s.read(w, raw)
	if !ok || !s.accepts(w, &req) {
		return
	}
	s.write(w, r, req, s.answer(req))
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		s.apiError(w, http.StatusUnauthorized, "invalid_api_key", "invalid API key")
		return false
	}
	return true
}

// read checks the request's shape and records it.
func (s *Server) read(w http.ResponseWriter, raw []byte) (Request, bool) {
	var body chatBody
	if err := json.Unmarshal(raw, &body); err != nil {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON: "+err.Error())
		return Request{}, false
	}
	if body.Model == nil || *body.Model == "" {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", "model is required")
		return Request{}, false
	}
	if len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[1].Role != "user" {
		s.apiError(w, http.StatusBadRequest, "invalid_request_error", "expected a system and a user message")
		return Request{}, false
	}
	req := Request{Model: *body.Model, System: body.Messages[0].Content, User: body.Messages[1].Content,
		MaxTokens: body.MaxTokens, Temperature: body.Temperature, Seed: body.Seed, Body: raw}
	if rf := body.ResponseFormat; rf != nil {
		req.Format = rf.Type
		if rf.JSONSchema != nil {
			req.SchemaName, req.Schema, req.Strict = rf.JSONSchema.Name, rf.JSONSchema.Schema, rf.JSONSchema.Strict
		}
	}
	req.PromptTokens = (len(req.System)+len(req.User)+len(req.Schema))/3 + 8
	s.mu.Lock()
	s.requests = append(s.requests, req)
	req.N = len(s.requests)
	s.requests[req.N-1].N = req.N
	s.mu.Unlock()
	return req, true
}

// write sends the reply, once Hold and Delay let it.
func (s *Server) write(w http.ResponseWriter, r *http.Request, req Request, rep Reply) {
	if !s.wait(r, rep.Hold) {
		return
	}
	if rep.Delay > 0 {
		t := time.NewTimer(rep.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.closed:
			return
		}
	}
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	switch {
	case rep.Raw != nil:
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		if rep.Status != 0 {
			w.WriteHeader(rep.Status)
		}
		_, _ = w.Write(rep.Raw)
	case rep.Status != 0 && rep.Content == "":
		w.WriteHeader(rep.Status)
	case rep.Status != 0:
		s.apiError(w, rep.Status, "api_error", rep.Content)
	default:
		s.complete(w, req, rep)
	}
}

// wait waits until release is closed (at once when it is nil); false when the client gave up
// or the server closed first.
func (s *Server) wait(r *http.Request, release <-chan struct{}) bool {
	if release == nil {
		return true
	}
	select {
	case <-release:
		return true
	case <-r.Context().Done():
	case <-s.closed:
	}
	return false
}

// complete writes a chat completion in the documented shape of the imitated server: OpenAI's
// (with refusal, logprobs and system_fingerprint), Ollama's (fp_ollama), vLLM's (stop_reason,
// reasoning_content and tool_calls beside the content) or llama.cpp's (its build as the
// fingerprint).
func (s *Server) complete(w http.ResponseWriter, req Request, rep Reply) {
	message := map[string]any{"role": "assistant", "content": rep.Content}
	choice := map[string]any{"index": 0, "finish_reason": "stop", "message": message}
	if rep.NullFinish {
		choice["finish_reason"] = nil
	}
	answer := map[string]any{"id": fmt.Sprintf("chatcmpl-%d", req.N), "object": "chat.completion", "created": 1764892800,
		"model": req.Model, "choices": []any{choice}}
	switch s.quirks.kind {
	case OpenAI:
		message["refusal"], choice["logprobs"], answer["system_fingerprint"] = nil, nil, "fp_50cad350e4"
	case Ollama:
		answer["system_fingerprint"] = "fp_ollama"
	case VLLM:
		message["reasoning_content"], message["tool_calls"] = nil, []any{}
		choice["logprobs"], choice["stop_reason"] = nil, nil
	case LlamaCpp:
		answer["system_fingerprint"] = "b6100-a4ba4f5f"
	}
	if !rep.NoUsage {
		usage := map[string]any{"prompt_tokens": rep.PromptTokens, "completion_tokens": rep.CompletionTokens,
			"total_tokens": rep.PromptTokens + rep.CompletionTokens}
		switch {
		case rep.CachedTokens != nil:
			usage["prompt_tokens_details"] = map[string]any{"cached_tokens": *rep.CachedTokens, "audio_tokens": 0}
		case rep.NullDetails:
			usage["prompt_tokens_details"] = nil
		}
		answer["usage"] = usage
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}
