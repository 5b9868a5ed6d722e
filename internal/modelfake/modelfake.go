// Package modelfake is a strict local fake of an OpenAI-compatible chat completions endpoint for
// tests (never linked into the binary). It answers POST /v1/chat/completions with a bearer
// token, a JSON body naming a model and a system and a user message, like the servers lensgate
// talks to; anything else gets the status such a server gives (401, 404, 405, 400). What it
// answers is decided by the test, from the request: helpers read the lenses asked, the diff in
// the fenced user message, and write review and judge answers in the shapes lensgate asks for.
package modelfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Request is one chat completion request, as the fake read it.
type Request struct {
	Model  string
	System string
	User   string
	// SchemaName and Schema are the structured-output schema asked for ("" and nil when none).
	SchemaName string
	Schema     json.RawMessage
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
}

// Server is the fake endpoint. URL is the API base to configure (…/v1).
type Server struct {
	URL   string
	Token string

	srv    *httptest.Server
	answer func(Request) Reply

	mu       sync.Mutex
	requests []Request
}

// New starts a fake endpoint that accepts token and answers each request with answer. Close it
// when done.
func New(token string, answer func(Request) Reply) *Server {
	s := &Server{Token: token, answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the chat completion requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

type chatBody struct {
	Model    *string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		apiError(w, http.StatusNotFound, "not_found", "unknown path "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		apiError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		apiError(w, http.StatusUnauthorized, "invalid_api_key", "invalid API key")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "unreadable body")
		return
	}
	var body chatBody
	if err := json.Unmarshal(raw, &body); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON: "+err.Error())
		return
	}
	if body.Model == nil || *body.Model == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "model is required")
		return
	}
	if len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[1].Role != "user" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "expected a system and a user message")
		return
	}
	req := Request{Model: *body.Model, System: body.Messages[0].Content, User: body.Messages[1].Content}
	if rf := body.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		req.SchemaName, req.Schema = rf.JSONSchema.Name, rf.JSONSchema.Schema
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	rep := s.answer(req)
	usage := map[string]any{"prompt_tokens": rep.PromptTokens, "completion_tokens": rep.CompletionTokens,
		"total_tokens": rep.PromptTokens + rep.CompletionTokens}
	switch {
	case rep.CachedTokens != nil:
		usage["prompt_tokens_details"] = map[string]any{"cached_tokens": *rep.CachedTokens, "audio_tokens": 0}
	case rep.NullDetails:
		usage["prompt_tokens_details"] = nil
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": rep.Content}}},
		"usage": usage,
	})
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": code, "code": code}})
}

// Lenses are the lens names a review request asks about, from its schema.
func (r Request) Lenses() []string {
	var s struct {
		Properties struct {
			Lenses struct {
				Items struct {
					Properties struct {
						Lens struct {
							Enum []string `json:"enum"`
						} `json:"lens"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"lenses"`
		} `json:"properties"`
	}
	if json.Unmarshal(r.Schema, &s) != nil {
		return nil
	}
	return s.Properties.Lenses.Items.Properties.Lens.Enum
}

// IsJudge reports whether the request is a judge call.
func (r Request) IsJudge() bool { return r.SchemaName == "lensgate_judge" }

// Diff is the diff a review request carries: the part of the fenced user message after its
// "## Diff" heading, up to the next heading (the code around the changes) or the fence.
func (r Request) Diff() string {
	_, rest, ok := strings.Cut(r.User, "\n## Diff\n")
	if !ok {
		return ""
	}
	if i := strings.LastIndex(rest, "\nLENSGATE_UNTRUSTED_DATA_"); i >= 0 {
		rest = rest[:i+1]
	}
	if i := strings.Index(rest, "\n## "); i >= 0 { // no diff line starts with '#'
		rest = rest[:i+1]
	}
	return rest
}

// Code is the code around the changes a review request carries ("" when none).
func (r Request) Code() string {
	_, rest, ok := strings.Cut(r.User, "\n## Code around the changes")
	if !ok {
		return ""
	}
	if i := strings.LastIndex(rest, "\nLENSGATE_UNTRUSTED_DATA_"); i >= 0 {
		rest = rest[:i+1]
	}
	return rest
}

// Finding is one finding of a review answer.
type Finding struct {
	Path     string
	Line     int
	Severity string // note, warn or block
	Title    string
	Message  string
}

// ReviewAnswer is an asdd/review/v0.1 answer giving every lens its findings; a lens with a
// block finding asks for changes, one with other findings has concerns, one without is ok.
func ReviewAnswer(lenses []string, findings map[string][]Finding) string {
	type jf struct {
		Path       string `json:"path"`
		Severity   string `json:"severity"`
		Title      string `json:"title"`
		Message    string `json:"message"`
		Suggestion any    `json:"suggestion"`
	}
	type jl struct {
		Lens     string `json:"lens"`
		Findings []jf   `json:"findings"`
		Summary  string `json:"summary"`
		Verdict  string `json:"verdict"`
	}
	out := struct {
		Schema         string `json:"schema"`
		Lenses         []jl   `json:"lenses"`
		Summary        string `json:"summary"`
		Recommendation string `json:"recommendation"`
	}{Schema: "asdd/review/v0.1", Summary: "Reviewed.", Recommendation: "comment"}
	for _, name := range lenses {
		l := jl{Lens: name, Findings: []jf{}, Verdict: "ok"}
		for _, f := range findings[name] {
			where := f.Path
			if f.Line > 0 {
				where = fmt.Sprintf("%s:%d", f.Path, f.Line)
			}
			l.Findings = append(l.Findings, jf{Path: where, Severity: f.Severity, Title: f.Title, Message: f.Message})
			switch {
			case f.Severity == "block":
				l.Verdict = "request-changes"
			case l.Verdict == "ok":
				l.Verdict = "concerns"
			}
		}
		l.Summary = fmt.Sprintf("%d finding(s).", len(l.Findings))
		if l.Verdict == "request-changes" {
			out.Recommendation = "request-changes"
		}
		out.Lenses = append(out.Lenses, l)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// JudgeAnswer is a judge answer: same, or different.
func JudgeAnswer(same bool) string {
	verdict := "different"
	if same {
		verdict = "same"
	}
	return `{"schema":"lensgate/judge/v1","reason":"Compared.","verdict":"` + verdict + `"}`
}

// JudgeTexts splits a judge request into the known defect and the reported finding it compares.
func (r Request) JudgeTexts() (known, reported string) {
	_, rest, _ := strings.Cut(r.User, "## KNOWN defect\n")
	known, rest, _ = strings.Cut(rest, "\n\n## REPORTED finding\n")
	if i := strings.LastIndex(rest, "\nLENSGATE_UNTRUSTED_DATA_"); i >= 0 {
		rest = rest[:i]
	}
	return known, rest
}
