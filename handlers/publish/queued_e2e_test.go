package publish

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/internal/githubfake"
)

// gateNamed is the one gate check run of head in e2eRepo; it fails the test when there are more.
func gateNamed(t *testing.T, gh *githubfake.Server, head string) (githubfake.CheckRun, bool) {
	t.Helper()
	g := gatesOf(gh, head)
	if len(g) > 1 {
		t.Fatalf("head %s has %d gate check runs: %+v", head[:7], len(g), g)
	}
	if len(g) == 0 {
		return githubfake.CheckRun{}, false
	}
	return g[0], true
}

// With one worker busy, a pull request's job that waits for it shows its head's gate check
// queued; when the worker takes it, that same check run goes in progress and concludes. A job
// superseded by a newer head while it waits, or whose pull request is closed meanwhile, gets
// its queued check concluded, saying so.
func TestQueuedGateCheck(t *testing.T) {
	h := newHeldWrites(e2eRepo)
	st := newStackWith(t, lineReviewer{}, e2eDiff1, nil, func(o *handlers.Options) {
		o.Config.Queue.Workers = 1
		o.QueuedAfter = 20 * time.Millisecond
		o.ClientOptions = append(o.ClientOptions, h.option())
	})
	t.Cleanup(h.releaseAll)
	busy := addBurst(t, st, 1) // pull request 30 holds the worker at its first content write
	waitUntil(t, "the first review holding the worker", func() bool { return h.first() == 30 })

	const inst, repoID = githubfake.DefaultInstallationID, 1296269
	p31, head31 := addPR(t, st.gh, "Codertocat", "Hello-World", repoID, inst, 31)
	st.send("pull_request", "d-31", p31)
	p32, head32 := addPR(t, st.gh, "Codertocat", "Hello-World", repoID, inst, 32)
	st.send("pull_request", "d-32", p32)
	p33, head33 := addPR(t, st.gh, "Codertocat", "Hello-World", repoID, inst, 33)
	st.send("pull_request", "d-33", p33)
	var queued githubfake.CheckRun
	waitUntil(t, "the waiting jobs shown queued", func() bool {
		a, ok31 := gateNamed(t, st.gh, head31)
		b, ok32 := gateNamed(t, st.gh, head32)
		c, ok33 := gateNamed(t, st.gh, head33)
		queued = a
		return ok31 && ok32 && ok33 && a.Status == "queued" && b.Status == "queued" && c.Status == "queued"
	})
	closed := "closed"
	if _, _, err := st.gh.TokenClient().PullRequests.Edit(context.Background(), "Codertocat", "Hello-World", 33, &github.PullRequest{State: &closed}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(queued.Title, "review queued") || !strings.Contains(queued.Summary, "waits for a worker") {
		t.Fatalf("queued gate check says %q / %q", queued.Title, queued.Summary)
	}

	// A newer head of pull request 32 supersedes its waiting job.
	head32b := strings.Repeat("e", 40)
	st.gh.Push(e2eRepo, 32, head32b, []byte(e2eDiff1), nil)
	st.send("pull_request", "d-32b", prPayload(t, "Codertocat", "Hello-World", repoID, inst, 32, head32b))
	waitUntil(t, "the superseded head's queued check concluded", func() bool {
		g, _ := gateNamed(t, st.gh, head32)
		return g.Status == "completed"
	})
	if g, _ := gateNamed(t, st.gh, head32); g.Conclusion != "cancelled" || !strings.Contains(g.Title, "not reviewed") ||
		!strings.Contains(g.Summary, "head "+head32b[:12]+" arrived first") {
		t.Fatalf("superseded queued check: %+v", g)
	}

	h.releaseAll()
	heads := map[int]string{31: head31, 32: head32b}
	for pr, head := range busy {
		heads[pr] = head
	}
	waitPublished(t, st, heads)
	g, _ := gateNamed(t, st.gh, head31)
	if g.ID != queued.ID || g.Status != "completed" || g.Conclusion == "cancelled" {
		t.Fatalf("the queued check %d ended as %+v, want the same run concluded by its review", queued.ID, g)
	}
	if g, ok := gateNamed(t, st.gh, head32b); !ok || g.Status != "completed" {
		t.Fatalf("the newer head's gate check: %+v", g)
	}
	waitUntil(t, "the closed pull request's queued check concluded", func() bool {
		g, _ := gateNamed(t, st.gh, head33)
		return g.Status == "completed"
	})
	if g, _ := gateNamed(t, st.gh, head33); g.Conclusion != "cancelled" || !strings.Contains(g.Summary, "the pull request was closed first") {
		t.Fatalf("closed pull request's queued check: %+v", g)
	}
}
