package durable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
)

// Group commit. A webhook is acknowledged only once its job is committed, and a commit costs far
// more than the few statements of one job (SQLite writes every changed page to its log again,
// PostgreSQL waits for its log to reach the disk). So Enqueue hands its job to a writer, which
// takes every job waiting at that moment, enqueues them all in one transaction and answers each
// caller after the commit: under a burst each commit carries many webhooks, and a lone webhook
// waits for nobody. The writer also serves the jobs in the order they arrived (the database/sql
// pool hands SQLite's one connection to a random waiter). See usesWriter for PostgreSQL.

const (
	// maxBatch bounds the jobs of one transaction, so that one commit never holds the writer long.
	maxBatch = 128
	// batchTimeout bounds one transaction; a caller whose context ends first stops waiting.
	batchTimeout = 30 * time.Second
)

// usesWriter reports whether a backend's enqueues go through a writer. SQLite writes one
// transaction at a time anyway, so one writer loses nothing and saves a commit per job. On
// PostgreSQL a job costs four round trips, which a writer would run one after another; there
// each webhook runs its own transaction on the pool, and the server itself shares the log
// flushes of concurrent commits.
func usesWriter(backend string) bool { return backend == "sqlite" }

type enqueueReply struct {
	res enqueueResult
	err error
}

type enqueueRequest struct {
	ctx  context.Context
	job  queue.Job
	done chan enqueueReply // buffered: the writer never waits for the caller
}

// enqueueFunc enqueues one batch in one transaction: it returns a reply per job, or an error when
// the transaction failed as a whole.
type enqueueFunc func(ctx context.Context, jobs []queue.Job) ([]enqueueReply, error)

// enqueueWriter runs the writers of a queue.
type enqueueWriter struct {
	requests chan *enqueueRequest
	write    enqueueFunc
	stop     chan struct{} // closed by close: writers finish their batch and exit
	gone     chan struct{} // closed once every writer exited
	once     sync.Once
}

func newEnqueueWriter(writers int, write enqueueFunc) *enqueueWriter {
	w := &enqueueWriter{
		requests: make(chan *enqueueRequest, 4*maxBatch),
		write:    write,
		stop:     make(chan struct{}),
		gone:     make(chan struct{}),
	}
	var wg sync.WaitGroup
	for range writers {
		wg.Go(w.run)
	}
	go func() { wg.Wait(); close(w.gone) }()
	return w
}

// submit hands job to a writer and waits for its commit. It gives up when ctx ends (the job may
// still be committed then: a redelivery of it is a duplicate) or the writers stopped.
func (w *enqueueWriter) submit(ctx context.Context, job queue.Job) (enqueueResult, error) {
	req := &enqueueRequest{ctx: ctx, job: job, done: make(chan enqueueReply, 1)}
	select {
	case w.requests <- req:
	case <-w.gone:
		return resultFull, queue.ErrStopped
	case <-ctx.Done():
		return resultError, context.Cause(ctx)
	}
	select {
	case rep := <-req.done:
		return rep.res, rep.err
	case <-w.gone:
		select {
		case rep := <-req.done:
			return rep.res, rep.err
		default:
			return resultFull, queue.ErrStopped
		}
	case <-ctx.Done():
		return resultError, fmt.Errorf("waiting for the commit: %w", context.Cause(ctx))
	}
}

// close stops the writers after their current batch and waits for them.
func (w *enqueueWriter) close() {
	w.once.Do(func() { close(w.stop) })
	<-w.gone
}

func (w *enqueueWriter) run() {
	batch := make([]*enqueueRequest, 0, maxBatch)
	for {
		batch = batch[:0]
		select {
		case <-w.stop:
			return
		case r := <-w.requests:
			batch = append(batch, r)
		}
	more:
		for len(batch) < maxBatch {
			select {
			case r := <-w.requests:
				batch = append(batch, r)
			default:
				break more
			}
		}
		w.commit(batch)
	}
}

// commit enqueues batch in one transaction and answers every request. When the transaction fails,
// each job is tried again in a transaction of its own, so that one job's error is its own.
func (w *enqueueWriter) commit(batch []*enqueueRequest) {
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- enqueueReply{resultError, context.Cause(r.ctx)}
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	// Subjects in one order in every transaction, so that concurrent writers (and replicas)
	// lock their rows in the same order; the jobs of one subject keep the order they came in.
	slices.SortStableFunc(live, func(a, b *enqueueRequest) int { return strings.Compare(a.job.Key, b.job.Key) })
	jobs := make([]queue.Job, len(live))
	for i, r := range live {
		jobs[i] = r.job
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	replies, err := w.write(ctx, jobs)
	if err == nil {
		for i, r := range live {
			r.done <- replies[i]
		}
		return
	}
	if len(live) == 1 {
		live[0].done <- enqueueReply{resultError, err}
		return
	}
	for _, r := range live {
		rep, err := w.write(ctx, []queue.Job{r.job})
		switch {
		case err != nil:
			r.done <- enqueueReply{resultError, err}
		case len(rep) != 1:
			r.done <- enqueueReply{resultError, errors.New("enqueue: no result")}
		default:
			r.done <- rep[0]
		}
	}
}
