package publish

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/review"
)

// A running review's progress reaches its gate check at most MaxProgressWrites times, however
// often the review reports, and never before ProgressInterval has passed since the last write;
// every update is the in-progress check Begin created.
func TestProgressWritesAreBounded(t *testing.T) {
	report := func(tr interface{ Report(review.Progress) }, over int) {
		tr.Report(review.Progress{Lenses: []string{"a", "b", "c"}, Finished: []string{"a"}, Requests: 500, RequestsOver: over})
	}
	t.Run("at most MaxProgressWrites", func(t *testing.T) {
		e := newTestEnv(t, func(o *Options) { o.ProgressInterval, o.MaxProgressWrites = time.Nanosecond, 3 })
		ctx := zerolog.Nop().WithContext(context.Background())
		s := e.subject()
		pub := e.publication("d-1", nil, s)
		if err := e.p.Begin(ctx, e.cl, pub); err != nil {
			t.Fatal(err)
		}
		tr := e.p.TrackProgress(ctx, e.cl, pub)
		over := 0
		// Report until the bound is reached, then many times more.
		waitUntil(t, "three progress updates", func() bool {
			over++
			report(tr, over)
			g := e.gateRuns(head1)
			return len(g) == 1 && g[0].Updates >= 3
		})
		for range 200 {
			over++
			report(tr, over)
		}
		tr.Stop()
		g := e.gateRuns(head1)
		if len(g) != 1 || g[0].Updates != 3 || g[0].Status != "in_progress" {
			t.Fatalf("gate checks %+v, want one in progress updated 3 times", g)
		}
		if !strings.Contains(g[0].Title, "reviewing 3 lenses, 1 finished") || !strings.Contains(g[0].Summary, "Finished: 1 of 3 (`a`)") {
			t.Fatalf("gate check says %q / %q", g[0].Title, g[0].Summary)
		}
	})
	t.Run("none within ProgressInterval", func(t *testing.T) {
		e := newTestEnv(t, func(o *Options) { o.ProgressInterval = time.Hour })
		ctx := zerolog.Nop().WithContext(context.Background())
		s := e.subject()
		pub := e.publication("d-1", nil, s)
		if err := e.p.Begin(ctx, e.cl, pub); err != nil {
			t.Fatal(err)
		}
		tr := e.p.TrackProgress(ctx, e.cl, pub)
		for over := range 200 {
			report(tr, over)
		}
		tr.Stop() // returns without waiting out the interval
		if g := e.gateRuns(head1); len(g) != 1 || g[0].Updates != 0 {
			t.Fatalf("gate checks %+v, want one never updated", g)
		}
	})
	t.Run("off", func(t *testing.T) {
		e := newTestEnv(t, func(o *Options) { o.ProgressInterval = -1 })
		if tr := e.p.TrackProgress(context.Background(), e.cl, e.publication("d-1", nil, e.subject())); tr != nil {
			t.Fatal("a negative ProgressInterval still tracks progress")
		}
	})
}
