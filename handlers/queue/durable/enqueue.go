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
	resultReplay    enqueueResult = "replay"
	resultFull      enqueueResult = "full"
	resultError     enqueueResult = "error"
)

// Enqueue records the delivery id, then inserts a job for the subject's head unless an equal one
// is queued, running or (for a pull request head) already done, or the job's event was received
// before the one that named the subject's newest head (see olderNews), and cancels the subject's
// older job. It returns once that is committed (see enqueueWriter), except that on PostgreSQL an
// older job that is already running is cancelled right after the commit (see cancelSuperseded).
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
	res, err := q.submit(ctx, job)
	q.metrics.observeEnqueue(res, time.Since(start))
	switch res {
	case resultDuplicate:
		return queue.ErrDuplicate
	case resultReplay:
		var re *queue.ReplayError
		if errors.As(err, &re) {
			return re
		}
		return &queue.ReplayError{}
	case resultFull:
		return queue.ErrFull
	}
	if errors.Is(err, queue.ErrStopped) {
		return fmt.Errorf("%w: %w", queue.ErrFull, err)
	}
	if err != nil {
		return fmt.Errorf("durable queue: enqueue %s: %w", job.Key, err)
	}
	return nil
}

// submit enqueues job through the writer or, without one, in a transaction of its own.
func (q *riverQueue[TTx]) submit(ctx context.Context, job queue.Job) (enqueueResult, error) {
	if q.writer != nil {
		return q.writer.submit(ctx, job)
	}
	replies, err := q.enqueueBatch(ctx, []queue.Job{job})
	if err != nil {
		return resultError, err
	}
	return replies[0].res, replies[0].err
}

// batchState is what the jobs of one enqueue transaction share.
type batchState struct {
	waiting     int64   // River jobs waiting to run; -1 until counted
	cancelAfter []int64 // superseded running jobs to cancel once the transaction is committed
}

// enqueueTx does one job's part of an enqueue transaction. ErrDuplicate, ErrFull and a replay
// (returned with its ReplayError) are results, not errors: they leave tx as it was, so the
// transaction's other jobs still commit. Any other error means tx must be rolled back.
func (q *riverQueue[TTx]) enqueueTx(ctx context.Context, tx TTx, job queue.Job, st *batchState) (enqueueResult, error) {
	now := time.Now().Unix()
	count := q.opts.MaxQueued > 0 && st.waiting < 0 // once per transaction, in admit's round trip
	adm, err := q.db.admit(ctx, tx, job.DeliveryID, job.Body, job.Key, now, count)
	if err != nil {
		return resultError, err
	}
	if adm.duplicate {
		return resultDuplicate, nil
	}
	if adm.replay {
		return resultReplay, &queue.ReplayError{First: adm.first}
	}
	if count {
		st.waiting = adm.waiting
	}
	head, current := adm.head, adm.current
	if job.FollowUp && head != "" && head != job.HeadSHA {
		// The subject moved on to another head; its own jobs do this work.
		return resultCoalesced, nil
	}
	received := job.EnqueuedAt.UnixNano()
	if olderNews(job, head, adm.received) {
		// Concurrent deliveries reach the queue in any order: an event received before the one
		// that named the subject's newest head is older news, and its head is not the pull
		// request's newest.
		return resultCoalesced, nil
	}
	if head == job.HeadSHA {
		received = max(received, adm.received)
	}
	rerun := ""
	if job.Reason.ForcesRerun() {
		rerun = job.DeliveryID
		if rerun == "" {
			rerun = strconv.FormatInt(time.Now().UnixNano(), 36)
		}
	}
	if rerun == "" && current != 0 && head == job.HeadSHA {
		row, err := q.client.JobGetTx(ctx, tx, current)
		switch {
		case err == nil && coalesces(row.State, job.HeadSHA != ""):
			if _, err := q.db.exec(ctx, tx, sqlSubjectReceived, received, job.Key, received); err != nil {
				return resultError, fmt.Errorf("update subject: %w", err)
			}
			return resultCoalesced, nil
		case err != nil && !errors.Is(err, river.ErrNotFound):
			return resultError, fmt.Errorf("current job: %w", err)
		}
	}
	switch full, err := q.refuseWhenFull(ctx, tx, job, adm.claimed, st); {
	case err != nil:
		return resultError, err
	case full:
		return resultFull, nil
	}
	res := resultQueued
	args := reviewArgs{Key: job.Key, Head: job.HeadSHA, Rerun: rerun, Job: job}
	insertOpts := &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeStates}}
	if !job.NotBefore.IsZero() {
		insertOpts.ScheduledAt = job.NotBefore
	}
	ins, err := q.insertReview(ctx, tx, args, insertOpts)
	if err != nil {
		return resultError, fmt.Errorf("insert job: %w", err)
	}
	if ins.UniqueSkippedAsDuplicate && ins.Job.ID != current {
		// An older job for this head is still active but was superseded (its cancellation
		// may not have reached its worker yet): it will not publish, so insert a fresh one.
		args.Rerun = "after-" + strconv.FormatInt(ins.Job.ID, 10)
		if ins, err = q.insertReview(ctx, tx, args, insertOpts); err != nil {
			return resultError, fmt.Errorf("insert job: %w", err)
		}
	}
	if ins.UniqueSkippedAsDuplicate {
		res = resultCoalesced
	} else {
		st.waiting++
	}
	if current == 0 || current == ins.Job.ID {
		if _, err := q.db.exec(ctx, tx, sqlUpdateSubjectReceived, job.HeadSHA, ins.Job.ID, now, received, job.Key); err != nil {
			return resultError, fmt.Errorf("update subject: %w", err)
		}
		return res, nil
	}
	cancelled, err := q.db.supersede(ctx, tx, current, subjectUpdate{key: job.Key, head: job.HeadSHA, job: ins.Job.ID, now: now, received: received})
	switch {
	case err != nil:
		return resultError, fmt.Errorf("supersede job %d: %w", current, err)
	case cancelled:
		st.waiting--
	case q.db.cancelAfterCommit():
		st.cancelAfter = append(st.cancelAfter, current)
	default:
		row, err := q.client.JobCancelTx(ctx, tx, current)
		switch {
		case err == nil && row.State == rivertype.JobStateCancelled:
			st.waiting-- // it had not started; a running one still counts until it stops
		case err != nil && !errors.Is(err, river.ErrNotFound):
			return resultError, fmt.Errorf("cancel superseded job: %w", err)
		}
	}
	q.metrics.superseded.Inc()
	return res, nil
}

// refuseWhenFull reports whether the queue holds MaxQueued waiting jobs already. A refused job's
// delivery id and body (when this job claimed it) are forgotten, so that GitHub's redelivery is
// not taken for a duplicate or a replay.
func (q *riverQueue[TTx]) refuseWhenFull(ctx context.Context, tx TTx, job queue.Job, claimedBody bool, st *batchState) (bool, error) {
	if q.opts.MaxQueued <= 0 {
		return false, nil
	}
	if st.waiting < 0 {
		if err := q.db.queryRow(ctx, tx, sqlCountWaiting, nil, &st.waiting); err != nil {
			return false, fmt.Errorf("count waiting jobs: %w", err)
		}
	}
	if st.waiting < int64(q.opts.MaxQueued) {
		return false, nil
	}
	if job.DeliveryID != "" {
		if _, err := q.db.exec(ctx, tx, sqlForgetDelivery, job.DeliveryID); err != nil {
			return false, fmt.Errorf("forget delivery: %w", err)
		}
	}
	if claimedBody {
		if _, err := q.db.exec(ctx, tx, sqlForgetBody, job.Body.Digest); err != nil {
			return false, fmt.Errorf("forget body: %w", err)
		}
	}
	return true, nil
}

// enqueueBatch enqueues jobs in one transaction (see enqueueWriter).
func (q *riverQueue[TTx]) enqueueBatch(ctx context.Context, jobs []queue.Job) ([]enqueueReply, error) {
	replies := make([]enqueueReply, len(jobs))
	st := batchState{waiting: -1}
	err := withTx(ctx, q.db, func(tx TTx) error {
		for i, job := range jobs {
			res, err := q.enqueueTx(ctx, tx, job, &st)
			if err != nil && res != resultReplay {
				return fmt.Errorf("enqueue %s: %w", job.Key, err)
			}
			replies[i] = enqueueReply{res: res, err: err}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ids := st.cancelAfter; len(ids) > 0 {
		q.after.Go(func() { q.cancelSuperseded(ids) })
	}
	return replies, nil
}

// cancel cancels a superseded job in tx with River, which also notifies the replica running it
// so that its context is cancelled at once.
func (q *riverQueue[TTx]) cancel(ctx context.Context, tx TTx, jobID int64) error {
	if _, err := q.client.JobCancelTx(ctx, tx, jobID); err != nil && !errors.Is(err, river.ErrNotFound) {
		return fmt.Errorf("cancel superseded job: %w", err)
	}
	return nil
}

// cancelSuperseded cancels superseded running jobs after their enqueue committed, while the
// webhooks are answered. On PostgreSQL a committing transaction that notifies holds one
// database-wide lock until its commit is flushed to disk, so notifying from the enqueue's
// transaction would make concurrent webhooks wait for one another's flush. This transaction does
// not wait for its flush: losing it in a crash loses nothing, since the subject row already names
// the newer job and a worker checks it before starting and before publishing.
func (q *riverQueue[TTx]) cancelSuperseded(jobIDs []int64) {
	ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	err := withTxOpts(ctx, q.db, txNoFlush, func(tx TTx) error {
		for _, id := range jobIDs {
			if err := q.cancel(ctx, tx, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		q.log.Warn().Err(err).Ints64("job_ids", jobIDs).Msg("superseded jobs not cancelled; their workers will skip them")
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
