package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensgate/lensgate/internal/modelfake"
)

// waits records the waits between attempts, as the runtime announces them.
type waits struct {
	mu  sync.Mutex
	got []time.Duration
}

func (w *waits) add(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, d)
}

// sequence serves the given answers in order, a status and a Retry-After value ("" for none),
// each with an empty body, then a chat completion without usage.
func sequence(t *testing.T, answers ...[2]string) *modelfake.Server {
	srv := modelfake.New("sk-retry", func(req modelfake.Request) modelfake.Reply {
		i := req.N - 1
		if i >= len(answers) {
			return modelfake.Reply{Content: "{}", NoUsage: true}
		}
		rep := modelfake.Reply{Status: http.StatusInternalServerError, Header: http.Header{}}
		switch answers[i][0] {
		case "429":
			rep.Status = http.StatusTooManyRequests
		case "503":
			rep.Status = http.StatusServiceUnavailable
		}
		ra := answers[i][1]
		if ra == "in 2s" { // an HTTP date, two seconds after this answer
			ra = time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
		}
		if ra != "" {
			rep.Header.Set("Retry-After", ra)
		}
		return rep
	})
	t.Cleanup(srv.Close)
	return srv
}

// chatBody is a well-formed chat request for post.
var chatBody = []byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}`)

func newForRetry(t *testing.T, srv *modelfake.Server, backoff time.Duration) (*Runtime, *waits) {
	t.Helper()
	r, err := New(Options{BaseURL: srv.URL, Token: srv.Token, Backoff: backoff, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	w := &waits{}
	r.waited = w.add
	return r, w
}

// TestRetryAfterOn429And503: the wait a 429 or a 503 asks for, in seconds or as an HTTP date,
// is taken (with a little jitter above it), not the much shorter backoff.
func TestRetryAfterOn429And503(t *testing.T) {
	if testing.Short() {
		t.Skip("waits about three seconds")
	}
	srv := sequence(t, [2]string{"429", "1"}, [2]string{"503", "in 2s"})
	r, w := newForRetry(t, srv, time.Millisecond)
	if _, attempts, err := r.post(context.Background(), chatBody); err != nil || attempts != 3 || len(srv.Requests()) != 3 {
		t.Fatalf("attempts %d, requests %d, err %v", attempts, len(srv.Requests()), err)
	}
	if len(w.got) != 2 {
		t.Fatalf("waits %v", w.got)
	}
	if w.got[0] < time.Second || w.got[0] > 1100*time.Millisecond {
		t.Errorf("after 429 Retry-After: 1 the wait was %v", w.got[0])
	}
	// An HTTP date has a resolution of one second.
	if w.got[1] < 900*time.Millisecond || w.got[1] > 2200*time.Millisecond {
		t.Errorf("after 503 with a Retry-After date two seconds ahead the wait was %v", w.got[1])
	}
}

// TestBackoffHasJitter: without Retry-After the waits grow from the backoff, with jitter of
// half either way, and they are not all alike.
func TestBackoffHasJitter(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 5 {
		srv := sequence(t, [2]string{"500", ""}, [2]string{"500", ""})
		r, w := newForRetry(t, srv, 10*time.Millisecond)
		if _, _, err := r.post(context.Background(), chatBody); err != nil {
			t.Fatal(err)
		}
		if len(w.got) != 2 || w.got[0] < 5*time.Millisecond || w.got[0] > 15*time.Millisecond ||
			w.got[1] < 5*time.Millisecond || w.got[1] > 30*time.Millisecond {
			t.Fatalf("waits %v", w.got)
		}
		seen[w.got[0]] = true
	}
	if len(seen) < 2 {
		t.Fatalf("five first waits were all %v", seen)
	}
}

// TestRetryAfterPastTheDeadline: a Retry-After that would end after the call's deadline ends
// the call at once, saying so, rather than waiting for a deadline it cannot meet.
func TestRetryAfterPastTheDeadline(t *testing.T) {
	srv := sequence(t, [2]string{"429", "90"})
	r, w := newForRetry(t, srv, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, attempts, err := r.post(ctx, chatBody)
	var he *httpError
	if err == nil || !errors.As(err, &he) || he.status != http.StatusTooManyRequests || !strings.Contains(err.Error(), "retry after 1m30s, past the call's deadline") {
		t.Fatalf("err %v", err)
	}
	if n := len(srv.Requests()); attempts != 1 || n != 1 || len(w.got) != 0 || ctx.Err() != nil {
		t.Fatalf("attempts %d, requests %d, waits %v, deadline passed %v", attempts, n, w.got, ctx.Err())
	}
}

// TestClassification: a timeout, a 500 refusing the schema and an oversized answer are final;
// a plain 500, a 429 and a 503 are worth repeating, the last two after their Retry-After.
func TestClassification(t *testing.T) {
	h := http.Header{"Retry-After": []string{"4"}}
	for _, err := range []error{errTimedOut, errTooLarge, &httpError{status: 500, body: []byte(`{"error":"invalid JSON schema in format"}`)},
		&httpError{status: 400}, &httpError{status: 404}} {
		if v := classify(err); v.Retry {
			t.Errorf("%v would be repeated", err)
		}
	}
	if v := classify(&httpError{status: 500}); !v.Retry || v.After != 0 {
		t.Errorf("a plain 500: %+v", v)
	}
	for _, st := range []int{429, 503} {
		if v := classify(&httpError{status: st, header: h}); !v.Retry || v.After != 4*time.Second {
			t.Errorf("%d with Retry-After 4: %+v", st, v)
		}
	}
}

// TestRefusedParameter: a 400 refusing a sampling parameter is told from one that only echoes
// it.
func TestRefusedParameter(t *testing.T) {
	for body, want := range map[string]bool{
		`{"error":{"message":"Unsupported parameter: 'seed' is not supported with this model.","param":"seed"}}`:                                true,
		`{"error":{"message":"Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported."}}`: true,
		`{"error":"litellm.UnsupportedParamsError: groq does not support parameters: ['seed']"}`:                                                true,
		`{"detail":[{"type":"extra_forbidden","loc":["body","seed"],"msg":"Extra inputs are not permitted","input":1}]}`:                        true,
		`{"error":{"message":"response_format is invalid","input":{"seed":1,"temperature":0}}}`:                                                 false,
	} {
		he := &httpError{status: 400, body: []byte(body)}
		if got := he.refusesParam("seed") || he.refusesParam("temperature"); got != want {
			t.Errorf("%s: refuses %v, want %v", body, got, want)
		}
	}
}
