package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// diffOf is a change of n new files of about 1.6 KB each, and changeDiff's loader.go with its
// removed nil check last.
func diffOf(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "diff --git a/pkg/f%d.go b/pkg/f%d.go\nnew file mode 100644\n--- /dev/null\n+++ b/pkg/f%d.go\n@@ -0,0 +1,40 @@\n", i, i, i)
		for j := range 40 {
			fmt.Fprintf(&b, "+\tv%d := table[%d].Lookup(key, %d) // column %d\n", j, i, j, j)
		}
	}
	b.WriteString(changeDiff)
	return []byte(b.String())
}

// reviewWith reviews the change through the fake server, with the runtime's options changed
// by mod.
func reviewWith(t *testing.T, q *modelfake.Server, diff []byte, mod func(*openai.Options)) (*review.Decision, *review.Subject) {
	t.Helper()
	s := subject()
	if diff != nil {
		s.Diff = diff
	}
	d, err := pipeline(t, q, mod).Review(context.Background(), s, repoConfig("correctness"))
	if err != nil {
		t.Fatal(err)
	}
	return d, s
}

func learn(o *openai.Options) { o.LearnContext = true }

// TestNeverPassesOnATruncatedPrompt: a server that cut the prompt answers every lens ok (it
// never saw the instructions); lensgate leaves the lens pending with a cause that says what to
// raise, and the receipt's coverage is not complete.
func TestNeverPassesOnATruncatedPrompt(t *testing.T) {
	cases := []struct {
		name        string
		context     int
		files       int
		learn       bool
		psNoContext bool
	}{
		// About 6,000 tokens cut to 2,048: far fewer than lensgate's estimate (no question
		// asked about the context).
		{"a count far below the estimate", 2048, 12, false, false},
		// About 4,400 tokens cut to 4,096: close to the estimate, but the default context of
		// an Ollama that does not report it.
		{"a count equal to Ollama's default context", 4096, 6, true, true},
		// About 3,300 tokens cut to 3,000, a context only /api/ps tells once the model is loaded.
		{"a count equal to the context learned after the call", 3000, 4, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []modelfake.Option
			if c.psNoContext {
				opts = append(opts, modelfake.WithoutPSContext())
			}
			q := quirky(t, modelfake.Ollama, c.context, opts...)
			mod := func(*openai.Options) {}
			if c.learn {
				mod = learn
			}
			d, s := reviewWith(t, q, diffOf(c.files), mod)
			l := lens(d, "correctness")
			if l.Outcome != review.OutcomePending || !strings.Contains(l.Cause, "read less than the whole prompt") ||
				!strings.Contains(l.Cause, "OLLAMA_CONTEXT_LENGTH") || !strings.Contains(l.Cause, fmt.Sprintf("counted %d prompt tokens", c.context)) {
				t.Fatalf("correctness %+v", l)
			}
			if len(q.Requests()) != 1 {
				t.Fatalf("%d requests, want 1", len(q.Requests()))
			}
			if d.Gate.State == review.OutcomePassed {
				t.Fatal("the gate passed")
			}
			if cov := review.Predicate(d, s, time.Now()).Coverage; cov.Status != review.CoveragePartial {
				t.Fatalf("receipt coverage %+v", cov)
			}
			if call := d.Tokens.Calls[0]; call.Usage.PromptTokens != c.context || !strings.Contains(call.Cause, "read less") {
				t.Fatalf("call record %+v", call)
			}
		})
	}
}

// TestSplitsToFitTheLearnedContext: where the server says the model's context, a change whose
// prompt would not fit is sent in parts that do; no part is cut and the defect in the last
// part fails the lens. Where it does not say, vLLM and llama.cpp refuse the prompt and the
// cause says which setting to raise.
func TestSplitsToFitTheLearnedContext(t *testing.T) {
	cases := []struct {
		name        string
		kind        modelfake.Kind
		numCtxParam bool
		probes      string
	}{
		{"Ollama with num_ctx in the Modelfile", modelfake.Ollama, true, "GET /v1/models,POST /api/show,GET /api/ps"},
		{"vLLM", modelfake.VLLM, false, "GET /v1/models"},
		{"llama.cpp", modelfake.LlamaCpp, false, "GET /v1/models,POST /api/show,GET /props"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []modelfake.Option
			if c.numCtxParam {
				opts = append(opts, modelfake.WithNumCtxParameter())
			}
			q := quirky(t, c.kind, 4096, opts...)
			d, _ := reviewWith(t, q, diffOf(12), learn)
			l := lens(d, "correctness")
			reqs := q.Requests()
			if l.Outcome != review.OutcomeFailed || len(l.Findings) != 1 || l.Findings[0].Path != "loader.go" {
				t.Fatalf("correctness %+v after %d requests", l, len(reqs))
			}
			if len(reqs) < 3 || len(d.Tokens.Calls) != len(reqs) {
				t.Fatalf("%d requests, %d calls recorded; want the change in several parts", len(reqs), len(d.Tokens.Calls))
			}
			for i, call := range d.Tokens.Calls {
				if call.Cause != "" || call.Usage.PromptTokens >= 4096 {
					t.Fatalf("part %d: %+v", i+1, call)
				}
			}
			if !strings.Contains(reqs[0].User, fmt.Sprintf("This is part 1 of %d", len(reqs))) {
				t.Fatal("a part does not say it is one")
			}
			if got := strings.Join(q.Probes(), ","); !strings.HasPrefix(got, c.probes) {
				t.Fatalf("probes %s, want %s", got, c.probes)
			}
		})
	}
	for kind, setting := range map[modelfake.Kind]string{modelfake.VLLM: "vLLM --max-model-len", modelfake.LlamaCpp: "llama.cpp -c"} {
		t.Run(kind.String()+" refuses a prompt too long for an unknown context", func(t *testing.T) {
			q := quirky(t, kind, 2048)
			d, _ := reviewWith(t, q, diffOf(12), nil)
			l := lens(d, "correctness")
			if l.Outcome != review.OutcomePending || !strings.Contains(l.Cause, "HTTP 400") || !strings.Contains(l.Cause, setting) {
				t.Fatalf("correctness %+v", l)
			}
			if len(q.Requests()) != 1 || len(q.Probes()) != 0 {
				t.Fatalf("%d requests, probes %v", len(q.Requests()), q.Probes())
			}
		})
	}
	t.Run("a file larger than the context", func(t *testing.T) {
		q := quirky(t, modelfake.VLLM, 1500)
		d, _ := reviewWith(t, q, diffOf(1), learn)
		if l := lens(d, "correctness"); l.Outcome != review.OutcomePending || !strings.Contains(l.Cause, "does not fit the model's context") ||
			!strings.Contains(l.Cause, "--max-model-len") || len(q.Requests()) != 0 {
			t.Fatalf("correctness %+v after %d requests", l, len(q.Requests()))
		}
	})
}

// TestSameVerdictAtTheDefaultTemperature: the fake samples at 1.0 when a request names no
// temperature (two identical requests get different verdicts); lensgate sends temperature 0
// and a seed, so the same review twice gets the same verdict, and the call record says so.
func TestSameVerdictAtTheDefaultTemperature(t *testing.T) {
	q := quirky(t, modelfake.Ollama, 1<<17)
	p := pipeline(t, q, nil)
	var outcomes []review.Outcome
	for range 3 {
		d, err := p.Review(context.Background(), subject(), repoConfig("correctness"))
		if err != nil {
			t.Fatal(err)
		}
		outcomes = append(outcomes, lens(d, "correctness").Outcome)
		c := d.Tokens.Calls[0]
		if c.Temperature == nil || *c.Temperature != 0 || c.Seed == nil || *c.Seed != 1 {
			t.Fatalf("call record temperature %v seed %v", c.Temperature, c.Seed)
		}
	}
	if outcomes[0] != review.OutcomeFailed || outcomes[1] != outcomes[0] || outcomes[2] != outcomes[0] {
		t.Fatalf("outcomes %v, want failed every time", outcomes)
	}
	for i, r := range q.Requests() {
		if r.Temperature == nil || *r.Temperature != 0 || r.Seed == nil || *r.Seed != 1 {
			t.Fatalf("request %d: temperature %v seed %v", i, r.Temperature, r.Seed)
		}
	}
	// The same request without a temperature, as lensgate used to send it, is sampled.
	body := `{"model":"reviewer-model-7","messages":[{"role":"system","content":"LENS correctness:\n"},` +
		`{"role":"user","content":"diff --git a/loader.go b/loader.go\n-\tif p == \"\" { return nil }\n"}]}`
	verdicts := map[string]bool{}
	for range 3 {
		req, err := http.NewRequest(http.MethodPost, q.URL+"/chat/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+q.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, v := range []string{`\"verdict\":\"ok\"`, `\"verdict\":\"concerns\"`, `\"verdict\":\"request-changes\"`} {
			if bytes.Contains(b, []byte(v)) {
				verdicts[v] = true
			}
		}
	}
	if len(verdicts) < 2 {
		t.Fatalf("the fake did not sample without a temperature: %v", verdicts)
	}
}

// TestUnsupportedSamplingParameterIsDropped: a server that answers 400 naming seed is asked
// again without it; the call record says no seed was sent, and later calls start without it.
func TestUnsupportedSamplingParameterIsDropped(t *testing.T) {
	q := quirky(t, modelfake.VLLM, 1<<17, modelfake.WithUnsupported("seed"))
	p := pipeline(t, q, nil)
	for i, want := range []int{2, 3} {
		d, err := p.Review(context.Background(), subject(), repoConfig("correctness"))
		if err != nil {
			t.Fatal(err)
		}
		if l := lens(d, "correctness"); l.Outcome != review.OutcomeFailed {
			t.Fatalf("review %d: %+v", i, l)
		}
		if got := len(q.Requests()); got != want {
			t.Fatalf("review %d: %d requests in all, want %d", i, got, want)
		}
		c := d.Tokens.Calls[0]
		if c.Seed != nil || c.Temperature == nil || *c.Temperature != 0 {
			t.Fatalf("review %d: call record seed %v temperature %v", i, c.Seed, c.Temperature)
		}
	}
	if r := q.Requests()[2]; r.Seed != nil || r.Temperature == nil {
		t.Fatalf("later request: seed %v temperature %v", r.Seed, r.Temperature)
	}
}

// TestCausesOfServerAnswers: the answers real servers give that used to read as something
// else each name their cause.
func TestCausesOfServerAnswers(t *testing.T) {
	cases := []struct {
		name     string
		answer   func(modelfake.Request) modelfake.Reply
		quirk    []modelfake.Option
		requests int
		outcome  review.Outcome
		cause    []string
	}{
		{"Ollama's repeat guard", repeatGuard, nil, 1, review.OutcomePending,
			[]string{"ended the answer early without a finish reason or token counts", "repeat guard"}},
		{"a model the server does not have", quirkyAnswer, []modelfake.Option{modelfake.WithModels("llama3.1:8b")}, 1, review.OutcomePending,
			[]string{`no model "reviewer-model-7"`, "HTTP 404", "ollama pull reviewer-model-7", "models.reviewer"}},
		// A 500 naming the schema is not retried: the next response format is asked instead.
		{"a schema the server's grammar cannot take", quirkyAnswer, []modelfake.Option{modelfake.WithSchemaRefused(`"pattern"`)}, 2, review.OutcomeFailed, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := quirkyWith(t, modelfake.Ollama, 1<<17, c.answer, c.quirk...)
			d, _ := reviewWith(t, q, nil, nil)
			l := lens(d, "correctness")
			if l.Outcome != c.outcome {
				t.Fatalf("correctness %+v, want %s", l, c.outcome)
			}
			for _, want := range c.cause {
				if !strings.Contains(l.Cause, want) {
					t.Fatalf("cause %q, want it to name %q", l.Cause, want)
				}
			}
			if got := len(q.Requests()); got != c.requests {
				t.Fatalf("%d requests, want %d", got, c.requests)
			}
		})
	}
}

// TestRejectedAnswerCauseNamesNoFile: this runtime writes no review.json, so no cause of a
// rejected answer may name it.
func TestRejectedAnswerCauseNamesNoFile(t *testing.T) {
	for _, answer := range []string{
		`{"schema":"asdd/review/v9","lenses":[],"summary":"","recommendation":"comment"}`,
		`{"schema":"asdd/review/v0.1","lenses":{},"summary":"","recommendation":"comment"}`,
		`{"schema":"asdd/review/v0.1","lenses":[{"lens":"correctness","findings":[],"summary":"","verdict":"approve"}],"summary":"","recommendation":"comment"}`,
		`{"schema":"asdd/review/v0.1","lenses":[{"lens":"correctness","findings":[{"severity":"fatal"}],"summary":"","verdict":"ok"}],"summary":"","recommendation":"comment"}`,
	} {
		model := newModel(t, func(modelfake.Request) modelfake.Reply { return reply(answer) })
		d, err := pipeline(t, model, nil).Review(context.Background(), subject(), repoConfig("correctness"))
		model.Close()
		if err != nil {
			t.Fatal(err)
		}
		if l := lens(d, "correctness"); l.Outcome != review.OutcomePending || l.Cause == "" || strings.Contains(l.Cause, "review.json") {
			t.Fatalf("correctness %+v", l)
		}
	}
}

// TestRetryAfterOnTheWire: a 429 and then a 503, each with Retry-After, are waited out and the
// third request is answered.
func TestRetryAfterOnTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("waits two seconds")
	}
	busy := []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}
	q := quirkyWith(t, modelfake.VLLM, 1<<17, func(r modelfake.Request) modelfake.Reply {
		if r.N <= len(busy) {
			return modelfake.Reply{Status: busy[r.N-1], Content: "busy", Header: http.Header{"Retry-After": {"1"}}}
		}
		return quirkyAnswer(r)
	})
	d, _ := reviewWith(t, q, nil, nil)
	if l := lens(d, "correctness"); l.Outcome != review.OutcomeFailed || len(q.Requests()) != 3 || d.Tokens.Calls[0].Attempts != 3 {
		t.Fatalf("correctness %+v after %d requests", l, len(q.Requests()))
	}
}

// TestTheReviewDeadlineIsNamed: when the review's own deadline ends a call before the call's
// deadline would, the cause says so rather than naming a timeout that never ran out; and the
// runtime tells the pipeline how long its reviews may take, so a long per-call deadline is
// not cut by the review's default one.
func TestTheReviewDeadlineIsNamed(t *testing.T) {
	never := make(chan struct{}) // the server never answers
	srv := newModel(t, func(modelfake.Request) modelfake.Reply { return modelfake.Reply{Hold: never} })
	rt, err := openai.New(openai.Options{BaseURL: srv.URL, Token: srv.Token, Timeout: time.Hour, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	req := &runtime.Request{Kind: runtime.KindReview, Lenses: []runtime.Lens{{Name: "correctness", Instruction: "x"}},
		Diff: []byte(changeDiff), Settings: runtime.Settings{TimeoutSeconds: 45}}
	if got := rt.MaxReview(req); got < 2*time.Hour {
		t.Fatalf("MaxReview %v, want at least two calls of an hour", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res, err := rt.Review(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Lenses[0].Cause; !strings.Contains(c, "the review's own deadline ended the call") || strings.Contains(c, "1h0m0s") {
		t.Fatalf("cause %q", c)
	}
}

// TestPartSizes pins what docs/runtimes.md says a context holds: at 4,096 tokens a one-lens
// review of 40-byte diff lines goes in parts of about 130 lines, and 32,768 tokens hold about
// 1,800 lines in one call.
func TestPartSizes(t *testing.T) {
	for _, c := range []struct{ context, files, calls int }{{4096, 4, 2}, {4096, 16, 6}, {32768, 40, 1}, {32768, 44, 2}} {
		q := quirky(t, modelfake.VLLM, c.context)
		d, _ := reviewWith(t, q, diffOf(c.files), learn)
		if got := len(q.Requests()); got != c.calls || lens(d, "correctness").Outcome != review.OutcomeFailed {
			t.Errorf("%d diff lines at %d tokens: %d calls (want %d), %s", c.files*45+8, c.context, got, c.calls, lens(d, "correctness").Outcome)
		}
	}
}
