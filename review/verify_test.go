package review

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/runtime"
)

// verifyingModel is a fake model runtime: its review answer is fixed per lens, and, as a
// runtime.Verifier, it refutes the candidates whose title contains "refute".
type verifyingModel struct {
	fakeRuntime
	asked [][]runtime.Candidate
	fail  error
}

func (m *verifyingModel) Verify(_ context.Context, req *runtime.Request, cands []runtime.Candidate) ([]runtime.Confirmation, runtime.Call, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, cands)
	call := runtime.Call{Model: "m", Attempts: 1, Usage: runtime.Tokens{PromptTokens: 100, CompletionTokens: 10}}
	if m.fail != nil {
		return nil, call, m.fail
	}
	if req.Budget == nil || !strings.Contains(string(req.Diff), "+more docs") {
		return nil, call, errors.New("the verifying call lacks the review's budget or the candidates' diff")
	}
	var out []runtime.Confirmation
	for _, c := range cands {
		out = append(out, runtime.Confirmation{ID: c.ID, Confirmed: !strings.Contains(c.Title, "refute"), Reason: "checked against the diff"})
	}
	return out, call, nil
}

func modelAnswer(findings map[string][]runtime.Finding) func(req *runtime.Request) (*runtime.Result, error) {
	return func(req *runtime.Request) (*runtime.Result, error) {
		res := &runtime.Result{Model: "m"}
		for _, l := range req.Lenses {
			res.Lenses = append(res.Lenses, runtime.LensReport{Lens: l.Name, Verdict: runtime.VerdictConcerns, Summary: "looked", Findings: findings[l.Name]})
		}
		return res, nil
	}
}

func verifyConfig(mode string) *config.Repo {
	cfg := config.DefaultRepo()
	cfg.Policy = policyWith(config.Lens{Name: "bugs", Preset: "model", Required: true}, config.Lens{Name: "style", Preset: "model"})
	cfg.Review.Quality.Verify = mode
	return cfg
}

// The fake model hallucinates a line, a file and a quote, and two lenses report the same
// thing: deterministic verification withdraws exactly those, with the check and reason, and the
// rest are published.
func TestDeterministicVerificationWithdrawsWhatTheDiffDoesNotShow(t *testing.T) {
	m := &verifyingModel{fakeRuntime: fakeRuntime{name: "model", fn: modelAnswer(map[string][]runtime.Finding{
		"bugs": {
			{Severity: "high", Path: "README.md", Line: 40, Title: "off-by-one in the loop", Message: "hallucinated line"},
			{Severity: "medium", Path: "main.go", Line: 1, Title: "unused import", Message: "file not in the change"},
			{Severity: "medium", Path: "README.md", Line: 2, Title: "leaks a secret", Message: "it calls `fmt.Println(secret)` here"},
			{Severity: "medium", Path: "README.md", Line: 2, Title: "vague wording", Message: "the line `more docs` says nothing"},
		},
		"style": {
			{Severity: "low", Path: "README.md", Line: 2, Title: "vague wording", Message: "the line `more docs` says nothing at all"},
		},
	})}}
	d, err := newTestPipeline(m).Review(context.Background(), prSubject(), verifyConfig(config.VerifyDeterministic))
	if err != nil {
		t.Fatal(err)
	}
	v := d.Verification
	got := map[Check]int{}
	for _, w := range v.Withdrawn {
		got[w.Check]++
		if w.Reason == "" || w.Finding.ID == "" {
			t.Errorf("withdrawal without reason or finding: %+v", w)
		}
	}
	if v.Checked != 5 || got[CheckLocation] != 2 || got[CheckQuote] != 1 || got[CheckDuplicate] != 1 || len(v.Withdrawn) != 4 {
		t.Fatalf("checked %d, withdrawn %+v", v.Checked, v.Withdrawn)
	}
	if len(d.Findings) != 1 || d.Findings[0].Title != "vague wording" || d.Findings[0].Lens != "bugs" {
		t.Fatalf("published findings %+v", d.Findings)
	}
	// The hallucinated high finding does not fail the required lens.
	if l := lensByName(d, "bugs"); l.Outcome != OutcomePassed {
		t.Fatalf("lens bugs %s", l.Outcome)
	}
	for _, c := range d.Inline {
		if c.Line != 2 {
			t.Fatalf("inline comment on a withdrawn line: %+v", c)
		}
	}
	if len(m.asked) != 0 {
		t.Fatal("deterministic mode made a verifying call")
	}
	off, err := newTestPipeline(m).Review(context.Background(), prSubject(), verifyConfig(config.VerifyOff))
	if err != nil {
		t.Fatal(err)
	}
	if len(off.Verification.Withdrawn) != 0 || len(off.Findings) != 5 {
		t.Fatalf("verify off: %d findings, withdrawn %+v", len(off.Findings), off.Verification.Withdrawn)
	}
}

// In model mode one verifying call judges what passed the deterministic checks; what it refutes
// is withdrawn and its tokens are the review's. A failed call withdraws nothing and says why.
func TestModelVerification(t *testing.T) {
	findings := map[string][]runtime.Finding{"bugs": {
		{Severity: "medium", Path: "README.md", Line: 2, Title: "refute me", Message: "a wrong claim"},
		{Severity: "medium", Path: "README.md", Line: 2, Title: "real problem", Message: "a true claim"},
		{Severity: "medium", Path: "README.md", Line: 99, Title: "never asked", Message: "hallucinated line"},
	}}
	m := &verifyingModel{fakeRuntime: fakeRuntime{name: "model", fn: modelAnswer(findings)}}
	d, err := newTestPipeline(m).Review(context.Background(), prSubject(), verifyConfig(config.VerifyModel))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.asked) != 1 || len(m.asked[0]) != 2 {
		t.Fatalf("verifying calls %+v", m.asked)
	}
	v := d.Verification
	if v.ModelChecked != 2 || v.ModelCause != "" || len(v.Withdrawn) != 2 || len(d.Findings) != 1 || d.Findings[0].Title != "real problem" {
		t.Fatalf("verification %+v, findings %+v", v, d.Findings)
	}
	calls := 0
	for _, c := range d.Tokens.Calls {
		if c.Usage.PromptTokens == 100 {
			calls++
		}
	}
	if calls != 1 || d.Tokens.Total < 110 {
		t.Fatalf("the verifying call is not in the review's tokens: %+v", d.Tokens)
	}

	m = &verifyingModel{fakeRuntime: fakeRuntime{name: "model", fn: modelAnswer(findings)}, fail: errors.New("server down")}
	d, err = newTestPipeline(m).Review(context.Background(), prSubject(), verifyConfig(config.VerifyModel))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Verification.ModelCause, "server down") || len(d.Findings) != 2 || len(d.Verification.Withdrawn) != 1 {
		t.Fatalf("failed verifying call: %+v, findings %d", d.Verification, len(d.Findings))
	}
}

// Feedback on one pull request suppresses the same finding on another of the same repository,
// but never a blocking one, and never the finding the feedback is about on its own pull request.
func TestEarlierFeedbackSuppresses(t *testing.T) {
	findings := map[string][]runtime.Finding{"bugs": {
		{Severity: "medium", Path: "README.md", Line: 2, Title: "vague wording", Message: "the docs say nothing"},
		{Severity: "high", Path: "README.md", Line: 2, Title: "broken link", Message: "the link is dead"},
		{Severity: "low", Path: "README.md", Line: 2, Rule: "spelling", Title: "typo", Message: "a typo"},
	}}
	m := &verifyingModel{fakeRuntime: fakeRuntime{name: "model", fn: modelAnswer(findings)}}
	store := NewMemoryFeedback(nil)
	p := NewPipeline(Options{Runtimes: runtime.NewRegistry(m), Feedback: store})
	first, err := p.Review(context.Background(), prSubject(), verifyConfig(config.VerifyDeterministic))
	if err != nil {
		t.Fatal(err)
	}
	var fbs []Feedback
	for _, f := range first.Findings {
		fbs = append(fbs, FeedbackOn("o/r", 7, f, FeedbackDismissed, "not useful here", "bob", time.Now()))
	}
	if err := store.RecordFeedback(context.Background(), fbs); err != nil {
		t.Fatal(err)
	}
	again, err := p.Review(context.Background(), prSubject(), verifyConfig(config.VerifyDeterministic))
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Verification.Suppressed) != 0 {
		t.Fatalf("feedback suppressed findings on its own pull request: %+v", again.Verification.Suppressed)
	}
	next := prSubject()
	next.Number = 8
	d, err := p.Review(context.Background(), next, verifyConfig(config.VerifyDeterministic))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Verification.Suppressed) != 2 || len(d.Findings) != 1 || d.Findings[0].Title != "broken link" {
		t.Fatalf("suppressed %+v, findings %+v", d.Verification.Suppressed, d.Findings)
	}
	for _, s := range d.Verification.Suppressed {
		if !strings.Contains(s.Reason, "#7") {
			t.Fatalf("reason %q does not name the pull request", s.Reason)
		}
	}
	if n, err := store.ClearFeedback(context.Background(), "o/r"); err != nil || n != 3 {
		t.Fatalf("cleared %d, %v", n, err)
	}
}

// BenchmarkDeterministicVerification: a review whose model lens reports 200 findings (a quarter
// on lines the diff does not show, a quarter quoting code) over a 40-file, 4,000-line change.
func BenchmarkDeterministicVerification(b *testing.B) {
	var diffText strings.Builder
	for f := 0; f < 40; f++ {
		fmt.Fprintf(&diffText, "diff --git a/f%d.go b/f%d.go\n--- a/f%d.go\n+++ b/f%d.go\n@@ -1,1 +1,100 @@\n x\n", f, f, f, f)
		for l := 0; l < 99; l++ {
			fmt.Fprintf(&diffText, "+\tvalue%d := compute(%d, input)\n", l, l)
		}
	}
	var fs []runtime.Finding
	for i := 0; i < 200; i++ {
		line := 2 + i%98
		if i%4 == 0 {
			line = 500
		}
		msg := fmt.Sprintf("finding %d about the loop", i)
		if i%4 == 1 {
			msg = fmt.Sprintf("it calls `compute(%d, input)` here", line-2)
		}
		fs = append(fs, runtime.Finding{Severity: "medium", Path: fmt.Sprintf("f%d.go", i%40), Line: line, Title: fmt.Sprintf("problem %d", i), Message: msg})
	}
	m := &verifyingModel{fakeRuntime: fakeRuntime{name: "model", fn: modelAnswer(map[string][]runtime.Finding{"bugs": fs})}}
	p := newTestPipeline(m)
	subj := prSubject()
	subj.Diff, subj.Files = []byte(diffText.String()), nil
	// The whole review with verification off is the baseline the deterministic checks add to.
	for _, mode := range []string{config.VerifyOff, config.VerifyDeterministic} {
		b.Run(mode, func(b *testing.B) {
			cfg := verifyConfig(mode)
			cfg.Review.MaxDiffLines = 0
			for i := 0; i < b.N; i++ {
				if _, err := p.Review(context.Background(), subj, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A finding open after one push and reported again after the next, but withdrawn this time (its
// line is not in the diff), is neither fixed nor published: a withdrawal is not a fix.
func TestWithdrawnIsNotFixed(t *testing.T) {
	line := 1
	rt := &fakeRuntime{name: "model"}
	rt.fn = func(req *runtime.Request) (*runtime.Result, error) {
		res := &runtime.Result{Model: "m"}
		for _, l := range req.Lenses {
			res.Lenses = append(res.Lenses, runtime.LensReport{Lens: l.Name, Verdict: runtime.VerdictConcerns, Summary: "looked",
				Findings: []runtime.Finding{{Severity: "medium", Path: "a.go", Line: line, Title: "unchecked input", Message: "input is used as is"}}})
		}
		return res, nil
	}
	p, cfg := modelPipeline(t, rt)
	ctx := context.Background()
	a1 := addedFile("a.go", "use(input)")
	d1, err := p.Review(ctx, pushSubject(sha('1'), a1, nil, nil), cfg)
	if err != nil || len(d1.Findings) != 1 || !d1.Findings[0].Open() {
		t.Fatalf("first review: %+v %v", d1.Findings, err)
	}
	line = 99
	a2 := addedFile("a.go", "use(input)", "more()")
	inc := &Increment{From: sha('1'), Diff: []byte(a2), Files: []File{{Path: "a.go", Status: FileModified}}}
	d2, err := p.Review(ctx, pushSubject(sha('2'), a2, d1.State, inc), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(d2.Verification.Withdrawn) != 1 || len(d2.Findings) != 0 {
		t.Fatalf("withdrawn %+v, findings %+v (a withdrawn finding must not read as fixed)", d2.Verification.Withdrawn, d2.Findings)
	}
}
