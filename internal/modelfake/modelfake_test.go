package modelfake

import (
	"net/http"
	"strings"
	"testing"
)

// TestStrict: the fake answers only what an OpenAI-compatible server answers.
func TestStrict(t *testing.T) {
	s := New("sk-x", func(Request) Reply { return Reply{Content: "{}", PromptTokens: 1} })
	defer s.Close()
	good := `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}`
	for _, c := range []struct {
		method, path, auth, body string
		want                     int
	}{
		{"POST", "/v1/chat/completions", "Bearer sk-x", good, http.StatusOK},
		{"POST", "/v1/chat/completions", "Bearer wrong", good, http.StatusUnauthorized},
		{"GET", "/v1/chat/completions", "Bearer sk-x", "", http.StatusMethodNotAllowed},
		{"GET", "/v1/models", "Bearer sk-x", "", http.StatusNotFound},
		{"POST", "/v1/chat/completions", "Bearer sk-x", `{"messages":[]}`, http.StatusBadRequest},
		{"POST", "/v1/chat/completions", "Bearer sk-x", `{"model":"m","messages":[{"role":"user","content":"u"}]}`, http.StatusBadRequest},
		{"POST", "/v1/chat/completions", "Bearer sk-x", `not json`, http.StatusBadRequest},
	} {
		req, err := http.NewRequest(c.method, strings.TrimSuffix(s.URL, "/v1")+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", c.auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s %q: %d, want %d", c.method, c.path, c.auth, resp.StatusCode, c.want)
		}
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests answered, want 1", n)
	}
}
