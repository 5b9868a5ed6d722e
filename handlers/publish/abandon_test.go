package publish

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/review"
)

// headBlockingReviewer holds the review of one head until its job is cancelled, and reviews
// every other head at once. It counts the blocked head's reviews: a second one is a finding of
// the test, not a reason to panic on a closed channel.
type headBlockingReviewer struct {
	head    string
	started chan struct{}
	runs    *atomic.Int32
}

func newHeadBlockingReviewer(head string) headBlockingReviewer {
	return headBlockingReviewer{head: head, started: make(chan struct{}), runs: &atomic.Int32{}}
}

func (r headBlockingReviewer) Review(ctx context.Context, s *review.Subject, cfg *config.Repo) (*review.Decision, error) {
	if s.HeadSHA == r.head {
		if r.runs.Add(1) == 1 {
			close(r.started)
		}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	return lineReviewer{}.Review(ctx, s, cfg)
}

// A push while the previous head is being reviewed cancels that review; the gate check it opened
// concludes cancelled naming the newer head, and the newer head's gate concludes with its review.
func TestSupersededReviewConcludesItsCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		queue func(t *testing.T) queue.Queue
	}{
		{"memory", func(*testing.T) queue.Queue { return nil }},
		{"sqlite", func(t *testing.T) queue.Queue {
			q, err := durable.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "queue.db"),
				durable.Options{FetchPollInterval: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return q
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { testSupersededReviewConcludesItsCheck(t, tc.queue(t)) })
	}
}

func testSupersededReviewConcludesItsCheck(t *testing.T, q queue.Queue) {
	rv := newHeadBlockingReviewer(e2eHead1)
	st := newStack(t, rv, e2eDiff1, func(o *handlers.Options) { o.Queue = q })
	st.send("pull_request", "delivery-opened", readPayload(t, "pull_request.opened.payload.json"))
	select {
	case <-rv.started:
	case <-time.After(30 * time.Second):
		t.Fatalf("the first review did not start; logs:\n%s", st.logs.String())
	}
	if g := gatesOf(st.gh, e2eHead1); len(g) != 1 || g[0].Status != "in_progress" {
		t.Fatalf("gate of the first head while it is reviewed = %+v, want one in progress", g)
	}

	st.gh.Push(e2eRepo, e2ePR, e2eHead2, []byte(e2eDiff2), nil)
	sync := edit(t, readPayload(t, "pull_request.synchronize.payload.json"), func(m map[string]any) {
		m["after"] = e2eHead2
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = e2eHead2
	})
	st.send("pull_request", "delivery-sync", sync)
	st.wait("synchronize")

	waitUntil(t, "the first head's gate to conclude", func() bool {
		g := gatesOf(st.gh, e2eHead1)
		return len(g) == 1 && g[0].Status == "completed"
	})
	g1 := gatesOf(st.gh, e2eHead1)[0]
	if g1.Conclusion != "cancelled" || !strings.Contains(g1.Title, "superseded by "+e2eHead2[:12]) || !strings.Contains(g1.Summary, e2eHead2) {
		t.Errorf("first head's gate = %s %q %q, want cancelled and superseded by %s", g1.Conclusion, g1.Title, g1.Summary, e2eHead2)
	}
	// The cancelled review may return after the newer one: find the newer head's decision.
	var d2 *review.Decision
	st.decisions.mu.Lock()
	for _, d := range st.decisions.all {
		if d != nil && d.Subject.HeadSHA == e2eHead2 {
			d2 = d
		}
	}
	st.decisions.mu.Unlock()
	if d2 == nil {
		t.Fatal("the newer head was not reviewed")
	}
	g2 := gatesOf(st.gh, e2eHead2)
	if len(g2) != 1 || g2[0].Status != "completed" || g2[0].Conclusion != gateConclusion(d2.Gate) {
		t.Errorf("new head's gate = %+v", g2)
	}
	for _, h := range []string{e2eHead1, e2eHead2} {
		for _, c := range st.gh.CheckRuns(e2eRepo, h) {
			if c.Status != "completed" {
				t.Errorf("check %q of %s left %s", c.Name, h[:7], c.Status)
			}
		}
	}
	if n := len(botComments(st.gh)); n != 1 {
		t.Errorf("advisory comments = %d, want 1 (the newer head's)", n)
	}
	if n := rv.runs.Load(); n != 1 {
		t.Errorf("the superseded head was reviewed %d times, want once; logs:\n%s", n, st.logs.String())
	}
}

// waitUntil polls cond until it holds or half a minute passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Abandon and a resumed Begin, one case each: the gate check of the head ends up as the table
// says, and a check that is already concluded is never reopened.
func TestAbandonedGateCheck(t *testing.T) {
	for _, tc := range []struct {
		name          string
		resumed       int
		why           *publication.Interruption
		concluded     bool // the gate check concluded before Abandon
		status, concl string
		title         string
	}{
		{name: "superseded by a newer head", why: &publication.Interruption{Superseded: true, SupersededBy: head2},
			status: "completed", concl: "cancelled", title: "superseded by " + head2[:12]},
		{name: "superseded, head not known", why: &publication.Interruption{Superseded: true},
			status: "completed", concl: "cancelled", title: "superseded by a newer head"},
		{name: "re-run of the same head owns the check", why: &publication.Interruption{Superseded: true, SupersededBy: head1},
			status: "in_progress", title: "review in progress"},
		{name: "stopped, the queue resumes it", why: &publication.Interruption{Resuming: true},
			status: "in_progress", title: "review interrupted, resuming"},
		{name: "stopped for good", why: &publication.Interruption{},
			status: "completed", concl: "cancelled", title: "review interrupted"},
		{name: "already concluded", why: &publication.Interruption{Superseded: true, SupersededBy: head2}, concluded: true,
			status: "completed", concl: "failure"},
		{name: "resumed after its worker died", resumed: 1,
			status: "in_progress", title: "review interrupted, resuming"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			ctx := zerolog.Nop().WithContext(context.Background())
			s := e.subject()
			pub := e.publication("d-1", decision(s, review.OutcomeFailed), s)
			pub.Job.Resumed = tc.resumed
			if err := e.p.Begin(ctx, e.cl, pub); err != nil {
				t.Fatal(err)
			}
			if tc.concluded {
				if err := e.p.Publish(ctx, e.cl, pub); err != nil {
					t.Fatal(err)
				}
			}
			if tc.why != nil {
				if err := e.p.Abandon(ctx, e.cl, pub, *tc.why); err != nil {
					t.Fatal(err)
				}
			}
			g := e.gateRuns(head1)
			if len(g) != 1 || g[0].Status != tc.status || g[0].Conclusion != tc.concl || !strings.Contains(g[0].Title, tc.title) {
				t.Fatalf("gate = %+v, want one %s %s titled %q", g, tc.status, tc.concl, tc.title)
			}
		})
	}
}
