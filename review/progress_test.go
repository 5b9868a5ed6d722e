package review

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/review/runtime"
)

// A review reports its progress one call at a time: first its lenses with none finished, then
// each request over, and last every lens finished with every request over. A lens is finished
// only once every request of its group is over.
func TestReviewReportsProgress(t *testing.T) {
	all := &inFlight{}
	rev := map[int]*inFlight{1: {}}
	m1 := &countingModel{name: "m1", total: all, inst: rev, rev: map[int]*inFlight{1: {}}}
	m2 := &countingModel{name: "m2", total: all, inst: rev, rev: map[int]*inFlight{1: {}}}
	p := NewPipeline(Options{Runtimes: runtime.NewRegistry(m1, m2), Logger: zerolog.Nop(), MaxConcurrentCalls: 4})
	var mu sync.Mutex
	var got []Progress
	inside := false
	ctx := WithProgress(context.Background(), func(pg Progress) {
		mu.Lock()
		if inside {
			t.Error("progress reported by two goroutines at once")
		}
		inside = true
		got = append(got, pg)
		inside = false
		mu.Unlock()
	})
	subj := pushSubject(sha('1'), eightFiles(), nil, nil)
	subj.Number = 1
	if _, err := p.Review(ctx, subj, twoGroupConfig()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 17 {
		t.Fatalf("%d progress reports, want the start and one per request (16)", len(got))
	}
	first, last := got[0], got[len(got)-1]
	if !slices.Equal(first.Lenses, []string{"all", "api"}) || len(first.Finished) != 0 || first.Requests != 16 || first.RequestsOver != 0 {
		t.Fatalf("first report %+v", first)
	}
	if !slices.Equal(last.Finished, []string{"all", "api"}) || last.RequestsOver != 16 {
		t.Fatalf("last report %+v", last)
	}
	for i, pg := range got {
		if pg.RequestsOver != i {
			t.Fatalf("report %d says %d requests over", i, pg.RequestsOver)
		}
		// Each group makes 8 requests: both finished needs all 16 over, one needs 8.
		if len(pg.Finished) == 2 && pg.RequestsOver < 16 || len(pg.Finished) == 1 && pg.RequestsOver < 8 {
			t.Fatalf("report %d: %v finished with %d requests over", i, pg.Finished, pg.RequestsOver)
		}
	}
}
