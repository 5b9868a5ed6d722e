package handlers_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/pgtest"
)

// replicaDSNs returns a SQLite database and, when the test cluster is set, a fresh PostgreSQL
// database, each for the replicas of one case.
func replicaDSNs(t *testing.T) map[string]string {
	out := map[string]string{"sqlite": "sqlite://" + filepath.Join(t.TempDir(), "queue.db")}
	dsn := pgtest.Database(t)
	if dsn == "" {
		t.Log("LENSGATE_TEST_POSTGRES_DSN not set: PostgreSQL case not run (.ci/run sets it)")
		return out
	}
	out["postgres"] = dsn
	return out
}

// onDurableQueue runs the App on the durable queue at dsn.
func onDurableQueue(t *testing.T, dsn string) envOption {
	return func(_ *config.Server, o *handlers.Options) {
		q, err := durable.Open(context.Background(), dsn, durable.Options{Workers: 2, JobTimeout: 30 * time.Second,
			FetchPollInterval: 20 * time.Millisecond, RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		o.Queue = q
	}
}

// Two web replicas on one durable queue: a body replica 1 accepted is a duplicate on replica 2
// under a new delivery id, answered as replica 1 would answer it; a new body is a new job.
func TestReplayAcrossReplicasIsDuplicate(t *testing.T) {
	for backend, dsn := range replicaDSNs(t) {
		t.Run(backend, func(t *testing.T) {
			gh := githubfake.New(t)
			r1, r2 := newEnvOn(t, gh, onDurableQueue(t, dsn)), newEnvOn(t, gh, onDurableQueue(t, dsn))
			r1.addFixturePR(readmeDiff)
			opened := fixture(t, "pull_request.opened.payload.json")
			if code, body := r1.send("pull_request", "d-A", opened); code != http.StatusAccepted {
				t.Fatalf("replica 1 answered %d %q", code, body)
			}
			code, body := r2.send("pull_request", "d-B", opened)
			if code != http.StatusOK || body != "duplicate delivery" {
				t.Fatalf("replay on replica 2 answered %d %q, want 200 duplicate delivery", code, body)
			}
			if got := r2.metric("lensgate_webhook_events_total", map[string]string{"event": "pull_request", "outcome": "replay"}); got != 1 {
				t.Fatalf("replica 2 counted %v replays, want 1", got)
			}
			if !strings.Contains(r2.logs.String(), `"first_delivery":"d-A"`) {
				t.Fatalf("replica 2 did not log the first delivery:\n%s", r2.logs.String())
			}
			// Sent again to replica 2, the replay is still one (its own store answers now).
			if code, body := r2.send("pull_request", "d-C", opened); code != http.StatusOK || body != "duplicate delivery" {
				t.Fatalf("second replay answered %d %q", code, body)
			}
			// A genuine new delivery with another body is a job (once the first is reviewed, so
			// that it does not supersede it).
			waitReviews(t, 1, r1, r2)
			head := strings.Repeat("c", 40)
			gh.Push(fixtureRepo, 2, head, []byte(readmeDiff), nil)
			pushed := setJSON(t, opened, func(m map[string]any) {
				m["action"], m["after"] = "synchronize", head
				m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = head
			})
			if code, body := r2.send("pull_request", "d-D", pushed); code != http.StatusAccepted {
				t.Fatalf("new body answered %d %q", code, body)
			}
			// Both jobs run on either replica's workers; no third one appears.
			waitReviews(t, 2, r1, r2)
			r1.drain()
			r2.drain()
			if n := r1.reviewer.calls() + r2.reviewer.calls(); n != 2 {
				t.Fatalf("%d reviews, want 2 (the first body and the new one)", n)
			}
		})
	}
}

// waitReviews waits until the replicas ran n reviews in all; the deadline only guards against a
// hung test.
func waitReviews(t *testing.T, n int, replicas ...*env) {
	t.Helper()
	total := func() int {
		sum := 0
		for _, r := range replicas {
			sum += r.reviewer.calls()
		}
		return sum
	}
	for deadline := time.Now().Add(60 * time.Second); total() < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d reviews after a minute, want %d", total(), n)
		}
	}
}

// An event handled after its answer (a re-run request) is checked the same way: its replay on
// another replica queues no second run.
func TestAsyncReplayAcrossReplicasQueuesNothing(t *testing.T) {
	for backend, dsn := range replicaDSNs(t) {
		t.Run(backend, func(t *testing.T) {
			gh := githubfake.New(t)
			r1, r2 := newEnvOn(t, gh, onDurableQueue(t, dsn)), newEnvOn(t, gh, onDurableQueue(t, dsn))
			const head = "d6fde92930d4715a2b49857d24b940956b26d2d3"
			gh.AddRepo(githubfake.Repo{Owner: "github", Name: "hello-world", ID: 526, DefaultBranch: "master"})
			gh.AddPullRequest("github/hello-world", githubfake.PullRequest{Number: 7, HeadSHA: head, BaseRef: "master", Diff: []byte(readmeDiff)})
			rerun := ownApp(t, "check_run", fixture(t, "check_run.rerequested.rfc3339.payload.json"))
			if code, body := r1.send("check_run", "d-A", rerun); code != http.StatusOK {
				t.Fatalf("replica 1 answered %d %q", code, body)
			}
			waitReviews(t, 1, r1, r2)
			if code, body := r2.send("check_run", "d-B", rerun); code != http.StatusOK {
				t.Fatalf("replica 2 answered %d %q", code, body)
			}
			r2.waitFor("the replay counted", func() bool {
				return r2.metric("lensgate_webhook_events_total", map[string]string{"event": "check_run", "outcome": "replay"}) == 1
			})
			r1.drain()
			r2.drain()
			if n := r1.reviewer.calls() + r2.reviewer.calls(); n != 1 {
				t.Fatalf("%d reviews, want 1", n)
			}
		})
	}
}
