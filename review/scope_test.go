package review

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// addedFile is the diff of a new file with the given lines.
func addedFile(path string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// badLineModel is a paid runtime that fails every added line containing BAD, and records
// which files each call was sent.
func badLineModel() *fakeRuntime {
	f := &fakeRuntime{name: "model"}
	f.fn = func(req *runtime.Request) (*runtime.Result, error) {
		var sent []string
		for _, fl := range req.Files {
			sent = append(sent, fl.Path())
		}
		f.sent = append(f.sent, sent)
		f.since = append(f.since, req.Since)
		res := &runtime.Result{Model: "m"}
		for _, l := range req.Lenses {
			rep := runtime.LensReport{Lens: l.Name, Verdict: runtime.VerdictOK, Summary: "looked"}
			for _, fl := range req.Files {
				fl.Walk(func(ln diff.Line) bool {
					if ln.Kind == '+' && strings.Contains(string(ln.Text), "BAD") {
						rep.Verdict = runtime.VerdictRequestChanges
						rep.Findings = append(rep.Findings, runtime.Finding{Rule: "bad", Severity: runtime.SeverityHigh,
							Path: fl.Path(), Line: ln.New, Title: "bad line", Key: string(ln.Text)})
					}
					return true
				})
			}
			res.Lenses = append(res.Lenses, rep)
		}
		return res, nil
	}
	return f
}

func modelPipeline(t *testing.T, rt runtime.Runtime) (*Pipeline, *config.Repo) {
	t.Helper()
	// One call at a time: these tests read the requests in the order they were planned.
	p := NewPipeline(Options{Runtimes: runtime.NewRegistry(rt), Logger: zerolog.Nop(), MaxConcurrentCalls: 1})
	cfg := config.DefaultRepo()
	cfg.Runtime = rt.Name()
	cfg.Policy = policyWith(config.Lens{Name: "security", Preset: "security", Required: true})
	cfg.IgnorePaths = nil
	return p, cfg
}

func sha(c byte) string { return strings.Repeat(string(c), 40) }

func pushSubject(head string, diff string, prior *State, since *Increment) *Subject {
	s := prSubject()
	s.HeadSHA, s.Diff, s.Prior, s.Since, s.Files = head, []byte(diff), prior, since, nil
	return s
}

func findingsByDisposition(d *Decision) map[string][]string {
	out := map[string][]string{}
	for _, f := range d.Findings {
		out[f.Disposition] = append(out[f.Disposition], f.Path)
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

func TestIncrementalReview(t *testing.T) {
	rt := badLineModel()
	p, cfg := modelPipeline(t, rt)
	ctx := context.Background()
	a1 := addedFile("a.go", "ok", "BAD one")
	b1 := addedFile("b.go", "BAD two")
	d1, err := p.Review(ctx, pushSubject(sha('1'), a1+b1, nil, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d1.Coverage.Scope != ScopeFull || len(d1.Findings) != 2 || d1.Gate.State != OutcomeFailed {
		t.Fatalf("first review: scope %q findings %+v gate %s", d1.Coverage.Scope, d1.Findings, d1.Gate.State)
	}
	// The second push fixes a.go only: the model is sent a.go, b.go's finding is carried,
	// a.go's is fixed at the new head.
	a2 := addedFile("a.go", "ok", "good now")
	inc := &Increment{From: sha('1'), Diff: []byte(a2), Files: []File{{Path: "a.go", Status: FileModified}}}
	d2, err := p.Review(ctx, pushSubject(sha('2'), a2+b1, d1.State, inc), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.sent[len(rt.sent)-1]; !slices.Equal(got, []string{"a.go"}) || rt.since[len(rt.since)-1] != sha('1') {
		t.Fatalf("incremental call sent %v since %q", got, rt.since[len(rt.since)-1])
	}
	if d2.Coverage.Scope != ScopeIncremental || d2.Coverage.Since != sha('1') {
		t.Fatalf("scope %+v", d2.Coverage)
	}
	byDisp := findingsByDisposition(d2)
	if !slices.Equal(byDisp[DispositionOpen], []string{"b.go"}) || !slices.Equal(byDisp[DispositionFixed], []string{"a.go"}) {
		t.Fatalf("dispositions %v", byDisp)
	}
	for _, f := range d2.Findings {
		if f.Disposition == DispositionFixed && f.FixCommit != sha('2') {
			t.Fatalf("fixCommit %q", f.FixCommit)
		}
		if f.Path == "b.go" && f.Head != sha('1') {
			t.Fatalf("carried finding keeps its head: %q", f.Head)
		}
	}
	if d2.Gate.State != OutcomeFailed {
		t.Fatalf("the carried blocking finding still fails the gate: %s", d2.Gate.State)
	}
	heads := d2.Coverage.Heads
	if len(heads) != 2 || heads[0].Head != sha('2') || heads[1].Head != sha('1') || !slices.Equal(heads[1].Paths, []string{"b.go"}) {
		t.Fatalf("heads %+v", heads)
	}
	// A writer dismisses b.go's finding: the same head costs no model call, the gate passes.
	var bID string
	for _, f := range d2.Findings {
		if f.Path == "b.go" {
			bID = f.ID
		}
	}
	calls := rt.calls
	s3 := pushSubject(sha('2'), a2+b1, d2.State, nil)
	s3.Dismissals = []Dismissal{{ID: bID, Reason: "test fixture", By: "maintainer"}}
	d3, err := p.Review(ctx, s3, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rt.calls != calls || d3.Gate.State != OutcomePassed {
		t.Fatalf("re-run of the same head: %d calls, gate %s (%s)", rt.calls-calls, d3.Gate.State, d3.Gate.Reason)
	}
	if f, _ := d3.State.Finding(bID); f.Disposition != DispositionDismissed || f.Reason != "test fixture" {
		t.Fatalf("dismissal %+v", f)
	}
	// The dismissal sticks across a later push that re-reports the same line.
	b4 := addedFile("b.go", "BAD two", "BAD three")
	inc4 := &Increment{From: sha('2'), Diff: []byte(b4), Files: []File{{Path: "b.go", Status: FileModified}}}
	d4, err := p.Review(ctx, pushSubject(sha('4'), a2+b4, d3.State, inc4), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := d4.State.Finding(bID); f.Disposition != DispositionDismissed {
		t.Fatalf("dismissal lost: %+v", f)
	}
	if byDisp := findingsByDisposition(d4); len(byDisp[DispositionOpen]) != 1 || len(byDisp[DispositionDismissed]) != 1 || len(byDisp[DispositionFixed]) != 1 {
		t.Fatalf("after the fourth push: %v", byDisp)
	}
	for _, c := range d4.Inline {
		if c.Fingerprint == bID {
			t.Fatal("a dismissed finding is placed inline again")
		}
	}
	// A force-push (no increment) and a changed base both fall back to a full review.
	d5, err := p.Review(ctx, pushSubject(sha('5'), a2+b4, d4.State, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d5.Coverage.Scope != ScopeFull || !strings.Contains(d5.Coverage.ScopeReason, "not an ancestor") ||
		!slices.Equal(rt.sent[len(rt.sent)-1], []string{"a.go", "b.go"}) {
		t.Fatalf("force-push: %+v sent %v", d5.Coverage, rt.sent[len(rt.sent)-1])
	}
	s6 := pushSubject(sha('6'), a2+b4, d5.State, &Increment{From: sha('5')})
	s6.BaseSHA = sha('c')
	d6, err := p.Review(ctx, s6, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d6.Coverage.Scope != ScopeFull || !strings.Contains(d6.Coverage.ScopeReason, "base moved") {
		t.Fatalf("new base: %+v", d6.Coverage)
	}
}

func TestIncrementalFallsBackOnPlanChange(t *testing.T) {
	rt := badLineModel()
	p, cfg := modelPipeline(t, rt)
	a := addedFile("a.go", "BAD")
	d1, err := p.Review(context.Background(), pushSubject(sha('1'), a, nil, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy.Lenses[0].Instruction = "Review harder."
	d2, err := p.Review(context.Background(), pushSubject(sha('2'), a, d1.State, &Increment{From: sha('1')}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d2.Coverage.Scope != ScopeFull || !strings.Contains(d2.Coverage.ScopeReason, "policy changed") || len(rt.sent[1]) != 1 {
		t.Fatalf("plan change: %+v", d2.Coverage)
	}
}

func TestChunkedReview(t *testing.T) {
	rt := badLineModel()
	p, cfg := modelPipeline(t, rt)
	cfg.Review.MaxDiffLines = 18
	cfg.Review.MaxChunks = 3
	var b strings.Builder
	for i := 0; i < 8; i++ {
		b.WriteString(addedFile(fmt.Sprintf("f%d.go", i), "x", "y", "BAD "+fmt.Sprint(i), "z"))
	}
	d, err := p.Review(context.Background(), pushSubject(sha('1'), b.String(), nil, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 9 diff lines per file, 18 per chunk: two files per chunk, three chunks, two files left out.
	if rt.calls != 3 || d.Coverage.Chunks != 3 {
		t.Fatalf("%d calls, chunks %d", rt.calls, d.Coverage.Chunks)
	}
	var gaps []string
	for _, g := range d.Coverage.Gaps {
		gaps = append(gaps, g.Path)
	}
	if d.Coverage.Status != CoveragePartial || !slices.Equal(gaps, []string{"f6.go", "f7.go"}) {
		t.Fatalf("coverage %s gaps %v", d.Coverage.Status, gaps)
	}
	if len(d.Findings) != 6 {
		t.Fatalf("findings of every chunk merged: %d", len(d.Findings))
	}
	// With room for every chunk the review is complete.
	cfg.Review.MaxChunks = 8
	d, err = p.Review(context.Background(), pushSubject(sha('1'), b.String(), nil, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.Coverage.Status != CoverageComplete || len(d.Coverage.Gaps) != 0 || len(d.Findings) != 8 || d.Coverage.Chunks != 4 {
		t.Fatalf("complete: %s %v %d findings, %d chunks", d.Coverage.Status, d.Coverage.Gaps, len(d.Findings), d.Coverage.Chunks)
	}
}

func TestChunkFilesDedupesAcrossChunks(t *testing.T) {
	a := &runtime.LensReport{Lens: "l", Verdict: runtime.VerdictOK, Findings: []runtime.Finding{{Rule: "r", Severity: "low", Path: "p", Key: "k"}}}
	b := &runtime.LensReport{Lens: "l", Verdict: runtime.VerdictRequestChanges, Findings: []runtime.Finding{{Rule: "r", Severity: "low", Path: "p", Key: "k"}}}
	m := mergeReports([]*runtime.LensReport{a, b})
	lr := mapReport(LensResult{Name: "l", Runtime: "model"}, m)
	if len(lr.Findings) != 1 || lr.Outcome != OutcomeFailed {
		t.Fatalf("merged %+v", lr)
	}
	if mergeReports([]*runtime.LensReport{a, nil}) != nil {
		t.Fatal("a chunk without a report must leave the lens pending")
	}
}

func TestStateRoundTrip(t *testing.T) {
	st := &State{BaseSHA: sha('b'), PlanDigest: "p", Lenses: map[string]string{"security": sha('1')}, FilesHead: sha('1'),
		FilesAt: map[string]string{"x": sha('0')},
		Findings: []Finding{{ID: "LG-0123456789ab", Lens: "security", Severity: SeverityHigh, Title: "t", Body: "dropped",
			Disposition: DispositionFixed, FixCommit: sha('1')}}}
	text, err := EncodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "-->") || strings.ContainsAny(text, " \n<>") {
		t.Fatalf("state text is not marker-safe: %q", text)
	}
	got, err := DecodeState(text)
	if err != nil {
		t.Fatal(err)
	}
	if got.Head() != sha('1') || got.FileHead("x") != sha('0') || got.FileHead("y") != sha('1') || got.Findings[0].Body != "" {
		t.Fatalf("round trip %+v", got)
	}
	for _, bad := range []string{"", "!!", "H4sIAAAAAAAA", text[:len(text)/2]} {
		if _, err := DecodeState(bad); err == nil {
			t.Errorf("DecodeState(%q) accepted", bad)
		}
	}
}

func FuzzDecodeState(f *testing.F) {
	text, _ := EncodeState(&State{Lenses: map[string]string{}})
	f.Add(text)
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := DecodeState(s)
		if err == nil && st == nil {
			t.Fatal("nil state without error")
		}
	})
}

func TestPerPathLenses(t *testing.T) {
	var seen []runtime.Lens
	var sent [][]string
	rt := &fakeRuntime{name: "model"}
	rt.fn = func(req *runtime.Request) (*runtime.Result, error) {
		var files []string
		for _, f := range req.Files {
			files = append(files, f.Path())
		}
		sent = append(sent, files)
		res := &runtime.Result{}
		for _, l := range req.Lenses {
			seen = append(seen, l)
			res.Lenses = append(res.Lenses, runtime.LensReport{Lens: l.Name, Verdict: runtime.VerdictOK, Summary: "ok"})
		}
		return res, nil
	}
	p, cfg := modelPipeline(t, rt)
	cfg.Policy = policyWith(
		config.Lens{Name: "api", Preset: "security", Required: true, Paths: []string{"services/api/**"},
			PathInstructions: []config.PathInstruction{{Paths: []string{"**/*_handler.go"}, Instruction: "Check authorisation."},
				{Paths: []string{"**/*.sql"}, Instruction: "Check for injection."}}},
		config.Lens{Name: "web", Preset: "security", Paths: []string{"web/**"}},
		config.Lens{Name: "all", Preset: "security"},
	)
	d := addedFile("services/api/user_handler.go", "x") + addedFile("services/api/util.go", "y") + addedFile("docs/readme.md", "z")
	dec, err := p.Review(context.Background(), pushSubject(sha('1'), d, nil, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// api and all are asked separately (different files); web matches nothing and passes unasked.
	if len(sent) != 2 || !slices.Equal(sent[0], []string{"services/api/user_handler.go", "services/api/util.go"}) || len(sent[1]) != 3 {
		t.Fatalf("requests sent %v", sent)
	}
	if !strings.Contains(seen[0].Instruction, "For files matching **/*_handler.go: Check authorisation.") ||
		strings.Contains(seen[0].Instruction, "injection") {
		t.Fatalf("api lens instruction %q", seen[0].Instruction)
	}
	for _, l := range dec.Lenses {
		if l.Outcome != OutcomePassed {
			t.Fatalf("lens %s %s %s", l.Name, l.Outcome, l.Cause)
		}
		if l.Name == "web" && !strings.Contains(l.Summary, "matches this lens's paths") {
			t.Fatalf("web summary %q", l.Summary)
		}
	}
}

func TestTruncatedCompareAndFailedChunk(t *testing.T) {
	rt := badLineModel()
	p, cfg := modelPipeline(t, rt)
	a := addedFile("a.go", "x")
	d1, err := p.Review(context.Background(), pushSubject(sha('1'), a, nil, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := p.Review(context.Background(), pushSubject(sha('2'), a, d1.State, &Increment{From: sha('1'), Truncated: true}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d2.Coverage.Scope != ScopeFull || !strings.Contains(d2.Coverage.ScopeReason, "too many to list") {
		t.Fatalf("truncated compare: %+v", d2.Coverage)
	}
	// A part that fails leaves the lens pending, naming the part: never a partial pass.
	calls := 0
	inner := rt.fn
	rt.fn = func(req *runtime.Request) (*runtime.Result, error) {
		calls++
		if calls == 2 {
			return nil, fmt.Errorf("endpoint down")
		}
		return inner(req)
	}
	cfg.Review.MaxDiffLines = 9
	d3, err := p.Review(context.Background(), pushSubject(sha('3'), addedFile("a.go", "x")+addedFile("b.go", "y"), nil, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l := d3.Lenses[0]; l.Outcome != OutcomePending || !strings.Contains(l.Cause, "part 2 of 2") || d3.Gate.State == OutcomePassed {
		t.Fatalf("failed part: %s %q, gate %s", l.Outcome, l.Cause, d3.Gate.State)
	}
}
