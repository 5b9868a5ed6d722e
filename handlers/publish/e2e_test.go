package publish

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/worker"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/testkit"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// Facts of the octokit pull_request payloads.
const (
	e2eRepo  = "Codertocat/Hello-World"
	e2ePR    = 2
	e2eHead1 = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	// e2eHead2 is the head after the synchronize; the payload is changed in memory to carry it.
	e2eHead2 = "3333333333333333333333333333333333333333"
)

const e2eDiff1 = `diff --git a/README.md b/README.md
index 1111111..2222222 100644
--- a/README.md
+++ b/README.md
@@ -1 +1,3 @@
 # Hello-World
+Run it with exec(userInput).
+TODO: document flags
`

const e2eDiff2 = e2eDiff1 + `diff --git a/run.sh b/run.sh
new file mode 100755
--- /dev/null
+++ b/run.sh
@@ -0,0 +1,2 @@
+#!/bin/sh
+exec($1)
`

// lineReviewer is a deterministic reviewer: security fails on added lines calling exec(,
// correctness notes TODOs (and one finding on a line outside the diff), every other lens
// passes. It answers for exactly the lenses of the policy it is given.
type lineReviewer struct{}

func (lineReviewer) Review(_ context.Context, s *review.Subject, cfg *config.Repo) (*review.Decision, error) {
	sum := sha256.Sum256(s.Diff)
	d := &review.Decision{
		Recommendation: review.RecommendComment,
		Intake:         review.Intake{Passed: true},
		Coverage:       review.Coverage{Status: review.CoverageComplete, FilesTotal: len(s.Files), FilesReviewed: len(s.Files)},
		Subject: review.SubjectContext{Kind: s.Kind, Owner: s.Owner, Repo: s.Repo, Number: s.Number,
			RepositoryNodeID: s.RepositoryNodeID, NodeID: s.NodeID, HeadSHA: s.HeadSHA, BaseSHA: s.BaseSHA,
			ReviewedDiffDigest: hex.EncodeToString(sum[:])},
	}
	added := addedLines(s)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, l := range cfg.Policy.Lenses {
		lr := review.LensResult{Name: l.Name, Required: l.Required, Publication: l.Publication, Outcome: review.OutcomePassed, Runtime: "test"}
		for _, a := range added {
			var f *review.Finding
			switch {
			case l.Name == "security" && strings.Contains(a.text, "exec("):
				f = &review.Finding{Severity: review.SeverityHigh, Title: "Command built from input"}
			case l.Name == "correctness" && strings.Contains(a.text, "TODO"):
				f = &review.Finding{Severity: review.SeverityMedium, Title: "Unfinished work"}
			}
			if f == nil {
				continue
			}
			f.ID, f.Lens, f.Path, f.Line = fmt.Sprintf("%s:%s:%s", l.Name, a.path, a.text), l.Name, a.path, a.line
			lr.Findings = append(lr.Findings, *f)
			if f.Severity.Blocks() {
				lr.Outcome = review.OutcomeFailed
			}
			d.Inline = append(d.Inline, review.InlineComment{Path: a.path, Line: a.line, Side: "RIGHT", Body: f.Title, Fingerprint: f.ID})
		}
		if l.Name == "correctness" {
			f := review.Finding{ID: "correctness:outside", Lens: l.Name, Severity: review.SeverityLow, Path: "README.md", Line: 90, Title: "Stale section further down"}
			lr.Findings = append(lr.Findings, f)
			d.Inline = append(d.Inline, review.InlineComment{Path: f.Path, Line: f.Line, Side: "RIGHT", Body: f.Title, Fingerprint: f.ID})
		}
		d.Findings = append(d.Findings, lr.Findings...)
		d.Lenses = append(d.Lenses, lr)
		d.Runs = append(d.Runs, review.Run{Lens: l.Name, Runtime: "test", Started: now, Finished: now, Outcome: lr.Outcome})
		if l.Required && lr.Outcome == review.OutcomeFailed {
			d.Gate.BlockingFailures = append(d.Gate.BlockingFailures, l.Name)
		}
	}
	d.Gate.State, d.Gate.Reason = review.OutcomePassed, "all required lenses passed"
	if len(d.Gate.BlockingFailures) > 0 {
		d.Gate.State, d.Gate.Reason = review.OutcomeFailed, "required lens failed: "+strings.Join(d.Gate.BlockingFailures, ", ")
	}
	return d, nil
}

type addedLine struct {
	path, text string
	line       int
}

func addedLines(s *review.Subject) []addedLine {
	var out []addedLine
	for path, fl := range linesFromSubject(s) {
		_ = fl
		for _, f := range s.Files {
			if f.Path != path {
				continue
			}
			n := 0
			for _, l := range strings.Split(f.Patch, "\n") {
				switch {
				case strings.HasPrefix(l, "@@"):
					_, after, _ := strings.Cut(l, "+")
					num, _, _ := strings.Cut(after, ",")
					num, _, _ = strings.Cut(num, " ")
					fmt.Sscan(num, &n)
				case strings.HasPrefix(l, "+"):
					out = append(out, addedLine{path: path, text: l[1:], line: n})
					n++
				case strings.HasPrefix(l, "-"):
				default:
					n++
				}
			}
		}
	}
	return out
}

func readPayload(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit changes one value of a JSON payload in memory.
func edit(t *testing.T, payload []byte, f func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stack is the App (webhook handler, queue, worker) with this publisher against the fake.
type stack struct {
	t   *testing.T
	gh  *githubfake.Server
	key ed25519.PrivateKey
	// witness signs the runner's observations; it is not the receipt key.
	witness ed25519.PrivateKey
	srv     *httptest.Server
	done    chan error
	logs    *testkit.SyncBuffer
	ledger  string
	calls   map[string][2]int
	// decisions records what the reviewer decided, in order.
	decisions *decisionLog
	// publisherOptions, when set, adjusts the publisher's options (see newStackWith).
	publisherOptions func(*Options)
}

type decisionLog struct {
	mu   sync.Mutex
	next worker.Reviewer
	all  []*review.Decision
	// sources are the configurations reviews were given (config.Repo.Source), in order.
	sources []string
}

func (l *decisionLog) Review(ctx context.Context, s *review.Subject, c *config.Repo) (*review.Decision, error) {
	if c != nil {
		l.mu.Lock()
		l.sources = append(l.sources, c.Source)
		l.mu.Unlock()
	}
	d, err := l.next.Review(ctx, s, c)
	if d == nil {
		// A cancelled review decides nothing; it may return after the newer head's review.
		return d, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, d)
	return d, err
}

// lastSource is the configuration the newest review was given.
func (l *decisionLog) lastSource() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.sources) == 0 {
		return ""
	}
	return l.sources[len(l.sources)-1]
}

func (l *decisionLog) last() *review.Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all[len(l.all)-1]
}

func newStack(t *testing.T, reviewer worker.Reviewer, diff string, with ...func(*handlers.Options)) *stack {
	t.Helper()
	return newStackWith(t, reviewer, diff, nil, with...)
}

// newStackWith is newStack with the publisher's options adjusted by popts.
func newStackWith(t *testing.T, reviewer worker.Reviewer, diff string, popts func(*Options), with ...func(*handlers.Options)) *stack {
	t.Helper()
	return newStackOn(t, nil, reviewer, diff, popts, with...)
}

// newStackOn is newStackWith against gh, a fake GitHub another stack already uses (a second
// replica of the App); nil makes a new one.
func newStackOn(t *testing.T, gh *githubfake.Server, reviewer worker.Reviewer, diff string, popts func(*Options), with ...func(*handlers.Options)) *stack {
	t.Helper()
	st := &stack{t: t, gh: gh, done: make(chan error, 16), logs: &testkit.SyncBuffer{},
		calls: map[string][2]int{}, decisions: &decisionLog{next: reviewer}, publisherOptions: popts}
	if st.gh == nil {
		st.gh = githubfake.New(t)
		if _, _, err := st.gh.AddFromPullRequestEvent(readPayload(t, "pull_request.opened.payload.json"), []byte(diff)); err != nil {
			t.Fatal(err)
		}
		// The base branch has the file the diffs change (and no configuration file).
		st.gh.SetFile(e2eRepo, "master", "README.md", "# Hello-World\n")
	}
	// The base branch has the file the diffs change (and no configuration file).
	st.gh.SetFile(e2eRepo, "master", "README.md", "# Hello-World\n")
	st.start(with...)
	st.gh.ResetCalls()
	return st
}

// newReplica is another replica of base's App: the same fake GitHub and keys, its own
// publisher (adjusted by popts), audit ledger, logs and webhook server.
func newReplica(base *stack, reviewer worker.Reviewer, popts func(*Options), with ...func(*handlers.Options)) *stack {
	base.t.Helper()
	st := &stack{t: base.t, gh: base.gh, done: make(chan error, 16), logs: &testkit.SyncBuffer{},
		calls: map[string][2]int{}, decisions: &decisionLog{next: reviewer}, publisherOptions: popts}
	st.start(with...)
	return st
}

// start builds the keys, the publisher and the App and serves its webhook.
func (st *stack) start(with ...func(*handlers.Options)) {
	t := st.t
	seed := sha256.Sum256([]byte("lensgate e2e key"))
	st.key = ed25519.NewKeyFromSeed(seed[:])
	wseed := sha256.Sum256([]byte("lensgate e2e witness key"))
	st.witness = ed25519.NewKeyFromSeed(wseed[:])
	st.ledger = filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := pdp.OpenFileSink(st.ledger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sink.Close() })
	po := Options{Signer: &disclosure.Signer{Key: st.key}, Witness: &observation.Signer{Key: st.witness}, RunnerVersion: "test", Audit: sink,
		Retry: Retry{Attempts: 3, Backoff: time.Millisecond, MaxWait: time.Second}, ContentSpacing: -1}
	if st.publisherOptions != nil {
		st.publisherOptions(&po)
	}
	pubr, err := New(po)
	if err != nil {
		t.Fatal(err)
	}
	ac := st.gh.AppConfig()
	cfg := config.DefaultServer()
	cfg.GitHub.WebURL, cfg.GitHub.V3APIURL, cfg.GitHub.V4APIURL = ac.WebURL, ac.V3APIURL, ac.V4APIURL
	cfg.GitHub.App.IntegrationID = ac.App.IntegrationID
	cfg.GitHub.App.WebhookSecret = ac.App.WebhookSecret
	cfg.GitHub.App.PrivateKey = ac.App.PrivateKey
	cfg.GitHub.Timeout = 5 * time.Second
	cfg.AuditFile = st.ledger
	cfg.Queue.CatchupWindow = 0 // the start-up catch-up would land in the measured calls
	opts := handlers.Options{
		Config: cfg, Logger: zerolog.New(st.logs), Reviewer: st.decisions,
		Publisher:      testkit.NotifyingPublisher{Next: pubr, Done: st.done},
		SigningKeys:    []ed25519.PublicKey{st.key.Public().(ed25519.PublicKey)},
		WitnessKeys:    []ed25519.PublicKey{st.witness.Public().(ed25519.PublicKey)},
		InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Version: "test",
	}
	for _, f := range with {
		f(&opts)
	}
	app, err := handlers.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	st.srv = httptest.NewServer(app.Handler())
	t.Cleanup(func() {
		st.srv.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = app.Shutdown(sctx)
		cancel()
	})
}

func (st *stack) send(event, delivery string, body []byte) {
	st.t.Helper()
	body = st.gh.StampPullRequestEvent(event, body)
	req, err := githubfake.WebhookRequest(st.srv.URL+handlers.RouteHook, event, delivery, st.gh.WebhookSecret(), body)
	if err != nil {
		st.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		st.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		st.t.Fatalf("%s %s answered %d", event, delivery, resp.StatusCode)
	}
}

func (st *stack) wait(what string) {
	st.t.Helper()
	select {
	case err := <-st.done:
		if err != nil {
			st.t.Fatalf("%s: publish: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		st.t.Fatalf("%s: no publication; logs:\n%s", what, st.logs.String())
	}
}

func (st *stack) measure(phase string) {
	st.calls[phase] = [2]int{st.gh.TotalCalls(), st.gh.Writes()}
	st.t.Logf("%s: %d GitHub calls, %d writes\n%s", phase, st.gh.TotalCalls(), st.gh.Writes(), st.gh.CallSummary())
	st.gh.ResetCalls()
}

// lifecycle sends opened, a synchronize to e2eHead2 with diff2, a redelivery of it and a check
// re-run of the new head's gate, and returns the first published receipt.
func (st *stack) lifecycle(diff2 string) []byte {
	t := st.t
	opened := readPayload(t, "pull_request.opened.payload.json")
	st.send("pull_request", "delivery-opened", opened)
	st.wait("opened")
	st.measure("opened")
	first := extractEnvelope(botComments(st.gh)[0].Body)

	// synchronize to a new head (payload head and "after" changed in memory)
	st.gh.Push(e2eRepo, e2ePR, e2eHead2, []byte(diff2), nil)
	sync := edit(t, readPayload(t, "pull_request.synchronize.payload.json"), func(m map[string]any) {
		m["after"] = e2eHead2
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = e2eHead2
	})
	st.send("pull_request", "delivery-sync", sync)
	st.wait("synchronize")
	st.measure("synchronize")

	// redelivery of the same delivery: answered, nothing republished
	st.send("pull_request", "delivery-sync", sync)

	// check re-run of the gate for head 2 (repository and head changed in memory to this PR's)
	var repo map[string]any
	_ = json.Unmarshal(opened, &struct {
		Repository *map[string]any `json:"repository"`
	}{&repo})
	rerun := edit(t, readPayload(t, "check_run.rerequested.rfc3339.payload.json"), func(m map[string]any) {
		m["repository"] = repo
		cr := m["check_run"].(map[string]any)
		cr["head_sha"], cr["name"], cr["id"] = e2eHead2, DefaultCheckName, gateOf(st.gh, e2eHead2).ID
		cr["app"].(map[string]any)["id"] = st.gh.AppID()
	})
	st.send("check_run", "delivery-rerun", rerun)
	st.wait("check re-run")
	st.measure("redelivery+rerun")
	select {
	case err := <-st.done:
		t.Fatalf("an extra publication happened (redelivery not deduplicated?): %v", err)
	default:
	}
	return first
}

// assertPublished checks what must hold after any lifecycle, whatever the reviewer found.
func (st *stack) assertPublished(authorBody string, first []byte) (comment string) {
	t := st.t
	comments := botComments(st.gh)
	if len(comments) != 1 {
		t.Fatalf("advisory comments = %d", len(comments))
	}
	want := gateConclusion(st.decisions.last().Gate)
	// The first head was reviewed once; the second by the push and again by the re-run, which
	// GitHub answers with a new check run (a completed one is not reopened).
	for h, runs := range map[string]int{e2eHead1: 1, e2eHead2: 2} {
		g := gatesOf(st.gh, h)
		if len(g) != runs || gateOf(st.gh, h).Conclusion != want {
			t.Fatalf("gate checks for %s = %+v, want %d, the newest concluding %s", h[:7], g, runs, want)
		}
		for _, c := range g {
			if c.Status != "completed" {
				t.Fatalf("gate check %d of %s left %s", c.ID, h[:7], c.Status)
			}
		}
	}
	seen := map[string]int{}
	for _, c := range st.gh.ReviewComments(e2eRepo, e2ePR) {
		seen[pull.HiddenValue(c.Body, markerFP)]++
	}
	for fp, n := range seen {
		if n != 1 || fp == "" {
			t.Errorf("inline comment %q posted %d times", fp, n)
		}
	}
	for _, rv := range st.gh.Reviews(e2eRepo, e2ePR) {
		if rv.Event != "COMMENT" {
			t.Errorf("review event %s", rv.Event)
		}
	}
	body := st.gh.PullBody(e2eRepo, e2ePR)
	if !strings.HasPrefix(body, authorBody) || strings.Count(body, block.Begin) != 1 {
		t.Fatalf("body = %q", body)
	}
	second := extractEnvelope(comments[0].Body)
	pub := st.key.Public().(ed25519.PublicKey)
	subj := disclosure.Verify(second, disclosure.Options{PublicKey: pub}).SubjectDigest
	rep := disclosure.Verify(second, disclosure.Options{PublicKey: pub, ExpectedSubjectDigest: subj, Body: &body, Policy: disclosure.DefaultPolicy()})
	if !rep.OK || rep.BodyCoreDigestMatch != disclosure.MatchMatch || rep.VisibleBlockRendering == disclosure.MatchMismatch {
		t.Fatalf("receipt: ok=%v body=%s visible=%s codes=%v", rep.OK, rep.BodyCoreDigestMatch, rep.VisibleBlockRendering, rep.ReasonCodes)
	}
	firstDigest := disclosure.Verify(first, disclosure.Options{}).ReceiptDigest
	if !strings.Contains(string(mustJSON(t, predicateOf(t, second)["supersession"])), firstDigest) {
		t.Fatal("second receipt does not supersede the first")
	}
	if g := gateOf(st.gh, e2eHead2); !strings.Contains(g.Text, strings.TrimSpace(string(second))) {
		t.Error("the gate check text does not carry the published receipt")
	}
	st.assertObserved(comments[0].Body, second)
	f, err := os.Open(st.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if res, err := pdp.Verify(f); err != nil || res.Records == 0 {
		t.Fatalf("ledger: %+v %v", res, err)
	}
	if u := st.gh.Unhandled(); len(u) != 0 {
		t.Errorf("unimplemented routes called: %v", u)
	}
	if dir := os.Getenv("LENSGATE_PUBLISH_OUT"); dir != "" {
		// For checking by hand with `lensgate receipt verify`.
		_ = os.WriteFile(filepath.Join(dir, "receipt.json"), second, 0o644)
		_ = os.WriteFile(filepath.Join(dir, "body.md"), []byte(body), 0o644)
		_ = os.WriteFile(filepath.Join(dir, "publickey.hex"), []byte(disclosure.PublicKeyHex(st.key)+"\n"), 0o644)
		_ = os.WriteFile(filepath.Join(dir, "subject-digest.txt"), []byte(subj+"\n"), 0o644)
		_ = os.WriteFile(filepath.Join(dir, "comment.md"), []byte(comments[0].Body), 0o644)
	}
	return comments[0].Body
}

// assertObserved: a review the pipeline made carries, in the comment and in the gate check
// text, the runner's observation of it, which verifies MATCH against the published receipt;
// a decision that did not come from the pipeline carries none.
func (st *stack) assertObserved(comment string, receipt []byte) {
	t := st.t
	obs := extractObservation(comment)
	if st.decisions.last().Observed == nil {
		if obs != nil || strings.Contains(comment, "observed by the runner") {
			t.Fatal("an observation was published for a decision the pipeline did not observe")
		}
		return
	}
	res := observation.Verify(obs, observation.Options{
		WitnessKey: st.witness.Public().(ed25519.PublicKey), ReceiptKey: st.key.Public().(ed25519.PublicKey), Receipt: receipt,
	})
	if res.RunnerObservation != observation.Match {
		t.Fatalf("observation: %s %v %v", res.RunnerObservation, res.ReasonCodes, res.Errors)
	}
	line := "This review was also observed by the runner: observation `sha256:" + res.ObservationDigest + "`"
	if strings.Count(comment, line) != 1 {
		t.Errorf("the comment lacks the line %q", line)
	}
	if g := gateOf(st.gh, e2eHead2); !strings.Contains(g.Text, strings.TrimSpace(string(obs))) {
		t.Error("the gate check text does not carry the observation")
	}
	// The disclosure block in the body stays the predicate's own: no word of the observation.
	if body := st.gh.PullBody(e2eRepo, e2ePR); strings.Contains(body, "observ") {
		t.Errorf("the body mentions the observation:\n%s", body)
	}
	if dir := os.Getenv("LENSGATE_PUBLISH_OUT"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "observation.json"), obs, 0o644)
		_ = os.WriteFile(filepath.Join(dir, "witness.publickey.hex"), []byte(hex.EncodeToString(st.witness.Public().(ed25519.PublicKey))+"\n"), 0o644)
	}
}

// TestServerStackEndToEnd runs the App with this publisher against the fake GitHub: opened,
// synchronize to a new head, a redelivery and a check re-run.
func TestServerStackEndToEnd(t *testing.T) {
	st := newStack(t, lineReviewer{}, e2eDiff1)
	authorBody := st.gh.PullBody(e2eRepo, e2ePR)
	first := st.lifecycle(e2eDiff2)
	comment := st.assertPublished(authorBody, first)

	if d := st.decisions.last(); d.Gate.State != review.OutcomeFailed {
		t.Fatalf("gate = %s", d.Gate.State)
	}
	seen := map[string]bool{}
	for _, c := range st.gh.ReviewComments(e2eRepo, e2ePR) {
		seen[pull.HiddenValue(c.Body, markerFP)] = true
	}
	if len(seen) != 3 {
		t.Errorf("inline comments = %v, want exec and TODO in README.md and exec in run.sh", seen)
	}
	if !strings.Contains(comment, "README.md:90") {
		t.Error("the finding outside the diff is not in the advisory comment")
	}
	// Calls per review: the opened review needs 5 writes (gate create and completion, body,
	// review, comment); reads are counted in docs/publishing.md (with no configuration file the
	// base branch is asked for .asdd.yml, .yaga.toml and pyproject.toml).
	// Counted as GitHub counts them: 304 answers to conditional requests are free.
	if c := st.calls["opened"]; c[1] != 5 || c[0] > 12 {
		t.Errorf("opened: %d calls, %d writes; want 5 writes and at most 12 calls", c[0], c[1])
	}
	// With GitHub's read lag, the read that finally shows the push (or lensgate's own body write)
	// is one more counted read: the reads while the replicas lag are 304s.
	if c := st.calls["synchronize"]; c[1] != 5 || c[0] > 10 {
		t.Errorf("synchronize: %d calls, %d writes; want 5 writes and at most 10 calls", c[0], c[1])
	}
	if c := st.calls["redelivery+rerun"]; c[1] != 2 || c[0] > 8 {
		t.Errorf("re-run of an unchanged head: %d calls, %d writes; want 2 writes (create and complete a new gate check) and at most 8 calls", c[0], c[1])
	}
}

// The same lifecycle with the real review pipeline and its offline builtin runtime, which
// flags the merge-conflict markers the diff adds.
func TestServerStackWithBuiltinPipeline(t *testing.T) {
	p := review.NewPipeline(review.Options{
		Runtimes: runtime.NewRegistry(builtin.New(builtin.Options{})),
		Logger:   zerolog.Nop(), WorkRoot: t.TempDir(),
	})
	st := newStack(t, p, conflictDiff1)
	authorBody := st.gh.PullBody(e2eRepo, e2ePR)
	first := st.lifecycle(conflictDiff2)
	comment := st.assertPublished(authorBody, first)
	// The observation of head 2 does not back the receipt of head 1.
	res := observation.Verify(extractObservation(comment), observation.Options{
		WitnessKey: st.witness.Public().(ed25519.PublicKey), ReceiptKey: st.key.Public().(ed25519.PublicKey), Receipt: first,
	})
	if res.RunnerObservation != observation.Mismatch || !slices.Contains(res.ReasonCodes, observation.CodeSubjectDiffers) {
		t.Fatalf("receipt from another head: %s %v", res.RunnerObservation, res.ReasonCodes)
	}
	d := st.decisions.last()
	t.Logf("builtin gate %s, %d findings, %d inline", d.Gate.State, len(d.Findings), len(d.Inline))
	if len(d.Findings) == 0 {
		t.Fatal("the builtin runtime found nothing in a diff that adds conflict markers")
	}
	if len(d.Inline) > 0 && len(st.gh.ReviewComments(e2eRepo, e2ePR)) == 0 {
		t.Error("inline comments were decided but none was placed")
	}
	for _, c := range st.gh.ReviewComments(e2eRepo, e2ePR) {
		// The footer is the publisher's markup; escaping it with the body shows it literally.
		if strings.Contains(c.Body, "&lt;sub>") || !strings.Contains(c.Body, "<sub>lensgate ") {
			t.Errorf("inline comment footer escaped or missing:\n%s", c.Body)
		}
	}
}

const conflictDiff1 = `diff --git a/README.md b/README.md
index 1111111..2222222 100644
--- a/README.md
+++ b/README.md
@@ -1 +1,4 @@
 # Hello-World
+<<<<<<< HEAD
+A friendly line.
+>>>>>>> feature
`

const conflictDiff2 = conflictDiff1 + `diff --git a/NOTES.md b/NOTES.md
new file mode 100644
--- /dev/null
+++ b/NOTES.md
@@ -0,0 +1,3 @@
+<<<<<<< HEAD
+notes
+=======
`

func botComments(gh *githubfake.Server) []githubfake.Comment {
	var out []githubfake.Comment
	for _, c := range gh.Comments(e2eRepo, e2ePR) {
		if c.User == gh.BotLogin() {
			out = append(out, c)
		}
	}
	return out
}

func gatesOf(gh *githubfake.Server, head string) []githubfake.CheckRun {
	var out []githubfake.CheckRun
	for _, c := range gh.CheckRuns(e2eRepo, head) {
		if c.Name == DefaultCheckName {
			out = append(out, c)
		}
	}
	return out
}

// gateOf is the head's newest gate check run, the one GitHub shows and branch protection reads.
func gateOf(gh *githubfake.Server, head string) githubfake.CheckRun {
	var newest githubfake.CheckRun
	for _, c := range gatesOf(gh, head) {
		if c.ID > newest.ID {
			newest = c
		}
	}
	return newest
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
