package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lensgate/lensgate/handlers/queue"
)

// Crash recovery. River returns a running job whose worker died only after RescueStuckJobsAfter
// (at least the job timeout, 15 minutes by default), and it cannot tell a dead worker from a slow
// review. So each running review holds a lease row that its worker renews every LeaseTTL/4; a
// replica whose worker stops renewing (killed, out of memory, node lost) is found by any other
// replica within LeaseTTL plus one check, which cancels the dead attempt and queues the same
// review again as a new job of the subject. A live worker that cannot renew for LeaseTTL/2
// cancels its own attempt, so two workers never run one review at once; and since the new job
// becomes the subject's current job, the old one can no longer publish.

// ErrLeaseLost is the cancellation cause of a job whose worker could not keep its lease.
var ErrLeaseLost = errors.New("durable queue: job lease lost (another worker may have taken the job over)")

// leaseQueries are the lease statements with the backend's database clock spliced in, so that
// replicas on machines whose clocks differ agree on a lease's age.
type leaseQueries struct {
	acquire, renew, release, expired, take, finalize string
	// begin and end are an attempt's start (current-job check, lease, begun head, older open
	// heads) and end (release, concluded heads) as one statement each, for databases with
	// data-modifying CTEs and arrays; empty, the steps run one by one in a transaction.
	begin, end string
	// unleased finds running reviews that never got a lease: their worker died between taking
	// them and writing it (River takes several jobs at once); unleasedStill re-checks one.
	unleased, unleasedStill string
}

func newLeaseQueries(nowMS, nowTS, attemptedMS string) leaseQueries {
	r := strings.NewReplacer("{now_ms}", nowMS, "{now_ts}", nowTS, "{attempted_ms}", attemptedMS)
	return leaseQueries{
		acquire: r.Replace(`INSERT INTO lensgate_lease (job_id, client_id, renewed_at) VALUES ($1, $2, {now_ms})
			ON CONFLICT (job_id) DO UPDATE SET client_id = excluded.client_id, renewed_at = excluded.renewed_at`),
		renew: r.Replace(`UPDATE lensgate_lease SET renewed_at = {now_ms} WHERE job_id = $1 AND client_id = $2`),
		// release keeps the row with an empty client id: River records the job's end a moment
		// after the worker returns, and until then the job must look neither expired nor
		// unleased. A released lease still running a lease period later expires like any other:
		// its process stopped before River recorded the end, and nobody else would take it over.
		release: r.Replace(`UPDATE lensgate_lease SET client_id = '', renewed_at = {now_ms} WHERE job_id = $1 AND client_id = $2`),
		expired: r.Replace(`SELECT l.job_id FROM lensgate_lease l JOIN river_job j ON j.id = l.job_id
			WHERE j.state = 'running' AND l.renewed_at < {now_ms} - $1 ORDER BY l.job_id LIMIT 100`),
		// take claims an expired lease for the caller's transaction; a renewal or another
		// replica's claim in between leaves nothing to delete.
		take: r.Replace(`DELETE FROM lensgate_lease WHERE job_id = $1 AND renewed_at < {now_ms} - $2`),
		finalize: r.Replace(`UPDATE river_job SET state = 'cancelled', finalized_at = {now_ts}
			WHERE id = $1 AND state = 'running'`),
		unleased: r.Replace(`SELECT j.id FROM river_job j WHERE j.state = 'running' AND j.kind = 'lensgate_review'
			AND {attempted_ms} < {now_ms} - $1
			AND NOT EXISTS (SELECT 1 FROM lensgate_lease l WHERE l.job_id = j.id) ORDER BY j.id LIMIT 100`),
		unleasedStill: r.Replace(`SELECT count(*) FROM river_job j WHERE j.id = $1 AND j.state = 'running'
			AND {attempted_ms} < {now_ms} - $2
			AND NOT EXISTS (SELECT 1 FROM lensgate_lease l WHERE l.job_id = j.id)`),
	}
}

// pgNowMS is PostgreSQL's clock in milliseconds.
const pgNowMS = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

var (
	postgresLease = withCombinedAttempt(newLeaseQueries(pgNowMS, `now()`,
		`(extract(epoch FROM j.attempted_at) * 1000)::bigint`), pgNowMS)
	sqliteLease = newLeaseQueries(`CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`, `datetime('now', 'subsec')`,
		`CAST((julianday(j.attempted_at) - 2440587.5) * 86400000 AS INTEGER)`)
)

// withCombinedAttempt adds the one-statement start and end of an attempt (PostgreSQL). begin
// takes the subject key, job id, client id, head and the time in seconds; it leases the job and
// records the head only when the job is still its subject's current one, and returns the
// subject's current job and head and, then, the older heads whose reviews began and never
// completed (as sqlOpenHeads). end takes the job id, client id, whether the job completed, the
// subject key and the heads to forget.
func withCombinedAttempt(lq leaseQueries, nowMS string) leaseQueries {
	r := strings.NewReplacer("{now_ms}", nowMS)
	lq.begin = r.Replace(`WITH cur AS (
			SELECT job_id, head_sha FROM lensgate_subject WHERE subject_key = $1::text
		), ok AS (
			SELECT 1 FROM cur WHERE job_id = $2::bigint
		), lease AS (
			INSERT INTO lensgate_lease (job_id, client_id, renewed_at) SELECT $2::bigint, $3::text, {now_ms} FROM ok
			ON CONFLICT (job_id) DO UPDATE SET client_id = excluded.client_id, renewed_at = excluded.renewed_at
			RETURNING 1
		), begun AS (
			INSERT INTO lensgate_begun (subject_key, head_sha, begun_at) SELECT $1::text, $4::text, $5::bigint FROM ok
			WHERE $4::text <> ''
			ON CONFLICT (subject_key, head_sha) DO NOTHING
			RETURNING 1
		)
		SELECT coalesce((SELECT job_id FROM cur), 0), coalesce((SELECT head_sha FROM cur), ''),
			CASE WHEN $4::text <> '' AND EXISTS (SELECT 1 FROM ok) THEN ARRAY(
				SELECT head_sha FROM lensgate_begun WHERE subject_key = $1::text AND head_sha <> $4::text
				ORDER BY begun_at DESC LIMIT 20) ELSE '{}'::text[] END`)
	lq.end = r.Replace(`WITH released AS (
			UPDATE lensgate_lease SET client_id = '', renewed_at = {now_ms} WHERE job_id = $1::bigint AND client_id = $2::text
			RETURNING 1
		)
		DELETE FROM lensgate_begun WHERE $3::boolean AND subject_key = $4::text AND head_sha = ANY($5::text[])`)
	return lq
}

// holdLease checks that jobID is still its subject's current job (else the error wraps
// queue.ErrNotCurrent and nothing is written), takes the lease of the starting attempt and keeps
// renewing it until release is called. When renewal shows another replica took the job over, or
// fails for half the lease period, it cancels ctx with ErrLeaseLost. In the same statement or
// transaction it records that the review of head begins and returns the subject's older heads
// whose reviews began and never completed (see WithOpenHeads); release(completed) forgets those
// and head when the job completed.
func (q *riverQueue[TTx]) holdLease(ctx context.Context, jobID int64, key, head string) (context.Context, []string, func(completed bool), error) {
	current, currentHead, open, err := q.beginAttempt(ctx, jobID, key, head)
	if err != nil {
		return ctx, nil, nil, fmt.Errorf("durable queue: take job lease: %w", err)
	}
	if current != jobID {
		return ctx, nil, nil, fmt.Errorf("job %d for %s: %w", jobID, key, &queue.SupersededError{Head: currentHead})
	}
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		every := q.opts.LeaseTTL / 4
		t := time.NewTicker(every)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			n, err := q.leaseRenew(ctx, jobID)
			switch {
			case err == nil && n == 1:
				last = time.Now()
			case err == nil:
				q.log.Warn().Int64("job_id", jobID).Msg("job lease taken over by another replica; stopping this attempt")
				cancel(ErrLeaseLost)
				return
			case time.Since(last) >= q.opts.LeaseTTL/2:
				q.log.Error().Err(err).Int64("job_id", jobID).Msg("job lease not renewed; stopping this attempt before another replica takes it over")
				cancel(ErrLeaseLost)
				return
			default:
				q.log.Warn().Err(err).Int64("job_id", jobID).Msg("job lease renewal failed; retrying")
			}
		}
	}()
	release := func(completed bool) {
		close(done)
		<-stopped
		cancel(nil)
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer rcancel()
		// Losing this write costs only an expired lease (the job is no longer running then) or
		// a look at the forgotten heads' check runs by the subject's next job.
		err := q.endAttempt(rctx, jobID, key, completed, append(slices.Clip(open), head))
		if err != nil {
			q.log.Warn().Err(err).Int64("job_id", jobID).Msg("job lease not released; it expires")
		}
	}
	return ctx, open, release, nil
}

// beginAttempt is the start of holdLease: it returns the subject's current job and head and,
// when that job is jobID, leases it, records head as begun and returns the older open heads. On
// PostgreSQL it is one statement in one round trip.
func (q *riverQueue[TTx]) beginAttempt(ctx context.Context, jobID int64, key, head string) (current int64, currentHead string, open []string, err error) {
	now := time.Now().Unix()
	if p, ok := q.db.(noFlushQuerier); ok && q.lq.begin != "" {
		err = p.queryNoFlush(ctx, q.lq.begin, []any{key, jobID, q.opts.ClientID, head, now}, &current, &currentHead, &open)
		return current, currentHead, open, err
	}
	err = withTxOpts(ctx, q.db, txNoFlush, func(tx TTx) error {
		err := q.db.queryRow(ctx, tx, sqlCurrentJob, []any{key}, &current, &currentHead)
		if errors.Is(err, errNoRows) || (err == nil && current != jobID) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := q.db.exec(ctx, tx, q.lq.acquire, jobID, q.opts.ClientID); err != nil {
			return err
		}
		if head == "" {
			return nil
		}
		if _, err := q.db.exec(ctx, tx, sqlBegin, key, head, now); err != nil {
			return err
		}
		return q.db.queryRows(ctx, tx, sqlOpenHeads, []any{key, head}, func(scan func(...any) error) error {
			var h string
			if err := scan(&h); err != nil {
				return err
			}
			open = append(open, h)
			return nil
		})
	})
	return current, currentHead, open, err
}

// endAttempt is the end of holdLease: it releases the lease and, when the job completed,
// forgets heads as begun. On PostgreSQL it is one statement in one round trip.
func (q *riverQueue[TTx]) endAttempt(ctx context.Context, jobID int64, key string, completed bool, heads []string) error {
	heads = slices.DeleteFunc(heads, func(h string) bool { return h == "" })
	if p, ok := q.db.(noFlushQuerier); ok && q.lq.end != "" {
		return p.queryNoFlush(ctx, q.lq.end, []any{jobID, q.opts.ClientID, completed, key, heads})
	}
	return withTxOpts(ctx, q.db, txNoFlush, func(tx TTx) error {
		if _, err := q.db.exec(ctx, tx, q.lq.release, jobID, q.opts.ClientID); err != nil || !completed {
			return err
		}
		for _, h := range heads {
			if _, err := q.db.exec(ctx, tx, sqlConcluded, key, h); err != nil {
				return err
			}
		}
		return nil
	})
}

func (q *riverQueue[TTx]) leaseRenew(ctx context.Context, jobID int64) (int64, error) {
	var n int64
	err := withTxOpts(ctx, q.db, txNoFlush, func(tx TTx) error {
		var err error
		n, err = q.db.exec(ctx, tx, q.lq.renew, jobID, q.opts.ClientID)
		return err
	})
	return n, err
}

// watchLeases runs on every worker replica until ctx ends, taking over the jobs of dead workers.
func (q *riverQueue[TTx]) watchLeases(ctx context.Context) {
	t := time.NewTicker(q.opts.LeaseTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := q.takeOverExpired(ctx); err != nil && ctx.Err() == nil {
			q.log.Warn().Err(err).Msg("checking job leases failed")
		}
	}
}

// takeOverExpired takes over every running review whose lease expired, and every one that has
// been running for a lease period without ever getting one.
func (q *riverQueue[TTx]) takeOverExpired(ctx context.Context) error {
	ttl := q.opts.LeaseTTL.Milliseconds()
	for _, c := range []struct {
		find  string
		claim func(tx TTx, id int64) (bool, error)
	}{
		{q.lq.expired, func(tx TTx, id int64) (bool, error) {
			n, err := q.db.exec(ctx, tx, q.lq.take, id, ttl)
			return n > 0, err // none: renewed meanwhile, or another replica took it
		}},
		{q.lq.unleased, func(tx TTx, id int64) (bool, error) {
			var n int64
			err := q.db.queryRow(ctx, tx, q.lq.unleasedStill, []any{id, ttl}, &n)
			return n > 0, err
		}},
	} {
		var ids []int64
		err := withTx(ctx, q.db, func(tx TTx) error {
			return q.db.queryRows(ctx, tx, c.find, []any{ttl}, func(scan func(...any) error) error {
				var id int64
				if err := scan(&id); err != nil {
					return err
				}
				ids = append(ids, id)
				return nil
			})
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := q.takeOver(ctx, id, c.claim); err != nil {
				return fmt.Errorf("take over job %d: %w", id, err)
			}
		}
	}
	return nil
}

// takeOver cancels the dead attempt of job id, once claim confirms it in the transaction, and,
// if it is still its subject's current job, queues the same review again as a new job marked
// resumed. A job whose workers died MaxAttempts times is given up (a dead letter): it is likely
// what kills them.
func (q *riverQueue[TTx]) takeOver(ctx context.Context, id int64, claim func(tx TTx, id int64) (bool, error)) error {
	var resumedAs int64
	var args reviewArgs
	gaveUp := false
	err := withTx(ctx, q.db, func(tx TTx) error {
		if ok, err := claim(tx, id); err != nil || !ok {
			return err
		}
		row, err := q.client.JobGetTx(ctx, tx, id)
		if err != nil {
			return fmt.Errorf("read job: %w", err)
		}
		if row.State != rivertype.JobStateRunning || row.Kind != (reviewArgs{}).Kind() {
			return nil
		}
		if err := json.Unmarshal(row.EncodedArgs, &args); err != nil {
			return fmt.Errorf("decode job: %w", err)
		}
		var head string
		var current int64
		if err := q.db.queryRow(ctx, tx, sqlLockSubject, []any{args.Key, time.Now().Unix()}, &head, &current); err != nil {
			return fmt.Errorf("lock subject: %w", err)
		}
		// River's cancellation notifies a worker that is alive after all, and marks the job
		// so that River's own rescuer leaves it alone; the job then ends here.
		if err := q.cancel(ctx, tx, id); err != nil {
			return err
		}
		if _, err := q.db.exec(ctx, tx, q.lq.finalize, id); err != nil {
			return fmt.Errorf("end dead attempt: %w", err)
		}
		if current != id {
			return nil // superseded meanwhile: the newer job reviews the subject
		}
		if args.Job.Resumed+1 >= q.opts.MaxAttempts {
			gaveUp = true
			return nil
		}
		args.Job.Resumed++
		args.Rerun = "resume-" + strconv.FormatInt(id, 10)
		ins, err := q.client.InsertTx(ctx, tx, args, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeStates}})
		if err != nil {
			return fmt.Errorf("queue the review again: %w", err)
		}
		resumedAs = ins.Job.ID
		if _, err := q.db.exec(ctx, tx, sqlUpdateSubject, head, ins.Job.ID, time.Now().Unix(), args.Key); err != nil {
			return fmt.Errorf("update subject: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	log := q.log.With().Int64("job_id", id).Str("key", args.Key).Str("head_sha", args.Head).Logger()
	switch {
	case gaveUp:
		q.metrics.deadLetters.WithLabelValues("workers_died").Inc()
		log.Error().Int("resumed", args.Job.Resumed).Msg("job's worker died again; given up (dead letter)")
	case resumedAs != 0:
		q.metrics.resumed.Inc()
		log.Warn().Int64("resumed_as", resumedAs).Int("resumed", args.Job.Resumed).Msg("job's worker stopped renewing its lease; job taken over")
	}
	return nil
}
