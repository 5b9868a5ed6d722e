package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/internal/pgtest"
)

// The multi-process tests re-execute the test binary as web and worker processes. These
// variables tell a child what to be.
const (
	childRoleEnv = "LENSGATE_QUEUE_TEST_CHILD"
	childDSNEnv  = "LENSGATE_QUEUE_TEST_CHILD_DSN"
	childPlanEnv = "LENSGATE_QUEUE_TEST_CHILD_PLAN"
	// childLeaseEnv, when set, is the child's LeaseTTL (a duration); unset keeps the default.
	childLeaseEnv = "LENSGATE_QUEUE_TEST_CHILD_LEASE"
	// childEventsEnv is the file a SQLite worker child appends its events to.
	childEventsEnv = "LENSGATE_QUEUE_TEST_CHILD_EVENTS"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childRoleEnv) {
	case "":
		os.Exit(m.Run())
	case "worker":
		os.Exit(runWorkerChild())
	case "web":
		os.Exit(runWebChild())
	case "sqlite-worker":
		os.Exit(runSQLiteWorkerChild())
	default:
		fmt.Fprintln(os.Stderr, "unknown child role")
		os.Exit(2)
	}
}

// jobExtra tells the fake review how long to take.
type jobExtra struct {
	SleepMS int `json:"sleep_ms"`
}

// childOptions keep the default job timeout, rescue and lease settings (a dead worker's job is
// taken over through its lease), with short retries and polling.
func childOptions() Options {
	o := Options{
		Workers:           4,
		MaxAttempts:       5,
		RetryBase:         50 * time.Millisecond,
		RetryMax:          200 * time.Millisecond,
		FetchPollInterval: 100 * time.Millisecond,
	}
	if d, err := time.ParseDuration(os.Getenv(childLeaseEnv)); err == nil {
		o.LeaseTTL = d
	}
	return o
}

// runWorkerChild runs a worker replica whose fake review sleeps, checks it is still current and
// publishes with an idempotent upsert, recording what it did in test tables. It stops on SIGTERM.
func runWorkerChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := zerolog.New(os.Stderr).With().Timestamp().Int("pid", os.Getpid()).Logger()
	dsn := os.Getenv(childDSNEnv)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		log.Error().Err(err).Msg("connect")
		return 1
	}
	defer pool.Close()
	opts := childOptions()
	opts.Logger = &log
	q, err := Open(ctx, dsn, opts)
	if err != nil {
		log.Error().Err(err).Msg("open queue")
		return 1
	}
	pid := os.Getpid()
	record := func(ctx context.Context, job queue.Job, event string) error {
		_, err := pool.Exec(ctx, `INSERT INTO test_event (pid, key, head, event) VALUES ($1, $2, $3, $4)`,
			pid, job.Key, job.HeadSHA, event)
		return err
	}
	h := func(ctx context.Context, job queue.Job) error {
		var extra jobExtra
		_ = json.Unmarshal(job.Extra, &extra)
		if err := record(ctx, job, "started"); err != nil {
			return err
		}
		select {
		case <-time.After(time.Duration(extra.SleepMS) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := queue.CheckCurrent(ctx); err != nil {
			return err
		}
		// Publishing is the commit point: once the job is known to be current, the sticky
		// comment (one row per pull request, written only while the head is current) and the
		// completion record are written together, whatever happens to ctx meanwhile.
		pctx := context.WithoutCancel(ctx)
		tx, err := pool.Begin(pctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(pctx) }()
		_, err = tx.Exec(pctx, `INSERT INTO test_publication (key, head, pid)
			SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM lensgate_subject WHERE subject_key = $1 AND head_sha = $2)
			ON CONFLICT (key) DO UPDATE SET head = excluded.head, pid = excluded.pid, writes = test_publication.writes + 1`,
			job.Key, job.HeadSHA, pid)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(pctx, `INSERT INTO test_event (pid, key, head, event) VALUES ($1, $2, $3, 'completed')`,
			pid, job.Key, job.HeadSHA); err != nil {
			return err
		}
		return tx.Commit(pctx)
	}
	if err := q.Start(ctx, h); err != nil {
		log.Error().Err(err).Msg("start")
		return 1
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := q.Stop(stopCtx); err != nil {
		log.Error().Err(err).Msg("stop")
	}
	return 0
}

// webResult is what the web child reports on stdout.
type webResult struct {
	OK        int      `json:"ok"`
	Duplicate int      `json:"duplicate"`
	Errors    []string `json:"errors"`
}

// runWebChild enqueues the plan's jobs as an insert-only replica, four at a time, keeping each
// pull request's deliveries in order (as one webhook sender would).
func runWebChild() int {
	ctx := context.Background()
	data, err := os.ReadFile(os.Getenv(childPlanEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var plan []queue.Job
	if err := json.Unmarshal(data, &plan); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts := childOptions()
	opts.InsertOnly = true
	q, err := Open(ctx, os.Getenv(childDSNEnv), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = q.Stop(ctx) }()
	const shards = 4
	var lanes [shards][]queue.Job
	for _, j := range plan {
		h := fnv.New32a()
		_, _ = h.Write([]byte(j.Key))
		lanes[h.Sum32()%shards] = append(lanes[h.Sum32()%shards], j)
	}
	var mu sync.Mutex
	var res webResult
	var wg sync.WaitGroup
	for _, lane := range lanes {
		wg.Go(func() {
			for _, j := range lane {
				err := q.Enqueue(ctx, j)
				mu.Lock()
				switch {
				case err == nil:
					res.OK++
				case errors.Is(err, queue.ErrDuplicate):
					res.Duplicate++
				default:
					res.Errors = append(res.Errors, err.Error())
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

// child is a running child process with its captured stderr.
type child struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

func startChild(t *testing.T, role, dsn, plan string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childRoleEnv+"="+role, childDSNEnv+"="+dsn, childPlanEnv+"="+plan)
	cmd.Env = append(cmd.Env, env...)
	c := &child{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{w: c.stderr}
	cmd.Stdout = &lockedWriter{w: &bytes.Buffer{}}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s child: %v", role, err)
	}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
		if t.Failed() {
			t.Logf("%s child %d stderr (tail):\n%s", role, cmd.Process.Pid, tail(c.stderr.String(), 3000))
		}
	})
	return c
}

// terminate stops children gracefully (all signalled first) and waits for them.
func terminate(t *testing.T, cs ...*child) {
	t.Helper()
	for _, c := range cs {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range cs {
		select {
		case err := <-c.done:
			c.done <- err
		case <-time.After(30 * time.Second):
			t.Fatalf("child %d did not stop on SIGTERM", c.cmd.Process.Pid)
		}
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// runWeb runs the web child over plan and returns its tally.
func runWeb(t *testing.T, dsn string, plan []queue.Job) webResult {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	data, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childRoleEnv+"=web", childDSNEnv+"="+dsn, childPlanEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("web child: %v\n%s", err, stderr.String())
	}
	var res webResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("web child output %q: %v", out, err)
	}
	return res
}

// burstPlan builds the webhook deliveries: every pull request gets one to four pushes, some
// extra events on a head it already has and some redeliveries of earlier deliveries, and the
// pull requests' deliveries are interleaved in bursts. It returns the plan, each pull request's
// final head and the number of redeliveries.
func burstPlan(rng *rand.Rand, prs, total int) (plan []queue.Job, final map[string]string, redeliveries int) {
	perPR := make([][]queue.Job, prs)
	final = map[string]string{}
	n := 0
	for i := range prs {
		key := fmt.Sprintf("acme/repo%d#%d", i%7, i)
		for h := range 1 + i%4 {
			j := prJob(key, fmt.Sprintf("%s-head%d", key, h), fmt.Sprintf("d-%d-%d", i, h))
			j.Reason = "pull_request.synchronize"
			j.Extra, _ = json.Marshal(jobExtra{SleepMS: 20 + rng.IntN(130)})
			perPR[i] = append(perPR[i], j)
			final[key] = j.HeadSHA
			n++
		}
	}
	// Other events (labels, review requests) on a head already pushed.
	for e := 0; e < (total-n)*2/5; e++ {
		i := rng.IntN(prs)
		pos := rng.IntN(len(perPR[i]))
		j := perPR[i][pos]
		j.DeliveryID = fmt.Sprintf("d-%d-extra%d", i, e)
		j.Reason = "pull_request.labeled"
		perPR[i] = append(perPR[i][:pos+1], append([]queue.Job{j}, perPR[i][pos+1:]...)...)
		n++
	}
	// Redeliveries of a delivery already sent, later in the same pull request's stream.
	for ; n < total; n++ {
		i := rng.IntN(prs)
		pos := rng.IntN(len(perPR[i]))
		perPR[i] = append(perPR[i], perPR[i][pos])
		redeliveries++
	}
	for {
		var open []int
		for i := range perPR {
			if len(perPR[i]) > 0 {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			break
		}
		i := open[rng.IntN(len(open))]
		burst := min(1+rng.IntN(4), len(perPR[i]))
		plan = append(plan, perPR[i][:burst]...)
		perPR[i] = perPR[i][burst:]
	}
	return plan, final, redeliveries
}

const testTables = `
CREATE TABLE test_event (id BIGSERIAL PRIMARY KEY, pid INT NOT NULL, key TEXT NOT NULL, head TEXT NOT NULL, event TEXT NOT NULL);
CREATE TABLE test_publication (key TEXT PRIMARY KEY, head TEXT NOT NULL, pid INT NOT NULL, writes INT NOT NULL DEFAULT 1);`

// TestMultiProcess runs one web and two worker processes against PostgreSQL: a burst of webhook
// deliveries, a worker killed in the middle of a job, and a restart of every process.
func TestMultiProcess(t *testing.T) {
	dsn := pgtest.DatabaseOrSkip(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, testTables); err != nil {
		t.Fatal(err)
	}
	// The queue's tables exist before the first query against them.
	boot := open(t, dsn, Options{InsertOnly: true})

	w1 := startChild(t, "worker", dsn, "")
	w2 := startChild(t, "worker", dsn, "")

	t.Run("Burst", func(t *testing.T) {
		plan, final, redeliveries := burstPlan(rand.New(rand.NewPCG(1, 2)), 50, 200)
		if len(plan) != 200 || len(final) != 50 {
			t.Fatalf("plan has %d deliveries for %d PRs", len(plan), len(final))
		}
		res := runWeb(t, dsn, plan)
		if len(res.Errors) != 0 || res.Duplicate != redeliveries || res.OK != 200-redeliveries {
			t.Fatalf("web tally = %+v, want %d accepted and %d duplicates", res, 200-redeliveries, redeliveries)
		}
		waitFor(t, "all jobs to settle", func() bool { return settled(jobsOf(t, boot)) })

		// Exactly one completed review per final head, and no head reviewed twice.
		completed := map[string]int{}
		rows, err := pool.Query(ctx, `SELECT key, head, count(*) FROM test_event WHERE event = 'completed' GROUP BY key, head`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var key, head string
			var n int
			if err := rows.Scan(&key, &head, &n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("%s@%s completed %d times", key, head, n)
			}
			completed[key+"@"+head] = n
		}
		rows.Close()
		for key, head := range final {
			if completed[key+"@"+head] != 1 {
				t.Errorf("final head %s@%s completed %d times, want 1", key, head, completed[key+"@"+head])
			}
		}
		// One publication per pull request, showing its final head.
		pubs := map[string]string{}
		rows, err = pool.Query(ctx, `SELECT key, head FROM test_publication`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var key, head string
			if err := rows.Scan(&key, &head); err != nil {
				t.Fatal(err)
			}
			pubs[key] = head
		}
		rows.Close()
		if len(pubs) != len(final) {
			t.Errorf("%d publications for %d pull requests", len(pubs), len(final))
		}
		for key, head := range final {
			if pubs[key] != head {
				t.Errorf("publication of %s shows %q, want final head %q", key, pubs[key], head)
			}
		}
		// Both workers took part.
		var workers int
		if err := pool.QueryRow(ctx, `SELECT count(DISTINCT pid) FROM test_event WHERE event = 'completed'`).Scan(&workers); err != nil {
			t.Fatal(err)
		}
		if workers != 2 {
			t.Errorf("%d worker processes completed jobs, want 2", workers)
		}
		// River agrees: every final head's job completed, nothing dead-lettered or lost.
		finalJobs := map[string]int{}
		states := map[string]int{}
		for _, j := range jobsOf(t, boot) {
			states[j.State]++
			if j.State == "discarded" {
				t.Errorf("job %d (%s@%s) discarded", j.ID, j.Key, j.Head)
			}
			if final[j.Key] == j.Head && j.State == "completed" {
				finalJobs[j.Key]++
			}
		}
		for key := range final {
			if finalJobs[key] != 1 {
				t.Errorf("%s: %d completed jobs for its final head, want 1", key, finalJobs[key])
			}
		}
		var started int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM test_event WHERE event = 'started'`).Scan(&started)
		t.Logf("jobs by state: %v; %d attempts started, %d older heads completed before a newer one arrived", states, started, len(completed)-len(final))
	})

	t.Run("KillWorkerMidJob", func(t *testing.T) {
		job := prJob("acme/kill#1", "kill-head", "d-kill")
		job.Extra, _ = json.Marshal(jobExtra{SleepMS: 4000})
		if err := boot.Enqueue(ctx, job); err != nil {
			t.Fatal(err)
		}
		var pid int
		waitFor(t, "the job to start", func() bool {
			err := pool.QueryRow(ctx, `SELECT pid FROM test_event WHERE key = $1 AND event = 'started' ORDER BY id LIMIT 1`, job.Key).Scan(&pid)
			return err == nil
		})
		victim, survivor := w1, w2
		if w2.cmd.Process.Pid == pid {
			victim, survivor = w2, w1
		}
		if victim.cmd.Process.Pid != pid {
			t.Fatalf("job started in unknown process %d", pid)
		}
		if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		// The survivor finds the dead worker's lease expired and takes the job over.
		waitFor(t, "the survivor to resume the job", func() bool {
			var n int
			_ = pool.QueryRow(ctx, `SELECT count(*) FROM test_event WHERE key = $1 AND event = 'started' AND pid = $2`, job.Key, survivor.cmd.Process.Pid).Scan(&n)
			return n > 0
		})
		resumed := time.Since(killed)
		var donePID, completions int
		waitFor(t, "the resumed job to complete", func() bool {
			err := pool.QueryRow(ctx, `SELECT count(*), coalesce(max(pid), 0) FROM test_event WHERE key = $1 AND event = 'completed'`, job.Key).Scan(&completions, &donePID)
			return err == nil && completions > 0
		})
		waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, boot)) })
		t.Logf("killed worker's job resumed on the survivor %s after the SIGKILL (lease %s)", resumed.Round(time.Millisecond), childOptions().withDefaults().LeaseTTL)
		if completions != 1 || donePID != survivor.cmd.Process.Pid {
			t.Fatalf("kill job completed %d times by %d, want once by survivor %d", completions, donePID, survivor.cmd.Process.Pid)
		}
		if resumed > 60*time.Second {
			t.Errorf("the job resumed %s after its worker died, want within 60s", resumed)
		}
		checkTakenOver(t, jobsOf(t, boot), job.Key)
		terminate(t, survivor)
	})

	t.Run("SlowJobNotDuplicated", func(t *testing.T) {
		// A review that runs for many lease periods keeps its lease: it starts once, completes
		// once, and the other replica never takes it over.
		ttl, sleep := 2*time.Second, 9*time.Second
		env := []string{childLeaseEnv + "=" + ttl.String()}
		if d, err := time.ParseDuration(os.Getenv("LENSGATE_QUEUE_TEST_SLOW_JOB")); err == nil {
			env, sleep = nil, d // the long version: default lease, a review of that length
		}
		a, b := startChild(t, "worker", dsn, "", env...), startChild(t, "worker", dsn, "", env...)
		job := prJob("acme/slow#1", "slow-head", "d-slow")
		job.Extra, _ = json.Marshal(jobExtra{SleepMS: int(sleep.Milliseconds())})
		if err := boot.Enqueue(ctx, job); err != nil {
			t.Fatal(err)
		}
		waitForLong(t, "the slow job to complete", sleep+90*time.Second, func() bool {
			var n int
			_ = pool.QueryRow(ctx, `SELECT count(*) FROM test_event WHERE key = $1 AND event = 'completed'`, job.Key).Scan(&n)
			return n > 0
		})
		waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, boot)) })
		var started, completed int
		_ = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE event = 'started'), count(*) FILTER (WHERE event = 'completed') FROM test_event WHERE key = $1`, job.Key).Scan(&started, &completed)
		if started != 1 || completed != 1 {
			t.Fatalf("slow job started %d and completed %d times, want once each", started, completed)
		}
		for _, j := range jobsOf(t, boot) {
			if j.Key == job.Key && (j.State != "completed" || j.Resumed != 0) {
				t.Errorf("slow job = %+v, want completed and never taken over", j)
			}
		}
		t.Logf("a %s review ran once (child lease settings %v; empty is the default %s)", sleep, env, childOptions().withDefaults().LeaseTTL)
		terminate(t, a, b)
	})

	t.Run("RestartEverything", func(t *testing.T) {
		// With no worker running, the web process accepts 20 jobs; then workers start and are
		// stopped while jobs are still queued and running (the running ones are handed back), and
		// a new generation finishes the work.
		terminate(t, w1, w2) // no-op for those the previous case already stopped
		var plan []queue.Job
		for i := range 20 {
			j := prJob(fmt.Sprintf("acme/restart#%d", i), "r-head-"+strconv.Itoa(i), fmt.Sprintf("d-restart-%d", i))
			j.Extra, _ = json.Marshal(jobExtra{SleepMS: 1500})
			plan = append(plan, j)
		}
		if res := runWeb(t, dsn, plan); res.OK != 20 {
			t.Fatalf("web tally = %+v", res)
		}
		boot2 := open(t, dsn, Options{InsertOnly: true}) // a freshly started replica sees them
		queued := 0
		for _, j := range jobsOf(t, boot2) {
			if j.State == "available" {
				queued++
			}
		}
		if queued != 20 {
			t.Fatalf("%d jobs queued after the web process exited, want 20", queued)
		}
		a, b := startChild(t, "worker", dsn, ""), startChild(t, "worker", dsn, "")
		waitFor(t, "some jobs to complete", func() bool {
			var n int
			_ = pool.QueryRow(ctx, `SELECT count(*) FROM test_event WHERE key LIKE 'acme/restart#%' AND event = 'completed'`).Scan(&n)
			return n >= 3
		})
		terminate(t, a, b)
		var doneBefore int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM test_event WHERE key LIKE 'acme/restart#%' AND event = 'completed'`).Scan(&doneBefore)
		if doneBefore >= 20 {
			t.Fatalf("all jobs finished before the restart; the test needs some still queued")
		}
		startChild(t, "worker", dsn, "")
		startChild(t, "worker", dsn, "")
		waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, boot2)) })
		rows, err := pool.Query(ctx, `SELECT key, count(*) FROM test_event WHERE key LIKE 'acme/restart#%' AND event = 'completed' GROUP BY key`)
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for rows.Next() {
			var key string
			var n int
			if err := rows.Scan(&key, &n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("%s completed %d times", key, n)
			}
			done++
		}
		rows.Close()
		if done != 20 {
			t.Fatalf("%d of 20 queued jobs completed after the restart (%d before it)", done, doneBefore)
		}
		var handedBack int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT key FROM test_event WHERE key LIKE 'acme/restart#%' AND event = 'started'
			GROUP BY key HAVING count(*) > 1) AS again`).Scan(&handedBack)
		t.Logf("%d jobs completed before the restart, %d after (%d of them interrupted and run again)", doneBefore, 20-doneBefore, handedBack)
	})
}
