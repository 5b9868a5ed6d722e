package modelfake

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

const good = `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}`

// do sends one request to the fake and returns the status and the body.
func do(t *testing.T, s *Server, method, path, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.Root()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStrict: the fake answers only what an OpenAI-compatible server answers.
func TestStrict(t *testing.T) {
	s := New("sk-x", func(Request) Reply { return Reply{Content: "{}", PromptTokens: 1} })
	defer s.Close()
	for _, c := range []struct {
		method, path, auth, body string
		want                     int
	}{
		{"POST", "/v1/chat/completions", "Bearer sk-x", good, http.StatusOK},
		{"POST", "/v1/chat/completions", "Bearer wrong", good, http.StatusUnauthorized},
		{"GET", "/v1/chat/completions", "Bearer sk-x", "", http.StatusMethodNotAllowed},
		{"GET", "/v1/models", "Bearer sk-x", "", http.StatusOK},
		{"GET", "/v1/models", "Bearer wrong", "", http.StatusUnauthorized},
		{"POST", "/v1/models", "Bearer sk-x", "", http.StatusMethodNotAllowed},
		{"GET", "/v1/engines", "Bearer sk-x", "", http.StatusNotFound},
		{"GET", "/props", "Bearer sk-x", "", http.StatusNotFound},
		{"POST", "/v1/chat/completions", "Bearer sk-x", `{"messages":[]}`, http.StatusBadRequest},
		{"POST", "/v1/chat/completions", "Bearer sk-x", `{"model":"m","messages":[{"role":"user","content":"u"}]}`, http.StatusBadRequest},
		{"POST", "/v1/chat/completions", "Bearer sk-x", `not json`, http.StatusBadRequest},
		{"POST", "/v1/chat/completions", "Bearer sk-x", strings.Replace(good, `{`, `{"temprature":0,`, 1), http.StatusBadRequest},
		{"POST", "/v1/chat/completions", "Bearer sk-x", strings.Replace(good, `{`, `{"response_format":{"type":"json_schema","json_schema":{"schema":{}}},`, 1), http.StatusBadRequest},
		{"POST", "/v1/chat/completions", "Bearer sk-x", strings.Replace(good, `{`, `{"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,`+
			`"schema":{"type":"object","properties":{"a":{"type":"string"}},"required":[],"additionalProperties":false}}},`, 1), http.StatusBadRequest},
		{"POST", "/v1/chat/completions", "Bearer sk-x", strings.Replace(good, `{`, `{"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,`+
			`"schema":{"type":"object","properties":{"a":{"type":"object","properties":{}}},"required":["a"],"additionalProperties":false}}},`, 1), http.StatusBadRequest},
	} {
		if got, _ := do(t, s, c.method, c.path, c.auth, c.body); got != c.want {
			t.Errorf("%s %s %q: %d, want %d", c.method, c.path, c.auth, got, c.want)
		}
	}
	if n := len(s.Requests()); n != 5 { // the good one and the four OpenAI refuses for a field
		t.Errorf("%d requests read, want 5", n)
	}
}

// TestDocumentedShape: a completion carries the fields OpenAI documents, and a Reply's quirks
// change only what they name.
func TestDocumentedShape(t *testing.T) {
	replies := []Reply{{Content: "a", PromptTokens: 3, CompletionTokens: 2}, {Content: "b", NoUsage: true, NullFinish: true},
		{Status: 429, Content: "slow down", Header: http.Header{"Retry-After": {"1"}}}, {Raw: []byte("\x00 not json")}}
	s := New("sk-x", func(r Request) Reply { return replies[r.N-1] })
	defer s.Close()
	_, body := do(t, s, "POST", "/v1/chat/completions", "Bearer sk-x", good)
	var c struct {
		ID, Object, Model string
		Created           int64
		Choices           []struct {
			Index        int
			FinishReason *string `json:"finish_reason"`
			Message      struct{ Role, Content string }
		}
		Usage *struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
			Total      int `json:"total_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil || c.Object != "chat.completion" || c.ID == "" || c.Created == 0 ||
		c.Model != "m" || len(c.Choices) != 1 || *c.Choices[0].FinishReason != "stop" || c.Choices[0].Message.Role != "assistant" ||
		c.Choices[0].Message.Content != "a" || c.Usage == nil || c.Usage.Total != 5 {
		t.Fatalf("completion %s (%v)", body, err)
	}
	if _, body = do(t, s, "POST", "/v1/chat/completions", "Bearer sk-x", good); strings.Contains(body, `"usage"`) ||
		!strings.Contains(body, `"finish_reason":null`) {
		t.Fatalf("without usage and finish reason: %s", body)
	}
	if code, body := do(t, s, "POST", "/v1/chat/completions", "Bearer sk-x", good); code != 429 || !strings.Contains(body, `"message":"slow down"`) {
		t.Fatalf("scripted status: %d %s", code, body)
	}
	if code, body := do(t, s, "POST", "/v1/chat/completions", "Bearer sk-x", good); code != 200 || body != "\x00 not json" {
		t.Fatalf("raw body: %d %q", code, body)
	}
}

// TestServerHabits: each imitated server treats a prompt over its context, an unknown model and
// an unsupported parameter as the real one does.
func TestServerHabits(t *testing.T) {
	long := `{"model":"m","messages":[{"role":"system","content":"` + strings.Repeat("s", 600) + `"},{"role":"user","content":"u"}]}`
	var seen []Request
	answer := func(r Request) Reply {
		seen = append(seen, r)
		return Reply{Content: "{}", PromptTokens: r.PromptTokens}
	}
	for _, c := range []struct {
		kind     Kind
		status   int
		contains string
	}{
		{OpenAI, 400, "context_length_exceeded"},
		{VLLM, 400, `"object":"error"`},
		{LlamaCpp, 400, "exceed_context_size_error"},
		{Ollama, 200, `"prompt_tokens":100`},
	} {
		s := New("k", answer, WithKind(c.kind), WithModels("m"), WithContext(100), WithUnsupported("seed"))
		if code, body := do(t, s, "POST", "/v1/chat/completions", "Bearer k", long); code != c.status || !strings.Contains(body, c.contains) {
			t.Errorf("%s over the context: %d %s", c.kind, code, body)
		}
		if code, body := do(t, s, "POST", "/v1/chat/completions", "Bearer k", strings.Replace(good, `"m"`, `"x"`, 1)); code != 404 ||
			!strings.Contains(body, "x") {
			t.Errorf("%s unknown model: %d %s", c.kind, code, body)
		}
		if code, body := do(t, s, "POST", "/v1/chat/completions", "Bearer k", strings.Replace(good, `{`, `{"seed":1,`, 1)); code != 400 ||
			!strings.Contains(body, "'seed'") {
			t.Errorf("%s unsupported parameter: %d %s", c.kind, code, body)
		}
		if n := len(s.Requests()); n != 3 {
			t.Errorf("%s: %d requests recorded, want 3", c.kind, n)
		}
		s.Close()
	}
	if len(seen) != 1 || !seen[0].Truncated || seen[0].PromptTokens != 100 || strings.Count(seen[0].System, "s") >= 600 {
		t.Fatalf("Ollama's cut: %+v", seen)
	}
}

// TestContextProbes: the context is told where each server tells it.
func TestContextProbes(t *testing.T) {
	answer := func(r Request) Reply { return Reply{Content: "{}"} }
	for _, c := range []struct {
		kind        Kind
		method      string
		path, body  string
		wantInProbe string
	}{
		{VLLM, "GET", "/v1/models", "", `"max_model_len":4096`},
		{LlamaCpp, "GET", "/props", "", `"n_ctx":4096`},
		{Ollama, "POST", "/api/show", `{"model":"m"}`, `num_ctx                        4096`},
		{Ollama, "GET", "/api/ps", "", `"context_length":4096`},
	} {
		s := New("k", answer, WithKind(c.kind), WithModels("m"), WithContext(4096), WithNumCtxParameter())
		do(t, s, "POST", "/v1/chat/completions", "Bearer k", good) // loads the model
		if code, body := do(t, s, c.method, c.path, "Bearer k", c.body); code != 200 || !strings.Contains(body, c.wantInProbe) {
			t.Errorf("%s %s: %d %s", c.kind, c.path, code, body)
		}
		if got := s.Probes(); len(got) != 1 || got[0] != c.method+" "+c.path {
			t.Errorf("probes %v", got)
		}
		s.Close()
	}
}

// TestHold: an answer held back is sent once released.
func TestHold(t *testing.T) {
	release := make(chan struct{})
	s := New("k", func(Request) Reply { return Reply{Content: "late", Hold: release} })
	defer s.Close()
	done := make(chan string)
	go func() { _, body := do(t, s, "POST", "/v1/chat/completions", "Bearer k", good); done <- body }()
	for len(s.Requests()) == 0 { // until the request is read
		runtime.Gosched()
		select {
		case body := <-done:
			t.Fatalf("answered before the release: %s", body)
		default:
		}
	}
	close(release)
	if body := <-done; !strings.Contains(body, `"content":"late"`) {
		t.Fatalf("held answer %s", body)
	}
}

// TestDelayGivesUpWithTheClient: a client that stops waiting for a delayed answer gets none, and
// the server is not held by it.
func TestDelayGivesUpWithTheClient(t *testing.T) {
	s := New("k", func(Request) Reply { return Reply{Content: "late", Delay: time.Hour} })
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/chat/completions", strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer k")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("answered %d before the delay", resp.StatusCode)
	}
}
