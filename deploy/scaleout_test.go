package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/pgtest"
)

// scaleOut is the fake GitHub, the shared queue database and the environment of the serve
// processes of TestScaleOutThroughWebhooks.
type scaleOut struct {
	t       testing.TB
	fe      *fakeEnv
	dsn     string
	pool    *pgxpool.Pool
	repo    string
	payload map[string]any
	client  *http.Client
	mu      sync.Mutex
	heads   map[int]string // final head per pull request
	seq     int
	spacing string // LENSGATE_GITHUB_CONTENT_SPACING of the processes started; "" keeps the default
	// env overrides the serve processes' environment.
	env map[string]string
	// procs are every process started, for the logs of a failure.
	procs []*server
}

const scaleRepo = "Codertocat/Hello-World"

var scaleDiff = []byte("diff --git a/README.md b/README.md\nindex 1111111..2222222 100644\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # Hello-World\n+A friendly line.\n")

// start runs one `lensgate serve --role role` process on the shared database.
func (s *scaleOut) start(role string) *server {
	s.t.Helper()
	vars := map[string]string{}
	for k, v := range s.fe.vars {
		vars[k] = v
	}
	dir := s.t.TempDir()
	vars["LENSGATE_LISTEN"] = freeAddr(s.t)
	vars["LENSGATE_STATE_DIR"] = dir
	vars["LENSGATE_AUDIT_FILE"] = filepath.Join(dir, "audit.jsonl") // one hash chain per process
	vars["LENSGATE_QUEUE_DSN"] = s.dsn
	vars["LENSGATE_QUEUE_SIZE"] = "1000"
	vars["LENSGATE_QUEUE_WORKERS"] = "4"
	// A review may wait for its content writes behind those of every other review (they are
	// spaced a second apart per installation), after a GitHub call the test stalls for 8 s: a
	// bound of a few seconds times such reviews out and retries them, which is not what is tested.
	vars["LENSGATE_JOB_TIMEOUT"] = "2m"
	vars["LENSGATE_CATCHUP_WINDOW"] = "0"
	vars["LENSGATE_SHUTDOWN_TIMEOUT"] = "2s" // a running review is cancelled and handed back soon
	vars["LENSGATE_LOG_LEVEL"] = "warn"
	if s.spacing != "" {
		vars["LENSGATE_GITHUB_CONTENT_SPACING"] = s.spacing
	}
	for k, v := range s.env {
		vars[k] = v
	}
	p := startServe(s.t, vars, "--role", role)
	s.procs = append(s.procs, p)
	return p
}

func (s *scaleOut) nextHead(pr int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	h := fmt.Sprintf("%08x%032x", pr, s.seq)
	s.heads[pr] = h
	return h
}

// delivery pushes a new head to the fake's pull request (GitHub changes first, then the webhook
// arrives) and returns the signed synchronize delivery for it.
func (s *scaleOut) delivery(pr int, id string) []byte {
	s.t.Helper()
	head := s.nextHead(pr)
	s.fe.gh.Push(s.repo, pr, head, scaleDiff, nil)
	return s.payloadFor(pr, head)
}

// payloadFor is the pull_request.synchronize payload of pr at head, as GitHub's payload shows
// it: the pull request's state right after the push (so push first).
func (s *scaleOut) payloadFor(pr int, head string) []byte {
	s.t.Helper()
	stored := s.fe.gh.PullRequest(s.repo, pr)
	return s.payloadWith(pr, head, stored.UpdatedAt.UTC().Format(time.RFC3339), stored.Body)
}

// payloadWith is the pull_request.synchronize payload of pr at head with the given updated_at
// and body.
func (s *scaleOut) payloadWith(pr int, head, updatedAt, prBody string) []byte {
	s.t.Helper()
	stored := s.fe.gh.PullRequest(s.repo, pr)
	p := map[string]any{}
	raw, _ := json.Marshal(s.payload)
	_ = json.Unmarshal(raw, &p)
	p["action"], p["number"] = "synchronize", pr
	p["after"] = head
	pull := p["pull_request"].(map[string]any)
	pull["number"], pull["id"], pull["node_id"] = pr, stored.ID, stored.NodeID
	pull["head"].(map[string]any)["sha"] = head
	pull["updated_at"], pull["body"] = updatedAt, prBody
	body, err := json.Marshal(p)
	if err != nil {
		s.t.Fatal(err)
	}
	return body
}

// send posts one signed delivery and requires a 2xx answer.
func (s *scaleOut) send(web *server, id string, body []byte) {
	req, err := githubfake.WebhookRequest(web.base+"/api/github/hook", "pull_request", id, s.fe.gh.WebhookSecret(), body)
	if err != nil {
		s.t.Error(err)
		return
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Errorf("delivery %s: %v", id, err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		s.t.Errorf("delivery %s answered %d", id, resp.StatusCode)
	}
}

// gate returns the lensgate gate check runs of a head.
func (s *scaleOut) gate(head string) []githubfake.CheckRun {
	var out []githubfake.CheckRun
	for _, cr := range s.fe.gh.CheckRuns(s.repo, head) {
		if cr.Name == "lensgate" {
			out = append(out, cr)
		}
	}
	return out
}

// waitReviewed waits until every pull request's final head has a completed gate check.
func (s *scaleOut) waitReviewed(prs []int, procs ...*server) {
	s.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var missing []string
		for _, pr := range prs {
			// The head GitHub shows, not the last one the test made: a load generator's pushes
			// to one pull request may land in another order than they were made, and lensgate
			// must review the head GitHub has.
			head := s.fe.gh.PullRequest(s.repo, pr).HeadSHA
			done := false
			for _, cr := range s.gate(head) {
				done = done || cr.Status == "completed"
			}
			if !done {
				missing = append(missing, fmt.Sprintf("#%d at %.12s", pr, head))
			}
		}
		if len(missing) == 0 {
			reordered := 0
			for _, pr := range prs {
				if s.fe.gh.PullRequest(s.repo, pr).HeadSHA != s.heads[pr] {
					reordered++
				}
			}
			if reordered > 0 {
				s.t.Logf("%d of %d pull requests ended at another head than the last one made: their pushes landed out of order", reordered, len(prs))
			}
			return
		}
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, p := range procs {
				logs.WriteString(p.logs.String())
			}
			s.t.Fatalf("%d pull requests not reviewed at their final head (%s); GitHub calls %s\n%s", len(missing),
				strings.Join(missing, ", "), s.fe.gh.CallSummary(), logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jobStates counts the review jobs of a head by state.
func (s *scaleOut) jobStates(head string) map[string]int {
	s.t.Helper()
	// An attempt whose worker died and whose review another worker took over (a job whose
	// rerun key names it) is not a job of its own.
	rows, err := s.pool.Query(context.Background(), `SELECT state, count(*) FROM river_job j WHERE kind = 'lensgate_review' AND args->>'head' = $1
		AND NOT EXISTS (SELECT 1 FROM river_job t WHERE t.kind = 'lensgate_review' AND t.args->>'rerun' = 'resume-' || j.id)
		GROUP BY state`, head)
	if err != nil {
		s.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
		state string
		n     int
	}, error) {
		var v struct {
			state string
			n     int
		}
		return v, r.Scan(&v.state, &v.n)
	})
	if err != nil {
		s.t.Fatal(err)
	}
	m := map[string]int{}
	for _, v := range out {
		m[v.state] = v.n
	}
	return m
}

// checkOutcome asserts the guarantees for prs: one completed review job and one
// concluded gate check per final head, no duplicate gate check for any head, one sticky comment
// per pull request, nothing discarded.
func (s *scaleOut) checkOutcome(prs []int, allHeads map[int][]string) {
	s.t.Helper()
	for _, pr := range prs {
		final := s.heads[pr]
		// River records a finished job shortly after the worker returns (batched completion).
		st := s.jobStates(final)
		for deadline := time.Now().Add(15 * time.Second); st["completed"] == 0 && time.Now().Before(deadline); st = s.jobStates(final) {
			time.Sleep(100 * time.Millisecond)
		}
		if st["completed"] != 1 || len(st) != 1 {
			var jobs []string
			if rows, err := s.pool.Query(context.Background(), `SELECT id || ' ' || state || ' attempt ' || attempt || ' ' || args::text || ' ' || coalesce(errors::text, '') FROM river_job WHERE kind = 'lensgate_review' AND args->>'head' = $1`, final); err == nil {
				for rows.Next() {
					var j string
					_ = rows.Scan(&j)
					jobs = append(jobs, j)
				}
				rows.Close()
			}
			s.t.Errorf("PR %d final head %s: review jobs by state %v, want exactly one completed; gate %+v; jobs %v; all its heads' jobs:\n%s", pr, final, st, s.gate(final), jobs, s.jobsOf(allHeads[pr]))
		}
		g := s.gate(final)
		if len(g) != 1 || g[0].Status != "completed" || g[0].Conclusion == "" || g[0].HeadSHA != final {
			s.t.Errorf("PR %d final head: gate checks %+v, want one concluded", pr, g)
		}
		for _, h := range allHeads[pr] {
			gs := s.gate(h)
			// A cancelled review concludes its check on its way out, shortly after the newer one.
			waited := time.Now()
			open := fmt.Sprint(gs)
			for deadline := time.Now().Add(15 * time.Second); anyOpen(gs) && time.Now().Before(deadline); gs = s.gate(h) {
				time.Sleep(100 * time.Millisecond)
			}
			if w := time.Since(waited); w > time.Second {
				s.t.Logf("PR %d head %s: gate open %s after the final review: %s", pr, h, w.Round(100*time.Millisecond), open)
			}
			if len(gs) > 1 {
				s.t.Errorf("PR %d head %s: %d gate check runs", pr, h, len(gs))
			}
			// A superseded or interrupted head's check is concluded too: nothing stays open.
			for _, g := range gs {
				if g.Status != "completed" {
					s.t.Errorf("PR %d head %s: gate check left %s (%q)", pr, h, g.Status, g.Title)
				}
			}
		}
		sticky := 0
		for _, c := range s.fe.gh.Comments(s.repo, pr) {
			if c.User == s.fe.gh.BotLogin() {
				sticky++
			}
		}
		if sticky != 1 {
			s.t.Errorf("PR %d: %d advisory comments by the App, want 1", pr, sticky)
		}
	}
	var discarded int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'lensgate_review' AND state = 'discarded'`).Scan(&discarded); err != nil {
		s.t.Fatal(err)
	}
	if discarded != 0 {
		s.t.Errorf("%d review jobs discarded", discarded)
	}
}

// jobsOf describes the review jobs of heads, for a failure message.
func (s *scaleOut) jobsOf(heads []string) string {
	rows, err := s.pool.Query(context.Background(), `SELECT id, state, args->>'head', coalesce(args->>'rerun', ''), attempt,
		coalesce(array_to_string(attempted_by, ' '), ''), created_at, scheduled_at, coalesce(finalized_at::text, ''), coalesce(errors::text, '')
		FROM river_job WHERE kind = 'lensgate_review' AND args->>'head' = ANY($1) ORDER BY id`, heads)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id int64
		var attempt int
		var state, head, rerun, by, fin, errs string
		var created, sched time.Time
		if err := rows.Scan(&id, &state, &head, &rerun, &attempt, &by, &created, &sched, &fin, &errs); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "  job %d %s head %s rerun %q attempt %d by [%s] created %s scheduled %s finalized %s errors %s\n",
			id, state, head, rerun, attempt, by, created.Format(time.StampMicro), sched.Format(time.StampMicro), fin, errs)
	}
	return b.String()
}

func anyOpen(gs []githubfake.CheckRun) bool {
	for _, g := range gs {
		if g.Status != "completed" {
			return true
		}
	}
	return false
}

// newScaleOut seeds a fake GitHub with 50 pull requests (numbers 100–149) of one repository and
// connects to the queue database (dsn may be "memory" or "" for the SQLite default).
func newScaleOut(t testing.TB, dsn string, opts ...githubfake.Option) (*scaleOut, []int) {
	t.Helper()
	fe := newFakeEnv(t, opts...)
	raw, err := os.ReadFile("testdata/webhooks/pull_request.opened.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	repo, _, err := fe.gh.AddFromPullRequestEvent(raw, scaleDiff)
	if err != nil {
		t.Fatal(err)
	}
	s := &scaleOut{t: t, fe: fe, dsn: dsn, repo: repo, heads: map[int]string{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	if strings.HasPrefix(dsn, "postgres") {
		if s.pool, err = pgxpool.New(context.Background(), dsn); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.pool.Close)
	}
	if err := json.Unmarshal(raw, &s.payload); err != nil {
		t.Fatal(err)
	}
	var prs []int
	for i := range 50 {
		n := 100 + i
		fe.gh.AddPullRequest(repo, githubfake.PullRequest{Number: n, Title: fmt.Sprintf("Change %d", n), User: "octocat",
			HeadSHA: s.nextHead(n), BaseRef: "master", BaseSHA: strings.Repeat("b", 40), Diff: scaleDiff})
		prs = append(prs, n)
	}
	return s, prs
}

// TestScaleOutThroughWebhooks is the scale-out acceptance test through the real binaries: one
// `serve --role web` and two `serve --role worker` processes on one PostgreSQL queue, driven by
// signed webhooks against the fake GitHub.
func TestScaleOutThroughWebhooks(t *testing.T) {
	dsn := pgtest.DatabaseOrSkip(t)
	lensgateBinary(t)
	s, prs := newScaleOut(t, dsn)
	fe, pool := s.fe, s.pool
	web := s.start("web")
	w1, w2 := s.start("worker"), s.start("worker")
	allHeads := map[int][]string{}

	t.Run("BurstsAndDuplicates", func(t *testing.T) {
		// Bursts: each pull request gets three pushes in quick succession, sixteen pull requests
		// at a time (150 deliveries), so older heads are superseded while queued or running;
		// then 50 redeliveries of ids already sent: 200 deliveries in all.
		type sent struct {
			id   string
			body []byte
		}
		var mu sync.Mutex
		var history []sent
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for _, pr := range prs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				for push := range 3 {
					id := fmt.Sprintf("burst-%d-%d", pr, push)
					mu.Lock()
					body := s.delivery(pr, id)
					allHeads[pr] = append(allHeads[pr], s.heads[pr])
					history = append(history, sent{id, body})
					mu.Unlock()
					s.send(web, id, body)
				}
			}()
		}
		wg.Wait()
		for i := range 50 {
			d := history[(i*7)%len(history)]
			s.send(web, d.id, d.body)
		}
		sentAt := time.Now()
		s.waitReviewed(prs, web, w1, w2)
		reviewedAt := time.Now()
		s.checkOutcome(prs, allHeads)
		t.Logf("reviewed %s after the last delivery, checked in %s", reviewedAt.Sub(sentAt).Round(100*time.Millisecond), time.Since(reviewedAt).Round(100*time.Millisecond))
		var superseded int
		_ = pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'lensgate_review' AND state = 'cancelled'`).Scan(&superseded)
		t.Logf("%d older heads cancelled by a newer push", superseded)
		var byWorker int
		_ = pool.QueryRow(context.Background(), `SELECT count(DISTINCT attempted_by[array_length(attempted_by, 1)]) FROM river_job WHERE kind = 'lensgate_review' AND state = 'completed'`).Scan(&byWorker)
		if byWorker != 2 {
			t.Errorf("completed jobs ran on %d worker processes, want both", byWorker)
		}
	})

	t.Run("KillWorkerMidJob", func(t *testing.T) {
		pr := prs[0]
		// The next review stalls in its commit listing, long enough to kill its worker there.
		route := "GET /repos/{owner}/{repo}/pulls/{number}/commits"
		fe.gh.DelayNext(route, 8*time.Second, 1)
		body := s.delivery(pr, "kill-1")
		head := s.heads[pr]
		allHeads[pr] = append(allHeads[pr], head)
		s.send(web, "kill-1", body)
		var runner string
		deadline := time.Now().Add(30 * time.Second)
		for fe.gh.PendingFaults(route) > 0 || runner == "" {
			if time.Now().After(deadline) {
				t.Fatalf("the job did not start (pending faults %d, runner %q)", fe.gh.PendingFaults(route), runner)
			}
			_ = pool.QueryRow(context.Background(), `SELECT attempted_by[array_length(attempted_by, 1)] FROM river_job WHERE kind = 'lensgate_review' AND state = 'running' AND args->>'head' = $1`, head).Scan(&runner)
			time.Sleep(50 * time.Millisecond)
		}
		victim, survivor := w1, w2
		if strings.HasSuffix(runner, fmt.Sprintf("-%d", w2.cmd.Process.Pid)) {
			victim, survivor = w2, w1
		} else if !strings.HasSuffix(runner, fmt.Sprintf("-%d", w1.cmd.Process.Pid)) {
			t.Fatalf("job runs on %q, neither worker", runner)
		}
		if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-victim.done
		start := time.Now()
		s.waitReviewed([]int{pr}, web, survivor)
		t.Logf("killed worker's job completed by the other %s after the kill", time.Since(start).Round(time.Second))
		s.checkOutcome([]int{pr}, allHeads)
		w1 = survivor
		// The dead attempt's job is cancelled; its take-over, marked resumed, completed on the
		// survivor.
		var resumed, cancelled int
		var by string
		if err := pool.QueryRow(context.Background(), `SELECT (args->'job'->>'resumed')::int, attempted_by[array_length(attempted_by, 1)] FROM river_job
			WHERE kind = 'lensgate_review' AND args->>'head' = $1 AND state = 'completed'`, head).Scan(&resumed, &by); err != nil {
			t.Fatal(err)
		}
		_ = pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'lensgate_review' AND args->>'head' = $1 AND state = 'cancelled'`, head).Scan(&cancelled)
		if resumed != 1 || cancelled != 1 || !strings.HasSuffix(by, fmt.Sprintf("-%d", survivor.cmd.Process.Pid)) {
			t.Fatalf("take-over resumed=%d by %q with %d cancelled attempts, want resumed once by the survivor %d", resumed, by, cancelled, survivor.cmd.Process.Pid)
		}
		if took := time.Since(start); took > 75*time.Second {
			t.Errorf("the review finished %s after its worker died (8 s of it a delayed GitHub call), want the take-over within 60 s", took)
		}
	})

	t.Run("RestartWithJobsQueued", func(t *testing.T) {
		// One worker is left. Ten new heads arrive; their reviews stall in a GitHub call, and
		// every process is stopped (SIGTERM, 2 s shutdown) while some run and the rest are queued.
		batch := prs[10:20]
		route := "GET /repos/{owner}/{repo}/pulls/{number}/commits"
		// Every review of the batch stalls there, so none can finish before the stop, however
		// many the worker has started by then.
		fe.gh.DelayNext(route, 8*time.Second, len(batch))
		for _, pr := range batch {
			id := fmt.Sprintf("restart-%d", pr)
			body := s.delivery(pr, id)
			allHeads[pr] = append(allHeads[pr], s.heads[pr])
			s.send(web, id, body)
		}
		deadline := time.Now().Add(30 * time.Second)
		for fe.gh.PendingFaults(route) == len(batch) {
			if time.Now().After(deadline) {
				t.Fatal("no review started")
			}
			time.Sleep(20 * time.Millisecond)
		}
		w1.stop()
		web.stop()
		pending := 0
		for _, pr := range batch {
			st := s.jobStates(s.heads[pr])
			if st["completed"] != 0 || st["discarded"] != 0 {
				t.Fatalf("PR %d: jobs %v before the restart", pr, st)
			}
			pending += st["available"] + st["retryable"]
		}
		if pending != len(batch) {
			t.Fatalf("%d of %d jobs waiting after the stop", pending, len(batch))
		}
		web2 := s.start("web")
		w3, w4 := s.start("worker"), s.start("worker")
		s.waitReviewed(batch, web2, w3, w4)
		s.checkOutcome(prs, allHeads)
		for _, p := range []*server{w3, w4, web2} {
			p.stop()
		}
	})
}
