package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func job(key, delivery, head string) Job {
	return Job{Key: key, DeliveryID: delivery, HeadSHA: head, Kind: KindPullRequest}
}

// recorder is a Handler that records every job it sees and can be held on a gate.
type recorder struct {
	mu      sync.Mutex
	started chan Job
	gate    chan struct{}
	ran     []Job
	causes  []error
}

func newRecorder() *recorder {
	return &recorder{started: make(chan Job, 100), gate: make(chan struct{})}
}

func (r *recorder) handle(ctx context.Context, j Job) error {
	r.started <- j
	select {
	case <-r.gate:
	case <-ctx.Done():
		r.mu.Lock()
		r.causes = append(r.causes, context.Cause(ctx))
		r.mu.Unlock()
		return ctx.Err()
	}
	r.mu.Lock()
	r.ran = append(r.ran, j)
	r.mu.Unlock()
	return nil
}

func (r *recorder) finished() []Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Job(nil), r.ran...)
}

func stop(t *testing.T, q *Memory) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func TestMemoryDuplicateDelivery(t *testing.T) {
	q := NewMemory(MemoryOptions{Workers: 1})
	ctx := context.Background()
	if err := q.Enqueue(ctx, job("o/r#1", "d1", "a")); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, job("o/r#1", "d1", "a")); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second enqueue of d1: got %v, want ErrDuplicate", err)
	}
	if err := q.Enqueue(ctx, job("o/r#2", "d1", "b")); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("d1 for another key: got %v, want ErrDuplicate", err)
	}
	rec := newRecorder()
	close(rec.gate)
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	stop(t, q)
	if got := rec.finished(); len(got) != 1 || got[0].DeliveryID != "d1" {
		t.Fatalf("ran %v, want exactly the one d1 job", got)
	}
	if v := testutil.ToFloat64(q.m.Duplicates); v != 2 {
		t.Fatalf("duplicates metric = %v, want 2", v)
	}
}

func TestMemoryCoalescesQueuedJobsNewestWins(t *testing.T) {
	q := NewMemory(MemoryOptions{Workers: 1})
	ctx := context.Background()
	for i := range 5 {
		if err := q.Enqueue(ctx, job("o/r#1", fmt.Sprint("d", i), fmt.Sprint("head", i))); err != nil {
			t.Fatal(err)
		}
	}
	if queued, _ := q.Len(); queued != 1 {
		t.Fatalf("queued = %d, want 1 after coalescing", queued)
	}
	rec := newRecorder()
	close(rec.gate)
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	stop(t, q)
	got := rec.finished()
	if len(got) != 1 || got[0].HeadSHA != "head4" || got[0].DeliveryID != "d4" {
		t.Fatalf("ran %+v, want one job for head4", got)
	}
	if v := testutil.ToFloat64(q.m.Coalesced); v != 4 {
		t.Fatalf("coalesced = %v, want 4", v)
	}
}

func TestMemoryNewHeadCancelsRunningJob(t *testing.T) {
	q := NewMemory(MemoryOptions{Workers: 2})
	ctx := context.Background()
	rec := newRecorder()
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, job("o/r#1", "d1", "old")); err != nil {
		t.Fatal(err)
	}
	if j := <-rec.started; j.HeadSHA != "old" {
		t.Fatalf("first started %q", j.HeadSHA)
	}
	if err := q.Enqueue(ctx, job("o/r#1", "d2", "new")); err != nil {
		t.Fatal(err)
	}
	// The new head starts only after the stale run has been cancelled: one run per key at a time.
	if j := <-rec.started; j.HeadSHA != "new" {
		t.Fatalf("second started %q", j.HeadSHA)
	}
	close(rec.gate)
	stop(t, q)
	got := rec.finished()
	if len(got) != 1 || got[0].HeadSHA != "new" {
		t.Fatalf("completed %+v, want only the new head", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.causes) != 1 || !errors.Is(rec.causes[0], ErrSuperseded) {
		t.Fatalf("cancel causes %v, want [ErrSuperseded]", rec.causes)
	}
}

func TestMemorySameHeadDoesNotCancelRunningJob(t *testing.T) {
	q := NewMemory(MemoryOptions{Workers: 2})
	ctx := context.Background()
	rec := newRecorder()
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, job("o/r#1", "d1", "same")); err != nil {
		t.Fatal(err)
	}
	within(t, "job start", rec.started)
	// An edit of the body keeps the head: the running review finishes, then the queued one runs.
	if err := q.Enqueue(ctx, job("o/r#1", "d2", "same")); err != nil {
		t.Fatal(err)
	}
	close(rec.gate)
	stop(t, q)
	got := rec.finished()
	if len(got) != 2 || got[0].DeliveryID != "d1" || got[1].DeliveryID != "d2" {
		t.Fatalf("completed %+v, want d1 then d2", got)
	}
}

func TestMemoryFull(t *testing.T) {
	reg := prometheus.NewRegistry()
	q := NewMemory(MemoryOptions{Capacity: 2, Workers: 1, Metrics: NewMetrics(reg)})
	ctx := context.Background()
	tests := []struct {
		job  Job
		want error
	}{
		{job("o/r#1", "d1", "a"), nil},
		{job("o/r#2", "d2", "a"), nil},
		{job("o/r#3", "d3", "a"), ErrFull},
		{job("o/r#1", "d4", "b"), nil},     // coalesces with a queued key: no new slot needed
		{job("o/r#3", "d3", "a"), ErrFull}, // a refused delivery is not remembered, so it can be redelivered
	}
	for i, tt := range tests {
		err := q.Enqueue(ctx, tt.job)
		if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("case %d: Enqueue(%s) = %v, want %v", i, tt.job.DeliveryID, err, tt.want)
		}
	}
	if v := testutil.ToFloat64(q.m.Dropped.WithLabelValues("full")); v != 2 {
		t.Fatalf("dropped{full} = %v, want 2", v)
	}
	if v := testutil.ToFloat64(q.m.Depth); v != 2 {
		t.Fatalf("depth = %v, want 2", v)
	}
}

func TestMemoryRecoversPanics(t *testing.T) {
	var mu sync.Mutex
	var errs []error
	q := NewMemory(MemoryOptions{Workers: 1, OnError: func(_ Job, err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}})
	ctx := context.Background()
	var ran []string
	h := func(_ context.Context, j Job) error {
		ran = append(ran, j.DeliveryID)
		switch j.DeliveryID {
		case "boom":
			panic("kaboom")
		case "perm":
			return Permanent(errors.New("invalid config"))
		}
		return nil
	}
	for _, d := range []string{"boom", "perm", "ok"} {
		if err := q.Enqueue(ctx, job("o/r#"+d, d, "h")); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Start(ctx, h); err != nil {
		t.Fatal(err)
	}
	stop(t, q)
	if len(ran) != 3 {
		t.Fatalf("ran %v: a panic must not stop the worker", ran)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 2 {
		t.Fatalf("OnError got %v, want the panic and the permanent error", errs)
	}
	var pe *PanicError
	if !errors.As(errs[0], &pe) || pe.Value != "kaboom" || len(pe.Stack) == 0 {
		t.Fatalf("first error %v, want a *PanicError with a stack", errs[0])
	}
	if !IsPermanent(errs[1]) {
		t.Fatalf("second error %v, want permanent", errs[1])
	}
	if v := testutil.ToFloat64(q.m.Panics); v != 1 {
		t.Fatalf("panics = %v", v)
	}
}

func TestMemoryStop(t *testing.T) {
	t.Run("drains queued jobs and refuses new ones", func(t *testing.T) {
		q := NewMemory(MemoryOptions{Workers: 1})
		ctx := context.Background()
		for i := range 3 {
			if err := q.Enqueue(ctx, job(fmt.Sprint("o/r#", i), fmt.Sprint("d", i), "h")); err != nil {
				t.Fatal(err)
			}
		}
		rec := newRecorder()
		close(rec.gate)
		if err := q.Start(ctx, rec.handle); err != nil {
			t.Fatal(err)
		}
		stop(t, q)
		if n := len(rec.finished()); n != 3 {
			t.Fatalf("finished %d jobs, want 3", n)
		}
		err := q.Enqueue(ctx, job("o/r#9", "d9", "h"))
		if !errors.Is(err, ErrFull) || !errors.Is(err, ErrStopped) {
			t.Fatalf("Enqueue after Stop = %v, want ErrFull and ErrStopped", err)
		}
	})
	t.Run("scheduled jobs are counted as abandoned", func(t *testing.T) {
		q := NewMemory(MemoryOptions{Workers: 1})
		ctx := context.Background()
		rec := newRecorder()
		close(rec.gate)
		if err := q.Start(ctx, rec.handle); err != nil {
			t.Fatal(err)
		}
		later := Job{Key: "o/r#1/delegate", DeliveryID: "look-1", HeadSHA: "h", NotBefore: time.Now().Add(time.Hour)}
		if err := q.Enqueue(ctx, later); err != nil {
			t.Fatal(err)
		}
		if err := q.Enqueue(ctx, job("o/r#2", "d2", "h")); err != nil {
			t.Fatal(err)
		}
		// The queued job runs before the stop ends; the look an hour ahead cannot, and is
		// reported, not lost silently.
		stop(t, q)
		if n := len(rec.finished()); n != 1 {
			t.Fatalf("finished %d jobs, want 1", n)
		}
		if v := testutil.ToFloat64(q.m.Dropped.WithLabelValues("abandoned")); v != 1 {
			t.Fatalf("abandoned = %v, want the scheduled job", v)
		}
	})
	t.Run("deadline cancels running jobs", func(t *testing.T) {
		q := NewMemory(MemoryOptions{Workers: 1})
		ctx := context.Background()
		rec := newRecorder() // gate never opens
		if err := q.Start(ctx, rec.handle); err != nil {
			t.Fatal(err)
		}
		if err := q.Enqueue(ctx, job("o/r#1", "d1", "h")); err != nil {
			t.Fatal(err)
		}
		if err := q.Enqueue(ctx, job("o/r#2", "d2", "h")); err != nil {
			t.Fatal(err)
		}
		within(t, "job start", rec.started)
		sctx, cancel := context.WithCancel(ctx)
		cancel() // deadline already passed
		err := q.Stop(sctx)
		if err == nil {
			t.Fatal("Stop with jobs abandoned returned nil")
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.causes) != 1 || !errors.Is(rec.causes[0], ErrStopped) {
			t.Fatalf("causes %v, want [ErrStopped]", rec.causes)
		}
		if v := testutil.ToFloat64(q.m.Dropped.WithLabelValues("abandoned")); v != 1 {
			t.Fatalf("abandoned = %v, want 1", v)
		}
	})
}

func TestMemoryOneRunPerKey(t *testing.T) {
	q := NewMemory(MemoryOptions{Workers: 4, Capacity: 1000})
	ctx := context.Background()
	var mu sync.Mutex
	active := map[string]int{}
	violations := 0
	h := func(_ context.Context, j Job) error {
		mu.Lock()
		active[j.Key]++
		if active[j.Key] > 1 {
			violations++
		}
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		active[j.Key]--
		mu.Unlock()
		return nil
	}
	if err := q.Start(ctx, h); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		_ = q.Enqueue(ctx, job(fmt.Sprint("o/r#", i%3), fmt.Sprint("d", i), "same"))
	}
	stop(t, q)
	if violations != 0 {
		t.Fatalf("%d times a key ran twice at once", violations)
	}
}

func TestMemoryRejectsJobWithoutKey(t *testing.T) {
	q := NewMemory(MemoryOptions{})
	if err := q.Enqueue(context.Background(), Job{DeliveryID: "x"}); err == nil {
		t.Fatal("job without key accepted")
	}
}

func TestMemoryStopDoesNotWaitForeverOnAStuckJob(t *testing.T) {
	q := NewMemory(MemoryOptions{Workers: 1})
	ctx := context.Background()
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	if err := q.Start(ctx, func(context.Context, Job) error {
		close(started)
		<-release // ignores its context
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, job("o/r#1", "d1", "h")); err != nil {
		t.Fatal(err)
	}
	within(t, "job start", started)
	sctx, cancel := context.WithCancel(ctx)
	cancel()
	err := q.Stop(sctx)
	if err == nil || !strings.Contains(err.Error(), "1 running jobs not stopping") {
		t.Fatalf("Stop = %v", err)
	}
}

func TestMemoryScheduledJobs(t *testing.T) {
	ran := make(chan Job, 4)
	q := NewMemory(MemoryOptions{Workers: 1})
	if err := q.Start(context.Background(), func(_ context.Context, j Job) error { ran <- j; return nil }); err != nil {
		t.Fatal(err)
	}
	defer q.Stop(context.Background())
	ctx := context.Background()
	soon := time.Now().Add(20 * time.Millisecond)
	if err := q.Enqueue(ctx, Job{Key: "a", DeliveryID: "d1", HeadSHA: "h1", NotBefore: soon.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// A newer job of the key replaces the waiting one; its delivery id is remembered at once.
	if err := q.Enqueue(ctx, Job{Key: "a", DeliveryID: "d2", HeadSHA: "h2", NotBefore: soon}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, Job{Key: "a", DeliveryID: "d2", HeadSHA: "h2"}); err != ErrDuplicate {
		t.Fatalf("repeated delivery of a scheduled job: %v", err)
	}
	if queued, running := q.Len(); queued != 0 || running != 0 {
		t.Fatalf("a scheduled job is queued early: %d queued, %d running", queued, running)
	}
	j := within(t, "job run", ran)
	if j.DeliveryID != "d2" || !j.NotBefore.IsZero() {
		t.Fatalf("ran %+v", j)
	}
	select {
	case j := <-ran:
		t.Fatalf("the replaced job ran too: %+v", j)
	case <-time.After(50 * time.Millisecond):
	}
}

// A follow-up job never supersedes a job of another head, and is dropped when the subject
// moved on.
func TestMemoryFollowUpNeverSupersedes(t *testing.T) {
	started := make(chan Job, 4)
	release := make(chan struct{})
	q := NewMemory(MemoryOptions{Workers: 1})
	if err := q.Start(context.Background(), func(ctx context.Context, j Job) error {
		started <- j
		select {
		case <-release:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	defer q.Stop(context.Background())
	ctx := context.Background()
	if err := q.Enqueue(ctx, Job{Key: "k", DeliveryID: "push", HeadSHA: "new"}); err != nil {
		t.Fatal(err)
	}
	running := within(t, "job start", started)
	if err := q.Enqueue(ctx, Job{Key: "k", DeliveryID: "answer-old", HeadSHA: "old", FollowUp: true}); err != nil {
		t.Fatal(err)
	}
	if queued, _ := q.Len(); queued != 0 {
		t.Fatalf("a follow-up for the old head was queued (%d)", queued)
	}
	if err := q.Enqueue(ctx, Job{Key: "k", DeliveryID: "answer-new", HeadSHA: "new", FollowUp: true}); err != nil {
		t.Fatal(err)
	}
	close(release)
	next := within(t, "next job start", started)
	if running.DeliveryID != "push" || next.DeliveryID != "answer-new" {
		t.Fatalf("ran %s then %s", running.DeliveryID, next.DeliveryID)
	}
}

// within receives from ch, failing the test after a minute instead of hanging until the
// package's timeout.
func within[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s within a minute", what)
		var zero T
		return zero
	}
}

// TestMemoryOlderNewsNeverSupersedes: a delivery that reaches Enqueue after a newer one (they
// were handled concurrently) neither replaces it nor runs; a later one does.
func TestMemoryOlderNewsNeverSupersedes(t *testing.T) {
	q := NewMemory(MemoryOptions{Workers: 1})
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		id, head string
		at       int
	}{{"d2", "new", 2}, {"d1", "old", 1}, {"d3", "older", 0}} {
		j := job("o/r#1", c.id, c.head)
		j.EnqueuedAt = t0.Add(time.Duration(c.at) * time.Millisecond)
		if err := q.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	// The older delivery was accepted all the same: its redelivery is a duplicate.
	if err := q.Enqueue(ctx, job("o/r#1", "d1", "old")); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("redelivery: %v, want ErrDuplicate", err)
	}
	rec := newRecorder()
	close(rec.gate)
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	stop(t, q)
	if got := rec.finished(); len(got) != 1 || got[0].HeadSHA != "new" {
		t.Fatalf("ran %+v, want one job for head new", got)
	}
}
