package durable

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
)

// BenchmarkEnqueue measures the webhook's cost of accepting a job (one transaction: delivery id,
// subject lock, River insert). Reports p50 and p99 besides the mean.
//
//	go test -run '^$' -bench Enqueue -benchtime 500x ./handlers/queue/durable/
func BenchmarkEnqueue(b *testing.B) {
	for _, be := range backends(b) {
		b.Run(be.name, func(b *testing.B) {
			opts := testOptions()
			opts.InsertOnly = true
			q := open(b, be.dsn(b), opts)
			ctx := context.Background()
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if err := q.Enqueue(ctx, prJob(fmt.Sprintf("o/r#%d", i), "h", fmt.Sprintf("d%d", i))); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
		})
	}
}

var loadRate = flag.Int("load.rate", 200, "deliveries per second offered in BenchmarkEnqueueLoad")

// BenchmarkEnqueueLoad offers b.N deliveries at a fixed rate (open loop: a slow answer never
// lowers the rate), each a new head for one of 50 subjects, so that nearly every enqueue
// supersedes and cancels the subject's previous job, as a burst of pushes does. Reports the
// latency of Enqueue as a webhook sees it.
//
//	go test -run '^$' -bench EnqueueLoad -benchtime 2000x ./handlers/queue/durable/ -args -load.rate=200
func BenchmarkEnqueueLoad(b *testing.B) {
	for _, be := range backends(b) {
		b.Run(be.name, func(b *testing.B) {
			opts := testOptions()
			opts.InsertOnly = true
			opts.MaxQueued = 1000
			q := open(b, be.dsn(b), opts)
			ctx := context.Background()
			took := make([]time.Duration, b.N)
			errs := make([]error, b.N)
			interval := time.Second / time.Duration(*loadRate)
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
					time.Sleep(d)
				}
				wg.Go(func() {
					job := prJob(fmt.Sprintf("o/r#%d", i%50), fmt.Sprintf("h%d", i), fmt.Sprintf("d%d", i))
					// As a webhook's job, with its body for the replay check.
					job.Body = queue.Body{Digest: fmt.Sprintf("%064x", i), Delivery: job.DeliveryID}
					t0 := time.Now()
					errs[i] = q.Enqueue(ctx, job)
					took[i] = time.Since(t0)
				})
			}
			wg.Wait()
			b.StopTimer()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkThroughput measures jobs per second through the queue with a no-op review: b.N jobs
// are queued first, then replicas × workers drain them with the production fetch settings
// (River's poll interval, the queue's fetch cooldown). SQLite runs one replica (one machine).
//
//	go test -run '^$' -bench Throughput -benchtime 1000x ./handlers/queue/durable/
func BenchmarkThroughput(b *testing.B) {
	for _, be := range backends(b) {
		for _, replicas := range []int{1, 2} {
			if be.name == "sqlite" && replicas > 1 {
				continue
			}
			for _, workers := range []int{1, 4} {
				name := fmt.Sprintf("%s/replicas=%d/workers=%d", be.name, replicas, workers)
				b.Run(name, func(b *testing.B) { benchThroughput(b, be.dsn(b), replicas, workers) })
			}
		}
	}
}

func benchThroughput(b *testing.B, dsn string, replicas, workers int) {
	ctx := context.Background()
	opts := testOptions()
	opts.Workers = workers
	opts.FetchPollInterval, opts.FetchCooldown = 0, 0
	// Every job is of one installation; the per-installation bound (a fairness policy with
	// tests of its own) would snooze the jobs of all but one worker and measure its snoozes.
	opts.MaxRunningPerInstallation = -1
	qs := make([]queue.Queue, replicas)
	for i := range qs {
		qs[i] = open(b, dsn, opts)
	}
	for i := 0; i < b.N; i++ {
		if err := qs[0].Enqueue(ctx, prJob(fmt.Sprintf("o/r#%d", i), "h", fmt.Sprintf("d%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	var done atomic.Int64
	all := make(chan struct{})
	h := func(context.Context, queue.Job) error {
		if done.Add(1) == int64(b.N) {
			close(all)
		}
		return nil
	}
	b.ResetTimer()
	start := time.Now()
	for _, q := range qs {
		if err := q.Start(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-all:
	case <-time.After(10 * time.Minute):
		b.Fatalf("only %d of %d jobs ran", done.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// BenchmarkTokenReserve measures one reservation of the daily token cap (the conditional upsert
// every model call makes before it is sent), granted each time, sequential and from 8
// goroutines on one installation's row.
//
//	go test -run '^$' -bench TokenReserve -benchtime 2000x ./handlers/queue/durable/
func BenchmarkTokenReserve(b *testing.B) {
	for _, be := range backends(b) {
		b.Run(be.name, func(b *testing.B) {
			opts := testOptions()
			opts.InsertOnly = true
			l, err := NewTokenLedger(context.Background(), open(b, be.dsn(b), opts), 1<<62, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.Run("sequential", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if r, err := l.Reserve(ctx, 1, 1000); err != nil || !r.Granted {
						b.Fatal(r, err)
					}
				}
			})
			b.Run("parallel-8", func(b *testing.B) {
				b.SetParallelism(8 / max(1, runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if r, err := l.Reserve(ctx, 1, 1000); err != nil || !r.Granted {
							b.Error(r, err)
							return
						}
					}
				})
			})
		})
	}
}
