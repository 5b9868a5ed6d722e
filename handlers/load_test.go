package handlers_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/publish"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/internal/githubfake"
)

var (
	loadRate     = flag.Int("load.rate", 200, "signed webhook deliveries per second in BenchmarkWebhookLoad")
	loadDuration = flag.Duration("load.duration", 3*time.Second, "how long BenchmarkWebhookLoad sends")
	loadPRs      = flag.Int("load.prs", 50, "distinct pull requests the load is spread over")
)

// TestGitHubCallsPerReview counts what one review of a pull request costs in GitHub API calls,
// with the handlers' reads alone and with the real publisher.
func TestGitHubCallsPerReview(t *testing.T) {
	// One listing of the base branch's root tells which configuration file exists; then that file
	// is read, or, with none, the owner's .github repository's .asdd.yml.
	for _, tc := range []struct {
		name                string
		files               map[string]string
		contents, repo, all int
	}{
		{"reads", nil, 2, 0, 6},
		{"reads with .asdd.yml", map[string]string{".asdd.yml": baseConfig}, 2, 0, 6},
		{"reads with .yaga.toml", map[string]string{".yaga.toml": yagaPolicy}, 2, 0, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.addFixturePR(readmeDiff)
			for path, body := range tc.files {
				e.gh.SetFile(fixtureRepo, fixtureRef, path, body)
			}
			e.gh.ResetCalls()
			e.send("pull_request", "d-calls", fixture(t, "pull_request.opened.payload.json"))
			e.drain()
			want := map[string]int{
				"POST /app/installations/{id}/access_tokens":       1,
				"GET /repos/{owner}/{repo}/pulls/{number}":         2, // the pull request and its diff
				"GET /repos/{owner}/{repo}/contents/{path...}":     tc.contents,
				"GET /repos/{owner}/{repo}":                        tc.repo, // no repository lookup: the .github read goes to its default branch
				"GET /repos/{owner}/{repo}/pulls/{number}/files":   0,       // the diff carries the files
				"GET /repos/{owner}/{repo}/pulls/{number}/commits": 1,
				// The last review's state and the dismiss commands since: the pull request's
				// comment counts say there is none yet, so nothing is listed.
				"GET /repos/{owner}/{repo}/issues/{number}/comments": 0,
				"GET /repos/{owner}/{repo}/pulls/{number}/comments":  0,
			}
			got := e.gh.Calls()
			for route, n := range want {
				if got[route] != n {
					t.Errorf("%s: %d calls, want %d", route, got[route], n)
				}
			}
			if e.gh.TotalCalls() != tc.all || e.gh.Writes() != 0 {
				t.Fatalf("calls: %s", e.gh.CallSummary())
			}
			t.Logf("one review, handler reads only: %d calls\n%s", e.gh.TotalCalls(), e.gh.CallSummary())
		})
	}
	t.Run("with the publisher", func(t *testing.T) {
		p, err := publish.New(publish.Options{Audit: &pdp.MemorySink{}, ContentSpacing: -1})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, func(_ *config.Server, o *handlers.Options) { o.Publisher = p })
		e.addFixturePR(readmeDiff)
		e.gh.ResetCalls()
		e.send("pull_request", "d-calls", fixture(t, "pull_request.opened.payload.json"))
		e.drain()
		if e.gh.Writes() == 0 || len(e.gh.CheckRuns(fixtureRepo, fixtureHead)) != 1 {
			t.Fatalf("publisher wrote nothing: %s", e.gh.CallSummary())
		}
		t.Logf("one review with publishing: %d calls (%d writes)\n%s", e.gh.TotalCalls(), e.gh.Writes(), e.gh.CallSummary())
	})
}

func loadPR(i int) int      { return 101 + i%*loadPRs }
func loadHead(i int) string { return fmt.Sprintf("%040x", i+1) }

// BenchmarkWebhookLoad drives the running server over loopback HTTP with signed deliveries at a
// fixed rate and reports the acknowledgement latency. Each delivery is a synchronize with a new
// head for one of load.prs pull requests, so the queue coalesces and supersedes under load.
//
//	go test -run '^$' -bench WebhookLoad -benchtime 1x ./handlers/ -args -load.rate=200 -load.duration=30s
func BenchmarkWebhookLoad(b *testing.B) {
	e := newEnv(b, func(c *config.Server, o *handlers.Options) {
		c.Queue.Size = 10000
		// Production logs at info; the test harness would otherwise keep every debug line.
		o.Logger = zerolog.New(io.Discard).Level(zerolog.InfoLevel)
	})
	base := fixture(b, "pull_request.synchronize.payload.json")
	e.addFixturePR(readmeDiff)
	for i := 1; i <= *loadPRs; i++ {
		e.gh.AddPullRequest(fixtureRepo, githubfake.PullRequest{Number: 100 + i, HeadSHA: fixtureHead, BaseRef: fixtureRef, Diff: []byte(readmeDiff)})
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 10 * time.Second}
	secret := e.gh.WebhookSecret()
	url := e.http.URL + handlers.RouteHook
	for b.Loop() {
		total := int(float64(*loadRate) * loadDuration.Seconds())
		// Build and sign every delivery before the clock starts, so the measurement is the
		// server's, not the generator's.
		reqs := make([]*http.Request, total)
		for i := range total {
			body := bytes.ReplaceAll(base, []byte(fixtureHead), []byte(loadHead(i)))
			body = bytes.ReplaceAll(body, []byte(`"number": 2,`), []byte(fmt.Sprintf(`"number": %d,`, loadPR(i))))
			req, err := githubfake.WebhookRequest(url, "pull_request", fmt.Sprint("load-", i), secret, body)
			if err != nil {
				b.Fatal(err)
			}
			reqs[i] = req
		}
		res := githubfake.SendOpenLoop(client, reqs, *loadRate, func(i int) {
			// The push happens on GitHub first, then its webhook arrives.
			e.gh.Push(fixtureRepo, loadPR(i), loadHead(i), []byte(readmeDiff), nil)
		})
		p50, p99, worst := res.Quantile(0.50), res.Quantile(0.99), res.Quantile(1)
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
		b.ReportMetric(float64(total)/res.Sent.Seconds(), "deliveries/s")
		b.Logf("%d deliveries sent in %s: status counts %v; p50 %s p99 %s max %s", total, res.Sent.Round(time.Millisecond), res.Codes, p50, p99, worst)
	}
	b.StopTimer()
	e.drain()
	reviews := len(e.pub.all())
	b.Logf("reviews published %d; GitHub calls %d (%.1f per review)", reviews, e.gh.TotalCalls(), float64(e.gh.TotalCalls())/float64(max(reviews, 1)))
}
