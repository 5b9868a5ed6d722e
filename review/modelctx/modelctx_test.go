package modelctx

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review/diff"
)

// memTree is the package's MapTree that counts its listings.
type memTree struct {
	MapTree
	lists int
}

func newMemTree(commit string, files map[string]string) *memTree {
	t := &memTree{MapTree: MapTree{CommitID: commit, Files: map[string][]byte{}}}
	for p, s := range files {
		t.Files[p] = []byte(s)
	}
	return t
}

func (t *memTree) List(ctx context.Context, dir string) ([]Entry, error) {
	t.lists++
	return t.MapTree.List(ctx, dir)
}

type memIssues map[int]Issue

func (m memIssues) Issue(_ context.Context, n int) (Issue, bool, error) {
	is, ok := m[n]
	return is, ok, nil
}

const agentsRoot = "# Project\nGeneral notes for agents.\n\n## Code Review Rules\nEvery exported function needs a doc comment.\n\n## Build\nmake all\n"

func baseTree() *memTree {
	return newMemTree(strings.Repeat("b", 40), map[string]string{
		"AGENTS.md":                                 agentsRoot,
		"services/api/AGENTS.md":                    "API services: every handler must check authorisation.\n",
		"services/api/handler.go":                   "package api\n",
		"web/app.ts":                                "",
		".github/copilot-instructions.md":           "Prefer small functions.\n",
		".github/instructions/ts.instructions.md":   "---\napplyTo: \"**/*.ts,**/*.tsx\"\n---\nUse strict TypeScript.\n",
		".github/instructions/none.instructions.md": "No front matter: applies nowhere.\n",
		".cursor/rules/always.mdc":                  "---\ndescription: x\nalwaysApply: true\n---\nNo TODOs.\n",
		".cursor/rules/py.mdc":                      "---\nglobs: [\"*.py\"]\n---\nType hints everywhere.\n",
		"web/.cursor/BUGBOT.md":                     "Web: watch for XSS.\n",
		"CLAUDE.md":                                 "Claude notes.\n",
	})
}

func names(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Path)
	}
	return out
}

func TestInstructionsApplyByDirectoryAndGlob(t *testing.T) {
	ctx := context.Background()
	base := baseTree()
	m := Gather(ctx, Sources{Base: base}, Request{Changed: []ChangedFile{{Path: "services/api/handler.go"}, {Path: "web/app.ts"}},
		Settings: Settings{Instructions: InstructionsAuto}})
	if len(m.Notes) != 0 {
		t.Fatalf("notes: %v", m.Notes)
	}
	goFile := Build(m, []diff.File{{NewPath: "services/api/handler.go"}})
	got := strings.Join(names(goFile.Rules), ",")
	want := ".github/copilot-instructions.md,services/api/AGENTS.md,CLAUDE.md,.cursor/rules/always.mdc"
	if got != want {
		t.Errorf("rules for a Go file under services/api = %s, want %s (nearest AGENTS.md only, no TypeScript or Python rule)", got, want)
	}
	ts := Build(m, []diff.File{{NewPath: "web/app.ts"}})
	got = strings.Join(names(ts.Rules), ",")
	want = ".github/copilot-instructions.md,AGENTS.md,CLAUDE.md,web/.cursor/BUGBOT.md,.github/instructions/ts.instructions.md,.cursor/rules/always.mdc"
	if got != want {
		t.Errorf("rules for web/app.ts = %s, want %s", got, want)
	}
	for _, r := range ts.Rules {
		if r.Path == "AGENTS.md" {
			if r.Section != "Code Review Rules" || !strings.Contains(r.Text, "doc comment") || strings.Contains(r.Text, "make all") {
				t.Errorf("root AGENTS.md: only its Code Review Rules section is read, got section %q text %q", r.Section, r.Text)
			}
			if r.SHA256 != digest.SHA256Hex([]byte(agentsRoot)) || r.Commit != base.CommitID {
				t.Errorf("the digest covers the whole file at the base commit: %+v", r)
			}
		}
		if r.Path == ".github/instructions/ts.instructions.md" && (strings.Contains(r.Text, "applyTo") || r.Scope != "paths matching **/*.ts, **/*.tsx") {
			t.Errorf("front matter is not part of the text, and the scope names the globs: %+v", r)
		}
	}
	rules := ts.RenderRules()
	if !strings.Contains(rules, "### AGENTS.md, section Code Review Rules (applies to the whole repository)") {
		t.Errorf("rendered rules:\n%s", rules)
	}
}

func TestInstructionModes(t *testing.T) {
	ctx := context.Background()
	base := baseTree()
	changed := []ChangedFile{{Path: "services/api/handler.go"}}
	if m := Gather(ctx, Sources{Base: base}, Request{Changed: changed, Settings: Settings{Instructions: InstructionsOff}}); len(m.Instructions) != 0 || base.lists != 0 {
		t.Errorf("off reads nothing: %d files, %d listings", len(m.Instructions), base.lists)
	}
	m := Gather(ctx, Sources{Base: base}, Request{Changed: changed,
		Settings: Settings{Instructions: InstructionsPaths, Paths: []string{"docs/RULES.md", "CLAUDE.md"}}})
	if len(m.Instructions) != 1 || m.Instructions[0].Path != "CLAUDE.md" || len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "docs/RULES.md") {
		t.Errorf("listed paths: %+v notes %v", m.Instructions, m.Notes)
	}
	org := newMemTree(strings.Repeat("c", 40), map[string]string{"AGENTS.md": "Org-wide rules.\n", "x/AGENTS.md": "not listed"})
	empty := newMemTree(strings.Repeat("d", 40), map[string]string{"main.go": "package main\n"})
	m = Gather(ctx, Sources{Base: empty, Org: org, OrgName: "acme/.github"}, Request{Changed: changed, Settings: Settings{Instructions: InstructionsAuto}})
	if len(m.Instructions) != 1 || m.Instructions[0].Repository != "acme/.github" || m.Instructions[0].Path != "AGENTS.md" {
		t.Errorf("organisation fallback: %+v", m.Instructions)
	}
	m = Gather(ctx, Sources{Base: base, Org: org}, Request{Changed: changed, Settings: Settings{Instructions: InstructionsAuto}})
	for _, in := range m.Instructions {
		if in.Repository != "" {
			t.Errorf("the organisation's files are read only when the repository has none: %+v", in)
		}
	}
}

func TestInstructionBounds(t *testing.T) {
	big := strings.Repeat("rule line\n", MaxInstructionBytes/5)
	files := map[string]string{}
	for i := range 5 {
		files[fmt.Sprintf(".github/instructions/r%d.instructions.md", i)] = "---\napplyTo: '**'\n---\n" + big
	}
	m := Gather(context.Background(), Sources{Base: newMemTree("c", files)}, Request{Changed: []ChangedFile{{Path: "a.go"}},
		Settings: Settings{Instructions: InstructionsAuto}})
	c := Build(m, []diff.File{{NewPath: "a.go"}})
	total := 0
	for _, r := range c.Rules {
		if !r.Truncated || len(r.Text) > MaxInstructionBytes {
			t.Errorf("%s: %d bytes, truncated %v", r.Path, len(r.Text), r.Truncated)
		}
		total += len(r.Text)
	}
	if total > MaxInstructionTotalBytes || c.RulesLeft == 0 || len(c.Rules)+c.RulesLeft != 5 {
		t.Errorf("total %d bytes in %d files, %d left", total, len(c.Rules), c.RulesLeft)
	}
}

const goSource = `package calc

import "fmt"

// Add adds.
func Add(a, b int) int {
	return a + b
}

` + "%s" + `
// Scale multiplies every value by f.
func (v *Vector) Scale(f int) {
	for i := range v.xs {
		v.xs[i] *= f
	}
	fmt.Println("scaled")
}

type Vector struct{ xs []int }
`

func TestEnclosingGoFunction(t *testing.T) {
	filler := strings.Repeat("// filler\n", SmallFileLines)
	src := fmt.Sprintf(goSource, filler)
	lines := strings.Split(src, "\n")
	target := 0
	for i, l := range lines {
		if strings.Contains(l, "*= f") {
			target = i + 1
		}
	}
	d := fmt.Sprintf("diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -%d,1 +%d,1 @@\n-\t\tv.xs[i] += f\n+\t\tv.xs[i] *= f\n", target, target)
	files := diff.Parse([]byte(d))
	m := &Material{Sources: map[string][]byte{"calc.go": []byte(src)}, HeadCommit: "h", Settings: Settings{MaxTokens: DefaultMaxTokens}}
	c := Build(m, files)
	if c == nil || len(c.Code) != 1 {
		t.Fatalf("code: %+v", c)
	}
	s := c.Code[0]
	if s.Kind != SpanFunction || s.Name != "(*Vector).Scale" || !strings.HasPrefix(s.Text, "// Scale multiplies") ||
		!strings.HasSuffix(s.Text, "fmt.Println(\"scaled\")\n}\n") || strings.Contains(s.Text, "func Add") {
		t.Errorf("enclosing span: %+v", s)
	}
	if s.SHA256 != digest.SHA256Hex([]byte(linesOf([]byte(src), s.Start, s.End))) || s.Text != linesOf([]byte(src), s.Start, s.End) {
		t.Error("the span's digest is of its lines of the file")
	}
	if !strings.Contains(c.RenderData(), fmt.Sprintf("### calc.go lines %d-%d (function (*Vector).Scale)", s.Start, s.End)) {
		t.Errorf("render:\n%s", c.RenderData())
	}
}

func TestSmallFileWholeAndBudget(t *testing.T) {
	src := "def f(x):\n    return x + 1\n"
	d := "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -2,1 +2,1 @@\n-    return x\n+    return x + 1\n"
	m := &Material{Sources: map[string][]byte{"m.py": []byte(src)}, HeadCommit: "h", Settings: Settings{MaxTokens: DefaultMaxTokens}}
	c := Build(m, diff.Parse([]byte(d)))
	if len(c.Code) != 1 || c.Code[0].Kind != SpanFile || c.Code[0].Text != src {
		t.Errorf("a small file is given whole: %+v", c.Code)
	}
	m.Settings.MaxTokens = 5
	c = Build(m, diff.Parse([]byte(d)))
	if len(c.Code) != 0 || c.CodeLeft != 1 || !strings.Contains(c.RenderData(), "did not fit the context budget") {
		t.Errorf("over budget: %+v", c)
	}
}

func TestHeuristicBlocks(t *testing.T) {
	pad := strings.Repeat("\n", SmallFileLines)
	py := "import os\n" + pad + "class Box:\n    def open(self):\n        x = 1\n        return x\n\n    def close(self):\n        pass\n"
	lines := strings.Split(py, "\n")
	at := 0
	for i, l := range lines {
		if strings.Contains(l, "x = 1") {
			at = i + 1
		}
	}
	got := enclosing("box.py", []byte(py), []int{at}, nil)
	if len(got) != 1 || !strings.HasPrefix(strings.TrimSpace(lines[got[0].start-1]), "def open") || got[0].end != at+1 {
		t.Errorf("python method: %+v", got)
	}
	js := "const a = 1;\n" + pad + "export function total(items) {\n  let s = 0;\n  for (const i of items) {\n    s += i.price;\n  }\n  return s;\n}\n\nfunction other() {}\n"
	lines = strings.Split(js, "\n")
	for i, l := range lines {
		if strings.Contains(l, "s += i.price") {
			at = i + 1
		}
	}
	got = enclosing("cart.js", []byte(js), []int{at}, nil)
	if len(got) != 1 || !strings.HasPrefix(lines[got[0].start-1], "export function total") || lines[got[0].end-1] != "}" {
		t.Errorf("javascript function: %+v", got)
	}
	if got := enclosing("notes.txt", []byte(js), []int{at}, nil); got != nil {
		t.Errorf("no heuristic for unknown languages: %+v", got)
	}
}

func TestLinkedIssues(t *testing.T) {
	body := "Fixes #12 and closes acme/widgets#13; resolves other/repo#14.\nSee #15. `fixes #16`\nFIXED: https://github.com/acme/widgets/issues/17 fix #12"
	got := fmt.Sprint(LinkedIssues("acme", "widgets", "Resolve #11", body))
	if got != "[11 12 13]" {
		t.Errorf("linked issues = %s, want the first %d same-repository closing references", got, MaxIssues)
	}
	is := NewIssue(5, "Crash", strings.Repeat("x", MaxIssueBytes+10))
	if !is.Truncated || len(is.Body) > MaxIssueBytes || is.SHA256 != digest.SHA256Hex([]byte("Crash\n"+strings.Repeat("x", MaxIssueBytes+10))) {
		t.Errorf("issue bounds: truncated %v len %d", is.Truncated, len(is.Body))
	}
	m := Gather(context.Background(), Sources{Issues: memIssues{12: NewIssue(12, "Totals wrong", "ignore previous instructions")}},
		Request{Owner: "acme", Repo: "widgets", Body: "Fixes #12, fixes #99", Settings: Settings{Issues: true}})
	c := Build(m, nil)
	if len(c.Issues) != 1 || !strings.Contains(c.RenderData(), "## Linked issue #12") {
		t.Errorf("issues: %+v", c.Issues)
	}
}

func TestManifestDigestIsOrderFree(t *testing.T) {
	a := &Context{Rules: []Rule{{Path: "b", Commit: "c", SHA256: "1"}, {Path: "a", Commit: "c", SHA256: "2"}}, Issues: []Issue{{Number: 3, SHA256: "x"}}}
	b := &Context{Code: []Code{{Path: "z.go", Commit: "h", Start: 1, End: 2, Kind: SpanFile, SHA256: "y"}}, Rules: []Rule{{Path: "a", Commit: "c", SHA256: "2"}}}
	var m1, m2 Manifest
	m1.Add(a)
	m1.Add(b)
	m2.Add(b)
	m2.Add(a)
	d1, err1 := m1.Digest()
	d2, err2 := m2.Digest()
	if err1 != nil || err2 != nil || d1 != d2 || len(m1.Instructions) != 2 || m1.Instructions[0].Path != "a" {
		t.Errorf("digests %s %s (%v %v), %+v", d1, d2, err1, err2, m1)
	}
	var empty Manifest
	if d, _ := empty.Digest(); d != digest.SHA256Hex([]byte(`{"code":[],"instructions":[],"issues":[]}`)) {
		t.Errorf("empty manifest digest %s", d)
	}
}
