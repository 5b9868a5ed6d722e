package publish

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/pgtest"
)

// prPayload is the opened payload turned into pull request number of owner/name (repository
// id repoID) in installation inst, at head.
func prPayload(t *testing.T, owner, name string, repoID, inst int64, number int, head string) []byte {
	t.Helper()
	return edit(t, readPayload(t, "pull_request.opened.payload.json"), func(m map[string]any) {
		repo := m["repository"].(map[string]any)
		repo["name"], repo["full_name"], repo["id"], repo["node_id"] = name, owner+"/"+name, repoID, fmt.Sprintf("R_%d", repoID)
		repo["owner"].(map[string]any)["login"] = owner
		m["number"] = number
		pr := m["pull_request"].(map[string]any)
		pr["number"], pr["id"], pr["node_id"] = number, repoID*1000+int64(number), fmt.Sprintf("PR_%d_%d", repoID, number)
		pr["head"].(map[string]any)["sha"] = head
		pr["head"].(map[string]any)["repo"] = repo
		pr["base"].(map[string]any)["repo"] = repo
		m["installation"].(map[string]any)["id"] = inst
	})
}

// addPR puts pull request number of owner/name into the fake and returns its webhook payload
// and head.
func addPR(t *testing.T, gh *githubfake.Server, owner, name string, repoID, inst int64, number int) ([]byte, string) {
	t.Helper()
	head := fmt.Sprintf("%040x", repoID*1000+int64(number))
	payload := prPayload(t, owner, name, repoID, inst, number, head)
	if _, _, err := gh.AddFromPullRequestEvent(payload, []byte(e2eDiff1)); err != nil {
		t.Fatal(err)
	}
	gh.SetFile(owner+"/"+name, "master", "README.md", "# Hello-World\n")
	return payload, head
}

// writeHold holds the first content write that arms it, in whichever replica makes it, until
// released; it tells which replica holds.
type writeHold struct {
	armed   atomic.Bool
	heldBy  chan int
	release chan struct{}
}

func newWriteHold() *writeHold {
	return &writeHold{heldBy: make(chan int, 1), release: make(chan struct{})}
}

// replicaTap is a replica's client middleware: it counts the replica's content writes and makes
// the one the hold takes wait.
func replicaTap(replica int, hold *writeHold, writes *atomic.Int32) githubapp.ClientOption {
	return githubapp.WithClientMiddleware(func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if contentWrite(stampedCall{method: r.Method, path: r.URL.Path}) {
				writes.Add(1)
				if hold != nil && hold.armed.CompareAndSwap(true, false) {
					hold.heldBy <- replica
					select {
					case <-hold.release:
					case <-r.Context().Done():
						return nil, r.Context().Err()
					}
				}
			}
			return next.RoundTrip(r)
		})
	})
}

// Two replicas on one durable queue database share each installation's content-write slot:
// while one replica's write holds the slot, the other replica's job concludes its gate check
// (never spaced) but waits for the slot before its own content writes; and across a burst on
// both replicas, the fake GitHub sees the installation's content writes at least the spacing
// apart. The database's clock decides every slot, so the replicas' own clocks do not matter:
// one replica's publisher runs 90 s behind the other's.
func TestContentWritesAreSpacedAcrossReplicas(t *testing.T) {
	type backend struct{ name, dsn string }
	backends := []backend{{"sqlite", "sqlite://" + filepath.Join(t.TempDir(), "queue.db")}}
	if dsn := pgtest.Database(t); dsn != "" {
		backends = append(backends, backend{"postgres", dsn})
	} else {
		t.Log("LENSGATE_TEST_POSTGRES_DSN not set: the PostgreSQL case is not run (.ci/run sets it)")
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) { testContentWritesAreSpacedAcrossReplicas(t, be.dsn) })
	}
}

func testContentWritesAreSpacedAcrossReplicas(t *testing.T, dsn string) {
	const spacing = 250 * time.Millisecond
	inst := githubfake.DefaultInstallationID
	hold := newWriteHold()
	var writes [2]atomic.Int32
	var slept [2]atomic.Int32 // waits for the slot, per replica
	replica := func(i int, base *stack) *stack {
		// One worker each: a job whose write is held keeps its replica busy, so the next job
		// runs on the other replica.
		q, err := durable.Open(context.Background(), dsn, durable.Options{Workers: 1, FetchPollInterval: 20 * time.Millisecond,
			ClientID: fmt.Sprintf("replica-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		slots, err := durable.NewWriteSlots(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		popts := func(o *Options) {
			o.ContentSpacing, o.WriteSlots = spacing, slots
			o.Sleep = func(ctx context.Context, d time.Duration) error {
				slept[i].Add(1)
				return sleepCtx(ctx, d)
			}
			if i == 1 {
				// The second replica's clock is 90 s behind: the slots go by the database's.
				o.Now = func() time.Time { return time.Now().Add(-90 * time.Second) }
			}
		}
		hopts := func(o *handlers.Options) {
			o.Queue = q
			o.ClientOptions = append(o.ClientOptions, replicaTap(i, hold, &writes[i]))
		}
		if base == nil {
			return newStackWith(t, lineReviewer{}, e2eDiff1, popts, hopts)
		}
		return newReplica(base, lineReviewer{}, popts, hopts)
	}
	r0 := replica(0, nil)
	replicas := []*stack{r0, replica(1, r0)}
	gh := r0.gh

	// The first content write holds the slot; the other replica's job must wait for it.
	p1, _ := addPR(t, gh, "Codertocat", "Hello-World", 1296269, inst, 10)
	p2, h2 := addPR(t, gh, "Codertocat", "Hello-World", 1296269, inst, 11)
	hold.armed.Store(true)
	replicas[0].send("pull_request", "slots-10", p1)
	var holder int
	select {
	case holder = <-hold.heldBy:
	case <-time.After(30 * time.Second):
		t.Fatalf("no content write was made; logs:\n%s", r0.logs.String())
	}
	other := 1 - holder
	replicas[other].send("pull_request", "slots-11", p2)
	waitUntil(t, "the second job's gate check, and its wait for the slot or a write", func() bool {
		g := gateOf(gh, h2)
		return g.Status == "completed" && (slept[other].Load() > 0 || len(contentWritesOf(gh, 11)) > 0)
	})
	if n := len(contentWritesOf(gh, 11)); n != 0 {
		t.Errorf("replica %d made %d content writes while replica %d held the installation's write slot", other, n, holder)
	}
	if slept[other].Load() == 0 {
		t.Errorf("replica %d never waited for the installation's write slot", other)
	}
	close(hold.release)
	waitUntil(t, "both advisory comments", func() bool { return hasAdvisory(gh, 10) && hasAdvisory(gh, 11) })

	// A burst on both replicas.
	var numbers []int
	for n := 20; n < 26; n++ {
		p, _ := addPR(t, gh, "Codertocat", "Hello-World", 1296269, inst, n)
		replicas[n%2].send("pull_request", fmt.Sprintf("slots-%d", n), p)
		numbers = append(numbers, n)
	}
	waitUntil(t, "the burst's advisory comments", func() bool {
		for _, n := range numbers {
			if !hasAdvisory(gh, n) {
				return false
			}
		}
		return true
	})

	var content []githubfake.Call
	for _, c := range gh.Log() {
		if c.Installation == inst && contentWrite(stampedCall{method: c.Method, path: c.Path}) {
			content = append(content, c)
		}
	}
	slices.SortFunc(content, func(a, b githubfake.Call) int { return a.At.Compare(b.At) })
	if len(content) < 2+len(numbers) {
		t.Fatalf("only %d content writes seen by the fake", len(content))
	}
	closest := time.Hour
	for i := 1; i < len(content); i++ {
		gap := content[i].At.Sub(content[i-1].At)
		closest = min(closest, gap)
		if gap < spacing {
			t.Errorf("%s %s came %v after %s %s, want at least %v", content[i].Method, content[i].Path, gap,
				content[i-1].Method, content[i-1].Path, spacing)
		}
	}
	for i := range writes {
		if writes[i].Load() == 0 {
			t.Errorf("replica %d made no content write: the test shows nothing across replicas", i)
		}
	}
	t.Logf("%d content writes by replicas %d+%d, closest %v apart (spacing %v)", len(content), writes[0].Load(), writes[1].Load(), closest, spacing)
}

// contentWritesOf are the content writes the fake received for pull request number.
func contentWritesOf(gh *githubfake.Server, number int) []githubfake.Call {
	var out []githubfake.Call
	for _, c := range gh.Log() {
		if contentWrite(stampedCall{method: c.Method, path: c.Path}) &&
			(strings.Contains(c.Path, fmt.Sprintf("/issues/%d/", number)) || strings.Contains(c.Path, fmt.Sprintf("/pulls/%d/", number))) {
			out = append(out, c)
		}
	}
	return out
}

// hasAdvisory reports whether pull request number of the e2e repository has the App's comment.
func hasAdvisory(gh *githubfake.Server, number int) bool {
	return hasAdvisoryIn(gh, e2eRepo, number)
}

func hasAdvisoryIn(gh *githubfake.Server, repo string, number int) bool {
	for _, c := range gh.Comments(repo, number) {
		if c.User == gh.BotLogin() {
			return true
		}
	}
	return false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
