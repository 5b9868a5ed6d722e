package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/internal/pgtest"
)

// backend is one database a test suite runs against.
type backend struct {
	name string
	dsn  func(t testing.TB) string
}

// backends returns SQLite always and PostgreSQL when pgtest.Env is set.
func backends(t testing.TB) []backend {
	out := []backend{{name: "sqlite", dsn: sqliteDSN}}
	if os.Getenv(pgtest.Env) != "" {
		out = append(out, backend{name: "postgres", dsn: pgtest.DatabaseOrSkip})
	} else {
		t.Logf("%s not set: PostgreSQL cases not run (.ci/run sets it)", pgtest.Env)
	}
	return out
}

func sqliteDSN(t testing.TB) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "queue.db")
}

// testOptions are short timings so that retries and polling do not slow the suite down.
func testOptions() Options {
	return Options{
		Workers:           4,
		JobTimeout:        5 * time.Second,
		MaxAttempts:       5,
		RetryBase:         20 * time.Millisecond,
		RetryMax:          100 * time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
	}
}

func open(t testing.TB, dsn string, opts Options) queue.Queue {
	t.Helper()
	q, err := Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = q.Stop(context.Background()) })
	return q
}

// jobInfo is one review job row as the tests see it.
type jobInfo struct {
	ID      int64
	State   string
	Attempt int
	Key     string
	Head    string
	Resumed int
}

// inspector lets tests read River's job table through the queue's own connection.
type inspector interface {
	reviewJobs(ctx context.Context) ([]jobInfo, error)
}

func (q *riverQueue[TTx]) reviewJobs(ctx context.Context) ([]jobInfo, error) {
	res, err := q.client.JobList(ctx, river.NewJobListParams().Kinds(reviewArgs{}.Kind()).First(10000))
	if err != nil {
		return nil, err
	}
	var out []jobInfo
	for _, row := range res.Jobs {
		var a reviewArgs
		if err := json.Unmarshal(row.EncodedArgs, &a); err != nil {
			return nil, fmt.Errorf("decode args: %w", err)
		}
		out = append(out, jobInfo{ID: row.ID, State: string(row.State), Attempt: row.Attempt, Key: a.Key, Head: a.Head, Resumed: a.Job.Resumed})
	}
	return out, nil
}

func jobsOf(t testing.TB, q queue.Queue) []jobInfo {
	t.Helper()
	jobs, err := q.(inspector).reviewJobs(context.Background())
	if err != nil {
		t.Fatalf("list jobs: %v", err)
	}
	return jobs
}

// waitFor polls cond until it holds; the deadline only guards against a hung test.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitForLong(t, what, 90*time.Second, cond)
}

// waitForLong is waitFor with a longer guard, for cases that take long on purpose.
func waitForLong(t testing.TB, what string, guard time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled reports whether no review job is waiting or running.
func settled(jobs []jobInfo) bool {
	for _, j := range jobs {
		switch j.State {
		case "available", "pending", "running", "retryable", "scheduled":
			return false
		}
	}
	return true
}

func prJob(key, head, delivery string) queue.Job {
	return queue.Job{
		Key: key, DeliveryID: delivery, Kind: queue.KindPullRequest, InstallationID: 1,
		Owner: "o", Repo: "r", Number: 1, HeadSHA: head, Reason: "pull_request.synchronize",
	}
}

// checkTakenOver checks the jobs of a subject whose worker died mid-job: the dead attempt's job
// was cancelled and exactly one job, the take-over, completed the review.
func checkTakenOver(t testing.TB, jobs []jobInfo, key string) {
	t.Helper()
	var completed, cancelled []jobInfo
	for _, j := range jobs {
		if j.Key != key {
			continue
		}
		switch j.State {
		case "completed":
			completed = append(completed, j)
		case "cancelled":
			cancelled = append(cancelled, j)
		default:
			t.Errorf("job %+v left %s", j, j.State)
		}
	}
	if len(completed) != 1 || completed[0].Resumed != 1 || len(cancelled) != 1 || cancelled[0].Resumed != 0 {
		t.Fatalf("jobs of %s: completed %+v, cancelled %+v; want the dead attempt cancelled and one take-over completed", key, completed, cancelled)
	}
}
