package publish

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// progressConfig runs two lenses on the model and one on the builtin runtime.
const progressConfig = "runtime: openai\nmodels:\n  reviewer: m\nagent_review:\n  version: 1\n  required: [correctness, secrets]\n  agents:\n" +
	"    correctness:\n      preset: openai\n      instruction: Find bugs.\n" +
	"    docs:\n      preset: openai\n      instruction: Find unclear documentation.\n" +
	"    secrets:\n      preset: builtin\n      instruction: Look for committed secrets.\n"

// TestGateInProgressBeforeTheModelAnswers: through the webhook, the queue, the worker and the
// publisher against the fake GitHub, with a model that answers only when the test lets it. While
// the model holds its answer the head's gate check is in progress, names the three lenses, and
// says that the builtin lens has finished; then the same check run concludes.
func TestGateInProgressBeforeTheModelAnswers(t *testing.T) {
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := modelfake.New("model-token", func(req modelfake.Request) modelfake.Reply {
		select {
		case asked <- struct{}{}:
		default:
		}
		var lenses []string
		for _, m := range regexp.MustCompile(`(?m)^LENS ([a-z-]+):$`).FindAllStringSubmatch(req.System, -1) {
			lenses = append(lenses, `{"lens":"`+m[1]+`","verdict":"ok","summary":"Nothing found.","findings":[]}`)
		}
		answer := `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"fine","lenses":[` + strings.Join(lenses, ",") + `]}`
		return modelfake.Reply{Content: answer, NoUsage: true, Hold: release}
	})
	defer srv.Close()
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	rt, err := openai.New(openai.Options{BaseURL: srv.URL, Token: srv.Token, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt, builtin.New(builtin.Options{})),
		Logger: zerolog.Nop(), WorkRoot: t.TempDir()})
	st := newStackWith(t, p, e2eDiff1, func(o *Options) { o.ProgressInterval = time.Millisecond })
	st.gh.SetFile(e2eRepo, "master", ".asdd.yml", progressConfig)
	st.gh.SetPullBody(e2eRepo, e2ePR, st.gh.PullBody(e2eRepo, e2ePR)+"\n- [x] human\n")
	if _, _, err := st.gh.TokenClient().Issues.AddLabelsToIssue(context.Background(), "Codertocat", "Hello-World", e2ePR, []string{"fix"}); err != nil {
		t.Fatal(err)
	}
	st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatalf("the model was never asked; logs:\n%s", st.logs.String())
	}
	waitUntil(t, "the gate check to say the builtin lens finished", func() bool {
		g := gatesOf(st.gh, e2eHead1)
		return len(g) == 1 && strings.Contains(g[0].Summary, "Finished: 1 of 3 (`secrets`)")
	})
	running := gatesOf(st.gh, e2eHead1)[0]
	if running.Status != "in_progress" || running.Conclusion != "" || running.Title != "lensgate: reviewing 3 lenses, 1 finished" ||
		!strings.Contains(running.Summary, "with 3 lenses: `correctness`, `docs`, `secrets`") {
		t.Fatalf("while the model holds its answer the gate check is %+v", running)
	}
	close(release)
	released = true
	st.wait("opened")
	g := gatesOf(st.gh, e2eHead1)
	if len(g) != 1 || g[0].ID != running.ID || g[0].Status != "completed" || g[0].Conclusion != conclusionSuccess {
		t.Fatalf("after the review the gate checks are %+v, want check %d concluded success", g, running.ID)
	}
}
