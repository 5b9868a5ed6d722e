package durable

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
)

// bodyJob is prJob for a webhook body (digest) sent under delivery.
func bodyJob(key, head, delivery, digest string) queue.Job {
	j := prJob(key, head, delivery)
	j.Body = queue.Body{Digest: digest, Delivery: delivery}
	return j
}

// A body accepted by one replica is a replay on another under a new delivery id; the jobs of one
// delivery share its body; a refused job leaves its body unrecorded.
func TestSharedReplayCheck(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := be.dsn(t)
			opts := testOptions()
			opts.InsertOnly = true
			opts.MaxQueued = 3
			r1, r2 := open(t, dsn, opts), open(t, dsn, opts)

			if err := r1.Enqueue(ctx, bodyJob("o/r#1", "h1", "A", "body-1")); err != nil {
				t.Fatalf("first delivery: %v", err)
			}
			err := r2.Enqueue(ctx, bodyJob("o/r#1", "h1", "B", "body-1"))
			var re *queue.ReplayError
			if !errors.As(err, &re) || !errors.Is(err, queue.ErrReplay) || re.First != "A" {
				t.Fatalf("replay under B: %v, want a replay of A", err)
			}
			// Sent again, the replay answers the same: its delivery id was not kept.
			if err := r2.Enqueue(ctx, bodyJob("o/r#1", "h1", "B", "body-1")); !errors.Is(err, queue.ErrReplay) {
				t.Fatalf("replay sent again: %v, want ErrReplay", err)
			}
			// GitHub's redelivery keeps the id: a duplicate, as before.
			if err := r2.Enqueue(ctx, bodyJob("o/r#1", "h1", "A", "body-1")); !errors.Is(err, queue.ErrDuplicate) {
				t.Fatalf("redelivery of A: %v, want ErrDuplicate", err)
			}
			// Another job of delivery A (its own derived id) is not a replay of A.
			sibling := bodyJob("o/r#2", "h1", "A/2", "body-1")
			sibling.Body.Delivery = "A"
			if err := r2.Enqueue(ctx, sibling); err != nil {
				t.Fatalf("second job of delivery A: %v", err)
			}
			// A new body is a new delivery.
			if err := r2.Enqueue(ctx, bodyJob("o/r#3", "h2", "C", "body-2")); err != nil {
				t.Fatalf("new body: %v", err)
			}
			// The queue is full now: a refused job forgets its body as it forgets its id.
			if err := r1.Enqueue(ctx, bodyJob("o/r#4", "h3", "D", "body-3")); !errors.Is(err, queue.ErrFull) {
				t.Fatalf("fourth job: %v, want ErrFull", err)
			}
			jobs := jobsOf(t, r1)
			if len(jobs) != 3 {
				t.Fatalf("jobs %+v, want 3 (A, A/2, C)", jobs)
			}
			if err := r1.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			worker := open(t, dsn, testOptions())
			rec := &recorder{}
			if err := worker.Start(ctx, rec.handle); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, worker)) })
			// Once there is room, the refused body is accepted under another id too.
			if err := r2.Enqueue(ctx, bodyJob("o/r#4", "h3", "E", "body-3")); err != nil {
				t.Fatalf("refused body under a new id: %v", err)
			}
		})
	}
}

// pruner runs the periodic clean-up with a bound on body digests and counts those left.
type pruner interface {
	pruneBodies(ctx context.Context, limit int) (int, error)
}

func (q *riverQueue[TTx]) pruneBodies(ctx context.Context, limit int) (int, error) {
	w := &pruneWorker[TTx]{q: q, maxBodies: limit}
	if err := w.Work(ctx, nil); err != nil {
		return 0, err
	}
	var n int
	err := q.db.queryOne(ctx, `SELECT count(*) FROM lensgate_body`, nil, &n)
	return n, err
}

// Body digests go with the retention period and beyond the bound, oldest first.
func TestBodyDigestsPruned(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			opts := testOptions()
			opts.InsertOnly = true
			q := open(t, be.dsn(t), opts)
			rq := q.(interface {
				pruner
				inspector
			})
			for i, d := range []string{"old", "newer", "newest"} {
				if err := q.Enqueue(ctx, bodyJob(fmt.Sprintf("o/r#%d", i), "h", "d-"+d, d)); err != nil {
					t.Fatal(err)
				}
			}
			// Make "old" older than the retention period and "newer" older than "newest".
			db := q.(interface{ bodyAges(context.Context) error })
			if err := db.bodyAges(ctx); err != nil {
				t.Fatal(err)
			}
			n, err := rq.pruneBodies(ctx, 10)
			if err != nil || n != 2 {
				t.Fatalf("after retention: %d bodies (%v), want 2", n, err)
			}
			if n, err = rq.pruneBodies(ctx, 1); err != nil || n != 1 {
				t.Fatalf("after the bound: %d bodies (%v), want 1", n, err)
			}
			// The newest is kept: its replay is still one.
			if err := q.Enqueue(ctx, bodyJob("o/r#9", "h", "d-again", "newest")); !errors.Is(err, queue.ErrReplay) {
				t.Fatalf("replay of the newest: %v, want ErrReplay", err)
			}
			if err := q.Enqueue(ctx, bodyJob("o/r#8", "h", "d-again2", "newer")); err != nil {
				t.Fatalf("a pruned body under a new id: %v", err)
			}
		})
	}
}

func (q *riverQueue[TTx]) bodyAges(ctx context.Context) error {
	now := time.Now().Unix()
	return withTx(ctx, q.db, func(tx TTx) error {
		if _, err := q.db.exec(ctx, tx, `UPDATE lensgate_body SET received_at = $1 WHERE digest = 'old'`, now-int64(q.opts.Retention.Seconds())-10); err != nil {
			return err
		}
		_, err := q.db.exec(ctx, tx, `UPDATE lensgate_body SET received_at = $1 WHERE digest = 'newer'`, now-60)
		return err
	})
}
