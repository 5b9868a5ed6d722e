package durable

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/queue"
)

// runSQLiteWorkerChild is runWorkerChild for a SQLite queue shared by processes on one
// machine: it appends "pid key head event" lines to the events file instead of writing tables.
func runSQLiteWorkerChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := zerolog.New(os.Stderr).With().Timestamp().Int("pid", os.Getpid()).Logger()
	f, err := os.OpenFile(os.Getenv(childEventsEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		log.Error().Err(err).Msg("events file")
		return 1
	}
	defer f.Close()
	var mu sync.Mutex
	record := func(job queue.Job, event string) error {
		mu.Lock()
		defer mu.Unlock()
		// One short write with O_APPEND: lines of the processes never interleave.
		_, err := fmt.Fprintf(f, "%d %s %s %s\n", os.Getpid(), job.Key, job.HeadSHA, event)
		return err
	}
	opts := childOptions()
	opts.Logger = &log
	q, err := Open(ctx, os.Getenv(childDSNEnv), opts)
	if err != nil {
		log.Error().Err(err).Msg("open queue")
		return 1
	}
	h := func(ctx context.Context, job queue.Job) error {
		var extra jobExtra
		_ = json.Unmarshal(job.Extra, &extra)
		if err := record(job, "started"); err != nil {
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
		return record(job, "completed")
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

// childEvent is one line of a SQLite worker child's events file.
type childEvent struct {
	pid             int
	key, head, what string
}

func readEvents(t *testing.T, path string) []childEvent {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []childEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e childEvent
		if _, err := fmt.Sscan(sc.Text(), &e.pid, &e.key, &e.head, &e.what); err != nil {
			t.Fatalf("events line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func countEvents(evs []childEvent, key, what string, pid int) int {
	n := 0
	for _, e := range evs {
		if e.key == key && e.what == what && (pid == 0 || e.pid == pid) {
			n++
		}
	}
	return n
}

// TestMultiProcessSQLite runs two worker processes on one SQLite queue file with the default
// lease: a worker killed in the middle of a job has it taken over by the other within a minute,
// and a review much longer than the lease (shortened here) runs once.
func TestMultiProcessSQLite(t *testing.T) {
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "queue.db")
	events := filepath.Join(dir, "events.txt")
	boot := open(t, dsn, Options{InsertOnly: true})
	ctx := context.Background()

	t.Run("KillWorkerMidJob", func(t *testing.T) {
		w1 := startChild(t, "sqlite-worker", dsn, "", childEventsEnv+"="+events)
		w2 := startChild(t, "sqlite-worker", dsn, "", childEventsEnv+"="+events)
		job := prJob("acme/kill#1", "kill-head", "d-kill")
		job.Extra, _ = json.Marshal(jobExtra{SleepMS: 4000})
		if err := boot.Enqueue(ctx, job); err != nil {
			t.Fatal(err)
		}
		var pid int
		waitFor(t, "the job to start", func() bool {
			for _, e := range readEvents(t, events) {
				if e.key == job.Key && e.what == "started" {
					pid = e.pid
					return true
				}
			}
			return false
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
		waitFor(t, "the survivor to resume the job", func() bool {
			return countEvents(readEvents(t, events), job.Key, "started", survivor.cmd.Process.Pid) > 0
		})
		resumed := time.Since(killed)
		waitFor(t, "the resumed job to complete", func() bool {
			return countEvents(readEvents(t, events), job.Key, "completed", 0) > 0
		})
		waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, boot)) })
		t.Logf("killed worker's job resumed on the survivor %s after the SIGKILL (lease %s)", resumed.Round(time.Millisecond), childOptions().withDefaults().LeaseTTL)
		evs := readEvents(t, events)
		if n := countEvents(evs, job.Key, "completed", survivor.cmd.Process.Pid); n != 1 || countEvents(evs, job.Key, "completed", 0) != 1 {
			t.Fatalf("kill job completed %d times by the survivor; events %v", n, evs)
		}
		if resumed > 60*time.Second {
			t.Errorf("the job resumed %s after its worker died, want within 60s", resumed)
		}
		checkTakenOver(t, jobsOf(t, boot), job.Key)
		terminate(t, survivor)
	})

	t.Run("SlowJobNotDuplicated", func(t *testing.T) {
		ttl, sleep := 2*time.Second, 9*time.Second
		env := []string{childEventsEnv + "=" + events, childLeaseEnv + "=" + ttl.String()}
		if d, err := time.ParseDuration(os.Getenv("LENSGATE_QUEUE_TEST_SLOW_JOB")); err == nil {
			env, sleep = env[:1], d
		}
		a, b := startChild(t, "sqlite-worker", dsn, "", env...), startChild(t, "sqlite-worker", dsn, "", env...)
		job := prJob("acme/slow#1", "slow-head", "d-slow")
		job.Extra, _ = json.Marshal(jobExtra{SleepMS: int(sleep.Milliseconds())})
		if err := boot.Enqueue(ctx, job); err != nil {
			t.Fatal(err)
		}
		waitForLong(t, "the slow job to complete", sleep+90*time.Second, func() bool {
			return countEvents(readEvents(t, events), job.Key, "completed", 0) > 0
		})
		waitFor(t, "jobs to settle", func() bool { return settled(jobsOf(t, boot)) })
		evs := readEvents(t, events)
		if s, c := countEvents(evs, job.Key, "started", 0), countEvents(evs, job.Key, "completed", 0); s != 1 || c != 1 {
			t.Fatalf("slow job started %d and completed %d times, want once each", s, c)
		}
		for _, j := range jobsOf(t, boot) {
			if j.Key == job.Key && (j.State != "completed" || j.Resumed != 0) {
				t.Errorf("slow job = %+v, want completed and never taken over", j)
			}
		}
		t.Logf("a %s review ran once (child settings %s)", sleep, strings.Join(env[1:], " "))
		terminate(t, a, b)
	})
}
