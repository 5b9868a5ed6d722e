package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/internal/modelfake"
)

func runEvalCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"eval"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// evalCorpus writes a one-case corpus: a pull request adding x.go (30 lines) with four known
// defects, reviewed by one openai lens (the corpus's configuration).
func evalCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var p strings.Builder
	p.WriteString("diff --git a/x.go b/x.go\nnew file mode 100644\n--- /dev/null\n+++ b/x.go\n@@ -0,0 +1,30 @@\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&p, "+// line %d\n", i)
	}
	for name, body := range map[string]string{
		"fx/base/README.md": "base\n",
		"fx/change.patch":   p.String(),
		"policy.asdd.yml": "agent_review:\n  version: 1\n  required: [correctness]\n  agents:\n    correctness:\n" +
			"      preset: openai\n      instruction: Find logic errors.\n",
		"corpus.yml": "version: 1\nname: cli\nconfig: policy.asdd.yml\ncases:\n  - id: x\n    title: Add x\n    fixture: fx\n    golden:\n" +
			"      - {path: x.go, start_line: 5, severity: high, description: defect five}\n" +
			"      - {path: x.go, start_line: 15, severity: high, description: defect fifteen}\n" +
			"      - {path: x.go, start_line: 25, severity: high, description: defect twenty-five}\n" +
			"      - {path: x.go, start_line: 28, severity: medium, description: defect twenty-eight}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "corpus.yml")
}

// TestEvalCommand: three of four defects found and one remark on no defect: lensgate eval
// prints recall, precision and F1 of 0.750, the tokens the fake model reported and their cost,
// in the table and in the JSON report; with --judge, the judge confirms each match.
func TestEvalCommand(t *testing.T) {
	srv := modelfake.New("sk-cli", func(req modelfake.Request) modelfake.Reply {
		if req.IsJudge() {
			return modelfake.Reply{Content: modelfake.JudgeAnswer(true), PromptTokens: 200, CompletionTokens: 10}
		}
		fs := map[string][]modelfake.Finding{"correctness": {
			{Path: "x.go", Line: 5, Severity: "block", Title: "five", Message: "defect five"},
			{Path: "x.go", Line: 10, Severity: "warn", Title: "ten", Message: "a remark"},
			{Path: "x.go", Line: 16, Severity: "block", Title: "fifteen", Message: "defect fifteen"},
			{Path: "x.go", Line: 25, Severity: "warn", Title: "twenty-five", Message: "defect twenty-five"},
		}}
		return modelfake.Reply{Content: modelfake.ReviewAnswer(req.Lenses(), fs), PromptTokens: 4000, CompletionTokens: 300}
	})
	defer srv.Close()
	t.Setenv("ASDD_MODEL_URL", srv.URL)
	t.Setenv("ASDD_RUNTIME_TOKEN", srv.Token)
	t.Setenv("ASDD_MODEL", "fake-reviewer")
	corpus := evalCorpus(t)
	jsonOut := filepath.Join(t.TempDir(), "report.json")
	code, table, stderr := runEvalCLI(t, "--corpus", corpus, "--price-prompt", "2", "--price-completion", "10", "--window", "2", "--json-out", jsonOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// 4,000 prompt tokens at 2 per million and 300 completion tokens at 10: 0.0110.
	for _, row := range []string{
		"correctness  4  3  4  1  0.750  0.750  0.750  4.00  4300  0.0110",
		"overall  4  3  4  1  0.750  0.750  0.750  4.00  4300  0.0110",
		"x  4  3  4  1  failed",
	} {
		if !strings.Contains(squeezeSpaces(table), row) {
			t.Errorf("no row %q in\n%s", row, table)
		}
	}
	if !strings.Contains(stderr, "x: 3 of 4 known defect(s) found, 4 finding(s)") {
		t.Errorf("progress: %q", stderr)
	}
	raw, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Overall struct {
			Recall, Precision, F1 float64
			Cost                  float64
			Tokens                struct{ Prompt, Completion int }
		}
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if o := rep.Overall; o.Recall != 0.75 || o.Precision != 0.75 || o.F1 != 0.75 || o.Tokens.Prompt != 4000 || o.Tokens.Completion != 300 || o.Cost != 0.011 {
		t.Errorf("JSON overall %+v", o)
	}

	code, out, stderr := runEvalCLI(t, "--corpus", corpus, "--window", "2", "--judge", "--judge-model", "fake-judge", "--format", "json")
	if code != exitOK {
		t.Fatalf("--judge: exit %d: %s", code, stderr)
	}
	var judged struct {
		Judge struct {
			Model  string
			Calls  int
			Tokens struct{ Prompt int }
		}
		Overall struct{ Matched int }
	}
	if err := json.Unmarshal([]byte(out), &judged); err != nil {
		t.Fatal(err)
	}
	// Three candidate pairs, each confirmed.
	if j := judged.Judge; j.Model != "fake-judge" || j.Calls != 3 || j.Tokens.Prompt != 600 || judged.Overall.Matched != 3 {
		t.Errorf("judged report %+v", judged)
	}
}

func TestEvalCommandRejects(t *testing.T) {
	corpus := evalCorpus(t)
	t.Setenv("ASDD_MODEL_URL", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--corpus", filepath.Join(t.TempDir(), "none.yml")}, "read the corpus manifest"},
		{[]string{"--corpus", corpus, "--window=-1"}, "--window"},
		{[]string{"--corpus", corpus, "--price-prompt=-1"}, "prices"},
		{[]string{"--corpus", corpus, "--judge"}, "ASDD_MODEL_URL"},
	} {
		if code, _, stderr := runEvalCLI(t, c.args...); code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, stderr)
		}
	}
}

// TestEvalImportMartian: the importer writes a manifest lensgate eval reads, and names the
// repositories it could not find.
func TestEvalImportMartian(t *testing.T) {
	out := filepath.Join(t.TempDir(), "martian.yml")
	code, _, stderr := runEvalCLI(t, "import-martian", "--repos", t.TempDir(), "--out", out, "../../review/eval/testdata/martian/shop.json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "shop-12: ") || !strings.Contains(stderr, "2 case(s) with 4 golden comment(s)") {
		t.Errorf("stderr %q", stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "head: refs/pull/12/head") || !strings.Contains(string(data), "severity: critical") {
		t.Errorf("manifest:\n%s", data)
	}
}

// squeezeSpaces collapses runs of spaces to two, so a test can look for a table row.
func squeezeSpaces(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), "  ")
	}
	return strings.Join(lines, "\n")
}

// TestEvalMartianEndToEnd: golden comments imported from the benchmark's format are scored by
// the judge, against pull requests fetched as refs/pull/N/head of a local repository.
func TestEvalMartianEndToEnd(t *testing.T) {
	repos := t.TempDir()
	shop := filepath.Join(repos, "shop")
	if err := os.MkdirAll(shop, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, shop, "init", "-q", "-b", "main")
	writeTestFile(t, shop, "README.md", "shop\n")
	git(t, shop, "add", "-A")
	git(t, shop, "commit", "-qm", "Base")
	for _, pr := range []struct{ number, file, body string }{
		{"12", "checkout.go", "package shop\n\nfunc Total(lines []int, discount int) int {\n\treturn sum(lines) - discount\n}\n"},
		{"3", "accounts.go", "package shop\n\nfunc Impersonate(caller, customer string) bool {\n\treturn caller != \"\"\n}\n"},
	} {
		git(t, shop, "checkout", "-q", "-b", "pr"+pr.number, "main")
		writeTestFile(t, shop, pr.file, pr.body)
		git(t, shop, "add", "-A")
		git(t, shop, "commit", "-qm", "Pull request "+pr.number)
		git(t, shop, "update-ref", "refs/pull/"+pr.number+"/head", "HEAD")
		git(t, shop, "checkout", "-q", "main")
	}
	manifest := filepath.Join(t.TempDir(), "martian.yml")
	if code, _, stderr := runEvalCLI(t, "import-martian", "--repos", repos, "--repo", "example-org/shop-fork="+shop, "--out", manifest,
		"../../review/eval/testdata/martian/shop.json"); code != exitOK || strings.Contains(stderr, "has no") {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	// The reviewer flags the discount in checkout.go and the missing role check in accounts.go;
	// the judge says two texts describe the same defect when both speak of the same subject.
	srv := modelfake.New("sk-martian", func(req modelfake.Request) modelfake.Reply {
		if req.IsJudge() {
			known, reported := req.JudgeTexts()
			same := false
			for _, subject := range []string{"discount", "impersonat"} {
				same = same || strings.Contains(strings.ToLower(known), subject) && strings.Contains(strings.ToLower(reported), subject)
			}
			return modelfake.Reply{Content: modelfake.JudgeAnswer(same), PromptTokens: 400, CompletionTokens: 10}
		}
		var fs []modelfake.Finding
		switch diff := req.Diff(); {
		case strings.Contains(diff, "+++ b/checkout.go"):
			fs = append(fs, modelfake.Finding{Path: "checkout.go", Line: 4, Severity: "warn", Title: "Discount", Message: "The discount is taken after rounding."})
		case strings.Contains(diff, "+++ b/accounts.go"):
			fs = append(fs, modelfake.Finding{Path: "accounts.go", Line: 4, Severity: "block", Title: "Authorisation", Message: "Impersonation needs the support role."})
		}
		return modelfake.Reply{Content: modelfake.ReviewAnswer(req.Lenses(), map[string][]modelfake.Finding{"correctness": fs}), PromptTokens: 500, CompletionTokens: 40}
	})
	defer srv.Close()
	t.Setenv("ASDD_MODEL_URL", srv.URL)
	t.Setenv("ASDD_RUNTIME_TOKEN", srv.Token)
	t.Setenv("ASDD_MODEL", "fake")
	policy := writeTestFile(t, t.TempDir(), "policy.asdd.yml", "agent_review:\n  version: 1\n  required: [correctness]\n  agents:\n    correctness:\n"+
		"      preset: openai\n      instruction: Find logic errors.\n")
	code, out, stderr := runEvalCLI(t, "--corpus", manifest, "--config", policy, "--judge", "--format", "json")
	if code != exitOK {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	var rep struct {
		Overall struct {
			Golden, Findings, Matched int
			Recall, Precision         float64
		}
		Results []struct {
			ID      string
			Matched int
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if o := rep.Overall; o.Golden != 4 || o.Findings != 2 || o.Matched != 2 || o.Recall != 0.5 || o.Precision != 1 {
		t.Errorf("overall %+v", o)
	}
	if len(rep.Results) != 2 || rep.Results[0].ID != "shop-12" || rep.Results[0].Matched != 1 || rep.Results[1].Matched != 1 {
		t.Errorf("results %+v", rep.Results)
	}
}
