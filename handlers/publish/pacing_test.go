package publish

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/handlers"
)

// stepClock is a clock that moves only when someone sleeps on it, so spacing is measured
// without waiting for it.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return nil
}

type stampedCall struct {
	method, path string
	at           time.Time
}

// contentWrite reports a request that creates or changes content GitHub may rate-limit as such.
func contentWrite(c stampedCall) bool {
	switch {
	case c.method == http.MethodGet:
		return false
	case strings.Contains(c.path, "/comments"), strings.HasSuffix(c.path, "/reviews"),
		strings.Contains(c.path, "/reactions"), strings.HasSuffix(c.path, "/labels"):
		return true
	}
	return false
}

// Content-creating writes of an installation are at least a second apart (GitHub's guidance
// against secondary rate limits), while the gate check is never held back by them: it goes
// out right after the body, before the spaced review and comment.
func TestContentWritesAreSpaced(t *testing.T) {
	clk := &stepClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	var mu sync.Mutex
	var calls []stampedCall
	record := githubapp.WithClientMiddleware(func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			calls = append(calls, stampedCall{r.Method, r.URL.Path, clk.Now()})
			mu.Unlock()
			return next.RoundTrip(r)
		})
	})
	st := newStackWith(t, lineReviewer{}, e2eDiff1, func(o *Options) {
		o.ContentSpacing, o.Now, o.Sleep = time.Second, clk.Now, clk.Sleep
	}, func(o *handlers.Options) { o.ClientOptions = append(o.ClientOptions, record) })
	st.lifecycle(e2eDiff2)

	mu.Lock()
	defer mu.Unlock()
	var last *stampedCall
	var begun *stampedCall // the gate check Begin created, until its run completes it
	content, gates := 0, 0
	for i, c := range calls {
		switch {
		case contentWrite(c):
			content++
			if last != nil && c.at.Sub(last.at) < time.Second {
				t.Errorf("%s %s %v after %s %s", c.method, c.path, c.at.Sub(last.at), last.method, last.path)
			}
			last = &calls[i]
		case c.method == http.MethodPost && strings.HasSuffix(c.path, "/check-runs"):
			begun = &calls[i]
		case c.method == http.MethodPatch && strings.Contains(c.path, "/check-runs/") && begun != nil:
			// The run's first check update completes the gate: no spaced write held it back.
			gates++
			if !c.at.Equal(begun.at) {
				t.Errorf("gate check completed %v after it was begun", c.at.Sub(begun.at))
			}
			begun = nil
		}
	}
	if gates < 3 {
		t.Fatalf("%d gate completions seen, want one per run", gates)
	}
	if content < 3 {
		t.Fatalf("only %d content writes in the lifecycle; nothing to space", content)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
