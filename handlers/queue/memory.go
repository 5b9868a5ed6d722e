package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

var (
	// ErrSuperseded is the cancellation cause of a running job whose subject got a newer head.
	ErrSuperseded = errors.New("queue: superseded by a newer head")
	// ErrStopped is the cancellation cause of jobs still running when Stop's deadline passed,
	// and wraps ErrFull for jobs offered after Stop.
	ErrStopped = errors.New("queue: stopped")
)

// PanicError is what a recovered handler panic turns into: the value and the stack.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("queue: job panicked: %v", e.Value) }

// MemoryOptions configure a Memory queue. Zero values take the defaults.
type MemoryOptions struct {
	// Capacity bounds the number of queued (not running) subjects. Default 100.
	Capacity int
	// Workers is the number of concurrent jobs. Default 2.
	Workers int
	// MaxRunningPerInstallation bounds the jobs of one installation that run at once while
	// other installations have jobs queued, so that a burst of one installation (whose reviews
	// wait for its content-write slot) leaves workers to the others: a job of an installation
	// at the bound lets a later job of an installation below its bound go first, and starts
	// when no such job is queued, so no worker idles while jobs wait. Zero takes
	// DefaultMaxRunningPerInstallation(Workers); a negative value sets no bound.
	MaxRunningPerInstallation int
	// SeenDeliveries is how many delivery ids are remembered for idempotency. Default 10000.
	SeenDeliveries int
	// Metrics receives the queue's measurements; nil creates unregistered collectors.
	Metrics *Metrics
	// Logger logs job failures and panics; the zero value discards.
	Logger zerolog.Logger
	// OnError, if set, is called after a job fails (including a recovered *PanicError).
	// It is not called for cancellations.
	OnError func(job Job, err error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Memory is the in-process Queue: bounded, coalescing per key, idempotent per delivery id.
// Jobs live only as long as the process; the durable queues keep them across restarts.
type Memory struct {
	opts MemoryOptions
	m    *Metrics

	mu       sync.Mutex
	cond     *sync.Cond
	pending  map[string]*Job // by key; at most one queued job per key
	order    []string        // keys of pending in arrival order
	running  map[string]*run // by key
	perInst  map[int64]int   // running jobs per installation (see MaxRunningPerInstallation)
	seen     map[string]struct{}
	seenRing []string
	seenNext int
	// scheduled holds jobs waiting for their NotBefore, by key: a newer job of the key replaces
	// the waiting one.
	scheduled map[string]*waiting
	// newest is, while a key has a job, the head of its newest webhook and when the newest event
	// naming that head was received: a delivery for another head received earlier is older news.
	newest   map[string]newestEvent
	started  bool
	stopping bool
	baseCtx  context.Context
	cancel   context.CancelCauseFunc
	wg       sync.WaitGroup
}

type newestEvent struct {
	head string
	at   time.Time
}

// olderNews reports whether job is a webhook delivery for another head than the key's newest,
// received before the event that named that head, and otherwise records it as the newest; q.mu
// is held. Concurrent deliveries reach Enqueue in any order; a job without a delivery id is
// lensgate's own, queued from what GitHub shows, and never older news.
func (q *Memory) olderNews(job Job) bool {
	n, ok := q.newest[job.Key]
	if ok && job.DeliveryID != "" && job.HeadSHA != "" && n.head != "" && n.head != job.HeadSHA && job.EnqueuedAt.Before(n.at) {
		return true
	}
	if ok && n.head == job.HeadSHA && n.at.After(job.EnqueuedAt) {
		return false
	}
	q.newest[job.Key] = newestEvent{head: job.HeadSHA, at: job.EnqueuedAt}
	return false
}

// waiting is a scheduled job's timer; its identity tells a replaced job from the current one.
type waiting struct {
	timer *time.Timer
	head  string
}

// otherHead reports whether a queued, scheduled or running job of the key is for another head;
// q.mu is held.
func (q *Memory) otherHead(job Job) bool {
	if r, ok := q.running[job.Key]; ok && r.job.HeadSHA != job.HeadSHA {
		return true
	}
	if p, ok := q.pending[job.Key]; ok && p.HeadSHA != job.HeadSHA {
		return true
	}
	w, ok := q.scheduled[job.Key]
	return ok && w.head != job.HeadSHA
}

type run struct {
	job    Job
	cancel context.CancelCauseFunc
}

var _ Queue = (*Memory)(nil)

// NewMemory returns an in-memory queue; call Start to run its workers.
func NewMemory(opts MemoryOptions) *Memory {
	if opts.Capacity <= 0 {
		opts.Capacity = 100
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.SeenDeliveries <= 0 {
		opts.SeenDeliveries = 10000
	}
	if opts.MaxRunningPerInstallation == 0 {
		opts.MaxRunningPerInstallation = DefaultMaxRunningPerInstallation(opts.Workers)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := opts.Metrics
	if m == nil {
		m = NewMetrics(nil)
	}
	q := &Memory{
		opts:      opts,
		m:         m,
		pending:   make(map[string]*Job),
		running:   make(map[string]*run),
		perInst:   make(map[int64]int),
		seen:      make(map[string]struct{}),
		seenRing:  make([]string, opts.SeenDeliveries),
		scheduled: make(map[string]*waiting),
		newest:    make(map[string]newestEvent),
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Enqueue implements Queue. A job for a key that is already queued replaces the queued job (the
// newest event wins and keeps the older job's place in line); a job whose head differs from a
// running job of the same key cancels that job with ErrSuperseded.
func (q *Memory) Enqueue(ctx context.Context, job Job) error {
	if job.Key == "" {
		return fmt.Errorf("queue: job without a key")
	}
	if job.EnqueuedAt.IsZero() {
		job.EnqueuedAt = q.opts.Now()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopping {
		q.m.Dropped.WithLabelValues("stopped").Inc()
		return fmt.Errorf("%w: %w", ErrFull, ErrStopped)
	}
	if job.DeliveryID != "" {
		if _, ok := q.seen[job.DeliveryID]; ok {
			q.m.Duplicates.Inc()
			return ErrDuplicate
		}
	}
	if job.FollowUp && q.otherHead(job) {
		// The subject moved on; the newer head's own jobs do this work for it.
		q.remember(job.DeliveryID)
		q.m.Coalesced.Inc()
		return nil
	}
	if !job.FollowUp && q.olderNews(job) {
		// Its head is not the pull request's newest; the newer delivery's job does the work.
		q.remember(job.DeliveryID)
		q.m.Coalesced.Inc()
		return nil
	}
	if w, ok := q.scheduled[job.Key]; ok {
		w.timer.Stop()
		delete(q.scheduled, job.Key)
	}
	if wait := job.NotBefore.Sub(q.opts.Now()); !job.NotBefore.IsZero() && wait > 0 {
		q.remember(job.DeliveryID)
		w := &waiting{head: job.HeadSHA}
		w.timer = time.AfterFunc(wait, func() { q.release(job, w) })
		q.scheduled[job.Key] = w
		return nil
	}
	if err := q.admitLocked(job); err != nil {
		return err
	}
	q.remember(job.DeliveryID)
	return nil
}

// release moves a scheduled job into the queue once its time has come.
func (q *Memory) release(job Job, w *waiting) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.scheduled[job.Key] != w || q.stopping {
		// A newer job of the key replaced this one, or the queue stops.
		return
	}
	delete(q.scheduled, job.Key)
	job.NotBefore = time.Time{}
	if err := q.admitLocked(job); err != nil {
		q.opts.Logger.Warn().Err(err).Str("job_key", job.Key).Msg("scheduled job dropped")
	}
}

// admitLocked queues a job whose delivery id is new; q.mu is held.
func (q *Memory) admitLocked(job Job) error {
	if old, ok := q.pending[job.Key]; ok {
		// Keep the first arrival time so the age metric shows how long the subject waited.
		job.EnqueuedAt = old.EnqueuedAt
		q.pending[job.Key] = &job
		q.m.Coalesced.Inc()
	} else {
		if len(q.pending) >= q.opts.Capacity {
			q.m.Dropped.WithLabelValues("full").Inc()
			return ErrFull
		}
		q.pending[job.Key] = &job
		q.order = append(q.order, job.Key)
		q.m.Depth.Set(float64(len(q.pending)))
	}
	q.m.Enqueued.Inc()
	if r, ok := q.running[job.Key]; ok && r.job.HeadSHA != job.HeadSHA {
		r.cancel(&SupersededError{Head: job.HeadSHA})
		q.m.Superseded.Inc()
	}
	q.cond.Signal()
	return nil
}

// remember records a delivery id, forgetting the oldest once SeenDeliveries ids are held.
func (q *Memory) remember(id string) {
	if id == "" {
		return
	}
	if old := q.seenRing[q.seenNext]; old != "" {
		delete(q.seen, old)
	}
	q.seenRing[q.seenNext] = id
	q.seen[id] = struct{}{}
	q.seenNext = (q.seenNext + 1) % len(q.seenRing)
}

// Start implements Queue. Workers run until ctx is cancelled or Stop returns.
func (q *Memory) Start(ctx context.Context, h Handler) error {
	if h == nil {
		return errors.New("queue: nil handler")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started {
		return errors.New("queue: already started")
	}
	q.started = true
	q.baseCtx, q.cancel = context.WithCancelCause(ctx)
	for range q.opts.Workers {
		q.wg.Add(1)
		go q.work(h)
	}
	// Wake the workers when the caller's context ends so they can exit.
	go func() {
		<-q.baseCtx.Done()
		q.mu.Lock()
		q.stopping = true
		q.cond.Broadcast()
		q.mu.Unlock()
	}()
	return nil
}

// Stop implements Queue: it refuses new jobs, lets workers drain the queue until ctx's
// deadline, then cancels what still runs with ErrStopped and drops what is still queued.
func (q *Memory) Stop(ctx context.Context) error {
	q.mu.Lock()
	q.stopping = true
	started := q.started
	q.cond.Broadcast()
	q.mu.Unlock()
	if !started {
		return nil
	}
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	select {
	case <-done:
		q.cancel(ErrStopped)
		q.mu.Lock()
		q.dropScheduledLocked()
		q.mu.Unlock()
		return nil
	case <-ctx.Done():
	}
	q.cancel(ErrStopped)
	// A handler that ignores its context must not hold the process: give it a moment, then give up.
	stuck := 0
	select {
	case <-done:
	case <-time.After(stopGrace):
		q.mu.Lock()
		stuck = len(q.running)
		q.mu.Unlock()
	}
	q.mu.Lock()
	q.dropScheduledLocked()
	left := len(q.pending)
	for k := range q.pending {
		delete(q.pending, k)
	}
	q.order = nil
	q.m.Depth.Set(0)
	q.mu.Unlock()
	if left > 0 || stuck > 0 {
		q.m.Dropped.WithLabelValues("abandoned").Add(float64(left))
		return fmt.Errorf("queue: stopped with %d queued jobs abandoned and %d running jobs not stopping: %w", left, stuck, ctx.Err())
	}
	return nil
}

// dropScheduledLocked drops the jobs still waiting for their time (a look scheduled minutes
// ahead cannot run before the stop ends), counting and logging them as abandoned; q.mu is held.
func (q *Memory) dropScheduledLocked() {
	for k, w := range q.scheduled {
		w.timer.Stop()
		delete(q.scheduled, k)
		q.m.Dropped.WithLabelValues("abandoned").Inc()
		q.opts.Logger.Warn().Str("job_key", k).Str("head_sha", w.head).Msg("scheduled job dropped at stop")
	}
}

// stopGrace is how long Stop waits, after its deadline, for cancelled jobs to return.
const stopGrace = time.Second

// Len returns the number of queued and running jobs.
func (q *Memory) Len() (queued, running int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending), len(q.running)
}

// next blocks until a job whose key is not running is queued, or the queue stops draining.
func (q *Memory) next() (Job, context.Context, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.baseCtx.Err() != nil {
			return Job{}, nil, false
		}
		if i := q.pickLocked(); i >= 0 {
			key := q.order[i]
			job := *q.pending[key]
			q.perInst[job.InstallationID]++
			delete(q.pending, key)
			q.order = append(q.order[:i:i], q.order[i+1:]...)
			ctx, cancel := context.WithCancelCause(q.baseCtx)
			q.running[key] = &run{job: job, cancel: cancel}
			q.m.Depth.Set(float64(len(q.pending)))
			q.m.Running.Set(float64(len(q.running)))
			return job, ctx, true
		}
		if q.stopping && len(q.pending) == 0 {
			return Job{}, nil, false
		}
		q.cond.Wait()
	}
}

func (q *Memory) work(h Handler) {
	defer q.wg.Done()
	for {
		job, ctx, ok := q.next()
		if !ok {
			return
		}
		q.m.Age.Observe(q.opts.Now().Sub(job.EnqueuedAt).Seconds())
		err := q.safeRun(ctx, h, job)
		q.finish(ctx, job, err)
	}
}

// safeRun calls h and turns a panic into a *PanicError so one bad job cannot stop a worker.
func (q *Memory) safeRun(ctx context.Context, h Handler, job Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return h(ctx, job)
}

func (q *Memory) finish(ctx context.Context, job Job, err error) {
	cancelled := ctx.Err() != nil // read before the run's own cancel below
	q.mu.Lock()
	if r, ok := q.running[job.Key]; ok {
		r.cancel(nil)
		delete(q.running, job.Key)
		if q.perInst[job.InstallationID]--; q.perInst[job.InstallationID] <= 0 {
			delete(q.perInst, job.InstallationID)
		}
	}
	if _, queued := q.pending[job.Key]; !queued {
		if _, waits := q.scheduled[job.Key]; !waits {
			delete(q.newest, job.Key) // bounded by the keys with work
		}
	}
	q.m.Running.Set(float64(len(q.running)))
	q.cond.Broadcast()
	q.mu.Unlock()

	log := q.opts.Logger.With().Str("job_key", job.Key).Str("github_delivery_id", job.DeliveryID).
		Str("head_sha", job.HeadSHA).Logger()
	var pe *PanicError
	switch {
	case err == nil:
		q.m.Finished.WithLabelValues("ok").Inc()
		return
	case errors.As(err, &pe):
		q.m.Panics.Inc()
		q.m.Finished.WithLabelValues("panic").Inc()
		log.Error().Interface("panic", pe.Value).Bytes("stack", pe.Stack).Msg("review job panicked")
	case cancelled && errors.Is(err, context.Canceled) || errors.Is(err, ErrSuperseded) || errors.Is(err, ErrStopped):
		q.m.Finished.WithLabelValues("cancelled").Inc()
		log.Info().Err(context.Cause(ctx)).Msg("review job cancelled")
		return
	case IsPermanent(err):
		q.m.Finished.WithLabelValues("permanent").Inc()
		log.Warn().Err(err).Msg("review job failed permanently")
	default:
		q.m.Finished.WithLabelValues("error").Inc()
		log.Error().Err(err).Msg("review job failed")
	}
	if q.opts.OnError != nil {
		q.opts.OnError(job, err)
	}
}
