package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/pgtest"
)

var (
	ackRate     = flag.Int("ack.rate", 100, "signed webhook deliveries per second in BenchmarkWebhookAck")
	ackDuration = flag.Duration("ack.duration", 3*time.Second, "how long BenchmarkWebhookAck sends")
	ackWarmup   = flag.Duration("ack.warmup", time.Second, "how long BenchmarkWebhookAck sends, at the same rate, before it measures")
)

// BenchmarkWebhookAck measures how fast the built binary acknowledges signed webhooks (each a
// synchronize with a new head for one of 50 pull requests) with each queue, while its own
// workers review what it enqueues: the memory queue, the SQLite default and PostgreSQL (when
// LENSGATE_TEST_POSTGRES_DSN is set).
//
// A fresh process first opens its database and HTTP connections and prepares its statements, so
// the first second of deliveries (ack.warmup) is measured on its own (cold-p99-ms); p50 and p99
// are those of the deliveries sent after it. Each queue starts after what the previous ones wrote
// has reached the disk (settleDisk). server-cpu-µs is the CPU time (user and system) the
// serve process spent per measured delivery, its reviews included, which the machine's load does
// not change the way it changes latencies.
//
//	go test -run '^$' -bench WebhookAck -benchtime 1x ./deploy/ -args -ack.rate=200 -ack.duration=30s
func BenchmarkWebhookAck(b *testing.B) {
	for _, q := range []string{"memory", "sqlite", "postgres"} {
		b.Run(q, func(b *testing.B) {
			settleDisk(b)
			dsn := map[string]string{"memory": "memory", "sqlite": ""}[q]
			if q == "postgres" {
				dsn = pgtest.DatabaseOrSkip(b)
			}
			// 2,200 pushes to 50 pull requests of one installation in 11 s take about 10,000
			// requests: more than a github.com installation's hourly budget of 5,000, whose
			// exhaustion go-github enforces itself. The benchmark measures acknowledgement under
			// that burst, so it runs at GitHub Enterprise Cloud's installation budget.
			s, prs := newScaleOut(b, dsn, githubfake.WithRateLimit(15000))
			// The fake GitHub has no secondary rate limit, so content writes are not spaced: with
			// the shipped 1 s per installation, 50 pull requests of one installation would take
			// minutes to drain and the wait for every final head below would time out; this
			// benchmark measures the ack path, not GitHub's pacing.
			s.spacing = "0"
			srv := s.start("all")
			url := srv.base + "/api/github/hook"
			type delivery struct {
				pr       int
				head, id string
				payload  []byte // with pushMarks for what only the push decides
			}
			// deliveries builds n deliveries before the clock starts; each is finished and
			// signed right after its push (stamp).
			deliveries := func(prefix string, n int) ([]delivery, []*http.Request) {
				ds := make([]delivery, n)
				for i := range ds {
					pr := prs[i%len(prs)]
					head := s.nextHead(pr)
					ds[i] = delivery{pr, head, fmt.Sprintf("%s-%d", prefix, i), s.payloadWith(pr, head, updatedMark, bodyMark)}
				}
				return ds, make([]*http.Request, n)
			}
			// stamp pushes delivery i's head and makes its request: GitHub's payload shows the pull
			// request right after the push (its updated_at, and its body, which lensgate's own
			// disclosure block changes between pushes), and the worker compares its reads with
			// them. Latencies are measured from after it.
			send := func(ds []delivery, reqs []*http.Request) githubfake.LoadResult {
				return githubfake.SendOpenLoop(s.client, reqs, *ackRate, func(i int) {
					d := ds[i]
					s.fe.gh.Push(s.repo, d.pr, d.head, scaleDiff, nil)
					req, err := githubfake.WebhookRequest(url, "pull_request", d.id, s.fe.gh.WebhookSecret(), stampPush(d.payload, s.fe.gh.PullRequest(s.repo, d.pr)))
					if err != nil {
						b.Error(err)
					}
					reqs[i] = req
				})
			}
			for b.Loop() {
				warm := send(deliveries("warm-"+q, int(float64(*ackRate)*ackWarmup.Seconds())))
				ds, reqs := deliveries("ack-"+q, int(float64(*ackRate)*ackDuration.Seconds()))
				cpu0 := processCPU(b, srv.cmd.Process.Pid)
				res := send(ds, reqs)
				cpu := processCPU(b, srv.cmd.Process.Pid) - cpu0
				p50, p99 := res.Quantile(0.50), res.Quantile(0.99)
				b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(warm.Quantile(0.99).Microseconds())/1000, "cold-p99-ms")
				b.ReportMetric(float64(cpu.Microseconds())/float64(len(reqs)), "server-cpu-µs")
				b.ReportMetric(float64(res.Non2xx()+warm.Non2xx()), "non-2xx")
				b.Logf("%s: %d deliveries at %d/s after %d to warm up: p50 %v p99 %v max %v (warm-up p99 %v); server CPU %v; %d not 2xx",
					q, len(reqs), *ackRate, len(warm.Latencies), p50, p99, res.Quantile(1), warm.Quantile(0.99), cpu, res.Non2xx()+warm.Non2xx())
			}
			// Let the workers finish what was acknowledged, so the stop hands nothing back.
			b.StopTimer()
			s.waitReviewed(prs, srv)
			srv.stop()
		})
	}
}

// updatedMark and bodyMark stand in a pre-built payload for the pull request's updated_at and
// body, which are known only once the push is made.
const (
	updatedMark = "@@updated_at@@"
	bodyMark    = "@@body@@"
)

// stampPush fills a pre-built payload's marks with the pull request's state after the push.
func stampPush(payload []byte, pr githubfake.PullRequest) []byte {
	updated, _ := json.Marshal(pr.UpdatedAt.UTC().Format(time.RFC3339))
	body, _ := json.Marshal(pr.Body)
	out := bytes.Replace(payload, []byte(`"`+updatedMark+`"`), updated, 1)
	return bytes.Replace(out, []byte(`"`+bodyMark+`"`), body, 1)
}

// settleDisk writes out what earlier benchmarks left for the disk (PostgreSQL's dirty buffers,
// the kernel's dirty pages), so that a queue's figures are not those of the previous queue's
// writes reaching the disk.
func settleDisk(tb testing.TB) {
	tb.Helper()
	if dsn := os.Getenv("LENSGATE_TEST_POSTGRES_DSN"); dsn != "" {
		ctx := context.Background()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
				tb.Logf("CHECKPOINT: %v", err)
			}
			_ = conn.Close(ctx)
		}
	}
	syscall.Sync()
}

// processCPU is the user and system CPU time process pid has used, from /proc.
func processCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Skipf("no /proc here: %v", err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := bytes.Fields(raw[bytes.LastIndexByte(raw, ')')+1:])
	if len(f) < 13 {
		tb.Fatalf("unexpected /proc/%d/stat: %q", pid, raw)
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("unexpected /proc/%d/stat: %q", pid, raw)
	}
	// Linux reports these in clock ticks of 1/100 s (USER_HZ) on every architecture Go supports.
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
