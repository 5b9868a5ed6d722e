package review

import (
	"context"
	"sync"
)

// Progress is how far a review is: the lenses of its plan, those whose runtime requests are
// over, and the requests themselves. A finished lens has no outcome yet: outcomes are decided
// once every lens has finished, in Decision.
type Progress struct {
	// Lenses are the lenses of the plan, in plan order.
	Lenses []string
	// Finished are the lenses whose requests are all over (answered, failed or not needed),
	// in plan order.
	Finished []string
	// Requests is how many requests the review makes to its runtimes (a part of the change
	// for a group of lenses each); RequestsOver how many of them are over.
	Requests, RequestsOver int
}

// ProgressFunc receives a review's progress each time it changes. It is called from the
// review's goroutines, one call at a time, and must return quickly: the calls wait for it.
type ProgressFunc func(Progress)

type progressKey struct{}

// WithProgress returns a context whose review reports its progress to f.
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// progressOf is the ProgressFunc of ctx (nil without one).
func progressOf(ctx context.Context) ProgressFunc {
	f, _ := ctx.Value(progressKey{}).(ProgressFunc)
	return f
}

// progress counts what a review has finished and reports each change.
type progress struct {
	report ProgressFunc

	mu       sync.Mutex
	names    []string
	finished []bool
	requests int
	over     int
}

// newProgress tracks the lenses of r once every group is planned: a lens in no group, or in
// a group that makes no request, is finished from the start.
func newProgress(ctx context.Context, r *reviewRun) *progress {
	pg := &progress{report: progressOf(ctx)}
	if pg.report == nil {
		return nil
	}
	pg.names = make([]string, len(r.lenses))
	pg.finished = make([]bool, len(r.lenses))
	for i, l := range r.lenses {
		pg.names[i] = l.item.Name
		pg.finished[i] = l.group == nil || len(l.group.parts) == 0
	}
	for _, g := range r.groups {
		pg.requests += len(g.parts)
	}
	pg.send()
	return pg
}

// partOver counts one request of g as over; when it was g's last, g's lenses are finished.
func (pg *progress) partOver(g *lensGroup, last bool) {
	if pg == nil {
		return
	}
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.over++
	if last {
		for _, i := range g.lenses {
			pg.finished[i] = true
		}
	}
	pg.send()
}

// send reports the progress; the caller holds mu (or is the only goroutine).
func (pg *progress) send() {
	p := Progress{Lenses: append([]string(nil), pg.names...), Requests: pg.requests, RequestsOver: pg.over}
	for i, done := range pg.finished {
		if done {
			p.Finished = append(p.Finished, pg.names[i])
		}
	}
	pg.report(p)
}
