package durable

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lensgate/lensgate/handlers/queue"
)

// reviewWorker runs review jobs with the handler given to Start.
type reviewWorker[TTx any] struct {
	river.WorkerDefaults[reviewArgs]
	q *riverQueue[TTx]
}

func (w *reviewWorker[TTx]) Work(ctx context.Context, job *river.Job[reviewArgs]) error {
	q := w.q
	h := q.handler.Load()
	if h == nil {
		return errors.New("durable queue: no handler")
	}
	log := q.log.With().
		Int64("job_id", job.ID).
		Int("attempt", job.Attempt).
		Str("key", job.Args.Key).
		Str("head_sha", job.Args.Head).
		Str("delivery_id", job.Args.Job.DeliveryID).
		Logger()

	check := func(ctx context.Context) error { return q.checkCurrent(ctx, job.Args.Key, job.ID) }
	superseded := func(err error) error {
		q.metrics.finished("superseded", 0)
		log.Info().Msg("job superseded before it started")
		return river.JobCancel(err)
	}
	if snooze := q.yieldToOthers(ctx, log, job.Args.Job.InstallationID); snooze {
		// A job that is no longer current ends here rather than coming back.
		if err := check(ctx); errors.Is(err, queue.ErrNotCurrent) {
			return superseded(err)
		}
		return river.JobSnooze(snoozeFor(job.JobRow))
	}
	defer q.fair.enter(job.Args.Job.InstallationID)()

	// The lease is taken only by the subject's current job, in one step with that check.
	ctx, open, release, err := q.holdLease(ctx, job.ID, job.Args.Key, job.Args.Head)
	if errors.Is(err, queue.ErrNotCurrent) {
		return superseded(err)
	}
	if err != nil {
		return err
	}
	start := time.Now()
	err = (*h)(queue.WithOpenHeads(queue.WithResumable(queue.WithCurrentCheck(ctx, check)), open), job.Args.Job)
	took := time.Since(start)
	release(err == nil)
	if err == nil {
		q.metrics.finished("completed", took)
		log.Info().Dur("took", took).Msg("job completed")
		return nil
	}

	// A job whose context was cancelled because a newer head arrived ends as superseded, not as
	// a failure, whatever error the handler returned on the way out.
	if cerr := check(context.WithoutCancel(ctx)); errors.Is(cerr, queue.ErrNotCurrent) || errors.Is(err, queue.ErrNotCurrent) {
		q.metrics.finished("superseded", took)
		log.Info().Dur("took", took).Msg("job superseded while running")
		return river.JobCancel(fmt.Errorf("%w: %w", queue.ErrNotCurrent, err))
	}
	if queue.IsPermanent(err) {
		q.metrics.finished("permanent", took)
		q.metrics.deadLetters.WithLabelValues("permanent").Inc()
		log.Error().Err(err).Msg("job failed permanently, not retried (dead letter)")
		return river.JobCancel(err)
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		err = fmt.Errorf("job timed out after %s: %w", took.Round(time.Millisecond), err)
	}
	if job.Attempt >= job.MaxAttempts {
		q.metrics.finished("discarded", took)
		q.metrics.deadLetters.WithLabelValues("attempts_exhausted").Inc()
		log.Error().Err(err).Int("max_attempts", job.MaxAttempts).Msg("job failed on its last attempt, discarded (dead letter)")
		return err
	}
	q.metrics.finished("retry", took)
	log.Warn().Err(err).Int("max_attempts", job.MaxAttempts).Msg("job failed, will retry")
	return err
}

// maxBodies bounds the body digests kept for the replay check (about 150 MB on disk); beyond it
// the oldest go before the retention period ends.
const maxBodies = 1_000_000

// pruneWorker forgets delivery ids, body digests and subject heads older than the retention
// period, and body digests beyond maxBodies.
type pruneWorker[TTx any] struct {
	river.WorkerDefaults[pruneArgs]
	q         *riverQueue[TTx]
	maxBodies int // 0: maxBodies
}

func (w *pruneWorker[TTx]) Work(ctx context.Context, _ *river.Job[pruneArgs]) error {
	cutoff := time.Now().Add(-w.q.opts.Retention).Unix()
	return withTx(ctx, w.q.db, func(tx TTx) error {
		if _, err := w.q.db.exec(ctx, tx, sqlPruneDeliveries, cutoff); err != nil {
			return fmt.Errorf("prune deliveries: %w", err)
		}
		if _, err := w.q.db.exec(ctx, tx, sqlPruneBodies, cutoff); err != nil {
			return fmt.Errorf("prune bodies: %w", err)
		}
		limit := w.maxBodies
		if limit <= 0 {
			limit = maxBodies
		}
		if _, err := w.q.db.exec(ctx, tx, sqlCapBodies, limit); err != nil {
			return fmt.Errorf("cap bodies: %w", err)
		}
		if _, err := w.q.db.exec(ctx, tx, sqlPruneSubjects, cutoff); err != nil {
			return fmt.Errorf("prune subjects: %w", err)
		}
		if _, err := w.q.db.exec(ctx, tx, sqlPruneLeases, cutoff*1000, time.Now().Add(-time.Hour).UnixMilli()); err != nil {
			return fmt.Errorf("prune leases: %w", err)
		}
		if _, err := w.q.db.exec(ctx, tx, sqlPruneBegun, cutoff); err != nil {
			return fmt.Errorf("prune begun heads: %w", err)
		}
		return nil
	})
}

// backoffPolicy doubles the wait after each failed attempt, from base up to max, with ±10 %
// jitter so that replicas do not retry in lockstep.
type backoffPolicy struct{ base, max time.Duration }

func (p backoffPolicy) delay(attempt int) time.Duration {
	d := p.base
	for i := 1; i < attempt && d < p.max; i++ {
		d *= 2
	}
	return min(d, p.max)
}

func (p backoffPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	d := p.delay(job.Attempt)
	jitter := time.Duration((rand.Float64()*0.2 - 0.1) * float64(d))
	return time.Now().Add(d + jitter)
}
