package publish

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// TestDailyTokenCapSharedThroughTheApp: one replica on a SQLite queue spends an installation's
// daily allowance against a model; the App, a second replica on the same database, then gets a
// pull request of that installation through a signed webhook and makes no model call: its gate
// check is not a pass and names the daily cap, with the day's count the first replica left.
// asddModel turns the walkthrough off: the test counts the lens calls a cap allows.
const asddModel = "runtime: openai\nmodels:\n  reviewer: m\nwalkthrough:\n  enabled: false\n"

func TestDailyTokenCapSharedThroughTheApp(t *testing.T) {
	const limit = 8000
	srv := modelfake.New("model-token", func(req modelfake.Request) modelfake.Reply {
		var lenses []string
		for _, m := range regexp.MustCompile(`(?m)^LENS ([a-z-]+):$`).FindAllStringSubmatch(req.System, -1) {
			lenses = append(lenses, `{"lens":"`+m[1]+`","verdict":"ok","summary":"Nothing found.","findings":[]}`)
		}
		answer := `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"fine","lenses":[` + strings.Join(lenses, ",") + `]}`
		return modelfake.Reply{Content: answer, PromptTokens: 2000, CompletionTokens: 100}
	})
	defer srv.Close()
	calls := func() int64 { return int64(len(srv.Requests())) }
	pipelineOn := func(q *durable.TokenLedger) *review.Pipeline {
		rt, err := openai.New(openai.Options{BaseURL: srv.URL, Token: srv.Token, Backoff: time.Millisecond, MaxTokens: 2000})
		if err != nil {
			t.Fatal(err)
		}
		return review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt, builtin.New(builtin.Options{})),
			Logger: zerolog.Nop(), WorkRoot: t.TempDir(), Tokens: q})
	}
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "queue.db")
	open := func() (queue.Queue, *durable.TokenLedger) {
		q, err := durable.Open(ctx, dsn, durable.Options{FetchPollInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Stop(ctx) })
		l, err := durable.NewTokenLedger(ctx, q, limit, nil)
		if err != nil {
			t.Fatal(err)
		}
		return q, l
	}

	// The first replica reviews pull requests of installation 1 until the cap stops it.
	_, firstLedger := open()
	first := pipelineOn(firstLedger)
	repo, err := config.ParseRepo(".asdd.yml", []byte(asddModel))
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; ; n++ {
		d, err := first.Review(ctx, &review.Subject{Kind: review.KindPullRequest, Owner: "o", Repo: "r", Number: n, Title: "t",
			Author: "a", HeadSHA: strings.Repeat("c", 40), BaseSHA: strings.Repeat("d", 40), InstallationID: 1, Local: true,
			OpenPRsByAuthor: -1, Diff: []byte(e2eDiff1)}, repo)
		if err != nil {
			t.Fatal(err)
		}
		if d.Gate.State != review.OutcomePassed {
			if !strings.Contains(d.Lenses[0].Cause, "max_tokens_per_installation_per_day") {
				t.Fatalf("review %d of the first replica: %+v", n, d.Lenses[0])
			}
			break
		}
		if n > 10 {
			t.Fatal("no cap after 10 reviews")
		}
	}
	spent := calls()
	if spent == 0 || spent*2100 > limit {
		t.Fatalf("the first replica made %d calls", spent)
	}

	// The App on the same database, its ledger on the App's queue as serve makes it.
	q, ledger := open()
	used, err := ledger.Used(ctx, 1)
	if err != nil || used != spent*2100 {
		t.Fatalf("the App's ledger reads %d (%v), the first replica spent %d", used, err, spent*2100)
	}
	st := newStack(t, pipelineOn(ledger), e2eDiff1, func(o *handlers.Options) { o.Queue = q })
	st.gh.SetFile(e2eRepo, "master", ".asdd.yml", asddModel)
	// Intake's disclosure and lane, so that the change would go to the model.
	st.gh.SetPullBody(e2eRepo, e2ePR, st.gh.PullBody(e2eRepo, e2ePR)+"\n- [x] human\n")
	if _, _, err := st.gh.TokenClient().Issues.AddLabelsToIssue(ctx, "Codertocat", "Hello-World", e2ePR, []string{"fix"}); err != nil {
		t.Fatal(err)
	}
	st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	if calls() != spent {
		t.Fatalf("the App called the model over the installation's daily cap (%d calls, %d before)", calls(), spent)
	}
	g := gateOf(st.gh, e2eHead1)
	if g.Conclusion == "success" || !strings.Contains(g.Summary+g.Text, "token budget") ||
		!strings.Contains(g.Summary+g.Text, "runtimes.max_tokens_per_installation_per_day (8000) would be exceeded") {
		t.Fatalf("gate check %q %q:\n%s\n%s", g.Conclusion, g.Title, g.Summary, g.Text)
	}
}
