package durable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/internal/testkit"
)

// recorder is a handler that records every call and the jobs that ran to completion.
type recorder struct {
	mu    sync.Mutex
	calls []queue.Job
	done  []queue.Job
	run   func(ctx context.Context, job queue.Job, call int) error
}

func (r *recorder) handle(ctx context.Context, job queue.Job) error {
	r.mu.Lock()
	r.calls = append(r.calls, job)
	n := len(r.calls)
	r.mu.Unlock()
	var err error
	if r.run != nil {
		err = r.run(ctx, job, n)
	}
	if err == nil {
		r.mu.Lock()
		r.done = append(r.done, job)
		r.mu.Unlock()
	}
	return err
}

func (r *recorder) counts() (calls, done int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls), len(r.done)
}

func (r *recorder) doneHeads() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, j := range r.done {
		out = append(out, j.Key+"@"+j.HeadSHA)
	}
	return out
}

func statesOf(jobs []jobInfo) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Head+":"+j.State)
	}
	return out
}

func TestOpenRejectsBadDSN(t *testing.T) {
	cases := []struct{ name, dsn, want string }{
		{"unknown scheme", "mysql://x", "unsupported DSN scheme"},
		{"empty", "", "unsupported DSN scheme"},
		{"sqlite without path", "sqlite://", "needs a file path"},
		{"sqlite with query", "sqlite:///tmp/q.db?mode=memory", "needs a file path"},
		{"postgres garbage", "postgres://%zz", "invalid PostgreSQL DSN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(context.Background(), tc.dsn, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open(%q) = %v, want error containing %q", tc.dsn, err, tc.want)
			}
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	p := backoffPolicy{base: time.Second, max: 10 * time.Second}
	cases := []struct {
		attempt int
		want    time.Duration
	}{{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second}, {5, 10 * time.Second}, {50, 10 * time.Second}}
	for _, tc := range cases {
		if got := p.delay(tc.attempt); got != tc.want {
			t.Errorf("delay(%d) = %s, want %s", tc.attempt, got, tc.want)
		}
	}
}

// TestSuite runs the queue's guarantees against every available backend.
func TestSuite(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Run("DuplicateDelivery", func(t *testing.T) { testDuplicateDelivery(t, b.dsn(t)) })
			t.Run("SupersedeQueued", func(t *testing.T) { testSupersedeQueued(t, b.dsn(t)) })
			t.Run("SupersedeRunning", func(t *testing.T) { testSupersedeRunning(t, b.dsn(t)) })
			t.Run("SameHeadOnce", func(t *testing.T) { testSameHeadOnce(t, b.dsn(t)) })
			t.Run("RetryThenSuccess", func(t *testing.T) { testRetryThenSuccess(t, b.dsn(t)) })
			t.Run("PermanentNotRetried", func(t *testing.T) { testPermanentNotRetried(t, b.dsn(t)) })
			t.Run("DeadLetter", func(t *testing.T) { testDeadLetter(t, b.dsn(t)) })
			t.Run("Timeout", func(t *testing.T) { testTimeout(t, b.dsn(t)) })
			t.Run("RestartKeepsJobs", func(t *testing.T) { testRestartKeepsJobs(t, b.dsn(t)) })
			t.Run("StopHandsBackRunningJob", func(t *testing.T) { testStopHandsBack(t, b.dsn(t)) })
			t.Run("InsertOnly", func(t *testing.T) { testInsertOnly(t, b.dsn(t)) })
			t.Run("Full", func(t *testing.T) { testFull(t, b.dsn(t)) })
		})
	}
}

func testDuplicateDelivery(t *testing.T, dsn string) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	opts := testOptions()
	opts.Registerer = reg
	q := open(t, dsn, opts)
	if err := q.Enqueue(ctx, prJob("o/r#1", "aaa", "d1")); err != nil {
		t.Fatalf("first enqueue: %v", err)
	}
	for i := 0; i < 3; i++ {
		if err := q.Enqueue(ctx, prJob("o/r#1", "aaa", "d1")); !errors.Is(err, queue.ErrDuplicate) {
			t.Fatalf("redelivery %d: got %v, want ErrDuplicate", i, err)
		}
	}
	// A redelivery is recognised by its id even when its payload names another head.
	if err := q.Enqueue(ctx, prJob("o/r#1", "bbb", "d1")); !errors.Is(err, queue.ErrDuplicate) {
		t.Fatalf("redelivery with other head: got %v, want ErrDuplicate", err)
	}
	if jobs := jobsOf(t, q); len(jobs) != 1 || jobs[0].Head != "aaa" {
		t.Fatalf("jobs = %+v, want one job for head aaa", jobs)
	}
	if got := metricValue(t, reg, "lensgate_durable_queue_enqueued_total", "duplicate"); got != 4 {
		t.Fatalf("duplicate counter = %v, want 4", got)
	}
}

func testSupersedeQueued(t *testing.T, dsn string) {
	ctx := context.Background()
	q := open(t, dsn, testOptions())
	for i, head := range []string{"h1", "h2", "h3"} {
		if err := q.Enqueue(ctx, prJob("o/r#2", head, fmt.Sprintf("d%d", i))); err != nil {
			t.Fatalf("enqueue %s: %v", head, err)
		}
	}
	// Another event for the newest head coalesces with its queued job.
	if err := q.Enqueue(ctx, prJob("o/r#2", "h3", "d-label")); err != nil {
		t.Fatalf("enqueue same head: %v", err)
	}
	rec := &recorder{}
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q)) })
	if got := rec.doneHeads(); len(got) != 1 || got[0] != "o/r#2@h3" {
		t.Fatalf("completed = %v, want only o/r#2@h3", got)
	}
	got := statesOf(jobsOf(t, q))
	want := []string{"h1:cancelled", "h2:cancelled", "h3:completed"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("job states = %v, want %v", got, want)
	}
}

func testSupersedeRunning(t *testing.T, dsn string) {
	ctx := context.Background()
	q := open(t, dsn, testOptions())
	started := make(chan struct{})
	stale := make(chan error, 1)
	rec := &recorder{run: func(ctx context.Context, job queue.Job, _ int) error {
		if job.HeadSHA != "old" {
			return queue.CheckCurrent(ctx)
		}
		close(started)
		<-ctx.Done() // the newer head cancels this job's context
		stale <- queue.CheckCurrent(context.WithoutCancel(ctx))
		return ctx.Err()
	}}
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := q.Enqueue(ctx, prJob("o/r#3", "old", "d1")); err != nil {
		t.Fatal(err)
	}
	within(t, "job start", started)
	if err := q.Enqueue(ctx, prJob("o/r#3", "new", "d2")); err != nil {
		t.Fatal(err)
	}
	if err := <-stale; !errors.Is(err, queue.ErrNotCurrent) || !errors.Is(err, queue.ErrSuperseded) {
		t.Fatalf("CheckCurrent in stale job = %v, want ErrNotCurrent", err)
	}
	waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q)) })
	if got := strings.Join(statesOf(jobsOf(t, q)), ","); got != "old:cancelled,new:completed" {
		t.Fatalf("job states = %s", got)
	}
	if got := rec.doneHeads(); len(got) != 1 || got[0] != "o/r#3@new" {
		t.Fatalf("completed = %v", got)
	}
}

func testSameHeadOnce(t *testing.T, dsn string) {
	ctx := context.Background()
	q := open(t, dsn, testOptions())
	rec := &recorder{}
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, prJob("o/r#4", "h", "d1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "first review", func() bool { _, done := rec.counts(); return done == 1 })
	// A later event for a head already reviewed does not review it again …
	if err := q.Enqueue(ctx, prJob("o/r#4", "h", "d2")); err != nil {
		t.Fatal(err)
	}
	// … but an explicit re-run does.
	rerun := prJob("o/r#4", "h", "d3")
	rerun.Reason = "check_run.rerequested"
	if err := q.Enqueue(ctx, rerun); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "re-run", func() bool { _, done := rec.counts(); return done == 2 })
	waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q)) })
	if jobs := jobsOf(t, q); len(jobs) != 2 {
		t.Fatalf("jobs = %v, want the review and the re-run", statesOf(jobs))
	}
	if calls, _ := rec.counts(); calls != 2 {
		t.Fatalf("handler calls = %d, want 2", calls)
	}
}

func testRetryThenSuccess(t *testing.T, dsn string) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	opts := testOptions()
	opts.Registerer = reg
	q := open(t, dsn, opts)
	rec := &recorder{run: func(_ context.Context, _ queue.Job, call int) error {
		if call < 3 {
			return errors.New("github: 502 bad gateway")
		}
		return nil
	}}
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, prJob("o/r#5", "h", "d1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q)) })
	jobs := jobsOf(t, q)
	if len(jobs) != 1 || jobs[0].State != "completed" || jobs[0].Attempt != 3 {
		t.Fatalf("jobs = %+v, want one completed on attempt 3", jobs)
	}
	if got := metricValue(t, reg, "lensgate_durable_queue_jobs_finished_total", "retry"); got != 2 {
		t.Fatalf("retry counter = %v, want 2", got)
	}
}

func testPermanentNotRetried(t *testing.T, dsn string) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	var logs testkit.SyncBuffer
	logger := zerolog.New(&logs)
	opts := testOptions()
	opts.Registerer = reg
	opts.Logger = &logger
	q := open(t, dsn, opts)
	rec := &recorder{run: func(context.Context, queue.Job, int) error {
		return queue.Permanent(errors.New("invalid .asdd.yml"))
	}}
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, prJob("o/r#6", "h", "d1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q)) })
	jobs := jobsOf(t, q)
	if len(jobs) != 1 || jobs[0].State != "cancelled" || jobs[0].Attempt != 1 {
		t.Fatalf("jobs = %+v, want one cancelled after one attempt", jobs)
	}
	if calls, _ := rec.counts(); calls != 1 {
		t.Fatalf("handler calls = %d, want 1", calls)
	}
	if got := metricValue(t, reg, "lensgate_durable_queue_dead_letters_total", "permanent"); got != 1 {
		t.Fatalf("dead letter counter = %v, want 1", got)
	}
	if !strings.Contains(logs.String(), "dead letter") || !strings.Contains(logs.String(), "invalid .asdd.yml") {
		t.Fatalf("log does not report the dead letter: %s", logs.String())
	}
}

func testDeadLetter(t *testing.T, dsn string) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	var logs testkit.SyncBuffer
	logger := zerolog.New(&logs)
	opts := testOptions()
	opts.MaxAttempts = 3
	opts.Registerer = reg
	opts.Logger = &logger
	q := open(t, dsn, opts)
	rec := &recorder{run: func(context.Context, queue.Job, int) error { return errors.New("model: 429 too many requests") }}
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, prJob("o/r#7", "h", "d1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q)) })
	jobs := jobsOf(t, q)
	if len(jobs) != 1 || jobs[0].State != "discarded" || jobs[0].Attempt != 3 {
		t.Fatalf("jobs = %+v, want one discarded after 3 attempts", jobs)
	}
	if got := metricValue(t, reg, "lensgate_durable_queue_dead_letters_total", "attempts_exhausted"); got != 1 {
		t.Fatalf("dead letter counter = %v, want 1", got)
	}
	if got := metricValue(t, reg, "lensgate_durable_queue_jobs", "discarded"); got != 1 {
		t.Fatalf("jobs{state=discarded} gauge = %v, want 1", got)
	}
	if !strings.Contains(logs.String(), "discarded (dead letter)") {
		t.Fatalf("log does not report the dead letter: %s", logs.String())
	}
}

func testTimeout(t *testing.T, dsn string) {
	ctx := context.Background()
	opts := testOptions()
	opts.JobTimeout = 300 * time.Millisecond
	q := open(t, dsn, opts)
	firstErr := make(chan error, 1)
	rec := &recorder{run: func(ctx context.Context, _ queue.Job, call int) error {
		if call == 1 {
			<-ctx.Done() // a hung model call
			firstErr <- ctx.Err()
			return ctx.Err()
		}
		return nil
	}}
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, prJob("o/r#8", "h", "d1")); err != nil {
		t.Fatal(err)
	}
	if err := <-firstErr; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first attempt ended with %v, want deadline exceeded", err)
	}
	waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q)) })
	if jobs := jobsOf(t, q); len(jobs) != 1 || jobs[0].State != "completed" || jobs[0].Attempt != 2 {
		t.Fatalf("jobs = %+v, want completed on attempt 2", jobs)
	}
}

func testRestartKeepsJobs(t *testing.T, dsn string) {
	ctx := context.Background()
	q1, err := Open(ctx, dsn, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := q1.Enqueue(ctx, prJob(fmt.Sprintf("o/r#%d", 100+i), "h", fmt.Sprintf("d%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := q1.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	q2 := open(t, dsn, testOptions())
	// Delivery ids survive the restart too.
	if err := q2.Enqueue(ctx, prJob("o/r#100", "h", "d0")); !errors.Is(err, queue.ErrDuplicate) {
		t.Fatalf("redelivery after restart: %v, want ErrDuplicate", err)
	}
	rec := &recorder{}
	if err := q2.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q2)) })
	if _, done := rec.counts(); done != 5 {
		t.Fatalf("completed %d jobs after restart, want 5", done)
	}
}

func testStopHandsBack(t *testing.T, dsn string) {
	ctx := context.Background()
	q1, err := Open(ctx, dsn, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	if err := q1.Start(ctx, func(ctx context.Context, _ queue.Job) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if err := q1.Enqueue(ctx, prJob("o/r#9", "h", "d1")); err != nil {
		t.Fatal(err)
	}
	within(t, "job start", started)
	stopCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_ = q1.Stop(stopCtx) // the deadline passes with the job still running

	q2 := open(t, dsn, testOptions())
	rec := &recorder{}
	if err := q2.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "handed-back job to complete", func() bool { _, done := rec.counts(); return done == 1 })
	waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q2)) })
	if jobs := jobsOf(t, q2); len(jobs) != 1 || jobs[0].State != "completed" {
		t.Fatalf("jobs = %+v, want one completed", jobs)
	}
}

func testInsertOnly(t *testing.T, dsn string) {
	ctx := context.Background()
	opts := testOptions()
	opts.InsertOnly = true
	web := open(t, dsn, opts)
	if err := web.Start(ctx, func(context.Context, queue.Job) error { return nil }); !errors.Is(err, ErrInsertOnly) {
		t.Fatalf("Start on insert-only queue: %v, want ErrInsertOnly", err)
	}
	if err := web.Enqueue(ctx, prJob("o/r#10", "h", "d1")); err != nil {
		t.Fatal(err)
	}
	if jobs := jobsOf(t, web); len(jobs) != 1 || jobs[0].State != "available" {
		t.Fatalf("jobs = %+v, want one available", jobs)
	}
	if err := web.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := web.Enqueue(ctx, prJob("o/r#10", "h2", "d2")); !errors.Is(err, queue.ErrFull) || !errors.Is(err, queue.ErrStopped) {
		t.Fatalf("Enqueue after Stop: %v, want ErrFull and ErrStopped", err)
	}
}

func testFull(t *testing.T, dsn string) {
	ctx := context.Background()
	opts := testOptions()
	opts.MaxQueued = 2
	q := open(t, dsn, opts)
	for i := range 2 {
		if err := q.Enqueue(ctx, prJob(fmt.Sprintf("o/r#%d", 200+i), "h", fmt.Sprintf("d%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Enqueue(ctx, prJob("o/r#202", "h", "d2")); !errors.Is(err, queue.ErrFull) {
		t.Fatalf("third enqueue: %v, want ErrFull", err)
	}
	// The refused delivery was not recorded: GitHub's redelivery is accepted once there is room.
	rec := &recorder{}
	if err := q.Start(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q)) })
	if err := q.Enqueue(ctx, prJob("o/r#202", "h", "d2")); err != nil {
		t.Fatalf("redelivery after the queue drained: %v", err)
	}
}

// metricValue returns the value of the counter or gauge name whose label has value label.
func metricValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetValue() == label {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

// TestSQLiteSettings checks the file is opened in WAL mode (readers do not block the writer and
// a crash loses no committed job) and that relative paths work.
func TestSQLiteSettings(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	q := open(t, "sqlite://data.db", testOptions())
	if err := q.Enqueue(context.Background(), prJob("o/r#1", "h", "d1")); err != nil {
		t.Fatal(err)
	}
	var mode string
	rq := q.(*riverQueue[*sql.Tx])
	if err := rq.db.queryOne(context.Background(), "PRAGMA journal_mode", nil, &mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
	if _, err := os.Stat(filepath.Join(dir, "data.db")); err != nil {
		t.Fatalf("database not at the relative path: %v", err)
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
