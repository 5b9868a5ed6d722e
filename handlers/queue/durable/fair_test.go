package durable

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/lensgate/lensgate/handlers/queue"
)

// A job at its installation's bound is snoozed 1 s, doubling per snooze up to 15 s, ±20 %.
func TestSnoozeAtTheInstallationBound(t *testing.T) {
	tests := []struct {
		metadata string
		want     time.Duration
	}{
		{`{}`, time.Second},
		{`{"snoozes": 1}`, 2 * time.Second},
		{`{"snoozes": 3}`, 8 * time.Second},
		{`{"snoozes": 40}`, 15 * time.Second},
		{`not json`, time.Second},
	}
	for _, tt := range tests {
		for range 20 {
			d := snoozeFor(&rivertype.JobRow{Metadata: []byte(tt.metadata)})
			if lo, hi := tt.want*8/10, tt.want*12/10; d < lo || d > hi {
				t.Errorf("metadata %s: snooze %v, want %v ±20 %%", tt.metadata, d, tt.want)
			}
		}
	}
}

// The bound counts this replica's running jobs per installation and names the installations at
// their bound; installation 0 and a negative bound are not bounded.
func TestInstallationCap(t *testing.T) {
	c := newInstallationCap(0, 3) // default: 2 of 3 workers
	l1 := c.enter(7)
	if full := c.atBound(7); full != nil {
		t.Fatalf("one job of 7 running: at bound %v", full)
	}
	c.enter(7)
	c.enter(9)
	c.enter(9)
	c.enter(8)
	if full := c.atBound(7); fmt.Sprint(full) != "[7 9]" {
		t.Fatalf("at bound %v, want [7 9]", full)
	}
	if full := c.atBound(8); full != nil {
		t.Fatalf("installation 8 below its bound: at bound %v", full)
	}
	l1()
	if full := c.atBound(7); full != nil {
		t.Fatalf("a job that left does not free its place: %v", full)
	}
	for range 5 {
		c.enter(0)
	}
	if full := c.atBound(0); full != nil {
		t.Fatal("a job of no installation is bounded")
	}
	n := newInstallationCap(-1, 1)
	n.enter(7)
	if full := n.atBound(7); full != nil {
		t.Fatal("a negative bound bounds")
	}
}

// fairInternals reach the queue's own look-up and its database, whatever the driver.
type fairInternals interface {
	waitingElsewhere(ctx context.Context, full []int64) (bool, error)
	testExec(ctx context.Context, query string, args ...any) error
	testPlan(ctx context.Context, query string, args []any) (string, error)
}

func (q *riverQueue[TTx]) testExec(ctx context.Context, query string, args ...any) error {
	return withTx(ctx, q.db, func(tx TTx) error {
		_, err := q.db.exec(ctx, tx, query, args...)
		return err
	})
}

// testPlan is the database's plan for query, with fresh statistics on PostgreSQL (autovacuum
// keeps them for a busy job table).
func (q *riverQueue[TTx]) testPlan(ctx context.Context, query string, args []any) (string, error) {
	prefix := "EXPLAIN QUERY PLAN "
	if q.backend == "postgres" {
		prefix = "EXPLAIN "
	}
	var lines []string
	err := withTx(ctx, q.db, func(tx TTx) error {
		if q.backend == "postgres" {
			if _, err := q.db.exec(ctx, tx, "ANALYZE river_job"); err != nil {
				return err
			}
		}
		return q.db.queryRows(ctx, tx, prefix+query, args, func(scan func(...any) error) error {
			if q.backend == "postgres" {
				var line string
				if err := scan(&line); err != nil {
					return err
				}
				lines = append(lines, line)
				return nil
			}
			var id, parent, unused int64
			var detail string
			if err := scan(&id, &parent, &unused, &detail); err != nil {
				return err
			}
			lines = append(lines, detail)
			return nil
		})
	})
	return strings.Join(lines, "\n"), err
}

func jobOf(key string, installation int64) queue.Job {
	j := prJob(key, "h-"+key, "d-"+key)
	j.InstallationID = installation
	return j
}

// The look-up finds an available review of an installation outside the list, below, between
// or above the listed ones, and ignores scheduled jobs and snoozed ones not yet due; it is
// served by the partial index of available reviews.
func TestWaitingElsewhere(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			q := open(t, b.dsn(t), testOptions())
			fi := q.(fairInternals)
			look := func(full ...int64) bool {
				t.Helper()
				got, err := fi.waitingElsewhere(ctx, full)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			enqueue := func(j queue.Job) {
				t.Helper()
				if err := q.Enqueue(ctx, j); err != nil {
					t.Fatal(err)
				}
			}
			enqueue(jobOf("a#1", 1))
			enqueue(jobOf("a#2", 1))
			if look(1) {
				t.Fatal("only jobs of installation 1 wait, yet another installation's job was found")
			}
			scheduled := jobOf("b#1", 2)
			scheduled.NotBefore = time.Now().Add(time.Hour)
			enqueue(scheduled)
			enqueue(jobOf("c#1", 3))
			// As River leaves a job snoozed for a short while: available, due later.
			future := `UPDATE river_job SET scheduled_at = now() + interval '1 hour' WHERE args->>'key' = $1`
			if b.name == "sqlite" {
				future = `UPDATE river_job SET scheduled_at = datetime('now', '+1 hour', 'subsec') WHERE json_extract(args, '$.key') = $1`
			}
			if err := fi.testExec(ctx, future, "c#1"); err != nil {
				t.Fatal(err)
			}
			if look(1) {
				t.Fatal("a scheduled job and a snoozed job not yet due count as waiting")
			}
			enqueue(jobOf("e#1", 5))
			for _, tt := range []struct {
				full []int64
				want bool
			}{
				{[]int64{1}, true},        // 5 above
				{[]int64{1, 5}, false},    // none outside
				{[]int64{5}, true},        // 1 below
				{[]int64{1, 3, 5}, false}, // none outside
				{[]int64{1, 4}, true},     // 5 above the last
				{[]int64{0, 1, 6}, true},  // 5 between
				{[]int64{0, 1, 5, 6}, false},
			} {
				if got := look(tt.full...); got != tt.want {
					t.Errorf("at bound %v: waiting elsewhere = %v, want %v", tt.full, got, tt.want)
				}
			}
			// A backlog of the busy installation, as a burst leaves it.
			for i := range 300 {
				enqueue(jobOf(fmt.Sprintf("a#b%d", i), 1))
			}
			if look(1, 5) {
				t.Fatal("a backlog of the listed installations counts as waiting elsewhere")
			}
			query, args := waitingElsewhereQuery(b.name, []int64{1, 5})
			plan, err := fi.testPlan(ctx, query, args)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("plan of the look-up:\n%s", plan)
			if strings.Count(plan, "lensgate_river_job_waiting") < 3 {
				t.Errorf("the look-up's three ranges are not all served by the index:\n%s", plan)
			}
		})
	}
}

// gatedHandler blocks each job until the test releases its key, and reports starts in order.
type gatedHandler struct {
	started chan string
	mu      sync.Mutex
	gates   map[string]chan struct{}
}

func newGatedHandler() *gatedHandler {
	return &gatedHandler{started: make(chan string, 100), gates: map[string]chan struct{}{}}
}

func (g *gatedHandler) gate(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.gates[key]
	if !ok {
		c = make(chan struct{})
		g.gates[key] = c
	}
	return c
}

func (g *gatedHandler) handle(ctx context.Context, j queue.Job) error {
	g.started <- j.Key
	select {
	case <-g.gate(j.Key):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gatedHandler) release(key string) { close(g.gate(key)) }

func (g *gatedHandler) next(t *testing.T) string {
	t.Helper()
	select {
	case k := <-g.started:
		return k
	case <-time.After(30 * time.Second):
		t.Fatal("no further job started")
		return ""
	}
}

// With the default bound of two workers (one job), a lone installation still runs two jobs at
// once; a job of installation B enqueued while A's jobs hold both workers starts as soon as the
// first of them ends, before A's job queued earlier; then A's job runs.
func TestInstallationBoundYieldsOnlyToWaitingJobs(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			opts := testOptions()
			opts.Workers = 2
			opts.JobTimeout = time.Minute
			q := open(t, b.dsn(t), opts)
			g := newGatedHandler()
			t.Cleanup(func() {
				for _, k := range []string{"a#1", "a#2", "a#3", "b#1"} {
					select {
					case <-g.gate(k):
					default:
						g.release(k)
					}
				}
			})
			for _, k := range []string{"a#1", "a#2", "a#3"} {
				if err := q.Enqueue(ctx, jobOf(k, 1)); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.Start(ctx, g.handle); err != nil {
				t.Fatal(err)
			}
			running := map[string]bool{g.next(t): true, g.next(t): true}
			if !running["a#1"] || !running["a#2"] {
				t.Fatalf("started %v, want a#1 and a#2 at once (a lone installation uses both workers)", running)
			}
			if err := q.Enqueue(ctx, jobOf("b#1", 2)); err != nil {
				t.Fatal(err)
			}
			g.release("a#1")
			if k := g.next(t); k != "b#1" {
				t.Fatalf("after the first of A's jobs ended, %s started; want B's job before A's a#3", k)
			}
			g.release("b#1")
			if k := g.next(t); k != "a#3" {
				t.Fatalf("then %s started, want a#3", k)
			}
			g.release("a#2")
			g.release("a#3")
			waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, q)) })
			for _, j := range jobsOf(t, q) {
				if j.State != "completed" {
					t.Errorf("job %s ended %s", j.Key, j.State)
				}
			}
		})
	}
}

// BenchmarkWaitingElsewhere measures the look-up of a job at its installation's bound, the
// common case of a lone installation's burst (nothing of another installation waits), against
// a backlog of that installation's available jobs: its cost does not grow with the backlog.
//
//	go test -run '^$' -bench WaitingElsewhere ./handlers/queue/durable/
func BenchmarkWaitingElsewhere(b *testing.B) {
	for _, be := range backends(b) {
		for _, backlog := range []int{100, 2000} {
			b.Run(fmt.Sprintf("%s/backlog=%d", be.name, backlog), func(b *testing.B) {
				ctx := context.Background()
				opts := testOptions()
				opts.InsertOnly = true
				q := open(b, be.dsn(b), opts)
				for i := range backlog {
					if err := q.Enqueue(ctx, jobOf(fmt.Sprintf("a#%d", i), 1)); err != nil {
						b.Fatal(err)
					}
				}
				fi := q.(fairInternals)
				if be.name == "postgres" {
					// As autovacuum does for a busy job table.
					if err := fi.testExec(ctx, "ANALYZE river_job"); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for range b.N {
					if waiting, err := fi.waitingElsewhere(ctx, []int64{1}); err != nil || waiting {
						b.Fatalf("waiting elsewhere = %v, %v", waiting, err)
					}
				}
			})
		}
	}
}
