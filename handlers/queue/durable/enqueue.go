package durable

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lensgate/lensgate/handlers/queue"
)

type enqueueResult string

const (
	resultQueued    enqueueResult = "queued"
	resultCoalesced enqueueResult = "coalesced"
	resultDuplicate enqueueResult = "duplicate"
	resultFull      enqueueResult = "full"
	resultError     enqueueResult = "error"
)

// Enqueue records the delivery id, then inserts a job for the subject's head unless an equal one
// is queued, running or (for a pull request head) already done, or the job's event was received
// before the one that named the subject's newest head (see olderNews), and cancels the subject's
// older job. It all happens in one transaction, under a lock on the subject's row, except that on
// PostgreSQL an older job that is already running is cancelled right after the commit (see
// cancelSuperseded).
func (q *riverQueue[TTx]) Enqueue(ctx context.Context, job queue.Job) error {
	if job.Key == "" {
		return errors.New("durable queue: job without key")
	}
	if job.EnqueuedAt.IsZero() {
		job.EnqueuedAt = time.Now().UTC()
	}
	if q.closed.Load() {
		q.metrics.observeEnqueue(resultFull, 0)
		return fmt.Errorf("%w: %w", queue.ErrFull, queue.ErrStopped)
	}
	start := time.Now()
	res, err := q.enqueue(ctx, job)
	q.metrics.observeEnqueue(res, time.Since(start))
	switch res {
	case resultDuplicate:
		return queue.ErrDuplicate
	case resultFull:
		return queue.ErrFull
	}
	if err != nil {
		return fmt.Errorf("durable queue: enqueue %s: %w", job.Key, err)
	}
	return nil
}

func (q *riverQueue[TTx]) enqueue(ctx context.Context, job queue.Job) (enqueueResult, error) {
	res := resultQueued
	var cancelAfter int64 // superseded running job to cancel once the enqueue is committed
	err := withTx(ctx, q.db, func(tx TTx) error {
		now := time.Now().Unix()
		adm, err := q.db.admit(ctx, tx, job.DeliveryID, job.Key, now, q.opts.MaxQueued > 0)
		if err != nil {
			return err
		}
		if adm.duplicate {
			res = resultDuplicate
			return queue.ErrDuplicate
		}
		head, current := adm.head, adm.current
		if job.FollowUp && head != "" && head != job.HeadSHA {
			// The subject moved on to another head; its own jobs do this work.
			res = resultCoalesced
			return nil
		}
		received := job.EnqueuedAt.UnixNano()
		if olderNews(job, head, adm.received) {
			// Concurrent deliveries commit in any order (SQLite hands its one connection to a
			// random waiter): an event received before the one that named the subject's newest
			// head is older news, and its head is not the pull request's newest.
			res = resultCoalesced
			return nil
		}
		if head == job.HeadSHA {
			received = max(received, adm.received)
		}
		rerun := ""
		if ForcesRerun(job.Reason) {
			rerun = job.DeliveryID
			if rerun == "" {
				rerun = strconv.FormatInt(time.Now().UnixNano(), 36)
			}
		}
		if rerun == "" && current != 0 && head == job.HeadSHA {
			row, err := q.client.JobGetTx(ctx, tx, current)
			switch {
			case err == nil && coalesces(row.State, job.HeadSHA != ""):
				res = resultCoalesced
				if _, err := q.db.exec(ctx, tx, sqlSubjectReceived, received, job.Key, received); err != nil {
					return fmt.Errorf("update subject: %w", err)
				}
				return nil
			case err != nil && !errors.Is(err, river.ErrNotFound):
				return fmt.Errorf("current job: %w", err)
			}
		}
		if q.opts.MaxQueued > 0 && adm.waiting >= int64(q.opts.MaxQueued) {
			res = resultFull
			return queue.ErrFull
		}
		args := reviewArgs{Key: job.Key, Head: job.HeadSHA, Rerun: rerun, Job: job}
		insertOpts := &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeStates}}
		if !job.NotBefore.IsZero() {
			insertOpts.ScheduledAt = job.NotBefore
		}
		ins, err := q.client.InsertTx(ctx, tx, args, insertOpts)
		if err != nil {
			return fmt.Errorf("insert job: %w", err)
		}
		if ins.UniqueSkippedAsDuplicate && ins.Job.ID != current {
			// An older job for this head is still active but was superseded (its cancellation
			// may not have reached its worker yet): it will not publish, so insert a fresh one.
			args.Rerun = "after-" + strconv.FormatInt(ins.Job.ID, 10)
			if ins, err = q.client.InsertTx(ctx, tx, args, insertOpts); err != nil {
				return fmt.Errorf("insert job: %w", err)
			}
		}
		if ins.UniqueSkippedAsDuplicate {
			res = resultCoalesced
		}
		if current != 0 && current != ins.Job.ID {
			cancelled, err := q.db.cancelWaiting(ctx, tx, current)
			switch {
			case err != nil:
				return fmt.Errorf("cancel superseded job: %w", err)
			case cancelled:
			case q.db.cancelAfterCommit():
				cancelAfter = current
			default:
				if err := q.cancel(ctx, tx, current); err != nil {
					return err
				}
			}
			q.metrics.superseded.Inc()
		}
		if _, err := q.db.exec(ctx, tx, sqlUpdateSubjectReceived, job.HeadSHA, ins.Job.ID, now, received, job.Key); err != nil {
			return fmt.Errorf("update subject: %w", err)
		}
		return nil
	})
	if err != nil && res != resultDuplicate && res != resultFull {
		res = resultError
	}
	if err == nil && cancelAfter != 0 {
		q.cancelSuperseded(ctx, cancelAfter)
	}
	return res, err
}

// cancel cancels a superseded job in tx with River, which also notifies the replica running it
// so that its context is cancelled at once.
func (q *riverQueue[TTx]) cancel(ctx context.Context, tx TTx, jobID int64) error {
	if _, err := q.client.JobCancelTx(ctx, tx, jobID); err != nil && !errors.Is(err, river.ErrNotFound) {
		return fmt.Errorf("cancel superseded job: %w", err)
	}
	return nil
}

// cancelSuperseded cancels a superseded running job after the enqueue committed. On PostgreSQL a
// committing transaction that notifies holds one database-wide lock until its commit is flushed
// to disk, so notifying from the enqueue's transaction would make concurrent webhooks wait for
// one another's flush. This transaction does not wait for its flush: losing it in a crash loses
// nothing, since the subject row already names the newer job and a worker checks it before
// starting and before publishing.
func (q *riverQueue[TTx]) cancelSuperseded(ctx context.Context, jobID int64) {
	// The enqueue is committed: finish even if the webhook's request goes away.
	ctx, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer done()
	err := withTxOpts(ctx, q.db, txNoFlush, func(tx TTx) error { return q.cancel(ctx, tx, jobID) })
	if err != nil {
		q.log.Warn().Err(err).Int64("job_id", jobID).Msg("superseded job not cancelled; its worker will skip it")
	}
}

// olderNews reports whether job, a webhook delivery for another head than the subject's newest
// (head), was received before the newest event naming that head (received, UnixNano; 0 when
// unknown). Such a job neither supersedes the newest job nor gets one of its own. A job without a
// delivery id is lensgate's own, queued from what GitHub shows, and never older news.
func olderNews(job queue.Job, head string, received int64) bool {
	return job.DeliveryID != "" && job.HeadSHA != "" && head != "" && head != job.HeadSHA && received != 0 &&
		job.EnqueuedAt.UnixNano() < received
}

// coalesces reports whether a new event for the same head needs no new job given the current
// job's state: it is waiting or running, or it finished a pull request head (a head is reviewed
// once; issues have no head and are triaged again).
func coalesces(state rivertype.JobState, hasHead bool) bool {
	switch state {
	case rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled:
		return true
	case rivertype.JobStateCompleted:
		return hasHead
	default: // cancelled or discarded: a new event deserves a new attempt
		return false
	}
}
