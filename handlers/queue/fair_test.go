package queue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// gated runs a Memory queue whose handlers block until the test releases their job, and
// reports each job's start in order.
type gated struct {
	q       *Memory
	started chan string
	mu      sync.Mutex
	gates   map[string]chan struct{}
}

func newGated(t *testing.T, opts MemoryOptions) *gated {
	t.Helper()
	g := &gated{q: NewMemory(opts), started: make(chan string, 100), gates: map[string]chan struct{}{}}
	t.Cleanup(func() {
		g.releaseAll()
		stop(t, g.q)
	})
	return g
}

func (g *gated) gate(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.gates[key]
	if !ok {
		c = make(chan struct{})
		g.gates[key] = c
	}
	return c
}

func (g *gated) start(t *testing.T) {
	t.Helper()
	err := g.q.Start(context.Background(), func(ctx context.Context, j Job) error {
		g.started <- j.Key
		select {
		case <-g.gate(j.Key):
		case <-ctx.Done():
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (g *gated) enqueue(t *testing.T, key string, installation int64) {
	t.Helper()
	if err := g.q.Enqueue(context.Background(), Job{Key: key, InstallationID: installation, Kind: KindPullRequest}); err != nil {
		t.Fatal(err)
	}
}

func (g *gated) release(key string) { close(g.gate(key)) }

func (g *gated) releaseAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, c := range g.gates {
		select {
		case <-c:
		default:
			close(c)
		}
		delete(g.gates, k)
	}
}

// next is the key of the next job to start; the deadline only guards against a hung test.
func (g *gated) next(t *testing.T) string {
	t.Helper()
	select {
	case k := <-g.started:
		return k
	case <-time.After(10 * time.Second):
		t.Fatal("no further job started")
		return ""
	}
}

// The jobs that start before any job ends: an installation at its running bound lets a job of
// an installation below its bound go first, even one queued after it, and uses free workers when
// no such job waits; a job of no installation is never bounded; a negative bound is no bound.
// Every handler blocks until the test lets it go, so only order is asserted.
func TestRunningBoundPerInstallation(t *testing.T) {
	tests := []struct {
		name    string
		workers int
		bound   int     // MaxRunningPerInstallation
		queued  []int64 // installation of each job, in arrival order
		first   []int   // the jobs (by index) that start before any job ends
	}{
		{"a lone installation uses every worker", 2, 0, []int64{1, 1, 1}, []int{0, 1}},
		{"a lone installation uses every worker of three", 3, 0, []int64{1, 1, 1, 1}, []int{0, 1, 2}},
		{"default bound of two workers", 2, 0, []int64{1, 1, 1, 2}, []int{0, 3}},
		{"bound 2 of three workers", 3, 2, []int64{1, 1, 1, 2}, []int{0, 1, 3}},
		{"installations at their bound share the rest", 3, 1, []int64{1, 1, 2, 2}, []int{0, 2, 1}},
		{"no bound", 2, -1, []int64{1, 1, 1, 2}, []int{0, 1}},
		{"jobs of no installation", 2, 0, []int64{0, 0, 2}, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGated(t, MemoryOptions{Workers: tt.workers, MaxRunningPerInstallation: tt.bound})
			for i, inst := range tt.queued {
				g.enqueue(t, fmt.Sprintf("o/r#%d", i), inst)
			}
			g.start(t)
			got := map[string]bool{}
			for range tt.first {
				got[g.next(t)] = true
			}
			for _, i := range tt.first {
				if k := fmt.Sprintf("o/r#%d", i); !got[k] {
					t.Errorf("started first %v, want job %d (installation %d) among them", got, i, tt.queued[i])
				}
			}
			// Let everything go: every job runs in the end.
			g.releaseAll()
			for range len(tt.queued) - len(tt.first) {
				g.next(t)
				g.releaseAll()
			}
		})
	}
}

// A job of installation B that arrives while installation A's burst holds every worker starts
// as soon as the first of A's jobs ends, before A's jobs queued earlier; with a free worker it
// starts at once.
func TestAnotherInstallationGoesNextAfterABurst(t *testing.T) {
	const a, b = 1, 2
	g := newGated(t, MemoryOptions{Workers: 2})
	for i := range 4 {
		g.enqueue(t, fmt.Sprintf("a#%d", i), a)
	}
	g.start(t)
	first := []string{g.next(t), g.next(t)}
	if first[0] != "a#0" || first[1] != "a#1" {
		t.Fatalf("started %v, want a#0 and a#1 (a lone installation uses both workers)", first)
	}
	g.enqueue(t, "b#0", b)
	g.release("a#0")
	if k := g.next(t); k != "b#0" {
		t.Fatalf("after the first of A's jobs ended, %s started; want B's job before A's queued ones", k)
	}
	g.release("a#1")
	if k := g.next(t); k != "a#2" {
		t.Fatalf("then %s started, want a#2", k)
	}
	// A now runs a#2 beside B's job: a worker is free once B's job ends, and a second job of B
	// takes the free worker at once, before A's a#3.
	g.release("b#0")
	if k := g.next(t); k != "a#3" {
		t.Fatalf("with B's job done, %s started; want a#3 on the free worker", k)
	}
	g.release("a#2")
	g.enqueue(t, "b#1", b)
	if k := g.next(t); k != "b#1" {
		t.Fatalf("with a free worker, %s started; want B's new job", k)
	}
}
