package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/pgtest"
)

// soakDiff adds merge-conflict markers, which the built-in runtime flags on their lines, so
// every review has inline comments to place (and to never place twice).
func soakDiff(pr, push int) []byte {
	return []byte(fmt.Sprintf("diff --git a/README.md b/README.md\nindex 1111111..2222222 100644\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,5 @@\n # Hello-World\n+<<<<<<< HEAD\n+change %d.%d\n+=======\n+>>>>>>> feature\n", pr, push))
}

// soakFaults are the GitHub routes that fail now and then during the soak: reads the review
// needs, and writes whose answer is lost after they landed.
var soakFaults = []struct {
	route string
	fault githubfake.Fault
}{
	{"GET /repos/{owner}/{repo}/pulls/{number}", githubfake.Fault{Status: http.StatusBadGateway}},
	{"GET /repos/{owner}/{repo}/pulls/{number}/files", githubfake.Fault{Status: http.StatusInternalServerError}},
	{"GET /repos/{owner}/{repo}/commits/{ref}/check-runs", githubfake.Fault{Status: http.StatusServiceUnavailable}},
	{"GET /repos/{owner}/{repo}/issues/{number}/comments", githubfake.Fault{Status: http.StatusForbidden, SecondaryRateLimit: true, RetryAfter: 1}},
	{"POST /repos/{owner}/{repo}/check-runs", githubfake.Fault{Status: http.StatusBadGateway, AfterWrite: true}},
	{"PATCH /repos/{owner}/{repo}/check-runs/{id}", githubfake.Fault{Status: http.StatusBadGateway, AfterWrite: true}},
	{"POST /repos/{owner}/{repo}/issues/{number}/comments", githubfake.Fault{Status: http.StatusBadGateway, AfterWrite: true}},
	{"PATCH /repos/{owner}/{repo}/pulls/{number}", githubfake.Fault{Status: http.StatusInternalServerError}},
	{"POST /repos/{owner}/{repo}/pulls/{number}/reviews", githubfake.Fault{Status: http.StatusBadGateway, AfterWrite: true}},
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func soakInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestSoak drives the real binaries (one web, two workers on PostgreSQL) with rounds of pushes
// in bursts to many pull requests, redeliveries and injected GitHub faults, with a graceful and
// a hard restart of a worker on the way, and then checks every pull request: one concluded gate
// run for the final head, no gate run of any head left open, one sticky comment, one disclosure
// block with the author's text intact and no inline comment twice. LENSGATE_SOAK_PRS (default
// 12, at most 50) and LENSGATE_SOAK_ROUNDS (default 4) make it longer; LENSGATE_SOAK_LOG_LEVEL
// sets the processes' log level, and LENSGATE_SOAK_LOGS names a directory that a failed run
// leaves its processes' logs, check runs and review jobs in.
func TestSoak(t *testing.T) {
	dsn := pgtest.DatabaseOrSkip(t)
	lensgateBinary(t)
	s, all := newScaleOut(t, dsn)
	// Reviews that wait long behind the spaced writes of every other review time out and are
	// retried: the soak settles through its retries (the scale-out test counts attempts instead).
	s.env = map[string]string{"LENSGATE_JOB_TIMEOUT": "10s"}
	if l := os.Getenv("LENSGATE_SOAK_LOG_LEVEL"); l != "" {
		s.env["LENSGATE_LOG_LEVEL"] = l
	}
	prs := all[:min(soakInt("LENSGATE_SOAK_PRS", 12), len(all))]
	rounds := soakInt("LENSGATE_SOAK_ROUNDS", 4)
	rng := rand.New(rand.NewPCG(18, uint64(len(prs))))
	authors := map[int]string{}
	for _, pr := range prs {
		authors[pr] = fmt.Sprintf("Pull request %d: what it changes and why.\n\nWritten by its author, kept byte for byte: `<!-- -->` ✓\r\n", pr)
		s.fe.gh.SetPullBody(s.repo, pr, authors[pr])
	}
	allHeads := map[int][]string{}
	if dir := os.Getenv("LENSGATE_SOAK_LOGS"); dir != "" {
		t.Cleanup(func() {
			if t.Failed() {
				s.saveFailure(dir, allHeads)
			}
		})
	}
	web := s.start("web")
	w1, w2 := s.start("worker"), s.start("worker")
	started := time.Now()
	s.fe.gh.ResetCalls()

	var sentIDs []string
	bodies := map[string][]byte{}
	deliveries, redeliveries, injected, edited := 0, 0, 0, 0
	for round := range rounds {
		for _, f := range soakFaults {
			fault := f.fault
			fault.Times = 1 + rng.IntN(2)
			injected += fault.Times
			s.fe.gh.Inject(f.route, fault)
		}
		// A burst: every pull request gets one to three pushes in quick succession, sixteen
		// pull requests at a time.
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for _, pr := range prs {
			pushes := 1 + rng.IntN(3)
			pause := time.Duration(rng.IntN(40)) * time.Millisecond
			wg.Add(1)
			sem <- struct{}{}
			edits := rng.IntN(3) == 0
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if edits {
					// The author edits the body before pushing again, in front of lensgate's block.
					line := fmt.Sprintf("Round %d: the author adds a line.\n", round)
					s.fe.gh.EditPullBody(s.repo, pr, func(b string) string { return line + b })
					id := fmt.Sprintf("soak-edit-%d-%d", round, pr)
					body := s.editedPayload(pr)
					s.send(web, id, body)
					mu.Lock()
					authors[pr] = line + authors[pr]
					sentIDs = append(sentIDs, id)
					bodies[id] = body
					edited++
					mu.Unlock()
				}
				for p := range pushes {
					head := s.nextHead(pr)
					s.fe.gh.Push(s.repo, pr, head, soakDiff(pr, round*10+p), nil)
					body := s.payloadFor(pr, head)
					id := fmt.Sprintf("soak-%d-%d-%d", round, pr, p)
					s.send(web, id, body)
					mu.Lock()
					allHeads[pr] = append(allHeads[pr], head)
					sentIDs = append(sentIDs, id)
					bodies[id] = body
					deliveries++
					mu.Unlock()
					time.Sleep(pause)
				}
			}()
		}
		wg.Wait()
		// GitHub redelivers some deliveries it already made.
		for range len(prs) / 4 {
			id := sentIDs[rng.IntN(len(sentIDs))]
			s.send(web, id, bodies[id])
			redeliveries++
		}
		switch round {
		case rounds / 2:
			w1.stop() // graceful: running reviews are handed back
			w1 = s.start("worker")
		case rounds - 1:
			if err := w2.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-w2.done
			w2 = s.start("worker")
		}
	}
	sent := time.Since(started)

	// Every job settles: retries of failed attempts and take-overs of the killed worker's
	// reviews included.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var active int
		if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'lensgate_review'
			AND state IN ('available', 'pending', 'running', 'retryable', 'scheduled')`).Scan(&active); err != nil {
			t.Fatal(err)
		}
		if active == 0 {
			break
		}
		if time.Now().After(deadline) {
			rows, qerr := s.pool.Query(context.Background(), `SELECT id, state::text, attempt, coalesce(attempted_at::text, ''), coalesce(errors::text, ''), args::text,
				EXISTS (SELECT 1 FROM lensgate_lease l WHERE l.job_id = river_job.id) FROM river_job
				WHERE kind = 'lensgate_review' AND state IN ('available', 'pending', 'running', 'retryable', 'scheduled')`)
			var b strings.Builder
			for rows != nil && rows.Next() {
				var id int64
				var st, at, errs, args string
				var attempt int
				var leased bool
				if err := rows.Scan(&id, &st, &attempt, &at, &errs, &args, &leased); err != nil {
					fmt.Fprintf(&b, "scan: %v\n", err)
				}
				fmt.Fprintf(&b, "job %d %s attempt %d at %s leased=%v args %s errors %s\n", id, st, attempt, at, leased, args, tail(errs, 600))
			}
			if qerr == nil && rows.Err() != nil {
				qerr = rows.Err()
			}
			t.Fatalf("%d review jobs still active after the soak (%v):\n%s", active, qerr, b.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.waitReviewed(prs, web, w1, w2)
	settled := time.Since(started)
	s.checkOutcome(prs, allHeads)
	for _, pr := range prs {
		body := s.fe.gh.PullBody(s.repo, pr)
		if !strings.HasPrefix(body, authors[pr]) || strings.Count(body, block.Begin) != 1 {
			t.Errorf("PR %d body: the author's text is not intact or the disclosure block is not there once:\n%q", pr, body)
		}
		seen := map[string]int{}
		for _, c := range s.fe.gh.ReviewComments(s.repo, pr) {
			seen[fmt.Sprintf("%s:%d %s", c.Path, c.Line, c.Body)]++
		}
		if len(seen) == 0 {
			t.Errorf("PR %d: no inline comment placed for the conflict markers", pr)
		}
		for k, n := range seen {
			if n > 1 {
				t.Errorf("PR %d: inline comment %q posted %d times", pr, k, n)
			}
		}
	}
	states := map[string]int{}
	rows, err := s.pool.Query(context.Background(), `SELECT state, count(*) FROM river_job WHERE kind = 'lensgate_review' GROUP BY state`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			t.Fatal(err)
		}
		states[st] = n
	}
	rows.Close()
	var takenOver int
	_ = s.pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'lensgate_review' AND args->>'rerun' LIKE 'resume-%'`).Scan(&takenOver)
	calls := s.fe.gh.TotalCalls()
	t.Logf("soak: %d pull requests, %d rounds, %d pushes, %d author edits, %d redeliveries, %d injected GitHub faults in %d calls (%.1f%%), 1 graceful and 1 hard worker restart; sent in %s, settled in %s; jobs by state %v, %d taken over from the killed worker",
		len(prs), rounds, deliveries, edited, redeliveries, injected, calls, 100*float64(injected)/float64(max(calls, 1)), sent.Round(time.Second), settled.Round(time.Second), states, takenOver)
}

// editedPayload is the pull_request.edited payload of pr's body edit, as the author's edit
// sends it.
func (s *scaleOut) editedPayload(pr int) []byte {
	s.t.Helper()
	p := map[string]any{}
	if err := json.Unmarshal(s.payloadFor(pr, s.fe.gh.PullRequest(s.repo, pr).HeadSHA), &p); err != nil {
		s.t.Fatal(err)
	}
	p["action"] = "edited"
	p["changes"] = map[string]any{"body": map[string]any{"from": "the body before"}}
	delete(p, "after")
	body, err := json.Marshal(p)
	if err != nil {
		s.t.Fatal(err)
	}
	return body
}

// saveFailure writes into dir what a failed soak leaves to read: every process's log, the check
// runs of every head and the review jobs of every head.
func (s *scaleOut) saveFailure(dir string, allHeads map[int][]string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Logf("soak logs: %v", err)
		return
	}
	for i, p := range s.procs {
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("proc-%d.log", i)), []byte(p.logs.String()), 0o644)
	}
	var b strings.Builder
	var heads []string
	for pr, hs := range allHeads {
		for _, h := range hs {
			heads = append(heads, h)
			for _, cr := range s.fe.gh.CheckRuns(s.repo, h) {
				fmt.Fprintf(&b, "pr %d head %s final %v: %+v\n", pr, h, h == s.heads[pr], cr)
			}
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "checks.txt"), []byte(b.String()), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "jobs.txt"), []byte(s.jobsOf(heads)), 0o644)
	s.t.Logf("soak logs in %s", dir)
}
