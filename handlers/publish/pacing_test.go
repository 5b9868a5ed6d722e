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

// Each installation has its own write slot: writes of one are spaced against each other only,
// never against another installation's.
func TestPacerSpacesEachInstallationAlone(t *testing.T) {
	tests := []struct {
		name   string
		writes []int64         // installation of each write, in order, all at the same instant
		want   []time.Duration // the wait each write is given
	}{
		{"one installation", []int64{1, 1, 1}, []time.Duration{0, time.Second, 2 * time.Second}},
		{"two installations interleaved", []int64{1, 2, 1, 2}, []time.Duration{0, 0, time.Second, time.Second}},
		{"a burst of one, then another", []int64{1, 1, 1, 1, 2}, []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			var got []time.Duration
			p := newPacer(time.Second, func() time.Time { return now }, func(_ context.Context, d time.Duration) error {
				got = append(got, d) // the clock stands still: every write is reserved at the same instant
				return nil
			})
			for i, inst := range tt.writes {
				n := len(got)
				if err := p.wait(context.Background(), inst); err != nil {
					t.Fatal(err)
				}
				var waited time.Duration
				if len(got) > n {
					waited = got[n]
				}
				if waited != tt.want[i] {
					t.Errorf("write %d (installation %d) waited %v, want %v", i, inst, waited, tt.want[i])
				}
			}
		})
	}
}

// A write waiting for a slow installation's slot holds neither the pacer nor another
// installation: installation 2 gets its slot at once while installation 1's write still waits.
func TestPacerWaitDoesNotHoldOtherInstallations(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	release := make(chan struct{})
	waiting := make(chan time.Duration, 1)
	p := newPacer(time.Second, func() time.Time { return now }, func(ctx context.Context, d time.Duration) error {
		waiting <- d
		select { // stands for the real wait; released by the test, never by time
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	ctx := context.Background()
	if err := p.wait(ctx, 1); err != nil { // takes installation 1's slot now
		t.Fatal(err)
	}
	slow := make(chan error, 1)
	go func() { slow <- p.wait(ctx, 1) }() // must wait a second for installation 1's next slot
	if d := <-waiting; d != time.Second {
		t.Fatalf("installation 1's second write waits %v, want 1s", d)
	}
	// Installation 1's write is now asleep in the pacer; installation 2's write goes at once.
	if err := p.wait(ctx, 2); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-waiting:
		t.Fatalf("installation 2's write was made to wait %v behind installation 1", d)
	default:
	}
	select {
	case err := <-slow:
		t.Fatalf("installation 1's write returned before its slot: %v", err)
	default:
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}

// A write whose job ends while it waits for the slot gives up with the job's error.
func TestPacerWaitEndsWithContext(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := newPacer(time.Second, func() time.Time { return now }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := p.wait(ctx, 1); err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
