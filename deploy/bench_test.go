package deploy

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
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
			srv := s.start("all")
			url := srv.base + "/api/github/hook"
			for b.Loop() {
				total := int(float64(*ackRate) * ackDuration.Seconds())
				// Build and sign every delivery before the clock starts.
				type delivery struct {
					pr   int
					head string
					req  *http.Request
				}
				ds := make([]delivery, total)
				for i := range ds {
					pr := prs[i%len(prs)]
					head := s.nextHead(pr)
					req, err := githubfake.WebhookRequest(url, "pull_request", fmt.Sprintf("ack-%s-%d", q, i), s.fe.gh.WebhookSecret(), s.payloadFor(pr, head))
					if err != nil {
						b.Fatal(err)
					}
					ds[i] = delivery{pr, head, req}
				}
				lat := make([]time.Duration, total)
				codes := make([]int, total)
				var wg sync.WaitGroup
				interval := time.Second / time.Duration(*ackRate)
				start := time.Now()
				for i := range ds {
					// Open loop: a slow answer never lowers the offered rate.
					if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
						time.Sleep(d)
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						s.fe.gh.Push(s.repo, ds[i].pr, ds[i].head, scaleDiff, nil)
						t0 := time.Now()
						resp, err := s.client.Do(ds[i].req)
						lat[i] = time.Since(t0)
						if err != nil {
							codes[i] = -1
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						codes[i] = resp.StatusCode
					}()
				}
				wg.Wait()
				slices.Sort(lat)
				bad := 0
				for _, c := range codes {
					if c/100 != 2 {
						bad++
					}
				}
				b.ReportMetric(float64(lat[total/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[total*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(bad), "non-2xx")
				b.Logf("%s: %d deliveries at %d/s: p50 %v p99 %v max %v, %d not 2xx", q, total, *ackRate,
					lat[total/2], lat[total*99/100], lat[total-1], bad)
			}
			srv.stop()
		})
	}
}
