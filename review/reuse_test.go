package review

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// changesRequested is a model runtime that asks for changes on every lens it is given, with one
// low finding each, and bills tokens for each call (70 % prompt).
func changesRequested(tokens int) *fakeRuntime {
	return &fakeRuntime{name: "model", fn: func(req *runtime.Request) (*runtime.Result, error) {
		res := &runtime.Result{}
		var names []string
		for _, l := range req.Lenses {
			names = append(names, l.Name)
			res.Lenses = append(res.Lenses, runtime.LensReport{Lens: l.Name, Verdict: "request-changes", Summary: "Needs work.",
				Findings: []runtime.Finding{{Severity: "low", Path: "README.md", Line: 2, Title: "Say more", Message: "Why?"}}})
		}
		res.Calls = []runtime.Call{{Lenses: names, Attempts: 1, Usage: runtime.Tokens{PromptTokens: tokens * 7 / 10, CompletionTokens: tokens - tokens*7/10}}}
		return res, nil
	}}
}

// A review that runs only because a delegated lens settled reuses the paid lenses' record of
// the same head; any doubt about the record makes it a normal review, with the reason logged.
func TestSettledReviewReusesPaidLenses(t *testing.T) {
	model := changesRequested(100)
	newCfg := func() *config.Repo {
		cfg := config.DefaultRepo()
		cfg.Policy = policyWith(config.Lens{Name: "deep", Preset: "model", Required: true}, config.Lens{Name: "quick", Preset: "builtin"})
		return cfg
	}
	var logs bytes.Buffer
	p := NewPipeline(Options{Runtimes: runtime.NewRegistry(model, builtin.New(builtin.Options{})), Logger: zerolog.New(&logs)})
	first, err := p.Review(context.Background(), prSubject(), newCfg())
	if err != nil {
		t.Fatal(err)
	}
	deep := lensByName(first, "deep")
	if model.calls != 1 || deep.Outcome != OutcomeFailed || first.State.Reuse == nil || first.State.Reuse.Lenses["deep"].Tokens.Total != 100 {
		t.Fatalf("first review: %d calls, lens %+v, reuse %+v", model.calls, deep, first.State.Reuse)
	}
	cases := []struct {
		name    string
		change  func(s *Subject, st *State, cfg *config.Repo)
		reuse   bool
		logText string
	}{
		{"same head, same plan", func(*Subject, *State, *config.Repo) {}, true, "reused, not billed again"},
		// Another review of the same head (an edited body) keeps the incremental path.
		{"not a settled review", func(s *Subject, _ *State, _ *config.Repo) { s.Settled = false }, false, ""},
		{"no state", func(s *Subject, _ *State, _ *config.Repo) { s.Prior = nil }, false, "no readable state"},
		{"record of another head", func(_ *Subject, st *State, _ *config.Repo) { st.Reuse.Head = strings.Repeat("c", 40) }, false, "not this one"},
		{"plan changed", func(_ *Subject, st *State, _ *config.Repo) { st.PlanDigest = strings.Repeat("0", 64) }, false, "review policy changed"},
		{"base moved", func(s *Subject, _ *State, _ *config.Repo) { s.BaseSHA = strings.Repeat("d", 40) }, false, "base moved"},
		{"configuration changed", func(_ *Subject, _ *State, cfg *config.Repo) { cfg.Models.Reviewer = "other-model" }, false, "configuration changed"},
		{"lens missing from the record", func(_ *Subject, st *State, _ *config.Repo) { delete(st.Reuse.Lenses, "deep") }, false, "no completed result"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs.Reset()
			model.calls = 0
			// The state goes through its text form, as it does through the advisory comment.
			text, err := EncodeState(first.State)
			if err != nil {
				t.Fatal(err)
			}
			st, err := DecodeState(text)
			if err != nil {
				t.Fatal(err)
			}
			subj, cfg := prSubject(), newCfg()
			subj.Prior, subj.Settled = st, true
			c.change(subj, st, cfg)
			d, err := p.Review(context.Background(), subj, cfg)
			if err != nil {
				t.Fatal(err)
			}
			l := lensByName(d, "deep")
			if c.reuse {
				if model.calls != 0 {
					t.Fatalf("%d model calls, want 0", model.calls)
				}
				if l.Outcome != OutcomeFailed || l.Summary != deep.Summary || len(l.Findings) != 1 || l.Findings[0].ID != deep.Findings[0].ID ||
					l.Tokens == nil || !l.Tokens.Earlier || l.Tokens.Total != 100 || d.Tokens.Total != 0 {
					t.Fatalf("reused lens %+v tokens %+v, review tokens %+v", l, l.Tokens, d.Tokens)
				}
				if d.Coverage.Scope != first.Coverage.Scope || d.Coverage.Status != first.Coverage.Status || d.State.Reuse == nil {
					t.Fatalf("coverage %+v, want %+v; reuse record %+v", d.Coverage, first.Coverage, d.State.Reuse)
				}
				if !strings.Contains(TokensLine(d), "spent then: deep 100") {
					t.Fatalf("tokens line %q", TokensLine(d))
				}
			} else if !subj.Settled {
				if model.calls != 0 || l.Tokens != nil {
					t.Fatalf("unsettled review of the same head: %d model calls, tokens %+v", model.calls, l.Tokens)
				}
			} else if model.calls != 1 || l.Tokens == nil || l.Tokens.Earlier || d.Coverage.Scope != ScopeFull || !strings.Contains(d.Coverage.ScopeReason, c.logText) {
				t.Fatalf("%d model calls (want 1), tokens %+v, coverage %+v", model.calls, l.Tokens, d.Coverage)
			}
			if !strings.Contains(logs.String(), c.logText) {
				t.Fatalf("logs lack %q:\n%s", c.logText, logs.String())
			}
		})
	}
}

// A paid lens limited by paths: is reused like any other when a delegated lens settles: it
// keeps its earlier outcome and findings rather than going pending for want of a result.
func TestSettledReviewReusesPaidLensWithPaths(t *testing.T) {
	model := changesRequested(60)
	newCfg := func() *config.Repo {
		cfg := config.DefaultRepo()
		cfg.Policy = policyWith(
			config.Lens{Name: "docs", Preset: "model", Required: true, Paths: []string{"*.md"}},
			config.Lens{Name: "deep", Preset: "model", Required: true},
			config.Lens{Name: "quick", Preset: "builtin"})
		// Both model lenses report the same finding: verification would withdraw one.
		cfg.Review.Quality.Verify = config.VerifyOff
		return cfg
	}
	p := NewPipeline(Options{Runtimes: runtime.NewRegistry(model, builtin.New(builtin.Options{})), Logger: zerolog.Nop()})
	first, err := p.Review(context.Background(), prSubject(), newCfg())
	if err != nil {
		t.Fatal(err)
	}
	docs := lensByName(first, "docs")
	if docs.Outcome != OutcomeFailed || first.State.Reuse == nil || first.State.Reuse.Lenses["docs"].Outcome != OutcomeFailed {
		t.Fatalf("first review: lens %+v, reuse %+v", docs, first.State.Reuse)
	}
	text, err := EncodeState(first.State)
	if err != nil {
		t.Fatal(err)
	}
	st, err := DecodeState(text)
	if err != nil {
		t.Fatal(err)
	}
	subj := prSubject()
	subj.Prior, subj.Settled = st, true
	model.calls = 0
	d, err := p.Review(context.Background(), subj, newCfg())
	if err != nil {
		t.Fatal(err)
	}
	if model.calls != 0 {
		t.Fatalf("%d model calls, want 0: both paid lenses are reused", model.calls)
	}
	for _, name := range []string{"docs", "deep"} {
		was, l := lensByName(first, name), lensByName(d, name)
		if l.Outcome != was.Outcome || l.Summary != was.Summary || len(l.Findings) != 1 || l.Findings[0].ID != was.Findings[0].ID ||
			l.Tokens == nil || !l.Tokens.Earlier {
			t.Fatalf("reused lens %s: %+v (cause %q), want the outcome %s of the earlier review", name, l, l.Cause, was.Outcome)
		}
	}
	if d.Gate.State != first.Gate.State {
		t.Fatalf("gate %s, want %s", d.Gate.State, first.Gate.State)
	}
}
