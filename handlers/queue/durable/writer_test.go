package durable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lensgate/lensgate/handlers/queue"
)

// TestEnqueueWriterBatches: jobs submitted together share transactions, every caller gets its own
// job's answer, and a job that fails its batch fails alone.
func TestEnqueueWriterBatches(t *testing.T) {
	release := make(chan struct{})
	var batches, jobsSeen atomic.Int64
	write := func(_ context.Context, jobs []queue.Job) ([]enqueueReply, error) {
		if batches.Add(1) == 1 {
			<-release // hold the first batch so that the others pile up behind it
		}
		out := make([]enqueueReply, len(jobs))
		for i, j := range jobs {
			if j.Key == "poison" {
				return nil, errors.New("poison job")
			}
			out[i] = enqueueReply{res: enqueueResult("queued-" + j.DeliveryID)}
		}
		jobsSeen.Add(int64(len(jobs)))
		return out, nil
	}
	w := newEnqueueWriter(1, write)
	defer w.close()

	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := w.submit(ctx, queue.Job{Key: "k0", DeliveryID: "first"})
		first <- err
	}()
	waitFor(t, "the first batch to start", func() bool { return batches.Load() == 1 })
	const n = 100
	var wg sync.WaitGroup
	errs := make([]error, n+1)
	res := make([]enqueueResult, n+1)
	for i := range n + 1 {
		key := fmt.Sprintf("k%d", i%7)
		if i == n {
			key = "poison"
		}
		wg.Go(func() { res[i], errs[i] = w.submit(ctx, queue.Job{Key: key, DeliveryID: fmt.Sprint(i)}) })
	}
	waitFor(t, "the jobs to wait for the writer", func() bool { return len(w.requests) == n+1 })
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if errs[i] != nil || res[i] != enqueueResult(fmt.Sprintf("queued-%d", i)) {
			t.Fatalf("job %d: %q, %v", i, res[i], errs[i])
		}
	}
	if errs[n] == nil || res[n] != resultError {
		t.Fatalf("poison job: %q, %v; want its own error", res[n], errs[n])
	}
	// The first batch, one batch of 101 that failed (at most maxBatch jobs each), then one
	// transaction per job of the failed batch.
	if got := batches.Load(); got > int64(2+n+1) || jobsSeen.Load() != n+1 {
		t.Fatalf("%d transactions for %d jobs seen", got, jobsSeen.Load())
	}
}

// TestEnqueueWriterStopped: after close, submit refuses instead of waiting for ever.
func TestEnqueueWriterStopped(t *testing.T) {
	w := newEnqueueWriter(2, func(context.Context, []queue.Job) ([]enqueueReply, error) {
		return []enqueueReply{{res: resultQueued}}, nil
	})
	if res, err := w.submit(context.Background(), queue.Job{Key: "k"}); err != nil || res != resultQueued {
		t.Fatalf("before close: %q, %v", res, err)
	}
	w.close()
	if _, err := w.submit(context.Background(), queue.Job{Key: "k"}); !errors.Is(err, queue.ErrStopped) {
		t.Fatalf("after close: %v, want ErrStopped", err)
	}
}

// TestGroupCommitThroughSQLite: concurrent webhooks on the real SQLite queue are all committed and
// answered, in fewer transactions than jobs, and the queue reopened after a stop holds every
// acknowledged job.
func TestGroupCommitThroughSQLite(t *testing.T) {
	dsn := sqliteDSN(t)
	opts := testOptions()
	opts.InsertOnly = true
	q, err := Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	rq := q.(*riverQueue[*sql.Tx])
	var txs atomic.Int64
	inner := rq.writer.write
	rq.writer.write = func(ctx context.Context, jobs []queue.Job) ([]enqueueReply, error) {
		txs.Add(1)
		return inner(ctx, jobs)
	}
	const n = 300
	var wg sync.WaitGroup
	var acked atomic.Int64
	for i := range n {
		wg.Go(func() {
			if err := q.Enqueue(context.Background(), prJob(fmt.Sprintf("o/r#%d", i), "h", fmt.Sprintf("d%d", i))); err != nil {
				t.Errorf("enqueue %d: %v", i, err)
				return
			}
			acked.Add(1)
		})
	}
	wg.Wait()
	if err := q.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d jobs in %d transactions", n, txs.Load())
	if txs.Load() >= n {
		t.Errorf("%d transactions for %d concurrent jobs: no group commit", txs.Load(), n)
	}
	q2 := open(t, dsn, opts)
	if got := len(jobsOf(t, q2)); int64(got) != acked.Load() || got != n {
		t.Fatalf("%d jobs after reopening, %d acknowledged, %d sent", got, acked.Load(), n)
	}
}
