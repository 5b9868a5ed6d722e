package publish

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/githubfake"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/queue/durable"
)

// holdRepoWrites makes every content write to repository full wait until release is closed,
// counting the writes held.
func holdRepoWrites(full string, held *atomic.Int32, release <-chan struct{}) githubapp.ClientOption {
	return githubapp.WithClientMiddleware(func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if contentWrite(stampedCall{method: r.Method, path: r.URL.Path}) && strings.Contains(r.URL.Path, "/repos/"+full+"/") {
				held.Add(1)
				select {
				case <-release:
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
			return next.RoundTrip(r)
		})
	})
}

// A burst of installation A's reviews, whose content writes GitHub is slow to answer (so that
// each A job holds its worker while it writes or waits for A's write slot), does not hold every
// worker: installation B's review, enqueued after the burst on a queue of two workers, runs and
// publishes while every content write of A is still held. The bound: B waits for no job of A
// to finish. Without a bound per installation, both workers are A's and B waits for the burst.
func TestBusyInstallationLeavesWorkersToOthers(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) queue.Queue // nil: the server's memory queue
	}{
		{"memory", nil},
		{"sqlite", func(t *testing.T) queue.Queue {
			return openDurable(t, "sqlite://"+filepath.Join(t.TempDir(), "queue.db"))
		}},
		{"postgres", func(t *testing.T) queue.Queue {
			dsn := postgresTestDSN(t)
			if dsn == "" {
				t.Skip("LENSGATE_TEST_POSTGRES_DSN not set: the PostgreSQL case is not run (.ci/run sets it)")
			}
			return openDurable(t, dsn)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q queue.Queue
			if tc.open != nil {
				q = tc.open(t)
			}
			testBusyInstallationLeavesWorkersToOthers(t, q)
		})
	}
}

// openDurable opens a durable queue of two workers, as the memory queue of the test stack has.
func openDurable(t *testing.T, dsn string) queue.Queue {
	t.Helper()
	q, err := durable.Open(context.Background(), dsn, durable.Options{Workers: 2, FetchPollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func testBusyInstallationLeavesWorkersToOthers(t *testing.T, q queue.Queue) {
	const instB = 2
	var heldA atomic.Int32
	release := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	st := newStackWith(t, lineReviewer{}, e2eDiff1, func(o *Options) {
		o.ContentSpacing = 100 * time.Millisecond
		if q != nil {
			slots, err := durable.NewWriteSlots(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			o.WriteSlots = slots
		}
	}, func(o *handlers.Options) {
		o.Queue = q
		o.Config.Queue.Workers = 2
		o.ClientOptions = append(o.ClientOptions, holdRepoWrites(e2eRepo, &heldA, release))
	})
	gh := st.gh
	gh.AddInstallation(instB)

	// The burst of installation A.
	var burst []int
	for n := 30; n < 33; n++ {
		p, _ := addPR(t, gh, "Codertocat", "Hello-World", 1296269, githubfake.DefaultInstallationID, n)
		st.send("pull_request", fmt.Sprintf("burst-%d", n), p)
		burst = append(burst, n)
	}
	waitUntil(t, "a content write of installation A", func() bool { return heldA.Load() > 0 })

	// Installation B's review, enqueued after the whole burst.
	pb, hb := addPR(t, gh, "Octo", "Other", 5000, instB, 1)
	sent := time.Now()
	st.send("pull_request", "other-1", pb)
	deadline := time.Now().Add(30 * time.Second)
	for !hasAdvisoryIn(gh, "Octo/Other", 1) {
		if time.Now().After(deadline) {
			t.Fatalf("installation B's review did not publish while installation A's writes were held "+
				"(%d held, gate of B: %q): its job waited for a worker held by A's burst", heldA.Load(), gateOfRepo(gh, "Octo/Other", hb).Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("installation B published %v after its webhook, with %d content writes of A held", time.Since(sent).Round(time.Millisecond), heldA.Load())
	if g := gateOfRepo(gh, "Octo/Other", hb); g.Status != "completed" {
		t.Errorf("installation B's gate check is %q after its comment", g.Status)
	}
	for _, n := range burst {
		if hasAdvisory(gh, n) {
			t.Fatalf("pull request %d of installation A published while its writes were held", n)
		}
	}

	close(release)
	released = true
	deadline = time.Now().Add(2 * time.Minute)
	for _, n := range burst {
		for !hasAdvisory(gh, n) {
			if time.Now().After(deadline) {
				t.Fatalf("installation A's pull request %d never published after its writes were let through; logs:\n%s", n, st.logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// gateOfRepo is the newest gate check run of head in repository full.
func gateOfRepo(gh *githubfake.Server, full, head string) githubfake.CheckRun {
	var newest githubfake.CheckRun
	for _, c := range gh.CheckRuns(full, head) {
		if c.Name == DefaultCheckName && c.ID > newest.ID {
			newest = c
		}
	}
	return newest
}
