package publish

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/pgtest"
)

// heldWrites holds every content write to one repository until the test releases the pull
// request it belongs to (number 0 for a write that names none), or all of them.
type heldWrites struct {
	full string

	mu    sync.Mutex
	gates map[int]chan struct{}
	all   chan struct{} // closed by releaseAll
	order []int         // pull requests with a write held, by the first one
}

func newHeldWrites(full string) *heldWrites {
	return &heldWrites{full: full, gates: map[int]chan struct{}{}, all: make(chan struct{})}
}

var prInPath = regexp.MustCompile(`/(?:issues|pulls)/(\d+)/`)

func (h *heldWrites) gate(n int) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.gates[n]
	if !ok {
		c = make(chan struct{})
		h.gates[n] = c
	}
	return c
}

// option is the client middleware that holds the writes.
func (h *heldWrites) option() githubapp.ClientOption {
	return githubapp.WithClientMiddleware(func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if contentWrite(stampedCall{method: r.Method, path: r.URL.Path}) && strings.Contains(r.URL.Path, "/repos/"+h.full+"/") {
				n := 0
				if m := prInPath.FindStringSubmatch(r.URL.Path); m != nil {
					n, _ = strconv.Atoi(m[1])
				}
				g := h.gate(n)
				h.mu.Lock()
				if !slices.Contains(h.order, n) {
					h.order = append(h.order, n)
				}
				h.mu.Unlock()
				select {
				case <-g:
				case <-h.all:
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
			return next.RoundTrip(r)
		})
	})
}

// first is the pull request whose write was held first, or -1.
func (h *heldWrites) first() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.order) == 0 {
		return -1
	}
	return h.order[0]
}

func (h *heldWrites) release(n int) { close(h.gate(n)) }

func (h *heldWrites) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.all:
	default:
		close(h.all)
	}
}

// fairnessCases are the queues the fairness tests run on: the server's memory queue (nil
// open), SQLite and, with LENSGATE_TEST_POSTGRES_DSN, PostgreSQL.
var fairnessCases = []struct {
	name string
	open func(t *testing.T) queue.Queue
}{
	{"memory", nil},
	{"sqlite", func(t *testing.T) queue.Queue {
		return openDurable(t, "sqlite://"+filepath.Join(t.TempDir(), "queue.db"))
	}},
	{"postgres", func(t *testing.T) queue.Queue {
		dsn := pgtest.Database(t)
		if dsn == "" {
			t.Skip("LENSGATE_TEST_POSTGRES_DSN not set: the PostgreSQL case is not run (.ci/run sets it)")
		}
		return openDurable(t, dsn)
	}},
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

// fairStack is the server stack on q (nil: its memory queue) with two workers, the default
// bound per installation and the content writes to e2eRepo held by h.
func fairStack(t *testing.T, q queue.Queue, h *heldWrites) *stack {
	t.Helper()
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
		o.ClientOptions = append(o.ClientOptions, h.option())
	})
	t.Cleanup(h.releaseAll) // runs before the stack's own clean-up, which waits for the jobs
	return st
}

// firstGate is the id of the first gate check run of head in repository full, 0 if none. The
// gate check opens as its review job begins, and the fake numbers everything in one sequence,
// so the ids order the jobs' starts.
func firstGate(gh *githubfake.Server, full, head string) int64 {
	var first int64
	for _, c := range gh.CheckRuns(full, head) {
		if c.Name == DefaultCheckName && (first == 0 || c.ID < first) {
			first = c.ID
		}
	}
	return first
}

// addBurst opens pull requests 30.. of installation A in e2eRepo and sends their webhooks; it
// returns their heads by number.
func addBurst(t *testing.T, st *stack, n int) map[int]string {
	t.Helper()
	heads := map[int]string{}
	for pr := 30; pr < 30+n; pr++ {
		p, head := addPR(t, st.gh, "Codertocat", "Hello-World", 1296269, githubfake.DefaultInstallationID, pr)
		st.send("pull_request", fmt.Sprintf("burst-%d", pr), p)
		heads[pr] = head
	}
	return heads
}

// begun lists the pull requests among heads whose review began, in number order.
func begun(gh *githubfake.Server, heads map[int]string) []int {
	var out []int
	for pr, head := range heads {
		if firstGate(gh, e2eRepo, head) != 0 {
			out = append(out, pr)
		}
	}
	slices.Sort(out)
	return out
}

// waitPublished waits until every pull request of heads has the App's comment.
func waitPublished(t *testing.T, st *stack, heads map[int]string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for pr := range heads {
		for !hasAdvisory(st.gh, pr) {
			if time.Now().After(deadline) {
				t.Fatalf("pull request %d never published after its writes were let through; logs:\n%s", pr, st.logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// A server with a single installation uses both of its two workers: two reviews of the
// installation run at once, each holding its worker while GitHub holds its content writes (or
// while it waits for the installation's write slot behind the other), although the default
// bound per installation is one job of two workers: no other installation has work waiting.
func TestLoneInstallationUsesEveryWorker(t *testing.T) {
	for _, tc := range fairnessCases {
		t.Run(tc.name, func(t *testing.T) {
			var q queue.Queue
			if tc.open != nil {
				q = tc.open(t)
			}
			h := newHeldWrites(e2eRepo)
			st := fairStack(t, q, h)
			heads := addBurst(t, st, 2)
			waitUntil(t, "both reviews of the installation running at once, with a content write held", func() bool {
				return len(begun(st.gh, heads)) == 2 && h.first() > 0
			})
			for pr := range heads {
				if hasAdvisory(st.gh, pr) {
					t.Fatalf("pull request %d published while its writes were held", pr)
				}
			}
			h.releaseAll()
			waitPublished(t, st, heads)
		})
	}
}

// A burst of installation A's reviews, whose content writes GitHub is slow to answer (so that
// each A job holds its worker while it writes or waits for A's write slot), takes both workers
// while no other installation has work (a lone installation uses every worker). Installation
// B's review, enqueued while A's jobs hold both workers and a third A job is queued, starts as
// soon as the first A job ends, before A's queued job, and publishes while A's other running
// job is still held: B waits for one job of A, not for A's queue. Without the bound per
// installation, A's queued job would take the freed worker first.
func TestBusyInstallationLeavesWorkersToOthers(t *testing.T) {
	for _, tc := range fairnessCases {
		t.Run(tc.name, func(t *testing.T) {
			var q queue.Queue
			if tc.open != nil {
				q = tc.open(t)
			}
			testBusyInstallationLeavesWorkersToOthers(t, q)
		})
	}
}

func testBusyInstallationLeavesWorkersToOthers(t *testing.T, q queue.Queue) {
	const instB = 2
	h := newHeldWrites(e2eRepo)
	st := fairStack(t, q, h)
	gh := st.gh
	gh.AddInstallation(instB)

	heads := addBurst(t, st, 3)
	waitUntil(t, "two reviews of installation A running at once, with a content write held", func() bool {
		return len(begun(gh, heads)) == 2 && h.first() > 0
	})
	running := begun(gh, heads)
	queued := 0
	for pr := range heads {
		if !slices.Contains(running, pr) {
			queued = pr
		}
	}

	// Installation B's review, accepted while A's jobs hold both workers; then the first A job
	// whose write was held is let through.
	pb, hb := addPR(t, gh, "Octo", "Other", 5000, instB, 1)
	st.send("pull_request", "other-1", pb)
	firstA := h.first()
	h.release(firstA)
	deadline := time.Now().Add(30 * time.Second)
	for !hasAdvisoryIn(gh, "Octo/Other", 1) {
		if time.Now().After(deadline) {
			t.Fatalf("installation B's review did not publish after A's pull request %d was let through "+
				"(gate of B: %q; A's running %v, queued %d)", firstA, gateOfRepo(gh, "Octo/Other", hb).Status, running, queued)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if g := gateOfRepo(gh, "Octo/Other", hb); g.Status != "completed" {
		t.Errorf("installation B's gate check is %q after its comment", g.Status)
	}
	gateB, gateQueued := firstGate(gh, "Octo/Other", hb), firstGate(gh, e2eRepo, heads[queued])
	if gateQueued != 0 && gateQueued < gateB {
		t.Fatalf("A's queued pull request %d began (gate check %d) before installation B's review (gate check %d)", queued, gateQueued, gateB)
	}
	for pr := range heads {
		if pr != firstA && hasAdvisory(gh, pr) {
			t.Fatalf("pull request %d of installation A published while its writes were held", pr)
		}
	}
	t.Logf("A's %v ran at once; once %d was let through, B began (gate check %d) before A's queued %d (gate check %d, 0: not begun) and published while A's other job was held",
		running, firstA, gateB, queued, gateQueued)

	h.releaseAll()
	waitPublished(t, st, heads)
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
