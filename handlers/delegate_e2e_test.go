package handlers_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/publish"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/handlers/worker"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

// codexBot is the connector's identity as the built-in preset knows it.
var codexBot = githubfake.Bot{Login: "chatgpt-codex-connector[bot]", UserID: 199175422, AppID: 1144995, AppSlug: "chatgpt-codex-connector"}

// delegateConfig is an .asdd.yml whose only required lens is answered by the Codex connector.
const delegateConfig = `agent_review:
  version: 1
  required: [codex-review]
  agents:
    codex-review:
      preset: codex
      instruction: Review behaviour, tests and compatibility.
      publication: inline%s
`

// testClock is the clock of the fake GitHub and of the App; tests move it instead of waiting.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// decisions records what the real publisher was given.
type decisions struct {
	*publish.Publisher
	mu   sync.Mutex
	pubs []*publication.Publication
}

func (d *decisions) Publish(ctx context.Context, gh *github.Client, p *publication.Publication) error {
	err := d.Publisher.Publish(ctx, gh, p)

	d.mu.Lock()
	d.pubs = append(d.pubs, p)
	d.mu.Unlock()
	return err
}

// lens returns the newest published result of a lens for a head.
func (d *decisions) lens(name, head string) (review.LensResult, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(d.pubs) - 1; i >= 0; i-- {
		p := d.pubs[i]
		if p.Decision == nil || p.Subject == nil || p.Subject.HeadSHA != head {
			continue
		}
		for _, l := range p.Decision.Lenses {
			if l.Name == name {
				return l, true
			}
		}
	}
	return review.LensResult{}, false
}

type delegateEnv struct {
	*env
	clk  *testClock
	pubs *decisions
	sent atomic.Int64
	key  ed25519.PrivateKey // the receipt signer's key, when signed
}

// delegateSetup varies newDelegateEnv.
type delegateSetup struct {
	extra   string // appended to the lens of delegateConfig
	scripts [][]githubfake.Answer
	// connector replaces the Codex connector; presets are operator presets for it.
	connector *githubfake.Connector
	presets   []delegate.Preset
	// files replace .asdd.yml on the base branch.
	files map[string]string
	// signed publishes receipts.
	signed bool
	// runtimes are enabled next to builtin and delegate.
	runtimes []runtime.Runtime
	// durable keeps the jobs in a SQLite database with River instead of memory.
	durable bool
}

// newDelegateEnv runs the whole App (dispatcher, queue, worker, pipeline with the delegate
// runtime, publisher and policy decision point) against the fake GitHub with a scripted
// Codex connector answering each request with its script.
func newDelegateEnv(t *testing.T, extra string, scripts ...[]githubfake.Answer) *delegateEnv {
	return newDelegateEnvWith(t, delegateSetup{extra: extra, scripts: scripts})
}

func newDelegateEnvWith(t *testing.T, ds delegateSetup) *delegateEnv {
	t.Helper()
	// Real time as the start: installation tokens the fake mints expire by the real clock.
	clk := &testClock{t: time.Now().UTC().Truncate(time.Second)}
	gh := githubfake.New(t, githubfake.WithClock(clk.now))
	conn := githubfake.Connector{Bot: codexBot, Trigger: "@codex review", Scripts: ds.scripts}
	if ds.connector != nil {
		conn = *ds.connector
	}
	gh.ScriptConnector(conn)
	dl, err := delegate.New(ds.presets...)
	if err != nil {
		t.Fatal(err)
	}
	reg := runtime.NewRegistry(append([]runtime.Runtime{builtin.New(builtin.Options{}), dl}, ds.runtimes...)...)
	for _, n := range dl.PresetNames() {
		if err := reg.AddPreset(n, delegate.Name); err != nil {
			t.Fatal(err)
		}
	}
	po := publish.Options{Audit: &pdp.MemorySink{}, Now: clk.now}
	var key ed25519.PrivateKey
	if ds.signed {
		_, key, err = ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		po.Signer = &disclosure.Signer{Key: key}
	}
	p, err := publish.New(po)
	if err != nil {
		t.Fatal(err)
	}
	de := &delegateEnv{clk: clk, pubs: &decisions{Publisher: p}, key: key}
	de.env = newEnvOn(t, gh, func(_ *config.Server, o *handlers.Options) {
		o.Reviewer.(*countingReviewer).next = review.NewPipeline(review.Options{Runtimes: reg, Logger: zerolog.Nop(), WorkRoot: t.TempDir(), Now: clk.now})
		o.Publisher = de.pubs
		o.Now = clk.now
		o.Delegation = worker.Delegation{Runtime: dl, Recheck: []time.Duration{50 * time.Millisecond}, MaxRechecks: 100000}
		if ds.durable {
			q, err := durable.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "queue.db"),
				durable.Options{Workers: 2, JobTimeout: 30 * time.Second, FetchPollInterval: 20 * time.Millisecond, RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			o.Queue = q
		}
	})
	var done atomic.Bool
	t.Cleanup(func() { done.Store(true) })
	// The fake's answers arrive as the webhooks GitHub would send.
	gh.OnEvent(func(event string, payload []byte) {
		if done.Load() {
			return
		}
		req, err := githubfake.WebhookRequest(de.http.URL+handlers.RouteHook, event, fmt.Sprintf("bot-%d", de.sent.Add(1)), gh.WebhookSecret(), payload)
		if err != nil {
			t.Error(err)
			return
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	de.addFixturePR(readmeDiff)
	// Intake passes: a lane label and the authorship checkbox.
	de.gh.SetPullBody(fixtureRepo, fixturePR, "- [x] Authored by a human")
	if _, _, err := gh.InstallationClient(t).Issues.AddLabelsToIssue(context.Background(), "Codertocat", "Hello-World", fixturePR, []string{"docs"}); err != nil {
		t.Fatal(err)
	}
	de.gh.SetPermission(fixtureRepo, "Codertocat", "write")
	files := ds.files
	if files == nil {
		files = map[string]string{".asdd.yml": fmt.Sprintf(delegateConfig, ds.extra)}
	}
	for path, body := range files {
		de.gh.SetFile(fixtureRepo, fixtureRef, path, body)
	}
	// The set-up precedes the events the tests send, whose payloads do not carry the body above:
	// GitHub's replicas have caught up with it by then.
	de.gh.CatchUp()
	return de
}

func (de *delegateEnv) open() {
	de.t.Helper()
	if code, body := de.send("pull_request", "d-open", fixture(de.t, "pull_request.opened.payload.json")); code != http.StatusAccepted {
		de.t.Fatalf("opened: %d %q", code, body)
	}
}

// requests lists the request comments for a head.
func (de *delegateEnv) requests(head string) []githubfake.Comment {
	var out []githubfake.Comment
	for _, c := range de.gh.Comments(fixtureRepo, fixturePR) {
		if strings.Contains(c.Body, delegate.MarkerName) && strings.Contains(c.Body, "head-sha="+head) {
			out = append(out, c)
		}
	}
	return out
}

// waitLens waits until the lens's published outcome for head is want with text in its cause
// (pending) or summary.
func (de *delegateEnv) waitLens(head, want, text string) review.LensResult {
	de.t.Helper()
	var got review.LensResult
	de.waitFor(fmt.Sprintf("lens %s %s (%s)", want, head[:7], text), func() bool {
		l, ok := de.pubs.lens("codex-review", head)
		got = l
		return ok && string(l.Outcome) == want && strings.Contains(l.Cause+" "+l.Summary, text)
	})
	return got
}

// settle lets the App see the answers: the scripted ones arrive as webhooks, reactions through
// the scheduled looks, and both publish.
func (de *delegateEnv) gateConclusion(head string) string {
	for _, c := range de.gh.CheckRuns(fixtureRepo, head) {
		if c.Name == publish.DefaultCheckName {
			return c.Conclusion
		}
	}
	return ""
}

func TestDelegatedLensEvidenceKinds(t *testing.T) {
	inline := githubfake.ReviewComment{Path: "README.md", Line: 2, Body: "**![P2 Badge](https://example.invalid/p2.svg) Say what the line is for**\n\nThe sentence adds nothing."}
	cases := []struct {
		name    string
		extra   string
		answer  githubfake.Answer
		outcome string
		text    string
		gate    string
	}{
		{"clean comment", "", githubfake.Answer{Kind: githubfake.AnswerComment, After: 30 * time.Second}, "passed", "found no major issues", "success"},
		{"+1 reaction", "", githubfake.Answer{Kind: githubfake.AnswerReaction, After: 2 * time.Second}, "passed", "reacted", "success"},
		{"findings review fails", "", githubfake.Answer{Kind: githubfake.AnswerReview, After: time.Minute, Comments: []githubfake.ReviewComment{inline}}, "failed", "1 suggestion", "failure"},
		{"findings review passes when told", "\n      outcome_on_findings: pass", githubfake.Answer{Kind: githubfake.AnswerReview, After: time.Minute, Comments: []githubfake.ReviewComment{inline}}, "passed", "1 suggestion", "success"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			de := newDelegateEnv(t, c.extra, []githubfake.Answer{c.answer})
			de.open()
			l := de.waitLens(fixtureHead, c.outcome, c.text)
			if c.answer.Kind == githubfake.AnswerReview {
				if len(l.Findings) != 1 || l.Findings[0].Rule != codexBot.Login || l.Findings[0].Path != "README.md" || l.Findings[0].Title != codexBot.Login+": Say what the line is for" {
					t.Fatalf("findings %+v", l.Findings)
				}
			}
			de.waitFor("gate "+c.gate, func() bool { return de.gateConclusion(fixtureHead) == c.gate })

			if n := len(de.requests(fixtureHead)); n != 1 {
				t.Fatalf("%d request comments, want 1", n)
			}
			body := de.requests(fixtureHead)[0].Body
			if !strings.HasPrefix(body, "@codex review\n\n<!-- lensgate-delegate:v1 preset=codex repository="+fixtureRepo+" pull-request=2 head-sha="+fixtureHead+" base-sha="+fixtureBase) {
				t.Fatalf("request body %q", body)
			}
		})
	}
}

func TestDelegatedLensUncorrelatedEvidenceStaysPending(t *testing.T) {
	other := strings.Repeat("e", 40)
	lookalike := codexBot
	lookalike.UserID = 4242
	cases := []struct {
		name   string
		answer githubfake.Answer
		text   string
	}{
		{"review of another head", githubfake.Answer{Kind: githubfake.AnswerReview, After: time.Minute, Commit: other}, "waiting for chatgpt-codex-connector[bot]"},
		{"comment naming another head", githubfake.Answer{Kind: githubfake.AnswerComment, After: time.Minute, Commit: other}, "waiting for"},
		{"answer before the request", githubfake.Answer{Kind: githubfake.AnswerComment, After: -5 * time.Second}, "waiting for"},
		{"look-alike id", githubfake.Answer{Kind: githubfake.AnswerComment, After: time.Minute, As: &lookalike}, "waiting for"},
		{"+1 in the request's second", githubfake.Answer{Kind: githubfake.AnswerReaction}, "waiting for"},
		{"eyes alone", githubfake.Answer{Kind: githubfake.AnswerEyes, After: time.Second}, "waiting for"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			de := newDelegateEnv(t, "", []githubfake.Answer{c.answer})
			de.open()
			de.waitLens(fixtureHead, "pending", "waiting for")
			// Let the App see the answer: its webhook (if any) and several scheduled looks.
			before := de.gh.CallCount("GET /repos/{owner}/{repo}/issues/{number}/reactions")
			de.waitFor("looks after the answer", func() bool {
				return de.gh.CallCount("GET /repos/{owner}/{repo}/issues/{number}/reactions") >= before+3
			})
			l := de.waitLens(fixtureHead, "pending", c.text)
			if c := de.gateConclusion(fixtureHead); c == "success" || c == "neutral" || c == "skipped" {
				t.Fatalf("gate concluded %q with the lens pending (%s)", c, l.Cause)
			}
		})
	}
}

func TestDelegatedLensUnsolicitedAnswerNeedsApproval(t *testing.T) {
	de := newDelegateEnv(t, "", []githubfake.Answer{{Kind: githubfake.AnswerComment, After: time.Minute}})
	de.gh.SetPermission(fixtureRepo, "Codertocat", "read")
	de.open()
	de.waitLens(fixtureHead, "pending", "a maintainer's approval is needed first")
	// The connector answers although nobody asked: that answers nothing.
	c := de.gh.AddCommentAt(fixtureRepo, fixturePR, codexBot.Login, "Codex Review: Didn't find any major issues.\n\n**Reviewed commit:** `"+fixtureHead+"`", de.clk.now().Add(time.Minute))
	if code, body := de.send("issue_comment", "d-unsolicited", de.gh.IssueCommentPayload(fixtureRepo, fixturePR, c.ID)); code >= 300 {
		t.Fatalf("issue_comment: %d %q", code, body)
	}
	de.waitFor("the unsolicited answer reviewed", func() bool { return de.reviewer.calls() >= 2 })
	de.waitLens(fixtureHead, "pending", "approval is needed")
	if n := len(de.requests(fixtureHead)); n != 0 {
		t.Fatalf("%d requests posted without approval", n)
	}
	// A maintainer's approve-delegate command approves: the bot is asked, and answers.
	de.gh.SetPermission(fixtureRepo, "maintainer", "maintain")
	cmd := de.gh.AddComment(fixtureRepo, fixturePR, "maintainer", "/lensgate approve-delegate")
	payload := strings.ReplaceAll(string(de.gh.IssueCommentPayload(fixtureRepo, fixturePR, cmd.ID)), `"type":"Bot"`, `"type":"User"`)
	if code, body := de.send("issue_comment", "d-approve", []byte(payload)); code >= 300 {
		t.Fatalf("command: %d %q", code, body)
	}
	de.waitLens(fixtureHead, "passed", "found no major issues")
	if n := len(de.requests(fixtureHead)); n != 1 {
		t.Fatalf("%d requests after approval, want 1", n)
	}
}

func TestDelegatedLensTimeout(t *testing.T) {
	de := newDelegateEnv(t, "", []githubfake.Answer{{Kind: githubfake.AnswerEyes, After: time.Second}})
	de.open()
	de.waitLens(fixtureHead, "pending", "waiting for")
	de.clk.advance(16 * time.Minute)
	l := de.waitLens(fixtureHead, "pending", "no answer from chatgpt-codex-connector[bot] within 15m0s")
	if l.Outcome != review.OutcomePending {
		t.Fatalf("timeout made the lens %s", l.Outcome)
	}
	if c := de.gateConclusion(fixtureHead); c != "action_required" {
		t.Fatalf("gate %q after the timeout, want action_required", c)
	}
	// The wait is over: no more looks.
	calls := de.gh.CallCount("GET /repos/{owner}/{repo}/issues/{number}/reactions")
	de.drain()
	if got := de.gh.CallCount("GET /repos/{owner}/{repo}/issues/{number}/reactions"); got > calls+1 {
		t.Fatalf("%d looks after the timeout", got-calls)
	}
}

func TestDelegatedLensPushWhileWaiting(t *testing.T) {
	newHead := strings.Repeat("ab", 20)
	// The first request gets no answer; the second is answered for its head.
	de := newDelegateEnv(t, "", nil, []githubfake.Answer{{Kind: githubfake.AnswerComment, After: time.Minute}})
	de.open()
	de.waitLens(fixtureHead, "pending", "waiting for")
	de.clk.advance(time.Minute)
	de.gh.Push(fixtureRepo, fixturePR, newHead, []byte(readmeDiff), nil)
	// An answer for the old head arrives after the push.
	old := de.gh.AddCommentAt(fixtureRepo, fixturePR, codexBot.Login, "Codex Review: Didn't find any major issues.\n\n**Reviewed commit:** `"+fixtureHead+"`", de.clk.now().Add(time.Second))
	if code, body := de.send("pull_request", "d-sync", withHead(fixture(t, "pull_request.synchronize.payload.json"), newHead)); code != http.StatusAccepted {
		t.Fatalf("synchronize: %d %q", code, body)
	}
	de.send("issue_comment", "d-old", de.gh.IssueCommentPayload(fixtureRepo, fixturePR, old.ID))
	de.waitLens(newHead, "passed", "found no major issues")
	if n, m := len(de.requests(fixtureHead)), len(de.requests(newHead)); n != 1 || m != 1 {
		t.Fatalf("requests: %d for the old head, %d for the new one; want one each", n, m)
	}
	if l, _ := de.pubs.lens("codex-review", fixtureHead); l.Outcome == review.OutcomePassed {
		t.Fatal("the old head's answer passed the old head's lens after the push")
	}
}

func TestDelegatedLensRedeliveryPostsOneRequest(t *testing.T) {
	de := newDelegateEnv(t, "", nil)
	de.open()
	de.waitLens(fixtureHead, "pending", "waiting for")
	// The same delivery again, and other events for the same head.
	de.send("pull_request", "d-open", fixture(t, "pull_request.opened.payload.json"))
	de.send("pull_request", "d-reopen", fixture(t, "pull_request.reopened.payload.json"))
	de.send("check_run", "d-rerun", fixture(t, "check_run.rerequested.payload.json"))
	de.waitFor("three reviews", func() bool { return de.reviewer.calls() >= 2 })
	de.drain()
	if n := len(de.requests(fixtureHead)); n != 1 {
		t.Fatalf("%d request comments for one head, want 1", n)
	}
}

func TestDelegatedLensFromAFork(t *testing.T) {
	de := newDelegateEnv(t, "", []githubfake.Answer{{Kind: githubfake.AnswerComment, After: time.Minute}})
	de.gh.SetHeadRepo(fixtureRepo, fixturePR, "someone/Hello-World")
	de.open()
	de.waitLens(fixtureHead, "pending", "the pull request comes from a fork")
	if n := len(de.requests(fixtureHead)); n != 0 {
		t.Fatalf("%d requests posted for a fork without approval", n)
	}
}

func TestDelegatedLensApprovalOff(t *testing.T) {
	de := newDelegateEnvWith(t, delegateSetup{
		scripts: [][]githubfake.Answer{{{Kind: githubfake.AnswerComment, After: time.Minute}}},
		files:   map[string]string{".asdd.yml": fmt.Sprintf(delegateConfig, "") + "delegate:\n  approval: never\n  timeout: 5m\n"},
	})
	de.gh.SetHeadRepo(fixtureRepo, fixturePR, "someone/Hello-World")
	de.open()
	de.waitLens(fixtureHead, "passed", "found no major issues")
}

// A reviewers preset (Copilot's way) is requested through the requested-reviewers API; the
// request comment records the request, and the review answers it.
func TestDelegatedLensThroughRequestedReviewers(t *testing.T) {
	copilot := githubfake.Bot{Login: "copilot-pull-request-reviewer[bot]", UserID: 175728472}
	inline := githubfake.ReviewComment{Path: "README.md", Line: 2, Body: "Consider a shorter sentence."}
	de := newDelegateEnvWith(t, delegateSetup{
		connector: &githubfake.Connector{Bot: copilot, Via: "reviewers", Heading: "## Pull request overview",
			Scripts: [][]githubfake.Answer{{{Kind: githubfake.AnswerReview, After: time.Minute, Comments: []githubfake.ReviewComment{inline}}}}},
		presets: []delegate.Preset{{Name: "copilot", Bot: delegate.Bot{Login: copilot.Login, UserID: copilot.UserID},
			RequestVia: delegate.RequestReviewers, Reviewer: copilot.Login, Evidence: []string{delegate.EvidenceReview}, ReviewHeading: "## Pull request overview"}},
		files: map[string]string{".asdd.yml": strings.ReplaceAll(fmt.Sprintf(delegateConfig, "\n      outcome_on_findings: pass"), "preset: codex", "preset: copilot")},
	})
	de.open()
	l := de.waitLens(fixtureHead, "passed", "1 suggestion")
	if got := de.gh.ReviewRequests(fixtureRepo, fixturePR); len(got) != 1 || got[0] != copilot.Login {
		t.Fatalf("requested reviewers %v", got)
	}
	if reqs := de.requests(fixtureHead); len(reqs) != 1 || !strings.HasPrefix(reqs[0].Body, "lensgate requested a review from "+copilot.Login) {
		t.Fatalf("request records %+v", reqs)
	}
	if len(l.Findings) != 1 || l.Findings[0].Rule != copilot.Login {
		t.Fatalf("findings %+v", l.Findings)
	}
}

// The delegated lens is in the plan: a YAGA policy file with codex lenses has YAGA's digest, and
// the bot's findings reach the advisory comment and the signed receipt, named after the bot.
func TestDelegatedLensPlanAndReceipt(t *testing.T) {
	policy, err := os.ReadFile("../review/policy/testdata/yaga/examples/agent-review-policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	inline := githubfake.ReviewComment{Path: "README.md", Line: 2, Body: "Say what the line is for."}
	de := newDelegateEnvWith(t, delegateSetup{
		scripts: [][]githubfake.Answer{{{Kind: githubfake.AnswerReview, After: time.Minute, Comments: []githubfake.ReviewComment{inline}}}},
		files:   map[string]string{".yaga.toml": string(policy)},
		signed:  true,
	})
	de.open()
	de.waitFor("the review answer published", func() bool {
		l, ok := de.pubs.lens("security", fixtureHead)
		return ok && l.Outcome == review.OutcomeFailed
	})
	de.drain()
	de.pubs.mu.Lock()
	last := de.pubs.pubs[len(de.pubs.pubs)-1]
	de.pubs.mu.Unlock()
	if last.Decision.PlanDigest != "8fab465b0b8ea9bf25e0c993387673ddde272405e885573f2094e09611c02cf0" {
		t.Fatalf("plan digest %s", last.Decision.PlanDigest)
	}
	for _, name := range []string{"correctness", "security"} {
		if l, _ := de.pubs.lens(name, fixtureHead); l.Runtime != delegate.Name {
			t.Errorf("%s runs on %q", name, l.Runtime)
		}
	}
	want := codexBot.Login + ": Say what the line is for."
	var sticky string
	for _, c := range de.gh.Comments(fixtureRepo, fixturePR) {
		if c.User == de.gh.BotLogin() && !strings.Contains(c.Body, delegate.MarkerName) {
			sticky = c.Body
		}
	}
	if !strings.Contains(strings.ReplaceAll(sticky, `\`, ""), want) {
		t.Errorf("advisory comment does not name the bot's finding:\n%s", sticky)
	}
	if body := de.gh.PullBody(fixtureRepo, fixturePR); !strings.Contains(body, "proofbundle:agent-review:begin") {
		t.Errorf("no disclosure block in the body:\n%s", body)
	}
	// The signed receipt in the advisory comment lists the bot's finding under its name.
	_, rest, _ := strings.Cut(sticky, "```json\n")
	envJSON, _, _ := strings.Cut(rest, "\n```")
	var env struct {
		Payload []byte `json:"payload"`
	}
	if err := json.Unmarshal([]byte(envJSON), &env); err != nil {
		t.Fatalf("receipt envelope: %v", err)
	}
	if !strings.Contains(string(env.Payload), `"title":"`+want+`"`) || !strings.Contains(string(env.Payload), "lensgate/security/delegate") {
		t.Errorf("receipt statement does not carry the delegated finding: %s", env.Payload)
	}
	if f := last.Decision.Findings; len(f) < 2 || f[0].Title != want {
		t.Errorf("receipt findings %+v", f)
	}
}

// The looks for a reaction run as scheduled jobs of the durable queue.
func TestDelegatedLensOnTheDurableQueue(t *testing.T) {
	de := newDelegateEnvWith(t, delegateSetup{durable: true,
		scripts: [][]githubfake.Answer{{{Kind: githubfake.AnswerEyes, After: time.Second}, {Kind: githubfake.AnswerReaction, After: 3 * time.Second}}}})
	de.open()
	de.waitLens(fixtureHead, "passed", "reacted")
	de.waitFor("gate success", func() bool { return de.gateConclusion(fixtureHead) == "success" })
	if n := len(de.requests(fixtureHead)); n != 1 {
		t.Fatalf("%d request comments, want 1", n)
	}
}

// Asking the bot spends its quota: a pull request that intake stops is not sent to it.
func TestDelegatedLensWaitsForIntake(t *testing.T) {
	de := newDelegateEnv(t, "", []githubfake.Answer{{Kind: githubfake.AnswerComment, After: time.Minute}})
	de.gh.SetPullBody(fixtureRepo, fixturePR, "no authorship line")
	de.open()
	de.waitLens(fixtureHead, "pending", "intake did not pass (disclosure)")
	if n := len(de.requests(fixtureHead)); n != 0 {
		t.Fatalf("%d requests posted although intake failed", n)
	}
}
