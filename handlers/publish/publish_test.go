package publish

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/repoconfig"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/review"
)

const (
	repoFull  = "acme/widgets"
	head1     = "1111111111111111111111111111111111111111"
	head2     = "2222222222222222222222222222222222222222"
	baseSHA   = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	authorTxt = "Adds an exit code.\r\n\r\nTrailing spaces stay   \n- [x] tested\n"
)

const diff1 = `diff --git a/main.go b/main.go
index 1111111..2222222 100644
--- a/main.go
+++ b/main.go
@@ -1,4 +1,6 @@
 package main
 
+import "os"
+
 func main() {
-	println("hi")
+	os.Exit(run())
diff --git a/run.go b/run.go
new file mode 100644
--- /dev/null
+++ b/run.go
@@ -0,0 +1,3 @@
+package main
+
+func run() int { return exec("sh -c " + input) }
`

// diff2 is the synchronize: run.go changes again.
const diff2 = diff1 + `diff --git a/util.go b/util.go
new file mode 100644
--- /dev/null
+++ b/util.go
@@ -0,0 +1,2 @@
+package main
+var debug = true
`

type testEnv struct {
	t    *testing.T
	gh   *githubfake.Server
	cl   *github.Client
	p    *Publisher
	sink *pdp.MemorySink
	key  ed25519.PrivateKey
	app  publication.AppIdentity
	pr   githubfake.PullRequest
}

func newTestEnv(t *testing.T, opts ...func(*Options)) *testEnv {
	t.Helper()
	gh := githubfake.New(t)
	gh.AddRepo(githubfake.Repo{Owner: "acme", Name: "widgets"})
	pr := gh.AddPullRequest(repoFull, githubfake.PullRequest{
		Title: "Exit code", Body: authorTxt, User: "alice", HeadSHA: head1, BaseSHA: baseSHA, Diff: []byte(diff1),
	})
	seed := sha256.Sum256([]byte("lensgate test key"))
	key := ed25519.NewKeyFromSeed(seed[:])
	sink := &pdp.MemorySink{}
	o := Options{
		Signer: &disclosure.Signer{Key: key}, Audit: sink,
		Retry:          Retry{Attempts: 4, Backoff: time.Millisecond, MaxWait: 3 * time.Second},
		ContentSpacing: -1, // TestContentWritesAreSpaced measures the spacing
	}
	for _, f := range opts {
		f(&o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{t: t, gh: gh, cl: gh.InstallationClient(t), p: p, sink: sink, key: key,
		app: publication.AppIdentity{ID: gh.AppID(), Slug: githubfake.DefaultAppSlug}, pr: pr}
}

// subject binds the pull request as the worker would, from the fake's current state.
func (e *testEnv) subject() *review.Subject {
	// The worker binds a subject only once GitHub shows the event's state (it waits out the read
	// lag); the publisher is driven directly here, so GitHub's replicas are caught up first.
	e.gh.CatchUp()
	pr := e.gh.PullRequest(repoFull, e.pr.Number)
	s := &review.Subject{
		Kind: review.KindPullRequest, Owner: "acme", Repo: "widgets", Number: pr.Number,
		RepositoryNodeID: e.gh.RepoNodeID(repoFull), NodeID: pr.NodeID, Title: pr.Title, Body: pr.Body,
		Author: pr.User, BaseRef: pr.BaseRef, HeadRef: pr.HeadRef, BaseSHA: pr.BaseSHA, HeadSHA: pr.HeadSHA,
		Diff: pr.Diff,
	}
	for _, f := range pr.Files {
		s.Files = append(s.Files, review.File{Path: f.Filename, Status: f.Status, Patch: f.Patch, Additions: f.Additions, Deletions: f.Deletions})
	}
	return s
}

// decision is a review of the subject: security (review, required) fails with one inline
// finding, correctness (inline, required) has one finding on the diff and one outside it,
// tests (comment) and style (reaction) are advisory, perf publishes a check.
func decision(s *review.Subject, gate review.Outcome) *review.Decision {
	sum := sha256.Sum256(s.Diff)
	f := []review.Finding{
		{ID: "sec-1", Lens: "security", Rule: "shell", Severity: review.SeverityHigh, Path: "run.go", Line: 3, Title: "Shell command built from input", Body: "input reaches sh -c"},
		{ID: "cor-1", Lens: "correctness", Severity: review.SeverityMedium, Path: "main.go", Line: 3, Title: "Import placed oddly"},
		{ID: "cor-2", Lens: "correctness", Severity: review.SeverityLow, Path: "main.go", Line: 40, Title: "Helper below is unused"},
		{ID: "tst-1", Lens: "tests", Severity: review.SeverityInfo, Path: "run.go", Line: 1, Title: "No test covers run()"},
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	d := &review.Decision{
		Gate:           review.Gate{State: gate, Reason: "security failed", BlockingFailures: []string{"security"}},
		Recommendation: review.RecommendRequestChanges,
		Lenses: []review.LensResult{
			{Name: "security", Required: true, Publication: config.PublicationReview, Outcome: review.OutcomeFailed, Runtime: "builtin", Findings: f[:1]},
			{Name: "correctness", Required: true, Publication: config.PublicationInline, Outcome: review.OutcomePassed, Runtime: "builtin", Findings: f[1:3]},
			{Name: "tests", Publication: config.PublicationComment, Outcome: review.OutcomePassed, Runtime: "builtin", Findings: f[3:]},
			{Name: "style", Publication: config.PublicationReaction, Outcome: review.OutcomePassed, Runtime: "builtin"},
			{Name: "perf", Publication: config.PublicationCheck, Outcome: review.OutcomePassed, Runtime: "builtin"},
		},
		Findings: f,
		Comment:  "Two required lenses ran.",
		Inline: []review.InlineComment{
			{Path: "run.go", Line: 3, Side: "RIGHT", Body: "Shell command built from input", Fingerprint: "fp-sec-1"},
			{Path: "main.go", Line: 3, Side: "RIGHT", Body: "Import placed oddly", Fingerprint: "fp-cor-1"},
			{Path: "main.go", Line: 40, Side: "RIGHT", Body: "Helper below is unused", Fingerprint: "fp-cor-2"},
		},
		Intake:   review.Intake{Passed: true},
		Coverage: review.Coverage{Status: review.CoverageComplete, FilesTotal: len(s.Files), FilesReviewed: len(s.Files)},
		Subject: review.SubjectContext{Kind: review.KindPullRequest, Owner: s.Owner, Repo: s.Repo, Number: s.Number,
			RepositoryNodeID: s.RepositoryNodeID, NodeID: s.NodeID, HeadSHA: s.HeadSHA, BaseSHA: s.BaseSHA,
			ReviewedDiffDigest: hex.EncodeToString(sum[:])},
	}
	for _, l := range d.Lenses {
		d.Runs = append(d.Runs, review.Run{Lens: l.Name, Runtime: "builtin", Started: now, Finished: now.Add(time.Second), Outcome: l.Outcome})
	}
	switch gate {
	case review.OutcomePassed:
		d.Gate = review.Gate{State: gate, Reason: "all required lenses passed"}
	case review.OutcomePending:
		d.Gate = review.Gate{State: gate, Reason: "security timed out", BlockingPending: []string{"security"}}
		d.Lenses[0].Outcome, d.Lenses[0].Cause, d.Lenses[0].Findings = review.OutcomePending, "adapter timed out", nil
	}
	return d
}

func (e *testEnv) publication(delivery string, d *review.Decision, s *review.Subject) *publication.Publication {
	return &publication.Publication{
		Job: queue.Job{Key: "acme/widgets#1", DeliveryID: delivery, Owner: "acme", Repo: "widgets", Number: s.Number, HeadSHA: s.HeadSHA},
		App: e.app, Subject: s, Decision: d,
	}
}

// runOnce is one worker run: Begin, then Publish.
func (e *testEnv) runOnce(delivery string, gate review.Outcome) error {
	e.t.Helper()
	s := e.subject()
	pub := e.publication(delivery, decision(s, gate), s)
	ctx := zerolog.Nop().WithContext(context.Background())
	return e.beginAndPublish(ctx, pub)
}

// beginAndPublish runs both publisher steps for pub, as the worker does for one job.
func (e *testEnv) beginAndPublish(ctx context.Context, pub *publication.Publication) error {
	if err := e.p.Begin(ctx, e.cl, pub); err != nil {
		return err
	}
	return e.p.Publish(ctx, e.cl, pub)
}

func (e *testEnv) botComments() []githubfake.Comment {
	var out []githubfake.Comment
	for _, c := range e.gh.Comments(repoFull, e.pr.Number) {
		if c.User == e.gh.BotLogin() {
			out = append(out, c)
		}
	}
	return out
}

func (e *testEnv) gateRuns(headSHA string) []githubfake.CheckRun {
	var out []githubfake.CheckRun
	for _, c := range e.gh.CheckRuns(repoFull, headSHA) {
		if c.Name == DefaultCheckName {
			out = append(out, c)
		}
	}
	return out
}

// verify checks the published receipt against the published body as `lensgate receipt
// verify --envelope --public-key --subject-digest --body` does.
func (e *testEnv) verify(envelope []byte, body string) *disclosure.Report {
	e.t.Helper()
	rc := receiptFromEnvelopeKey(e.t, envelope, e.key)
	return disclosure.Verify(envelope, disclosure.Options{
		PublicKey: e.key.Public().(ed25519.PublicKey), ExpectedSubjectDigest: rc, Body: &body, Policy: disclosure.DefaultPolicy(),
	})
}

func receiptFromEnvelopeKey(t *testing.T, envelope []byte, key ed25519.PrivateKey) string {
	t.Helper()
	rep := disclosure.Verify(envelope, disclosure.Options{PublicKey: key.Public().(ed25519.PublicKey)})
	if rep.SubjectDigest == "" {
		t.Fatalf("receipt has no subject digest: %+v", rep.Errors)
	}
	return rep.SubjectDigest
}

func predicateOf(t *testing.T, envelope []byte) map[string]any {
	t.Helper()
	var env struct{ Payload string }
	if err := json.Unmarshal(envelope, &env); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	return st["predicate"].(map[string]any)
}

// TestLifecycle is opened, synchronize, a redelivery and a check re-run against the fake.
func TestLifecycle(t *testing.T) {
	e := newTestEnv(t)

	// opened
	if err := e.runOnce("d-opened", review.OutcomeFailed); err != nil {
		t.Fatal(err)
	}
	opened := e.gh.Calls()
	t.Logf("opened: %d calls, %d writes\n%s", e.gh.TotalCalls(), e.gh.Writes(), e.gh.CallSummary())
	openedTotal, openedWrites := e.gh.TotalCalls(), e.gh.Writes()
	first := extractEnvelope(e.botComments()[0].Body)
	firstBody := e.gh.PullBody(repoFull, e.pr.Number)
	if rep := e.verify(first, firstBody); !rep.OK || rep.BodyCoreDigestMatch != disclosure.MatchMatch || rep.VisibleBlockRendering == disclosure.MatchMismatch {
		t.Fatalf("first receipt does not verify against the body: ok=%v body=%s visible=%s codes=%v errs=%v", rep.OK, rep.BodyCoreDigestMatch, rep.VisibleBlockRendering, rep.ReasonCodes, rep.Errors)
	}

	// synchronize: a new head with a new diff
	e.gh.Push(repoFull, e.pr.Number, head2, []byte(diff2), nil)
	e.gh.ResetCalls()
	if err := e.runOnce("d-sync", review.OutcomeFailed); err != nil {
		t.Fatal(err)
	}
	t.Logf("synchronize: %d calls, %d writes\n%s", e.gh.TotalCalls(), e.gh.Writes(), e.gh.CallSummary())

	// redelivery of the synchronize, then a check re-run of head 2
	e.gh.ResetCalls()
	if err := e.runOnce("d-sync", review.OutcomeFailed); err != nil {
		t.Fatal(err)
	}
	redeliveryWrites := e.gh.Writes()
	t.Logf("redelivery: %d calls, %d writes\n%s", e.gh.TotalCalls(), redeliveryWrites, e.gh.CallSummary())
	if err := e.runOnce("d-rerun", review.OutcomeFailed); err != nil {
		t.Fatal(err)
	}

	// Exactly one advisory comment, updated in place.
	comments := e.botComments()
	if len(comments) != 1 {
		t.Fatalf("advisory comments = %d, want 1", len(comments))
	}
	// One gate check per head: a review of a head whose gate completed (without a re-run
	// request) concludes that run in place, since GitHub does not reopen it.
	for h, want := range map[string]int{head1: 1, head2: 1} {
		runs := e.gateRuns(h)
		if len(runs) != want {
			t.Fatalf("gate runs for %s = %+v, want %d", h[:7], runs, want)
		}
		for _, run := range runs {
			if run.Status != "completed" || run.Conclusion != "failure" {
				t.Fatalf("gate run for %s = %+v", h[:7], run)
			}
			if len(run.Annotations) != 4 {
				t.Errorf("annotations for %s = %d, want 4 (not repeated by re-runs)", h[:7], len(run.Annotations))
			}
		}
	}
	// Inline comments only on diff lines (the fake enforces it) and none repeated.
	seen := map[string]bool{}
	for _, c := range e.gh.ReviewComments(repoFull, e.pr.Number) {
		fp := pull.HiddenValue(c.Body, markerFP)
		if seen[fp] {
			t.Errorf("inline comment %s repeated", fp)
		}
		seen[fp] = true
	}
	if len(seen) != 2 || !seen["fp-sec-1"] || !seen["fp-cor-1"] {
		t.Errorf("inline fingerprints = %v", seen)
	}
	for _, rv := range e.gh.Reviews(repoFull, e.pr.Number) {
		if rv.Event != "COMMENT" {
			t.Errorf("review event %s", rv.Event)
		}
		if !strings.Contains(rv.Body, "**security**: ❌ failed") {
			t.Errorf("the review-mode lens is not summarised in the review: %q", rv.Body)
		}
	}
	if n := len(e.gh.Reviews(repoFull, e.pr.Number)); n != 1 {
		t.Errorf("reviews = %d, want 1 (re-runs add none)", n)
	}
	if !strings.Contains(comments[0].Body, "main.go:40") {
		t.Error("the off-diff finding is not in the summary")
	}
	// The block is in the body and the author's text is intact, byte for byte.
	body := e.gh.PullBody(repoFull, e.pr.Number)
	if !strings.HasPrefix(body, authorTxt) || strings.Count(body, block.Begin) != 1 {
		t.Fatalf("body = %q", body)
	}
	core, _ := block.BodyCore(body)
	prepared, _ := block.Prepare(authorTxt)
	wantCore, _ := block.BodyCore(prepared)
	if string(core) != string(wantCore) {
		t.Fatal("text outside the block changed")
	}
	// The published receipt verifies against the published body and supersedes the first.
	second := extractEnvelope(comments[0].Body)
	if rep := e.verify(second, body); !rep.OK || rep.BodyCoreDigestMatch != disclosure.MatchMatch || rep.VisibleBlockRendering == disclosure.MatchMismatch {
		t.Fatalf("second receipt: ok=%v body=%s visible=%s codes=%v", rep.OK, rep.BodyCoreDigestMatch, rep.VisibleBlockRendering, rep.ReasonCodes)
	}
	firstDigest := disclosure.Verify(first, disclosure.Options{}).ReceiptDigest
	sup := predicateOf(t, second)["supersession"].(map[string]any)["supersedes"].([]any)[0].(map[string]any)
	if got := sup["priorDigest"].(map[string]any)["sha256"]; got != firstDigest {
		t.Fatalf("supersedes %v, want %s", got, firstDigest)
	}
	if predicateOf(t, second)["subjectContext"].(map[string]any)["headSha"] != head2 {
		t.Fatal("second receipt is not bound to the new head")
	}
	// The redelivery wrote nothing but the gate check's state.
	if redeliveryWrites > 2 {
		t.Errorf("redelivery made %d writes, want at most 2 (the gate check's completion)", redeliveryWrites)
	}
	// Reaction and per-lens check, never repeated.
	if r := e.gh.Reactions(repoFull, "issue/1"); len(r) != 1 || r[0].Content != "+1" {
		t.Errorf("reactions = %+v", r)
	}
	for _, h := range []string{head1, head2} {
		var perf int
		for _, c := range e.gh.CheckRuns(repoFull, h) {
			if c.Name == "lensgate / perf" {
				perf++
			}
		}
		if perf != 1 {
			t.Errorf("perf check runs for %s = %d", h[:7], perf)
		}
	}
	if u := e.gh.Unhandled(); len(u) != 0 {
		t.Errorf("unimplemented routes called: %v", u)
	}
	if err := pdp.VerifyRecords(e.sink.Records()); err != nil {
		t.Fatalf("audit chain: %v", err)
	}
	for _, rec := range e.sink.Records() {
		if rec.Outcome.Verdict != "allow" {
			t.Errorf("denied in a normal run: %s %s", rec.Action, rec.Reasoning)
		}
	}
	// Minimum for the first publication: writes are create check, complete check, body,
	// review, comment, reaction and the perf check (create); reads are the check lookup in
	// Begin and Publish, the pull request (read and re-read before the body write), comments
	// and review comments (for idempotence), and the perf check lookup.
	minWrites := 7
	if openedWrites != minWrites {
		t.Errorf("opened writes = %d, minimum %d", openedWrites, minWrites)
	}
	if openedTotal-openedWrites > 8 {
		t.Errorf("opened reads = %d, more than the 8 needed: %v", openedTotal-openedWrites, opened)
	}
}

func TestPendingRequiredLensNeverPasses(t *testing.T) {
	for _, gate := range []review.Outcome{review.OutcomePending, review.OutcomePassed} {
		t.Run(string(gate), func(t *testing.T) {
			e := newTestEnv(t)
			if err := e.runOnce("d1", gate); err != nil {
				t.Fatal(err)
			}
			runs := e.gateRuns(head1)
			want := map[review.Outcome]string{review.OutcomePending: "action_required", review.OutcomePassed: "success"}[gate]
			if len(runs) != 1 || runs[0].Conclusion != want {
				t.Fatalf("gate = %+v, want %s", runs, want)
			}
		})
	}
	g := review.Gate{State: review.OutcomePassed, BlockingPending: []string{"security"}}
	if c := gateConclusion(g); c != "action_required" {
		t.Errorf("a passed gate with a pending required lens concluded %s", c)
	}
}

func TestGitHubFailures(t *testing.T) {
	const (
		routeReview  = "POST /repos/{owner}/{repo}/pulls/{number}/reviews"
		routeComment = "POST /repos/{owner}/{repo}/issues/{number}/comments"
		routeCheck   = "PATCH /repos/{owner}/{repo}/check-runs/{id}"
		routeBody    = "PATCH /repos/{owner}/{repo}/pulls/{number}"
	)
	cases := []struct {
		name   string
		opts   func(*Options)
		inject func(e *testEnv)
		// tamper changes the subject the publisher believes in (a stale snapshot).
		tamper func(s *review.Subject, d *review.Decision)
		check  func(t *testing.T, e *testEnv)
		// failed: Publish reports an error and writes no advisory comment.
		failed bool
	}{
		{"422 on one inline comment", nil, nil, func(s *review.Subject, d *review.Decision) {
			// The snapshot claims main.go:6 is in the diff; GitHub's files say otherwise.
			s.Files[0].Patch += "\n+extra"
			s.Diff = nil
			d.Inline = append(d.Inline, review.InlineComment{Path: "main.go", Line: 10, Side: "RIGHT", Body: "stale line", Fingerprint: "fp-stale"})
			s.Files[0].Patch = strings.Replace(s.Files[0].Patch, "@@ -1,4 +1,6 @@", "@@ -1,4 +1,12 @@", 1) + "\n+a\n+b\n+c\n+d\n+e"
		}, func(t *testing.T, e *testEnv) {
			rc := e.gh.ReviewComments(repoFull, 1)
			if len(rc) != 2 {
				t.Fatalf("inline comments = %d, want the 2 placeable ones", len(rc))
			}
			if c := e.botComments(); len(c) != 1 || !strings.Contains(c[0].Body, "stale line") {
				t.Fatalf("refused comment not moved to the summary")
			}
		}, false},
		{"403 secondary rate limit with Retry-After", nil, func(e *testEnv) {
			e.gh.SecondaryRateLimitNext(routeComment, 1, 1)
		}, nil, func(t *testing.T, e *testEnv) {
			if n := e.gh.CallCount(routeComment); n != 2 {
				t.Errorf("comment create calls = %d, want 2", n)
			}
		}, false},
		{"500 after the comment landed", nil, func(e *testEnv) {
			e.gh.Inject(routeComment, githubfake.Fault{Status: http.StatusInternalServerError, AfterWrite: true})
		}, nil, func(t *testing.T, e *testEnv) {
			if n := e.gh.CallCount(routeComment); n != 1 {
				t.Errorf("comment create calls = %d, want 1 (found on re-check)", n)
			}
		}, false},
		{"500 after the review landed", nil, func(e *testEnv) {
			e.gh.Inject(routeReview, githubfake.Fault{Status: http.StatusBadGateway, AfterWrite: true})
		}, nil, func(t *testing.T, e *testEnv) {
			if n := len(e.gh.Reviews(repoFull, 1)); n != 1 {
				t.Errorf("reviews = %d", n)
			}
		}, false},
		{"500 twice on the check update", nil, func(e *testEnv) {
			e.gh.FailNext(routeCheck, http.StatusInternalServerError, 2)
		}, nil, func(t *testing.T, e *testEnv) {
			if r := e.gateRuns(head1); len(r) != 1 || r[0].Conclusion != "failure" {
				t.Errorf("gate = %+v", r)
			}
		}, false},
		{"timeout on the comment create", func(o *Options) { o.CallTimeout = 300 * time.Millisecond }, func(e *testEnv) {
			e.gh.DelayNext(routeComment, time.Minute, 1)
		}, nil, func(t *testing.T, e *testEnv) {
			if n := e.gh.CallCount(routeComment); n != 2 {
				t.Errorf("comment create calls = %d, want 2 (timed out, then retried)", n)
			}
		}, false},
		{"500 after the annotations landed", nil, func(e *testEnv) {
			e.gh.Inject(routeCheck, githubfake.Fault{Status: http.StatusInternalServerError, AfterWrite: true})
		}, nil, func(t *testing.T, e *testEnv) {
			if r := e.gateRuns(head1); len(r) != 1 || len(r[0].Annotations) != 4 || r[0].Conclusion != "failure" {
				t.Errorf("gate = %d annotations, conclusion %q; want 4 (the landed batch not sent again)", len(r[0].Annotations), r[0].Conclusion)
			}
			if n := e.gh.CallCount(routeCheck); n != 1 {
				t.Errorf("check updates = %d, want 1", n)
			}
		}, false},
		{"comments cannot be listed", nil, func(e *testEnv) {
			e.gh.FailNext("GET /repos/{owner}/{repo}/issues/{number}/comments", http.StatusInternalServerError, 10)
		}, nil, func(t *testing.T, e *testEnv) {
			if n := e.gh.CallCount(routeComment); n != 0 {
				t.Errorf("comment created without knowing the existing ones (%d calls)", n)
			}
			if g := e.gateRuns(head1); len(g) != 1 || !strings.Contains(g[0].Text, "advisory comment not written") {
				t.Errorf("the failure is not reported in the check run")
			}
		}, true},
		{"500 after the body landed", nil, func(e *testEnv) {
			e.gh.Inject(routeBody, githubfake.Fault{Status: http.StatusBadGateway, AfterWrite: true})
		}, nil, func(t *testing.T, e *testEnv) {
			if n := e.gh.CallCount(routeBody); n != 1 {
				t.Errorf("body writes = %d, want 1", n)
			}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts []func(*Options)
			if tc.opts != nil {
				opts = append(opts, tc.opts)
			}
			e := newTestEnv(t, opts...)
			if tc.inject != nil {
				tc.inject(e)
			}
			s := e.subject()
			d := decision(s, review.OutcomeFailed)
			if tc.tamper != nil {
				tc.tamper(s, d)
			}
			pub := e.publication("d1", d, s)
			ctx := context.Background()
			if err := e.p.Begin(ctx, e.cl, pub); err != nil {
				t.Fatal(err)
			}
			if err := e.p.Publish(ctx, e.cl, pub); (err != nil) != tc.failed {
				t.Fatalf("publish: %v", err)
			}
			tc.check(t, e)
			if c := e.botComments(); len(c) != map[bool]int{false: 1, true: 0}[tc.failed] {
				t.Fatalf("advisory comments = %d", len(c))
			}
			if r := e.gateRuns(head1); len(r) != 1 || r[0].Status != "completed" {
				t.Fatalf("gate = %+v", r)
			}
			body := e.gh.PullBody(repoFull, 1)
			if !strings.HasPrefix(body, authorTxt) || strings.Count(body, block.Begin) != 1 {
				t.Fatalf("body = %q", body)
			}
		})
	}
}

// An author edit between the publisher's first read and its write is kept: the receipt is
// signed again over the new body.
func TestAuthorEditWhilePublishing(t *testing.T) {
	e := newTestEnv(t)
	const route = "GET /repos/{owner}/{repo}/pulls/{number}"
	edited := authorTxt + "Edited while the review ran.\n"
	// The author edits after the snapshot was bound: the read right before the body write sees it.
	// The edit is old enough for GitHub's replicas to show it; one they do not show yet cannot be
	// seen by any read (GitHub has no conditional write), see docs/publishing.md.
	e.gh.OnNext(route, func(*http.Request) { e.gh.SetPullBody(repoFull, 1, edited); e.gh.CatchUp() })
	if err := e.runOnce("d1", review.OutcomeFailed); err != nil {
		t.Fatal(err)
	}
	body := e.gh.PullBody(repoFull, 1)
	if !strings.HasPrefix(body, edited) {
		t.Fatalf("author edit lost: %q", body)
	}
	env := extractEnvelope(e.botComments()[0].Body)
	if rep := e.verify(env, body); !rep.OK || rep.BodyCoreDigestMatch != disclosure.MatchMatch {
		t.Fatalf("receipt does not match the edited body: %v %s", rep.ReasonCodes, rep.BodyCoreDigestMatch)
	}
}

// A failing gate never becomes an approval, and a policy that allows REQUEST_CHANGES gets it.
func TestReviewEvents(t *testing.T) {
	for _, allow := range []bool{false, true} {
		e := newTestEnv(t, func(o *Options) { o.AllowRequestChanges = allow })
		if err := e.runOnce("d1", review.OutcomeFailed); err != nil {
			t.Fatal(err)
		}
		rv := e.gh.Reviews(repoFull, 1)
		want := map[bool]string{false: "COMMENT", true: "REQUEST_CHANGES"}[allow]
		if len(rv) != 1 || rv[0].Event != want {
			t.Fatalf("allow=%v: reviews = %+v", allow, rv)
		}
	}
}

func TestTriageLabelsThroughPDP(t *testing.T) {
	e := newTestEnv(t)
	is := e.gh.AddIssue(repoFull, githubfake.Issue{Number: 5, Title: "Crash", Body: "It crashes.\r\n", User: "bob"})
	s := &review.Subject{Kind: review.KindIssue, Owner: "acme", Repo: "widgets", Number: 5,
		NodeID: is.NodeID, RepositoryNodeID: e.gh.RepoNodeID(repoFull), Author: "bob", Body: is.Body}
	ctx := context.Background()
	for _, labels := range [][]string{{"bug", "approved"}, {"bug", "needs-triage"}} {
		pub := &publication.Publication{Job: queue.Job{DeliveryID: "i1"}, App: e.app, Subject: s,
			Triage: &review.TriageDecision{Labels: labels, Comment: "Looks like a crash. <!-- lensgate:advisory -->", Runtime: "builtin",
				Runs: []review.Run{{Lens: "triage", Runtime: "builtin", Started: time.Unix(1e9, 0), Finished: time.Unix(1e9+1, 0), Outcome: review.OutcomePassed}}}}
		if err := e.p.Publish(ctx, e.cl, pub); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.gh.Labels(repoFull, 5); strings.Join(got, ",") != "bug,needs-triage" {
		t.Fatalf("labels = %v (the set with an off-list label must be refused whole)", got)
	}
	var denied int
	for _, r := range e.sink.Records() {
		if r.Outcome.Verdict == "deny" {
			denied++
			if !strings.Contains(r.Reasoning, `"approved"`) {
				t.Errorf("denial reason %q", r.Reasoning)
			}
		}
	}
	if denied != 1 {
		t.Errorf("denied records = %d", denied)
	}
	cs := e.botComments()
	if len(cs) != 0 {
		t.Fatalf("comments on the PR: %d", len(cs))
	}
	issueComments := e.gh.Comments(repoFull, 5)
	if len(issueComments) != 1 || strings.Count(issueComments[0].Body, markerAdvisory) != 1 {
		t.Fatalf("issue comments = %+v", issueComments)
	}
	// The issue body carries the block after the author's text, and the receipt in the comment
	// verifies against it.
	body := e.gh.IssueBody(repoFull, 5)
	if !strings.HasPrefix(body, "It crashes.\r\n") || strings.Count(body, block.Begin) != 1 {
		t.Fatalf("issue body = %q", body)
	}
	env := extractEnvelope(issueComments[0].Body)
	if rep := e.verify(env, body); !rep.OK || rep.BodyCoreDigestMatch != disclosure.MatchMatch {
		b, _ := json.MarshalIndent(rep, "", " ")
		t.Fatalf("issue receipt: %s", b)
	}
	if predicateOf(t, env)["supersession"] == nil {
		t.Error("the second triage receipt does not supersede the first")
	}
}

// A job a newer one superseded (the durable queue learns it late) only concludes the gate
// check of the head it reviewed; the comment, review and body belong to the newer run.
func TestSupersededJobPublishesOnlyItsCheck(t *testing.T) {
	e := newTestEnv(t)
	s := e.subject()
	pub := e.publication("d1", decision(s, review.OutcomeFailed), s)
	ctx := queue.WithCurrentCheck(context.Background(), func(context.Context) error { return queue.ErrNotCurrent })
	if err := e.beginAndPublish(ctx, pub); err != nil {
		t.Fatal(err)
	}
	if g := e.gateRuns(head1); len(g) != 1 || g[0].Conclusion != "failure" {
		t.Fatalf("gate = %+v", g)
	}
	if len(e.botComments()) != 0 || len(e.gh.Reviews(repoFull, 1)) != 0 || e.gh.PullBody(repoFull, 1) != authorTxt {
		t.Fatal("a superseded job wrote the comment, review or body")
	}
}

// An author's body edit after publication (an edited event) gets a new receipt over the new
// body that supersedes the previous one; the author's new text stays as written.
func TestBodyEditSupersedes(t *testing.T) {
	e := newTestEnv(t)
	if err := e.runOnce("d1", review.OutcomeFailed); err != nil {
		t.Fatal(err)
	}
	first := extractEnvelope(e.botComments()[0].Body)
	published := e.gh.PullBody(repoFull, 1)
	edited := "New first line by the author.\n" + published + "\nA footer.\n"
	e.gh.SetPullBody(repoFull, 1, edited)
	if err := e.runOnce("d2-edited", review.OutcomeFailed); err != nil {
		t.Fatal(err)
	}
	body := e.gh.PullBody(repoFull, 1)
	if !strings.HasPrefix(body, "New first line by the author.\n"+authorTxt) || !strings.HasSuffix(body, "\nA footer.\n") {
		t.Fatalf("author text changed: %q", body)
	}
	second := extractEnvelope(e.botComments()[0].Body)
	if rep := e.verify(second, body); !rep.OK {
		t.Fatalf("second receipt: %v", rep.ReasonCodes)
	}
	if rep := e.verify(first, body); rep.BodyCoreDigestMatch != disclosure.MatchMismatch {
		t.Errorf("first receipt against the edited body: %s, want MISMATCH", rep.BodyCoreDigestMatch)
	}
	sup := predicateOf(t, second)["supersession"].(map[string]any)["supersedes"].([]any)[0].(map[string]any)
	if sup["priorDigest"].(map[string]any)["sha256"] != disclosure.Verify(first, disclosure.Options{}).ReceiptDigest ||
		!strings.Contains(sup["reason"].(string), "body") {
		t.Fatalf("supersession = %v", sup)
	}
	if n := len(e.gh.Reviews(repoFull, 1)); n != 1 {
		t.Errorf("reviews = %d: the edit must not repeat inline comments", n)
	}
}

// A pull request that changes the configuration gets the new file's problems in the advisory
// comment; the policy source is named.
func TestProposedConfigFeedback(t *testing.T) {
	e := newTestEnv(t)
	s := e.subject()
	pub := e.publication("d1", decision(s, review.OutcomePassed), s)
	pub.Config = repoconfig.ConfigSource{Origin: "repository", Source: "acme/widgets@main", Path: ".asdd.yml"}
	pub.Proposed = &repoconfig.ProposedConfig{Path: ".asdd.yml", HeadSHA: head1, Problems: config.Problems{
		{File: ".asdd.yml", Line: 3, Key: "runtime", Message: "unknown runtime <!-- x -->", Hint: "use builtin"},
	}}
	ctx := context.Background()
	if err := e.p.Publish(ctx, e.cl, pub); err != nil {
		t.Fatal(err)
	}
	c := e.botComments()[0].Body
	for _, want := range []string{"Policy from: repository `acme/widgets@main:.asdd.yml`", "This pull request changes `.asdd.yml`",
		".asdd.yml:3: unknown runtime &lt;!-- x --&gt; (hint: use builtin)"} {
		if !strings.Contains(c, want) {
			t.Errorf("comment lacks %q:\n%s", want, c)
		}
	}
}

// A body too long to take the block keeps the author's text and still publishes the receipt.
func TestBodyTooLongForTheBlock(t *testing.T) {
	e := newTestEnv(t)
	long := strings.Repeat("x", 65500)
	e.gh.SetPullBody(repoFull, 1, long)
	if err := e.runOnce("d1", review.OutcomeFailed); err != nil {
		t.Fatal(err)
	}
	if e.gh.PullBody(repoFull, 1) != long {
		t.Fatal("body changed")
	}
	if n := e.gh.CallCount("PATCH /repos/{owner}/{repo}/pulls/{number}"); n != 0 {
		t.Errorf("body writes = %d", n)
	}
	c := e.botComments()
	if len(c) != 1 || extractEnvelope(c[0].Body) == nil {
		t.Fatal("receipt not published in the comment")
	}
	if g := e.gateRuns(head1); !strings.Contains(g[0].Text, "65,536") {
		t.Error("the skipped block is not reported")
	}
}

// The repository's own policy bounds the run: its triage_labels (not the defaults) and its
// max_actions_per_run, under which the gate check still concludes.
func TestRepositoryPolicyBoundsTheRun(t *testing.T) {
	t.Run("triage_labels", func(t *testing.T) {
		e := newTestEnv(t)
		is := e.gh.AddIssue(repoFull, githubfake.Issue{Number: 5, Title: "Slow", Body: "It is slow.\n", User: "bob"})
		s := &review.Subject{Kind: review.KindIssue, Owner: "acme", Repo: "widgets", Number: 5,
			NodeID: is.NodeID, RepositoryNodeID: e.gh.RepoNodeID(repoFull), Author: "bob", Body: is.Body}
		repo := config.DefaultRepo()
		repo.TriageLabels = []string{"area/api", "perf"}
		for _, labels := range [][]string{{"bug"}, {"area/api", "perf"}} {
			pub := &publication.Publication{Job: queue.Job{DeliveryID: "i-" + labels[0]}, App: e.app, Subject: s, Repo: repo,
				Triage: &review.TriageDecision{Labels: labels, Runtime: "builtin"}}
			if err := e.p.Publish(context.Background(), e.cl, pub); err != nil {
				t.Fatal(err)
			}
		}
		if got := e.gh.Labels(repoFull, 5); strings.Join(got, ",") != "area/api,perf" {
			t.Fatalf("labels = %v: the repository's triage_labels must decide, not the defaults", got)
		}
	})
	t.Run("max_actions_per_run", func(t *testing.T) {
		e := newTestEnv(t)
		s := e.subject()
		pub := e.publication("d1", decision(s, review.OutcomeFailed), s)
		pub.Repo = config.DefaultRepo()
		pub.Repo.MaxActionsPerRun = 2
		ctx := context.Background()
		if err := e.beginAndPublish(ctx, pub); err != nil {
			t.Fatal(err)
		}
		g := e.gateRuns(head1)
		if len(g) != 1 || g[0].Status != "completed" || g[0].Conclusion != "failure" {
			t.Fatalf("gate = %+v: the cap must never leave the gate check in progress", g)
		}
		if !strings.Contains(g[0].Text, "action cap") {
			t.Error("the denied writes are not reported in the check run")
		}
		var allowed, denied int
		for _, r := range e.sink.Records() {
			if r.Outcome.Verdict == "allow" {
				allowed++
			} else {
				denied++
			}
		}
		if denied == 0 || len(e.botComments())+len(e.gh.Reviews(repoFull, 1)) > 1 {
			t.Fatalf("allowed %d, denied %d, comments %d, reviews %d", allowed, denied, len(e.botComments()), len(e.gh.Reviews(repoFull, 1)))
		}
	})
}

// The advisory comment says each thing once: the lens table once, the reviewed head, and
// "(inline)" only on findings that really sit inline.
func TestAdvisoryCommentSaysEachThingOnce(t *testing.T) {
	e := newTestEnv(t)
	s := e.subject()
	d := decision(s, review.OutcomeFailed)
	d.Comment = review.RenderComment(d) // what the pipeline hands over
	d.Coverage.Gaps = []review.Gap{{Path: "big.bin", Reason: "binary file"}}
	pub := e.publication("d1", d, s)
	ctx := context.Background()
	if err := e.beginAndPublish(ctx, pub); err != nil {
		t.Fatal(err)
	}
	c := e.botComments()[0].Body
	if n := strings.Count(c, "| Lens |"); n != 1 {
		t.Errorf("lens tables = %d, want 1:\n%s", n, c)
	}
	if !strings.Contains(c, "Reviewed head `"+head1[:12]+"`") {
		t.Errorf("the reviewed head is not named:\n%s", c)
	}
	if !strings.Contains(c, "`big.bin`: binary file") {
		t.Errorf("the coverage gap is not named:\n%s", c)
	}
	for _, l := range strings.Split(c, "\n") {
		switch {
		case strings.Contains(l, "main.go:40") && strings.Contains(l, "(inline)"):
			t.Errorf("a finding outside the diff is marked inline: %s", l)
		case strings.Contains(l, "run.go:3") && strings.HasPrefix(l, "- **high**") && !strings.Contains(l, "(inline)"):
			t.Errorf("an inline finding is not marked: %s", l)
		}
	}
}

// When GitHub refuses every form of the review, each comment ends in the summary.
func TestReviewRefusedEveryRound(t *testing.T) {
	e := newTestEnv(t)
	e.gh.FailNext("POST /repos/{owner}/{repo}/pulls/{number}/reviews", http.StatusUnprocessableEntity, 10)
	s := e.subject()
	d := decision(s, review.OutcomeFailed)
	for i := 0; i < 6; i++ {
		d.Inline = append(d.Inline, review.InlineComment{Lens: "correctness", Path: "run.go", Line: 1 + i%3, Side: "RIGHT", Body: fmt.Sprintf("extra %d", i), Fingerprint: fmt.Sprintf("fp-x%d", i)})
	}
	pub := e.publication("d1", d, s)
	if err := e.p.Publish(context.Background(), e.cl, pub); err != nil {
		t.Fatal(err)
	}
	c := e.botComments()[0].Body
	for _, in := range d.Inline {
		if in.Line == 40 {
			continue // outside the diff, moved before any attempt
		}
		if !strings.Contains(c, "`"+in.Path+":"+fmt.Sprint(in.Line)+"` "+in.Body+" (") {
			t.Errorf("comment %q is neither inline nor in the summary", in.Body)
		}
	}
	if strings.Contains(c, "(inline)") {
		t.Errorf("nothing was placed inline, yet a finding is marked so:\n%s", c)
	}
}

// Two runs that raced to create the advisory comment (or left two behind) converge on one:
// the oldest of the App's own stays with the newest text; a look-alike by a person stays
// untouched and is never taken for the App's.
func TestDuplicateAdvisoryCommentsConverge(t *testing.T) {
	t.Run("race on create", func(t *testing.T) {
		e := newTestEnv(t)
		e.gh.OnNext("POST /repos/{owner}/{repo}/issues/{number}/comments", func(*http.Request) {
			e.gh.AddComment(repoFull, 1, e.gh.BotLogin(), markerAdvisory+"\nwritten by a racing run")
		})
		if err := e.runOnce("d1", review.OutcomeFailed); err != nil {
			t.Fatal(err)
		}
		c := e.botComments()
		if len(c) != 1 || extractEnvelope(c[0].Body) == nil {
			t.Fatalf("advisory comments = %d after a racing create", len(c))
		}
	})
	t.Run("left behind", func(t *testing.T) {
		e := newTestEnv(t)
		first := e.gh.AddComment(repoFull, 1, e.gh.BotLogin(), markerAdvisory+"\nolder")
		e.gh.AddComment(repoFull, 1, "mallory", markerAdvisory+"\nlook-alike by a person")
		e.gh.AddComment(repoFull, 1, e.gh.BotLogin(), markerAdvisory+"\nyounger duplicate")
		if err := e.runOnce("d1", review.OutcomeFailed); err != nil {
			t.Fatal(err)
		}
		c := e.botComments()
		if len(c) != 1 || c[0].ID != first.ID || extractEnvelope(c[0].Body) == nil {
			t.Fatalf("advisory comments = %+v, want only the oldest, updated", c)
		}
		var people int
		for _, x := range e.gh.Comments(repoFull, 1) {
			if x.User == "mallory" && strings.Contains(x.Body, "look-alike") {
				people++
			}
		}
		if people != 1 {
			t.Fatal("a person's comment with the marker was changed or removed")
		}
		var dedupe int
		for _, r := range e.sink.Records() {
			if r.Action == "publish."+string(pdp.KindCommentDedupe) && r.Outcome.Verdict == "allow" {
				dedupe++
			}
		}
		if dedupe != 1 {
			t.Errorf("audited deletions = %d, want 1", dedupe)
		}
	})
}

// Bodies at the edges: empty (null in the API) gets the block alone and a receipt that
// verifies; a body with two begin markers is ambiguous, so it is left exactly as written and
// the check run says why.
func TestBodyEdges(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		e := newTestEnv(t)
		e.gh.SetPullBody(repoFull, 1, "")
		if err := e.runOnce("d1", review.OutcomeFailed); err != nil {
			t.Fatal(err)
		}
		body := e.gh.PullBody(repoFull, 1)
		if !strings.HasPrefix(body, block.Begin) || strings.Count(body, block.Begin) != 1 {
			t.Fatalf("body = %q", body)
		}
		if rep := e.verify(extractEnvelope(e.botComments()[0].Body), body); !rep.OK || rep.BodyCoreDigestMatch != disclosure.MatchMatch {
			t.Fatalf("receipt over the empty body: %v %s", rep.ReasonCodes, rep.BodyCoreDigestMatch)
		}
	})
	t.Run("two begin markers", func(t *testing.T) {
		e := newTestEnv(t)
		ambiguous := "Text.\r\n" + block.Begin + "\n" + block.Begin + "\nmore\n"
		e.gh.SetPullBody(repoFull, 1, ambiguous)
		if err := e.runOnce("d1", review.OutcomeFailed); err != nil {
			t.Fatal(err)
		}
		if e.gh.PullBody(repoFull, 1) != ambiguous {
			t.Fatal("an ambiguous body was changed")
		}
		if g := e.gateRuns(head1); len(g) != 1 || !strings.Contains(g[0].Text, "ambiguous") {
			t.Fatal("the check run does not say why the block is missing")
		}
		if len(e.botComments()) != 1 {
			t.Fatal("no advisory comment")
		}
	})
}

// A per-lens check never reads as passing for a required lens that did not pass.
func TestPerLensCheckConclusions(t *testing.T) {
	for _, tc := range []struct {
		required bool
		outcome  review.Outcome
		want     string
	}{
		{true, review.OutcomePending, "action_required"},
		{true, review.OutcomeFailed, "failure"},
		{true, review.OutcomePassed, "success"},
		{false, review.OutcomeFailed, "neutral"},
		{false, review.OutcomePending, "neutral"},
	} {
		t.Run(fmt.Sprintf("%v %s", tc.required, tc.outcome), func(t *testing.T) {
			e := newTestEnv(t)
			s := e.subject()
			d := decision(s, review.OutcomeFailed)
			d.Lenses[4].Required, d.Lenses[4].Outcome = tc.required, tc.outcome
			if err := e.p.Publish(context.Background(), e.cl, e.publication("d1", d, s)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range e.gh.CheckRuns(repoFull, head1) {
				if c.Name == "lensgate / perf" {
					got = append(got, c.Conclusion)
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("perf check = %v, want %s", got, tc.want)
			}
		})
	}
}

// The comment that asked for a review gets an eyes reaction when the run begins.
func TestReviewCommandIsAcknowledged(t *testing.T) {
	e := newTestEnv(t)
	cmd := e.gh.AddComment(repoFull, 1, "alice", "/lensgate review")
	s := e.subject()
	pub := e.publication("d-cmd", decision(s, review.OutcomePassed), s)
	pub.Job.Reason = "issue_comment.created"
	pub.Job.Extra = json.RawMessage(fmt.Sprintf(`{"requested_by":"alice","comment_id":%d}`, cmd.ID))
	if err := e.p.Begin(context.Background(), e.cl, pub); err != nil {
		t.Fatal(err)
	}
	r := e.gh.Reactions(repoFull, fmt.Sprintf("comment/%d", cmd.ID))
	if len(r) != 1 || r[0].Content != "eyes" {
		t.Fatalf("reactions on the command = %+v", r)
	}
	if g := e.gateRuns(head1); len(g) != 1 || g[0].Status != "in_progress" {
		t.Fatalf("gate = %+v", g)
	}
}
