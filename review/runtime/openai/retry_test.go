package openai

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// waits is a runtime's sleep that records the waits instead of taking them.
type waits struct {
	mu  sync.Mutex
	got []time.Duration
}

func (w *waits) wait(_ context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, d)
	return nil
}

// sequence serves the given answers in order: a status and a Retry-After value ("" for none).
func sequence(t *testing.T, answers ...[2]string) (*httptest.Server, *int) {
	n := 0
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if i >= len(answers) {
			_, _ = w.Write([]byte(`{"choices":[{"finish_reason":"stop","message":{"content":"{}"}}]}`))
			return
		}
		if ra := answers[i][1]; ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		switch answers[i][0] {
		case "429":
			w.WriteHeader(http.StatusTooManyRequests)
		case "503":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func newForRetry(t *testing.T, url string, retries int) (*Runtime, *waits) {
	t.Helper()
	r, err := New(Options{BaseURL: url, Token: "t", Backoff: time.Second, Retries: retries})
	if err != nil {
		t.Fatal(err)
	}
	w := &waits{}
	r.wait = w.wait
	return r, w
}

// TestRetryAfterOn429And503: the wait a 429 or a 503 asks for (seconds, or an HTTP date) is
// taken, with up to half the backoff of jitter on top.
func TestRetryAfterOn429And503(t *testing.T) {
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	srv, n := sequence(t, [2]string{"429", "7"}, [2]string{"503", date})
	r, w := newForRetry(t, srv.URL, 2)
	if _, attempts, err := r.post(context.Background(), []byte(`{}`)); err != nil || attempts != 3 || *n != 3 {
		t.Fatalf("attempts %d, requests %d, err %v", attempts, *n, err)
	}
	if len(w.got) != 2 {
		t.Fatalf("waits %v", w.got)
	}
	if w.got[0] < 7*time.Second || w.got[0] > 7*time.Second+500*time.Millisecond {
		t.Errorf("after 429 Retry-After: 7 waited %v", w.got[0])
	}
	// The date has a resolution of one second.
	if w.got[1] < 28*time.Second || w.got[1] > 31*time.Second {
		t.Errorf("after 503 Retry-After: %s waited %v", date, w.got[1])
	}
}

// TestBackoffHasJitter: without Retry-After the waits grow from the backoff, each within half
// of it either way, and they are not all alike.
func TestBackoffHasJitter(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 5 {
		srv, _ := sequence(t, [2]string{"500", ""}, [2]string{"500", ""})
		r, w := newForRetry(t, srv.URL, 2)
		if _, _, err := r.post(context.Background(), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if len(w.got) != 2 || w.got[0] < 500*time.Millisecond || w.got[0] > 1500*time.Millisecond ||
			w.got[1] < time.Second || w.got[1] > 3*time.Second {
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
	srv, n := sequence(t, [2]string{"429", "120"})
	r, w := newForRetry(t, srv.URL, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, attempts, err := r.post(ctx, []byte(`{}`))
	var he *httpError
	if err == nil || !errors.As(err, &he) || he.status != http.StatusTooManyRequests || !strings.Contains(err.Error(), "after the call's deadline") {
		t.Fatalf("err %v", err)
	}
	if attempts != 1 || *n != 1 || len(w.got) != 0 {
		t.Fatalf("attempts %d, requests %d, waits %v", attempts, *n, w.got)
	}
}

// TestRetryAfterReading: seconds, an HTTP date, and what is not a wait.
func TestRetryAfterReading(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"3": 3 * time.Second, " 10 ": 10 * time.Second, "0": 0, "-4": 0, "soon": 0, "": 0, "999999999": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second, now.Add(-time.Minute).Format(http.TimeFormat): 0,
	} {
		if got := retryAfter(in, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", in, got, want)
		}
	}
}

// TestTimeoutIsNotRetried: the deadline is the whole call's, so an attempt that ran out of it
// is the last.
func TestTimeoutIsNotRetried(t *testing.T) {
	if retryable(errTimedOut) || retryable(&httpError{status: 500, body: []byte(`{"error":"invalid JSON schema in format"}`)}) {
		t.Fatal("a timeout or a 500 refusing the schema would be repeated")
	}
	if !retryable(&httpError{status: 500}) || !retryable(&httpError{status: 429}) {
		t.Fatal("a plain 500 or a 429 would not be repeated")
	}
}
