package handlers

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/internal/githubfake"
)

// heldQueue takes jobs and runs them only when the test hands one to its handler.
type heldQueue struct{ h queue.Handler }

func (q *heldQueue) Enqueue(context.Context, queue.Job) error { return nil }
func (q *heldQueue) Start(_ context.Context, h queue.Handler) error {
	q.h = h
	return nil
}
func (q *heldQueue) Stop(context.Context) error { return nil }

// markLog records what the marking asks of the publisher, by head.
type markLog struct {
	mu       sync.Mutex
	marked   []string
	unqueued map[string]string
}

func (m *markLog) MarkQueued(_ context.Context, _ *github.Client, p *publication.Publication) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.marked = append(m.marked, p.Subject.HeadSHA)
	return nil
}

func (m *markLog) Unqueue(_ context.Context, _ *github.Client, p *publication.Publication, why string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unqueued[p.Subject.HeadSHA] = why
	return nil
}

func (m *markLog) state() ([]string, map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := map[string]string{}
	for k, v := range m.unqueued {
		u[k] = v
	}
	return append([]string(nil), m.marked...), u
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Jobs no worker took are marked once they waited, and a worker taking one is told so; a taken
// job is not marked; a newer head, enqueued or taken, unqueues its subject's marked head;
// stopping unqueues the heads still marked, saying the job is lost with the memory queue.
func TestQueuedMarks(t *testing.T) {
	gh := githubfake.New(t)
	ac := gh.AppConfig()
	cc := githubapp.NewClientCreator(ac.V3APIURL, ac.V4APIURL, ac.App.IntegrationID, []byte(ac.App.PrivateKey))
	inner := &heldQueue{}
	log := &markLog{unqueued: map[string]string{}}
	m := newQueuedMarks(inner, log, cc, 10*time.Millisecond, func() publication.AppIdentity { return publication.AppIdentity{} }, true, zerolog.Nop())
	ctx := context.Background()
	var shownMu sync.Mutex
	shown := map[string]bool{}
	if err := m.Start(ctx, func(ctx context.Context, j queue.Job) error {
		shownMu.Lock()
		defer shownMu.Unlock()
		shown[j.HeadSHA] = queue.ShownQueued(ctx)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	job := func(key, head string) queue.Job {
		return queue.Job{Key: key, Kind: queue.KindPullRequest, InstallationID: 1, Owner: "o", Repo: "r", Number: 1, HeadSHA: head}
	}
	for _, j := range []queue.Job{job("o/r#1", "a1"), job("o/r#2", "b1"), job("o/r#3", "c1")} {
		if err := m.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Enqueue(ctx, queue.Job{Key: "o/r#4", Kind: queue.KindPullRequest, HeadSHA: "d1", FollowUp: true}); err != nil {
		t.Fatal(err)
	}
	if err := inner.h(ctx, job("o/r#1", "a1")); err != nil { // a worker takes a1 at once
		t.Fatal(err)
	}
	waitFor(t, "b1 and c1 marked", func() bool { marked, _ := log.state(); return len(marked) == 2 })
	if err := inner.h(ctx, job("o/r#3", "c1")); err != nil { // a worker takes c1, shown queued
		t.Fatal(err)
	}
	if err := m.Enqueue(ctx, job("o/r#2", "b2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b1 unqueued", func() bool { _, u := log.state(); return u["b1"] != "" })
	waitFor(t, "b2 marked", func() bool { marked, _ := log.state(); return len(marked) == 3 })
	// The queue may take another head than the one marked (it held the marked one for older news).
	if err := m.Enqueue(ctx, job("o/r#5", "e1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "e1 marked", func() bool { marked, _ := log.state(); return len(marked) == 4 })
	if err := inner.h(ctx, job("o/r#5", "e2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "e1 unqueued", func() bool { _, u := log.state(); return u["e1"] != "" })
	if err := m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	marked, unqueued := log.state()
	if strings.Join(marked, ",") != "b1,c1,b2,e1" {
		t.Fatalf("marked %v, want b1, c1, b2, e1 (not a1, taken; not d1, a follow-up)", marked)
	}
	if !strings.Contains(unqueued["b1"], "head b2 arrived first") || !strings.Contains(unqueued["b2"], "does not keep jobs") ||
		!strings.Contains(unqueued["e1"], "head e2 is reviewed instead") || len(unqueued) != 3 {
		t.Fatalf("unqueued %v, want b1, b2 and e1 (c1 was taken: its worker concludes it)", unqueued)
	}
	shownMu.Lock()
	defer shownMu.Unlock()
	if !shown["c1"] || shown["a1"] || shown["e2"] {
		t.Fatalf("jobs told they were shown queued: %v, want c1 only", shown)
	}
}
