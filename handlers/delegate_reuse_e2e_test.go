package handlers_test

import (
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/handlers/publish"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// reuseConfig has one lens on a paid model runtime and one answered by the Codex connector.
const reuseConfig = `models:
  reviewer: m
walkthrough:
  enabled: false
agent_review:
  version: 1
  required: [model-review, codex-review]
  agents:
    model-review:
      preset: openai
      instruction: Review correctness.
    codex-review:
      preset: codex
      instruction: Review behaviour, tests and compatibility.
      publication: inline
`

// countingModel is an OpenAI-compatible server that counts the calls it answers; every lens it
// is asked about gets one finding on README.md when the change sent has it, so that reuse of
// findings is visible.
func countingModel(t *testing.T) (*modelfake.Server, func() int64) {
	srv := modelfake.New("model-token", func(req modelfake.Request) modelfake.Reply {
		finding := ""
		if strings.Contains(string(req.Body), "b/README.md") {
			finding = `{"severity":"note","path":"README.md:1","title":"Name the project","message":"Say what it is."}`
		}
		var lenses []string
		for _, m := range regexp.MustCompile(`(?m)^LENS ([a-z-]+):$`).FindAllStringSubmatch(req.System, -1) {
			lenses = append(lenses, `{"lens":"`+m[1]+`","verdict":"concerns","summary":"One nit.","findings":[`+finding+`]}`)
		}
		answer := `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"fine","lenses":[` + strings.Join(lenses, ",") + `]}`
		return modelfake.Reply{Content: answer, PromptTokens: 900, CompletionTokens: 100}
	})
	t.Cleanup(srv.Close)
	return srv, func() int64 { return int64(len(srv.Requests())) }
}

// When the bot answers, only the delegated lens is decided anew: the model lens of the same head
// is not sent to the model again, its outcome, findings and tokens come from the recorded state,
// and the receipt of the head names both lenses and verifies. A push reviews again as usual.
func TestDelegatedAnswerDoesNotRebillModelLenses(t *testing.T) {
	srv, calls := countingModel(t)
	rt, err := openai.New(openai.Options{BaseURL: srv.URL, Token: srv.Token, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	de := newDelegateEnvWith(t, delegateSetup{
		scripts:  [][]githubfake.Answer{{{Kind: githubfake.AnswerComment, After: 30 * time.Second}}, {{Kind: githubfake.AnswerComment, After: 30 * time.Second}}},
		files:    map[string]string{".asdd.yml": reuseConfig},
		runtimes: []runtime.Runtime{rt},
		signed:   true,
	})
	de.open()
	defer func() {
		if t.Failed() {
			de.pubs.mu.Lock()
			for _, p := range de.pubs.pubs {
				if p.Decision != nil {
					for _, l := range p.Decision.Lenses {
						t.Logf("%s %s %s %s", l.Name, l.Outcome, l.Cause, l.Summary)
					}
				}
			}
			de.pubs.mu.Unlock()
		}
	}()
	de.waitFor("the model lens published", func() bool {
		l, ok := de.pubs.lens("model-review", fixtureHead)
		return ok && l.Outcome == review.OutcomePassed
	})
	first, _ := de.pubs.lens("model-review", fixtureHead)
	afterFirst := calls()
	if afterFirst == 0 || first.Tokens == nil || first.Tokens.Total == 0 || len(first.Findings) != 1 {
		t.Fatalf("first review: %d model calls, lens %+v", afterFirst, first)
	}

	de.waitLens(fixtureHead, "passed", "found no major issues")
	de.waitFor("gate success", func() bool { return de.gateConclusion(fixtureHead) == "success" })
	if n := calls(); n != afterFirst {
		t.Fatalf("the bot's answer made %d more model calls, want 0", n-afterFirst)
	}
	t.Logf("model calls: %d for the first review, %d more after the bot's answer", afterFirst, calls()-afterFirst)

	de.pubs.mu.Lock()
	last := de.pubs.pubs[len(de.pubs.pubs)-1]
	de.pubs.mu.Unlock()
	d := last.Decision
	var model, codex review.LensResult
	for _, l := range d.Lenses {
		switch l.Name {
		case "model-review":
			model = l
		case "codex-review":
			codex = l
		}
	}
	if model.Outcome != first.Outcome || len(model.Findings) != 1 || model.Findings[0].ID != first.Findings[0].ID || false {
		t.Fatalf("model lens after the answer %+v, want the first review's %+v", model, first)
	}
	if model.Tokens == nil || model.Tokens.Total != first.Tokens.Total || !model.Tokens.Earlier {
		t.Fatalf("model lens tokens %+v, want %d spent earlier", model.Tokens, first.Tokens.Total)
	}
	if d.Tokens.Total != 0 || len(d.Tokens.Calls) != 0 {
		t.Fatalf("the follow-up review reports %+v tokens spent now", d.Tokens)
	}
	if codex.Outcome != review.OutcomePassed || d.Gate.State != review.OutcomePassed {
		t.Fatalf("codex %s, gate %s", codex.Outcome, d.Gate.State)
	}

	// The receipt of the head names both lenses and verifies.
	var sticky string
	for _, c := range de.gh.Comments(fixtureRepo, fixturePR) {
		if c.User == de.gh.BotLogin() && strings.Contains(c.Body, "```json\n") {
			sticky = c.Body
		}
	}
	if !strings.Contains(sticky, "Model tokens: none in this run; reused from the earlier review of this head, spent then: model-review 1,000.") {
		t.Errorf("advisory comment does not say the tokens were spent earlier:\n%s", sticky)
	}
	_, rest, _ := strings.Cut(sticky, "```json\n")
	envelope, _, _ := strings.Cut(rest, "\n```")
	pub := de.key.Public().(ed25519.PublicKey)
	body := de.gh.PullBody(fixtureRepo, fixturePR)
	subject := disclosure.Verify([]byte(envelope), disclosure.Options{PublicKey: pub}).SubjectDigest
	rep := disclosure.Verify([]byte(envelope), disclosure.Options{PublicKey: pub, ExpectedSubjectDigest: subject, Body: &body, Policy: disclosure.DefaultPolicy()})
	if !rep.OK {
		t.Fatalf("receipt does not verify: %v %v", rep.ReasonCodes, rep.Errors)
	}
	var envl struct {
		Payload []byte `json:"payload"`
	}
	if err := json.Unmarshal([]byte(envelope), &envl); err != nil {
		t.Fatal(err)
	}
	// It is the head's second receipt: it supersedes the first review's.
	var statement struct {
		Predicate struct {
			Supersession struct {
				Supersedes []map[string]any `json:"supersedes"`
			} `json:"supersession"`
		} `json:"predicate"`
	}
	if err := json.Unmarshal(envl.Payload, &statement); err != nil {
		t.Fatal(err)
	}
	if len(statement.Predicate.Supersession.Supersedes) != 1 {
		t.Errorf("receipt supersedes %v, want the first review's receipt", statement.Predicate.Supersession.Supersedes)
	}
	for _, name := range []string{"lensgate/model-review/openai", "lensgate/codex-review/delegate"} {
		if !strings.Contains(string(envl.Payload), name) {
			t.Errorf("receipt does not name %s", name)
		}
	}

	// A push reviews the new head as usual: the model is called again. The new head sorts
	// after the old one, which the codex lens last completed on.
	newHead := strings.Repeat("f1", 20)
	de.clk.advance(time.Minute)
	more := readmeDiff + "diff --git a/NOTES.md b/NOTES.md\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n+++ b/NOTES.md\n@@ -0,0 +1 @@\n+A new note.\n"
	de.gh.Push(fixtureRepo, fixturePR, newHead, []byte(more), nil)
	if code, body := de.send("pull_request", "d-sync", withHead(fixture(t, "pull_request.synchronize.payload.json"), newHead)); code != http.StatusAccepted {
		t.Fatalf("synchronize: %d %q", code, body)
	}
	de.waitFor("the new head's model lens", func() bool {
		l, ok := de.pubs.lens("model-review", newHead)
		return ok && l.Outcome == review.OutcomePassed
	})
	afterPush := calls()
	if afterPush <= afterFirst {
		t.Fatal("the push did not call the model")
	}
	// The bot's answer for the new head settles it without a model call either.
	de.waitFor("the new head's codex lens passed", func() bool {
		l, ok := de.pubs.lens("codex-review", newHead)
		return ok && l.Outcome == review.OutcomePassed
	})
	de.waitFor("gate success on the new head", func() bool { return de.gateConclusion(newHead) == "success" })
	de.drain()
	if n := calls(); n != afterPush {
		t.Fatalf("the answer for the new head made %d more model calls, want 0", n-afterPush)
	}
	t.Logf("model calls: %d after the push, %d more after the bot's answer for it", afterPush-afterFirst, calls()-afterPush)
}

// An eyes reaction seen by a scheduled look puts one line on the gate check: the bot is reviewing.
// The lens stays pending, no comment is written, and the note is written once.
func TestDelegatedLensInProgressNote(t *testing.T) {
	de := newDelegateEnv(t, "", []githubfake.Answer{{Kind: githubfake.AnswerEyes, After: time.Second}})
	de.open()
	de.waitLens(fixtureHead, "pending", "waiting for")
	note := publish.InProgressNote(codexBot.Login, []string{"codex-review"})
	gate := func() githubfake.CheckRun {
		for _, c := range de.gh.CheckRuns(fixtureRepo, fixtureHead) {
			if c.Name == publish.DefaultCheckName {
				return c
			}
		}
		return githubfake.CheckRun{}
	}
	de.waitFor("the in-progress note", func() bool { return strings.HasPrefix(gate().Text, note) })
	comments := len(de.gh.Comments(fixtureRepo, fixturePR))
	updates := gate().Updates
	// More looks see the same reaction: nothing more is written.
	before := de.gh.CallCount("GET /repos/{owner}/{repo}/issues/{number}/reactions")
	de.waitFor("more looks", func() bool {
		return de.gh.CallCount("GET /repos/{owner}/{repo}/issues/{number}/reactions") >= before+3
	})
	de.drain()
	g := gate()
	if g.Updates != updates || strings.Count(g.Text, note) != 1 {
		t.Fatalf("gate check updated %d more times, note %d times", g.Updates-updates, strings.Count(g.Text, note))
	}
	if n := len(de.gh.Comments(fixtureRepo, fixturePR)); n != comments {
		t.Fatalf("%d comments written after the note", n-comments)
	}
	if l, _ := de.pubs.lens("codex-review", fixtureHead); l.Outcome != review.OutcomePending {
		t.Fatalf("the lens is %s, want pending", l.Outcome)
	}
	if c := g.Conclusion; c == "success" {
		t.Fatalf("gate concluded %q", c)
	}
}
