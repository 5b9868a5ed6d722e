package openai_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// modelDelay is how long the fake model takes to answer each call.
const modelDelay = 100 * time.Millisecond

var lensLine = regexp.MustCompile(`(?m)^LENS ([a-z-]+):$`)

// slowModel answers every lens it is asked "ok" after modelDelay.
func slowModel(tb testing.TB) *modelfake.Server {
	return newModel(tb, func(req modelfake.Request) modelfake.Reply {
		var ls []string
		for _, m := range lensLine.FindAllStringSubmatch(req.System, -1) {
			ls = append(ls, m[1]+"=ok")
		}
		rep := reply(reviewJSON("ok", ls...))
		rep.Delay = modelDelay
		return rep
	})
}

// eightPartChange is a change that review.max_diff_lines 30 cuts into eight parts.
func eightPartChange() []byte {
	var b strings.Builder
	for i := range 8 {
		name := fmt.Sprintf("src/pkg%d/file.go", i)
		fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,20 @@\n", name, name, name)
		for j := range 20 {
			fmt.Fprintf(&b, "+var v%d = %d\n", j, j)
		}
	}
	return []byte(b.String())
}

// BenchmarkConcurrentCalls: a model review of a change in 8 parts by 2 runtime groups (a lens
// of the whole change and a lens of src/**), 16 calls to a model that answers each after
// modelDelay, with runtimes.max_concurrent_calls 1, 4 (the default) and 16. wall/delay is the
// review's wall time over one call's delay: 16 when the calls go one after another.
func BenchmarkConcurrentCalls(b *testing.B) {
	srv := slowModel(b)
	for _, n := range []int{1, 4, 16} {
		name := fmt.Sprintf("%d-at-once", n)
		if n == 1 {
			name = "one-at-a-time"
		}
		b.Run(name, func(b *testing.B) {
			rt, err := openai.New(openai.Options{BaseURL: srv.URL, Token: srv.Token, Backoff: time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			p := review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt), Logger: zerolog.Nop(), MaxConcurrentCalls: n})
			cfg := repoConfig("correctness", "api")
			cfg.Policy.Lenses[1].Paths = []string{"src/**"}
			cfg.Review.MaxDiffLines = 30
			subj := benchSubject(eightPartChange())
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				d, err := p.Review(context.Background(), subj, cfg)
				if err != nil {
					b.Fatal(err)
				}
				if len(d.Tokens.Calls) != 16 || d.Coverage.Chunks != 8 || d.Gate.State != review.OutcomePassed {
					b.Fatalf("%d calls, %d chunks, gate %s: %+v", len(d.Tokens.Calls), d.Coverage.Chunks, d.Gate.State, d.Lenses)
				}
			}
			perReview := time.Since(start) / time.Duration(b.N)
			b.ReportMetric(float64(perReview)/float64(modelDelay), "wall/delay")
		})
	}
}

// The main and the independent pass of a request are in flight at once, and never more of them
// than runtimes.max_concurrent_calls allows; the lenses come back the same either way.
func TestPassesRunAtOnceWithinTheBound(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("max_concurrent_calls=%d", n), func(t *testing.T) {
			var mu sync.Mutex
			inFlight, peak := 0, 0
			both := make(chan struct{})
			srv := newModel(t, func(req modelfake.Request) modelfake.Reply {
				mu.Lock()
				inFlight++
				peak = max(peak, inFlight)
				if inFlight == 2 {
					close(both)
				}
				mu.Unlock()
				if n == 2 {
					// Held until the other pass arrives too (a guard, not a measure).
					select {
					case <-both:
					case <-time.After(20 * time.Second):
						t.Error("the two passes were never in flight at once")
					}
				}
				var ls []string
				for _, m := range lensLine.FindAllStringSubmatch(req.System, -1) {
					ls = append(ls, m[1]+"=request-changes")
				}
				mu.Lock()
				inFlight--
				mu.Unlock()
				return reply(reviewJSON("found it", ls...))
			})
			rt, err := openai.New(openai.Options{BaseURL: srv.URL, Token: srv.Token, Backoff: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			p := review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt), Logger: zerolog.Nop(), MaxConcurrentCalls: n})
			d, err := p.Review(context.Background(), subject(), repoConfig("correctness", "quality"))
			if err != nil {
				t.Fatal(err)
			}
			if peak != n {
				t.Errorf("%d calls in flight at most, want %d", peak, n)
			}
			if len(d.Tokens.Calls) != 2 || d.Tokens.Calls[0].Independent || !d.Tokens.Calls[1].Independent {
				t.Errorf("calls %+v, want the main pass, then the independent one", d.Tokens.Calls)
			}
			for _, name := range []string{"correctness", "quality"} {
				if l := lens(d, name); l.Outcome != review.OutcomeFailed {
					t.Errorf("%s: %+v", name, l)
				}
			}
		})
	}
}
