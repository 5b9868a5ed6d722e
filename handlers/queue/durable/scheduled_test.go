package durable

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
)

// TestScheduledLooks: a job with NotBefore waits in the database (scheduled), then runs; a job
// that schedules the next look of its own key hands over to it, as the looks for a delegated
// answer do.
func TestScheduledLooks(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			q := open(t, b.dsn(t), testOptions())
			ran := make(chan queue.Job, 8)
			look := func(n int) queue.Job {
				return queue.Job{Key: "o/r#1/delegate", DeliveryID: fmt.Sprintf("look-%d", n), Kind: queue.KindDelegate,
					InstallationID: 1, Owner: "o", Repo: "r", Number: 1, HeadSHA: "aaa", Reason: "delegate.recheck",
					NotBefore: time.Now().Add(100 * time.Millisecond), Extra: []byte(fmt.Sprintf(`{"recheck":%d}`, n))}
			}
			h := func(ctx context.Context, j queue.Job) error {
				ran <- j
				var n int
				fmt.Sscanf(j.DeliveryID, "look-%d", &n)
				if n < 2 {
					return q.Enqueue(ctx, look(n+1))
				}
				return nil
			}
			if err := q.Enqueue(ctx, look(1)); err != nil {
				t.Fatal(err)
			}
			if jobs := jobsOf(t, q); len(jobs) != 1 || jobs[0].State != "scheduled" {
				t.Fatalf("jobs before start %+v, want one scheduled", jobs)
			}
			// A look far ahead of another pull request stays scheduled.
			later := look(9)
			later.Key, later.NotBefore = "o/r#2/delegate", time.Now().Add(time.Hour)
			if err := q.Enqueue(ctx, later); err != nil {
				t.Fatal(err)
			}
			if err := q.Start(ctx, h); err != nil {
				t.Fatal(err)
			}
			for want := 1; want <= 2; want++ {
				select {
				case j := <-ran:
					if j.DeliveryID != fmt.Sprintf("look-%d", want) {
						t.Fatalf("ran %s, want look-%d", j.DeliveryID, want)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("look %d did not run", want)
				}
			}
			waitFor(t, "the looks to settle", func() bool {
				n := 0
				for _, j := range jobsOf(t, q) {
					if j.Key == "o/r#2/delegate" && j.State == "scheduled" {
						n++
					}
				}
				return n == 1
			})
		})
	}
}

// TestFollowUpNeverSupersedes: a follow-up job for a head the subject has left is dropped, and
// one for the current head is queued.
func TestFollowUpNeverSupersedes(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			q := open(t, b.dsn(t), testOptions())
			if err := q.Enqueue(ctx, prJob("o/r#1", "new", "push")); err != nil {
				t.Fatal(err)
			}
			old := prJob("o/r#1", "old", "answer-old")
			old.Reason, old.FollowUp = "delegate.answered", true
			if err := q.Enqueue(ctx, old); err != nil {
				t.Fatal(err)
			}
			cur := prJob("o/r#1", "new", "answer-new")
			cur.Reason, cur.FollowUp = "delegate.answered", true
			if err := q.Enqueue(ctx, cur); err != nil {
				t.Fatal(err)
			}
			for _, j := range jobsOf(t, q) {
				if j.Head == "old" {
					t.Fatalf("a follow-up for the old head was queued: %+v", jobsOf(t, q))
				}
			}
			if n := len(jobsOf(t, q)); n != 2 {
				t.Fatalf("%d jobs, want the push and the current head's follow-up: %+v", n, jobsOf(t, q))
			}
		})
	}
}
