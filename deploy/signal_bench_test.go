package deploy

import (
	"flag"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lensgate/lensgate/internal/githubfake"
)

var signalRate = flag.Int("signal.rate", 5, "signed webhook deliveries per second in BenchmarkGateSignal")

// gateTimes keeps when the fake GitHub first showed each head's gate check in progress, and
// when it first showed it completed.
type gateTimes struct {
	mu         sync.Mutex
	inProgress map[string]time.Time
	completed  map[string]time.Time
}

func newGateTimes() *gateTimes {
	return &gateTimes{inProgress: map[string]time.Time{}, completed: map[string]time.Time{}}
}

// see is the fake's check-run observer.
func (g *gateTimes) see(c githubfake.CheckRun) {
	if c.Name != "lensgate" {
		return
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := map[string]map[string]time.Time{"in_progress": g.inProgress, "completed": g.completed}[c.Status]
	if _, ok := seen[c.HeadSHA]; seen != nil && !ok {
		seen[c.HeadSHA] = now
	}
}

// since returns, sorted, how long after sent each head's gate showed in which (a map of
// gateTimes), and how many heads it never showed that way.
func (g *gateTimes) since(sent map[string]time.Time, which func(*gateTimes) map[string]time.Time) (githubfake.LoadResult, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var res githubfake.LoadResult
	missing := 0
	for head, at := range sent {
		t, ok := which(g)[head]
		if !ok {
			missing++
			continue
		}
		res.Latencies = append(res.Latencies, t.Sub(at))
	}
	slices.Sort(res.Latencies)
	return res, missing
}

// BenchmarkGateSignal measures what a pull request's author sees after a push, through the built
// binary on its default SQLite queue with the builtin runtime: the time from sending the webhook
// to the moment GitHub shows the head's gate check in progress, and to the moment it shows it
// completed. One push to each of 50 pull requests is sent at signal.rate per second, after a
// push to ten of them that warms the process up. Times are taken when the fake GitHub applies
// the check-run write, not by polling. As in BenchmarkWebhookAck, content writes are not spaced
// (the fake has no secondary rate limit): the figure is lensgate's, not GitHub's pacing.
//
//	go test -run '^$' -bench GateSignal -benchtime 1x ./deploy/ -args -signal.rate=5
func BenchmarkGateSignal(b *testing.B) {
	times := newGateTimes()
	s, prs := newScaleOut(b, "", githubfake.WithRateLimit(15000), githubfake.WithCheckRunObserver(times.see))
	s.spacing = "0"
	srv := s.start("all")
	url := srv.base + "/api/github/hook"
	push := func(prefix string, prs []int) map[string]time.Time {
		heads := make([]string, len(prs))
		reqs := make([]*http.Request, len(prs))
		for i, pr := range prs {
			heads[i] = s.nextHead(pr)
			req, err := githubfake.WebhookRequest(url, "pull_request", fmt.Sprintf("%s-%d", prefix, pr), s.fe.gh.WebhookSecret(), s.payloadFor(pr, heads[i]))
			if err != nil {
				b.Fatal(err)
			}
			reqs[i] = req
		}
		var mu sync.Mutex
		sent := map[string]time.Time{}
		res := githubfake.SendOpenLoop(s.client, reqs, *signalRate, func(i int) {
			s.fe.gh.Push(s.repo, prs[i], heads[i], scaleDiff, nil)
			mu.Lock()
			sent[heads[i]] = time.Now()
			mu.Unlock()
		})
		if n := res.Non2xx(); n > 0 {
			b.Fatalf("%d deliveries not acknowledged", n)
		}
		s.waitReviewed(prs, srv)
		return sent
	}
	for b.Loop() {
		push("warm", prs[:10])
		sent := push("signal", prs)
		started, never := times.since(sent, func(g *gateTimes) map[string]time.Time { return g.inProgress })
		done, _ := times.since(sent, func(g *gateTimes) map[string]time.Time { return g.completed })
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(started.Quantile(0.5)), "in-progress-p50-ms")
		b.ReportMetric(ms(started.Quantile(0.99)), "in-progress-p99-ms")
		b.ReportMetric(ms(done.Quantile(0.5)), "concluded-p50-ms")
		b.ReportMetric(ms(done.Quantile(0.99)), "concluded-p99-ms")
		b.ReportMetric(float64(never), "never-in-progress")
		b.Logf("%d pushes at %d/s: gate in progress after p50 %v p99 %v max %v (%d never shown in progress); concluded after p50 %v p99 %v max %v",
			len(sent), *signalRate, started.Quantile(0.5), started.Quantile(0.99), started.Quantile(1), never,
			done.Quantile(0.5), done.Quantile(0.99), done.Quantile(1))
	}
	b.StopTimer()
	srv.stop()
}
