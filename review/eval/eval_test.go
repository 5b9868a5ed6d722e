package eval_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/eval"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// fileLines is the length of every file the synthetic cases add.
const fileLines = 40

// synthCase is a synthetic pull request that adds one file of fileLines lines; every line of it
// is on the new side of the diff.
type synthCase struct {
	id     string
	file   string
	golden []eval.Golden
}

// synthCorpus: ten known defects in four pull requests (eight for correctness, two for
// security) and one clean pull request.
func synthCorpus() []synthCase {
	g := func(path string, start, end int, lens string) eval.Golden {
		return eval.Golden{Path: path, StartLine: start, EndLine: end, Lens: lens, Severity: review.SeverityHigh,
			Description: fmt.Sprintf("defect %s:%d", path, start)}
	}
	return []synthCase{
		{"c1", "a.go", []eval.Golden{g("a.go", 5, 5, "correctness"), g("a.go", 20, 20, "correctness"), g("a.go", 35, 35, "security")}},
		{"c2", "b.go", []eval.Golden{g("b.go", 10, 10, "correctness"), g("b.go", 30, 30, "correctness")}},
		{"c3", "c.go", []eval.Golden{g("c.go", 8, 9, "correctness"), g("c.go", 25, 25, "security")}},
		{"c4", "d.go", []eval.Golden{g("d.go", 12, 12, "correctness"), g("d.go", 22, 22, "correctness"), g("d.go", 38, 38, "correctness")}},
		{"c5-clean", "e.go", nil},
	}
}

// writeCorpus writes the cases as fixtures (an empty base, a patch adding the file) and a
// manifest, and returns the manifest's path.
func writeCorpus(t *testing.T, cases []synthCase) string {
	t.Helper()
	dir := t.TempDir()
	var m strings.Builder
	m.WriteString("version: 1\nname: synthetic\ncases:\n")
	for _, c := range cases {
		fx := filepath.Join(dir, c.id)
		writeFile(t, filepath.Join(fx, "base", "README.md"), "A synthetic case.\n")
		var p strings.Builder
		fmt.Fprintf(&p, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", c.file, c.file, c.file, fileLines)
		for i := 1; i <= fileLines; i++ {
			fmt.Fprintf(&p, "+// line %d of %s\n", i, c.file)
		}
		writeFile(t, filepath.Join(fx, "change.patch"), p.String())
		fmt.Fprintf(&m, "  - id: %s\n    title: Add %s\n    fixture: %s\n    golden:", c.id, c.file, c.id)
		if len(c.golden) == 0 {
			m.WriteString(" []\n")
			continue
		}
		m.WriteString("\n")
		for _, g := range c.golden {
			fmt.Fprintf(&m, "      - path: %s\n        start_line: %d\n        end_line: %d\n        lens: %s\n        severity: %s\n        description: %q\n",
				g.Path, g.StartLine, g.EndLine, g.Lens, g.Severity, g.Description)
		}
	}
	manifest := filepath.Join(dir, "corpus.yml")
	writeFile(t, manifest, m.String())
	return manifest
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// plan is what the fake model reports: for each lens, findings by file.
type plan map[string][]modelfake.Finding

// hit is a finding on a known defect, in the defect's words.
func hit(lens string, g eval.Golden, line int) modelfake.Finding {
	return modelfake.Finding{Path: g.Path, Line: line, Severity: "block", Title: "Defect", Message: g.Description + " [" + lens + "]"}
}

func extra(path string, line int, severity string) modelfake.Finding {
	return modelfake.Finding{Path: path, Line: line, Severity: severity, Title: "Remark", Message: fmt.Sprintf("a remark on line %d", line)}
}

// plannedModel answers review calls with the planned findings on the files of the diff, and
// judge calls with same when the reported finding quotes the known defect's description.
func plannedModel(p map[string]plan) func(modelfake.Request) modelfake.Reply {
	return func(req modelfake.Request) modelfake.Reply {
		if req.IsJudge() {
			known, reported := req.JudgeTexts()
			desc := known[strings.LastIndex(known, "\n")+1:]
			return modelfake.Reply{Content: modelfake.JudgeAnswer(strings.Contains(reported, desc)), PromptTokens: 100, CompletionTokens: 5}
		}
		diff := req.Diff()
		out := map[string][]modelfake.Finding{}
		for _, lens := range req.Lenses() {
			for path, fs := range p[lens] {
				if strings.Contains(diff, "+++ b/"+path+"\n") {
					out[lens] = append(out[lens], fs...)
				}
			}
		}
		return modelfake.Reply{Content: modelfake.ReviewAnswer(req.Lenses(), out), PromptTokens: 1000, CompletionTokens: 50}
	}
}

// modelConfig reviews two lenses, correctness and security, with the openai runtime.
func modelConfig() *config.Repo {
	cfg := config.DefaultRepo()
	cfg.Models.Reviewer = "fake-reviewer"
	cfg.Policy = config.Policy{Version: 1, Aggregation: config.AggregationAllRequired}
	for _, name := range []string{"correctness", "security"} {
		cfg.Policy.Lenses = append(cfg.Policy.Lenses, config.Lens{Name: name, Preset: openai.Name, Instruction: "Review the " + name + ".",
			Outcome: config.OutcomeReview, Publication: config.PublicationReview, Required: true})
		cfg.Policy.Required = append(cfg.Policy.Required, name)
	}
	return cfg
}

func modelOptions(t *testing.T, srv *modelfake.Server) eval.Options {
	t.Helper()
	rt, err := openai.New(openai.Options{BaseURL: srv.URL, Token: srv.Token, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return eval.Options{
		Pipeline: review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt, builtin.New(builtin.Options{})), Logger: zerolog.Nop()}),
		Config:   func(context.Context, string, string, string) (*config.Repo, error) { return modelConfig(), nil },
		Window:   2,
		Prices:   eval.Prices{PromptPerMillion: 3, CompletionPerMillion: 15},
	}
}

// builtinOptions evaluates with the built-in runtime and the default policy, matching within
// the default line window.
func builtinOptions() eval.Options {
	return eval.Options{
		Pipeline: review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(builtin.New(builtin.Options{})), Logger: zerolog.Nop()}),
		Config:   func(context.Context, string, string, string) (*config.Repo, error) { return config.DefaultRepo(), nil },
		Window:   -1,
	}
}

// goldenOf returns the golden findings of the synthetic corpus by case and index.
func goldenOf(cases []synthCase, id string, i int) eval.Golden {
	for _, c := range cases {
		if c.id == id {
			return c.golden[i]
		}
	}
	panic("no case " + id)
}

type want struct {
	golden, findings, matched int
	recall, precision, f1     float64 // -1: undefined
}

func checkSummary(t *testing.T, label string, s eval.Summary, w want) {
	t.Helper()
	if s.Golden != w.golden || s.Findings != w.findings || s.Matched != w.matched ||
		s.Unmatched != w.findings-w.matched || s.Missed != w.golden-w.matched {
		t.Errorf("%s counts %+v, want %+v", label, s.Counts, w)
	}
	for _, r := range []struct {
		name string
		got  *float64
		want float64
	}{{"recall", s.Recall, w.recall}, {"precision", s.Precision, w.precision}, {"f1", s.F1, w.f1}} {
		switch {
		case r.want < 0 && r.got != nil:
			t.Errorf("%s %s = %v, want undefined", label, r.name, *r.got)
		case r.want >= 0 && (r.got == nil || math.Abs(*r.got-r.want) > 1e-12):
			t.Errorf("%s %s = %v, want %v", label, r.name, r.got, r.want)
		}
	}
}

func lensSummary(t *testing.T, r *eval.Report, name string) eval.Summary {
	t.Helper()
	for _, s := range r.Lenses {
		if s.Lens == name {
			return s
		}
	}
	t.Fatalf("no lens %s in %+v", name, r.Lenses)
	return eval.Summary{}
}

func f1(r, p float64) float64 { return 2 * r * p / (r + p) }

// TestKnownRates: the fake model finds the known defects at known rates, adds findings on no
// defect, duplicates its findings or puts them on the wrong lines; the report's counts and
// rates are exactly those the plan implies, overall and per lens.
func TestKnownRates(t *testing.T) {
	cases := synthCorpus()
	manifest := writeCorpus(t, cases)
	g := func(id string, i int) eval.Golden { return goldenOf(cases, id, i) }
	// Seven of the ten defects: five of eight for correctness, both for security (c2's on a
	// line one away, within the window of 2).
	rates := map[string]plan{
		"correctness": {"a.go": {hit("correctness", g("c1", 0), 5)}, "b.go": {hit("correctness", g("c2", 0), 11), extra("b.go", 20, "warn")},
			"c.go": {hit("correctness", g("c3", 0), 9)},
			"d.go": {hit("correctness", g("c4", 0), 12), hit("correctness", g("c4", 1), 22), extra("d.go", 30, "warn")}},
		"security": {"a.go": {hit("security", g("c1", 2), 35)}, "c.go": {hit("security", g("c3", 1), 25)}, "e.go": {extra("e.go", 3, "warn")}},
	}

	// The same defects, each reported twice: the second report of a defect is no hit.
	dup := map[string]plan{}
	for lens, p := range rates {
		dup[lens] = plan{}
		for path, fs := range p {
			for _, f := range fs {
				dup[lens][path] = append(dup[lens][path], f)
				if f.Title == "Defect" {
					d := f
					d.Line, d.Title = f.Line+1, "Defect again"
					dup[lens][path] = append(dup[lens][path], d)
				}
			}
		}
	}
	// Every defect on a line of its file outside the window: all on the new side of the diff,
	// none on the defect.
	wrongLines := map[string]plan{"correctness": {}, "security": {}}
	for _, c := range cases {
		for _, gd := range c.golden {
			line := gd.EndLine + 3
			if line > fileLines {
				line = gd.StartLine - 3
			}
			wrongLines[gd.Lens][gd.Path] = append(wrongLines[gd.Lens][gd.Path], hit(gd.Lens, gd, line))
		}
	}
	// Every defect found, and twenty nits on the clean pull request.
	nits := map[string]plan{"correctness": {}, "security": {}}
	for _, c := range cases {
		for _, gd := range c.golden {
			nits[gd.Lens][gd.Path] = append(nits[gd.Lens][gd.Path], hit(gd.Lens, gd, gd.StartLine))
		}
	}
	for i := 1; i <= 20; i++ {
		nits["correctness"]["e.go"] = append(nits["correctness"]["e.go"], extra("e.go", i, "note"))
	}

	for _, tc := range []struct {
		name                    string
		plan                    map[string]plan
		overall, corr, security want
	}{
		{"seven of ten and three extra", rates,
			want{10, 10, 7, 0.7, 0.7, 0.7},
			want{8, 7, 5, 5.0 / 8, 5.0 / 7, f1(5.0/8, 5.0/7)},
			want{2, 3, 2, 1, 2.0 / 3, f1(1, 2.0/3)}},
		{"duplicates", dup,
			want{10, 17, 7, 0.7, 7.0 / 17, f1(0.7, 7.0/17)},
			want{8, 12, 5, 5.0 / 8, 5.0 / 12, f1(5.0/8, 5.0/12)},
			want{2, 5, 2, 1, 2.0 / 5, f1(1, 2.0/5)}},
		{"wrong lines", wrongLines,
			want{10, 10, 0, 0, 0, 0},
			want{8, 8, 0, 0, 0, 0},
			want{2, 2, 0, 0, 0, 0}},
		{"all found and twenty nits", nits,
			want{10, 30, 10, 1, 1.0 / 3, 0.5},
			want{8, 28, 8, 1, 8.0 / 28, f1(1, 8.0/28)},
			want{2, 2, 2, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := modelfake.New("sk-eval", plannedModel(tc.plan))
			defer srv.Close()
			c, err := eval.Load(manifest)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := eval.Run(context.Background(), c, modelOptions(t, srv))
			if err != nil {
				t.Fatal(err)
			}
			checkSummary(t, "overall", rep.Overall, tc.overall)
			checkSummary(t, "correctness", lensSummary(t, rep, "correctness"), tc.corr)
			checkSummary(t, "security", lensSummary(t, rep, "security"), tc.security)
			if rep.Cases != 5 || rep.Clean != 1 || rep.Overall.Pending != 0 {
				t.Errorf("cases %d clean %d pending %d", rep.Cases, rep.Clean, rep.Overall.Pending)
			}
			if want := float64(tc.overall.findings) / 5; rep.Overall.CommentsPerPR != want {
				t.Errorf("comments per PR %v, want %v", rep.Overall.CommentsPerPR, want)
			}
			// One call per pull request, 1,000 prompt and 50 completion tokens each, shared
			// evenly by the two lenses; at 3 and 15 per million.
			calls := len(srv.Requests())
			if calls != 5 || rep.Overall.Tokens != (eval.Tokens{Prompt: 5000, Completion: 250, Total: 5250}) {
				t.Errorf("%d calls, tokens %+v", calls, rep.Overall.Tokens)
			}
			if math.Abs(rep.Overall.Cost-(5000*3+250*15)/1e6) > 1e-12 {
				t.Errorf("cost %v", rep.Overall.Cost)
			}
			if s := lensSummary(t, rep, "security"); s.Tokens != (eval.Tokens{Prompt: 2500, Completion: 125, Total: 2625}) {
				t.Errorf("security tokens %+v", s.Tokens)
			}
			var table strings.Builder
			if err := rep.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			row := fmt.Sprintf("overall  %d  %d  %d  %d  %.3f  %.3f  %.3f", tc.overall.golden, tc.overall.matched,
				tc.overall.findings, tc.overall.findings-tc.overall.matched, tc.overall.recall, tc.overall.precision, tc.overall.f1)
			if !strings.Contains(squeeze(table.String()), row) {
				t.Errorf("table has no row %q:\n%s", row, table.String())
			}
		})
	}
}

// squeeze collapses runs of spaces to two, so a test can look for a table row.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), "  ")
	}
	return strings.Join(lines, "\n")
}

// TestJudgeConfirmsMatches: with a judge, a finding on the right line that describes something
// else is no hit, and a known defect without a path is matched by the finding the judge says
// describes it. Every judge call is counted.
func TestJudgeConfirmsMatches(t *testing.T) {
	cases := synthCorpus()
	unlocated := cases[1].golden[1] // b.go:30, known only by its description
	cases[1].golden[1] = eval.Golden{Description: unlocated.Description, Severity: unlocated.Severity, Lens: unlocated.Lens}
	manifest := writeCorpus(t, cases)
	g := func(id string, i int) eval.Golden { return goldenOf(cases, id, i) }
	other := hit("correctness", g("c1", 0), 5)
	other.Message = "the log line is too long"
	p := map[string]plan{
		"correctness": {"a.go": {other}, "b.go": {hit("correctness", g("c2", 0), 11), extra("b.go", 20, "warn"), hit("correctness", unlocated, 33)},
			"c.go": {hit("correctness", g("c3", 0), 9)},
			"d.go": {hit("correctness", g("c4", 0), 12), hit("correctness", g("c4", 1), 22), extra("d.go", 30, "warn")}},
		"security": {"a.go": {hit("security", g("c1", 2), 35)}, "c.go": {hit("security", g("c3", 1), 25)}, "e.go": {extra("e.go", 3, "warn")}},
	}
	srv := modelfake.New("sk-eval", plannedModel(p))
	defer srv.Close()
	c, err := eval.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	opts := modelOptions(t, srv)
	if _, err := eval.Run(context.Background(), c, opts); err == nil || !strings.Contains(err.Error(), "judge") {
		t.Fatalf("a defect without a path and no judge: %v", err)
	}
	rt, err := openai.New(openai.Options{BaseURL: srv.URL, Token: srv.Token, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	opts.Judge = eval.ModelJudge{Runtime: rt, Name: "fake-judge"}
	before := len(srv.Requests())
	rep, err := eval.Run(context.Background(), c, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkSummary(t, "overall", rep.Overall, want{10, 11, 7, 0.7, 7.0 / 11, f1(0.7, 7.0/11)})
	checkSummary(t, "correctness", lensSummary(t, rep, "correctness"), want{8, 8, 5, 5.0 / 8, 5.0 / 8, 5.0 / 8})
	checkSummary(t, "security", lensSummary(t, rep, "security"), want{2, 3, 2, 1, 2.0 / 3, f1(1, 2.0/3)})
	judged := 0
	for _, r := range srv.Requests()[before:] {
		if r.IsJudge() {
			judged++
			if r.Model != "fake-judge" {
				t.Errorf("judge model %q", r.Model)
			}
		}
	}
	j := rep.Judge
	if j == nil || judged == 0 || j.Calls != judged || j.Tokens != (eval.Tokens{Prompt: 100 * judged, Completion: 5 * judged, Total: 105 * judged}) {
		t.Fatalf("judge usage %+v, %d judge requests", j, judged)
	}
}

// TestRepositoryCase: a case can name revisions of a local repository, reviewed from their
// merge base like a pull request; the built-in runtime finds the committed token.
func TestRepositoryCase(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	writeFile(t, filepath.Join(dir, "app.sh"), "#!/bin/sh\necho hello\n")
	git("add", "-A")
	git("commit", "-qm", "Base")
	git("checkout", "-qb", "feature")
	writeFile(t, filepath.Join(dir, "app.sh"), "#!/bin/sh\nexport GITHUB_TOKEN=ghp_"+"sMehGAkWvj7FAc9QeWJKY40uvSwMFLZDe1f8\necho hello\n")
	git("commit", "-qam", "Add a token")
	git("checkout", "-q", "main")
	writeFile(t, filepath.Join(dir, "other.txt"), "main moved on\n")
	git("add", "-A")
	git("commit", "-qm", "Main moves on")
	manifest := filepath.Join(t.TempDir(), "corpus.yml")
	writeFile(t, manifest, "version: 1\ncases:\n  - id: token\n    repo: "+dir+"\n    base: main\n    head: feature\n    merge_base: true\n"+
		"    golden:\n      - {path: app.sh, start_line: 2, severity: critical, lens: security, description: a token is committed}\n")
	c, err := eval.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eval.Run(context.Background(), c, builtinOptions())
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results[0]
	if res.Matched != 1 || rep.Window != eval.DefaultWindow {
		t.Fatalf("result %+v", res)
	}
	for _, f := range res.Reported {
		if f.Path == "other.txt" {
			t.Errorf("the change of main was reviewed: %+v", f)
		}
	}
}

// TestLinesPastTheEnd: a model that names the right files but lines they do not have finds
// nothing. Whether such findings are published or withdrawn before publication, none matches a
// defect, and every one published counts as a false positive.
func TestLinesPastTheEnd(t *testing.T) {
	cases := synthCorpus()
	p := map[string]plan{"correctness": {}, "security": {}}
	for _, c := range cases {
		for _, gd := range c.golden {
			p[gd.Lens][gd.Path] = append(p[gd.Lens][gd.Path], hit(gd.Lens, gd, fileLines+gd.StartLine))
		}
	}
	srv := modelfake.New("sk-eval", plannedModel(p))
	defer srv.Close()
	c, err := eval.Load(writeCorpus(t, cases))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eval.Run(context.Background(), c, modelOptions(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	o := rep.Overall
	if o.Golden != 10 || o.Matched != 0 || o.Missed != 10 || o.Unmatched != o.Findings || o.Recall == nil || *o.Recall != 0 ||
		(o.Precision != nil && *o.Precision != 0) {
		t.Fatalf("overall %+v recall %v precision %v", o.Counts, o.Recall, o.Precision)
	}
}
