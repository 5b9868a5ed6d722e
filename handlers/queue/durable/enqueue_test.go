package durable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
)

// activeHeads returns each subject's review jobs that are waiting or running, as key -> heads.
func activeHeads(jobs []jobInfo) map[string][]string {
	out := map[string][]string{}
	for _, j := range jobs {
		switch j.State {
		case "available", "pending", "running", "retryable", "scheduled":
			out[j.Key] = append(out[j.Key], j.Head)
		}
	}
	return out
}

// TestOlderNewsNeverSupersedes: deliveries that reach the queue in another order than they were
// received (concurrent webhooks commit in any order) leave every subject with one job, for the
// head of the delivery received last.
func TestOlderNewsNeverSupersedes(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(j queue.Job, n int) queue.Job {
		j.EnqueuedAt = t0.Add(time.Duration(n) * time.Millisecond)
		return j
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Run("Sequential", func(t *testing.T) {
				ctx := context.Background()
				q := open(t, b.dsn(t), testOptions())
				// The newer push's delivery arrives first, the older one after it.
				for _, j := range []queue.Job{at(prJob("o/r#1", "new", "d2"), 2), at(prJob("o/r#1", "old", "d1"), 1)} {
					if err := q.Enqueue(ctx, j); err != nil {
						t.Fatalf("enqueue %s: %v", j.HeadSHA, err)
					}
				}
				if got := activeHeads(jobsOf(t, q)); len(got["o/r#1"]) != 1 || got["o/r#1"][0] != "new" {
					t.Fatalf("active jobs %v (all: %+v), want one for head new", got, jobsOf(t, q))
				}
				// The older delivery was still accepted: its redelivery is a duplicate.
				if err := q.Enqueue(ctx, at(prJob("o/r#1", "old", "d1"), 1)); err != queue.ErrDuplicate {
					t.Fatalf("redelivery of the older delivery: %v, want ErrDuplicate", err)
				}
				// An event for the newest head received later (a label) coalesces and moves the
				// bar: a push received before it is older news too.
				if err := q.Enqueue(ctx, at(prJob("o/r#1", "new", "d-label"), 5)); err != nil {
					t.Fatal(err)
				}
				if err := q.Enqueue(ctx, at(prJob("o/r#1", "older", "d3"), 4)); err != nil {
					t.Fatal(err)
				}
				// A push received later supersedes as always.
				if err := q.Enqueue(ctx, at(prJob("o/r#1", "newer", "d4"), 6)); err != nil {
					t.Fatal(err)
				}
				got := statesOf(jobsOf(t, q))
				want := []string{"new:cancelled", "newer:available"}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("job states %v, want %v", got, want)
				}
			})
			t.Run("ConcurrentBurst", func(t *testing.T) {
				ctx := context.Background()
				q := open(t, b.dsn(t), testOptions())
				const subjects, pushes = 20, 25
				var ds []queue.Job
				for p := range pushes {
					for s := range subjects {
						n := p*subjects + s
						ds = append(ds, at(prJob(fmt.Sprintf("o/r#%d", s), fmt.Sprintf("h%02d", p), fmt.Sprintf("d%d", n)), n))
					}
				}
				// Every delivery is in flight at once, in no particular order.
				rand.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
				var wg sync.WaitGroup
				errs := make(chan error, len(ds))
				for _, j := range ds {
					wg.Go(func() {
						if err := q.Enqueue(ctx, j); err != nil {
							errs <- fmt.Errorf("enqueue %s@%s: %w", j.Key, j.HeadSHA, err)
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				active := activeHeads(jobsOf(t, q))
				var wrong []string
				for s := range subjects {
					key := fmt.Sprintf("o/r#%d", s)
					if got := active[key]; len(got) != 1 || got[0] != fmt.Sprintf("h%02d", pushes-1) {
						sort.Strings(got)
						wrong = append(wrong, fmt.Sprintf("%s: %v", key, got))
					}
				}
				if len(wrong) > 0 {
					t.Fatalf("%d of %d subjects without exactly one job for their last head: %v", len(wrong), subjects, wrong)
				}
			})
		})
	}
}
