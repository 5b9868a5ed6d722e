package deploy

import (
	"flag"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/githubfake"
)

var (
	ackRate     = flag.Int("ack.rate", 100, "signed webhook deliveries per second in BenchmarkWebhookAck")
	ackDuration = flag.Duration("ack.duration", 3*time.Second, "how long BenchmarkWebhookAck sends")
)

// BenchmarkWebhookAck measures how fast the built binary acknowledges signed webhooks (each a
// synchronize with a new head for one of 50 pull requests) with each queue, while its own
// workers review what it enqueues: the memory queue, the SQLite default and PostgreSQL (when
// LENSGATE_TEST_POSTGRES_DSN is set).
//
//	go test -run '^$' -bench WebhookAck -benchtime 1x ./deploy/ -args -ack.rate=200 -ack.duration=30s
func BenchmarkWebhookAck(b *testing.B) {
	for _, q := range []string{"memory", "sqlite", "postgres"} {
		b.Run(q, func(b *testing.B) {
			dsn := map[string]string{"memory": "memory", "sqlite": ""}[q]
			if q == "postgres" {
				dsn = freshDatabase(b)
			}
			s, prs := newScaleOut(b, dsn)
			// The fake GitHub has no secondary rate limit, so content writes are not spaced: with
			// the shipped 1 s per installation, 50 pull requests of one installation would take
			// minutes to drain and the wait for every final head below would time out; this
			// benchmark measures the ack path, not GitHub's pacing.
			s.spacing = "0"
			srv := s.start("all")
			url := srv.base + "/api/github/hook"
			for b.Loop() {
				total := int(float64(*ackRate) * ackDuration.Seconds())
				// Build and sign every delivery before the clock starts.
				type delivery struct {
					pr   int
					head string
				}
				ds := make([]delivery, total)
				reqs := make([]*http.Request, total)
				for i := range ds {
					pr := prs[i%len(prs)]
					head := s.nextHead(pr)
					req, err := githubfake.WebhookRequest(url, "pull_request", fmt.Sprintf("ack-%s-%d", q, i), s.fe.gh.WebhookSecret(), s.payloadFor(pr, head))
					if err != nil {
						b.Fatal(err)
					}
					ds[i], reqs[i] = delivery{pr, head}, req
				}
				res := githubfake.SendOpenLoop(s.client, reqs, *ackRate, func(i int) {
					s.fe.gh.Push(s.repo, ds[i].pr, ds[i].head, scaleDiff, nil)
				})
				p50, p99 := res.Quantile(0.50), res.Quantile(0.99)
				b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(res.Non2xx()), "non-2xx")
				b.Logf("%s: %d deliveries at %d/s: p50 %v p99 %v max %v, %d not 2xx", q, total, *ackRate,
					p50, p99, res.Quantile(1), res.Non2xx())
			}
			// Let the workers finish what was acknowledged, so the stop hands nothing back.
			b.StopTimer()
			s.waitReviewed(prs, srv)
			srv.stop()
		})
	}
}
