package durable

import (
	"context"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
)

// execSQL runs one statement in the queue's database, for tests that set up a state River
// itself would only reach through a crash.
func (q *riverQueue[TTx]) execSQL(ctx context.Context, query string, args ...any) error {
	return withTx(ctx, q.db, func(tx TTx) error {
		_, err := q.db.exec(ctx, tx, query, args...)
		return err
	})
}

func (q *riverQueue[TTx]) queryInt(ctx context.Context, query string) (int64, error) {
	var n int64
	err := q.db.queryOne(ctx, query, nil, &n)
	return n, err
}

type sqlExecer interface {
	execSQL(ctx context.Context, query string, args ...any) error
	queryInt(ctx context.Context, query string) (int64, error)
}

// A review that a worker took from the queue but died before it wrote the job's lease (River
// takes several jobs at once) is taken over too, once it has been running for a lease period.
func TestUnleasedRunningJobIsTakenOver(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := be.dsn(t)
			web := open(t, dsn, Options{InsertOnly: true})
			job := prJob("acme/died#1", "died-head", "d-died")
			if err := web.Enqueue(ctx, job); err != nil {
				t.Fatal(err)
			}
			// What River's fetch wrote before the process died: running, attempt 1, a while ago.
			stale := map[string]string{
				"sqlite":   `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = datetime('now', '-10 seconds') WHERE kind = 'lensgate_review'`,
				"postgres": `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '10 seconds' WHERE kind = 'lensgate_review'`,
			}[be.name]
			if err := web.(sqlExecer).execSQL(ctx, stale); err != nil {
				t.Fatal(err)
			}
			opts := testOptions()
			opts.LeaseTTL = time.Second
			w := open(t, dsn, opts)
			ran := make(chan queue.Job, 4)
			if err := w.Start(ctx, func(_ context.Context, j queue.Job) error { ran <- j; return nil }); err != nil {
				t.Fatal(err)
			}
			select {
			case j := <-ran:
				if j.Resumed != 1 || j.HeadSHA != job.HeadSHA {
					t.Fatalf("ran %+v, want the same review resumed once", j)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the unleased running job was never taken over")
			}
			waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, w)) })
			checkTakenOver(t, jobsOf(t, w), job.Key)
			if be.name == "sqlite" {
				// The take-over's own attempt time, written by River, reads as a time.
				n, err := w.(sqlExecer).queryInt(ctx, `SELECT count(*) FROM river_job WHERE attempted_at IS NOT NULL AND julianday(attempted_at) IS NULL`)
				if err != nil || n != 0 {
					t.Fatalf("%d attempt times SQLite cannot read (%v)", n, err)
				}
			}
		})
	}
}

// A worker that released its lease and stopped before River recorded the job's end (a graceful
// stop hands the review back, the process exits a moment later) leaves the job running with a
// released lease: it is taken over once the release is a lease period old.
func TestReleasedLeaseOfARunningJobIsTakenOver(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := be.dsn(t)
			web := open(t, dsn, Options{InsertOnly: true})
			job := prJob("acme/stopped#1", "stopped-head", "d-stopped")
			if err := web.Enqueue(ctx, job); err != nil {
				t.Fatal(err)
			}
			stale := map[string]string{
				"sqlite":   `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = datetime('now', '-10 seconds') WHERE kind = 'lensgate_review'`,
				"postgres": `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '10 seconds' WHERE kind = 'lensgate_review'`,
			}[be.name]
			if err := web.(sqlExecer).execSQL(ctx, stale); err != nil {
				t.Fatal(err)
			}
			// The lease as release leaves it: no client, released ten seconds ago.
			if err := web.(sqlExecer).execSQL(ctx, `INSERT INTO lensgate_lease (job_id, client_id, renewed_at)
				SELECT id, '', $1 FROM river_job WHERE kind = 'lensgate_review'`, time.Now().Add(-10*time.Second).UnixMilli()); err != nil {
				t.Fatal(err)
			}
			opts := testOptions()
			opts.LeaseTTL = time.Second
			w := open(t, dsn, opts)
			ran := make(chan queue.Job, 4)
			if err := w.Start(ctx, func(_ context.Context, j queue.Job) error { ran <- j; return nil }); err != nil {
				t.Fatal(err)
			}
			select {
			case j := <-ran:
				if j.Resumed != 1 || j.HeadSHA != job.HeadSHA {
					t.Fatalf("ran %+v, want the same review resumed once", j)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the running job with a released lease was never taken over")
			}
			waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, w)) })
			checkTakenOver(t, jobsOf(t, w), job.Key)
		})
	}
}
