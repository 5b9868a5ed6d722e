package durable

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lensgate/lensgate/handlers/queue"
)

// The start of an attempt records its head as begun and hands the job the subject's older heads
// whose reviews began and never completed; a completed job forgets those and its own, and leaves
// its lease released.
func TestAttemptOpenHeads(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			opts := testOptions()
			opts.Workers = 1
			q := open(t, be.dsn(t), opts)
			var mu sync.Mutex
			open := map[string][]string{}
			started := make(chan struct{})
			rec := &recorder{run: func(ctx context.Context, job queue.Job, _ int) error {
				mu.Lock()
				open[job.HeadSHA] = slices.Clone(queue.OpenHeads(ctx))
				mu.Unlock()
				if job.HeadSHA == "a" {
					close(started)
					<-ctx.Done() // superseded by b while running: never completes
					return ctx.Err()
				}
				return nil
			}}
			if err := q.Start(ctx, rec.handle); err != nil {
				t.Fatal(err)
			}
			if err := q.Enqueue(ctx, prJob("o/r#9", "a", "d1")); err != nil {
				t.Fatal(err)
			}
			within(t, "job a to start", started)
			if err := q.Enqueue(ctx, prJob("o/r#9", "b", "d2")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "job b to complete", func() bool { _, done := rec.counts(); return done == 1 })
			if err := q.Enqueue(ctx, prJob("o/r#9", "c", "d3")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "job c to complete", func() bool { _, done := rec.counts(); return done == 2 })
			waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q)) })
			if got := strings.Join(statesOf(jobsOf(t, q)), ","); got != "a:cancelled,b:completed,c:completed" {
				t.Fatalf("job states = %s", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(open["a"]) != 0 || !slices.Equal(open["b"], []string{"a"}) || len(open["c"]) != 0 {
				t.Fatalf("open heads seen by a, b, c = %q, %q, %q; want none, [a], none", open["a"], open["b"], open["c"])
			}
			x := q.(sqlExecer)
			if n, err := x.queryInt(ctx, `SELECT count(*) FROM lensgate_begun`); err != nil || n != 0 {
				t.Fatalf("%d heads still begun after the last job completed (%v), want 0", n, err)
			}
			if n, err := x.queryInt(ctx, `SELECT count(*) FROM lensgate_lease WHERE client_id <> ''`); err != nil || n != 0 {
				t.Fatalf("%d leases still held after the jobs settled (%v), want 0", n, err)
			}
		})
	}
}

// A job that River hands to a worker after its subject moved on (the newer job was queued
// between River's fetch and the start) is cancelled as superseded without running, and writes
// neither a lease nor a begun head.
func TestAttemptNotCurrentAtStart(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := be.dsn(t)
			web := open(t, dsn, Options{InsertOnly: true})
			if err := web.Enqueue(ctx, prJob("o/r#10", "old", "d1")); err != nil {
				t.Fatal(err)
			}
			// What a newer head's enqueue writes first: the subject names another job.
			x := web.(sqlExecer)
			if err := x.execSQL(ctx, `UPDATE lensgate_subject SET head_sha = 'new', job_id = job_id + 1000 WHERE subject_key = 'o/r#10'`); err != nil {
				t.Fatal(err)
			}
			q := open(t, dsn, testOptions())
			rec := &recorder{}
			if err := q.Start(ctx, rec.handle); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the job to settle", func() bool { return settled(jobsOf(t, q)) })
			if got := strings.Join(statesOf(jobsOf(t, q)), ","); got != "old:cancelled" {
				t.Fatalf("job states = %s, want old:cancelled", got)
			}
			if calls, _ := rec.counts(); calls != 0 {
				t.Fatalf("handler ran %d times for a job that was no longer current", calls)
			}
			for _, table := range []string{"lensgate_lease", "lensgate_begun"} {
				if n, err := x.queryInt(ctx, `SELECT count(*) FROM `+table); err != nil || n != 0 {
					t.Fatalf("%d rows in %s (%v), want none", n, table, err)
				}
			}
		})
	}
}
