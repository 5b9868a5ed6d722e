package eval_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/eval"
)

const shipped = "testdata/corpus/corpus.yml"

// TestShippedCorpusIsSound: every case of the shipped corpus names its source and licence,
// every patch applies to its base files, and every known defect is on lines the patch's result
// has.
func TestShippedCorpusIsSound(t *testing.T) {
	c, err := eval.Load(shipped)
	if err != nil {
		t.Fatal(err)
	}
	notice, err := os.ReadFile("testdata/corpus/NOTICE")
	if err != nil {
		t.Fatal(err)
	}
	clean := 0
	for _, k := range c.Cases {
		if k.Provenance == nil || k.Fixture == "" {
			t.Errorf("%s: no provenance or no fixture", k.ID)
			continue
		}
		if strings.HasPrefix(k.Provenance.Repository, "https://") && !bytes.Contains(notice, []byte(k.Provenance.Repository)) {
			t.Errorf("%s: %s is not in the NOTICE", k.ID, k.Provenance.Repository)
		}
		if len(k.Golden) == 0 {
			clean++
		}
		head := headFiles(t, filepath.Join(c.Dir(), k.Fixture))
		for _, g := range k.Golden {
			text, ok := head[g.Path]
			if !ok {
				t.Errorf("%s: %s is not a file of the change", k.ID, g.Path)
				continue
			}
			if n := strings.Count(text, "\n"); g.EndLine > n {
				t.Errorf("%s: %s has %d lines, the defect is at %d-%d", k.ID, g.Path, n, g.StartLine, g.EndLine)
			}
		}
	}
	if clean < 3 || len(c.Cases)-clean < 12 {
		t.Errorf("%d cases, %d clean", len(c.Cases), clean)
	}
}

// headFiles applies a fixture's patch to its base files, in memory as git would, by reading the
// patch's hunks: the result is what the review sees.
func headFiles(t *testing.T, fixture string) map[string]string {
	t.Helper()
	patch, err := os.ReadFile(filepath.Join(fixture, "change.patch"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range diff.Parse(patch) {
		base, err := os.ReadFile(filepath.Join(fixture, "base", filepath.FromSlash(f.Path())))
		if err != nil && f.OldPath != "" {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(base), "\n")
		var result []string
		next := 1 // the next base line not yet copied
		f.Walk(func(l diff.Line) bool {
			switch l.Kind {
			case ' ', '-':
				for ; next < l.Old; next++ {
					result = append(result, lines[next-1])
				}
				if lines[l.Old-1] != string(l.Text)+"\n" {
					t.Fatalf("%s: %s line %d does not match the patch", fixture, f.Path(), l.Old)
				}
				if l.Kind == ' ' {
					result = append(result, lines[l.Old-1])
				}
				next = l.Old + 1
			case '+':
				result = append(result, string(l.Text)+"\n")
			}
			return true
		})
		for ; next <= len(lines) && lines[next-1] != ""; next++ {
			result = append(result, lines[next-1])
		}
		out[f.Path()] = strings.Join(result, "")
	}
	return out
}

// TestShippedCorpusBuiltin: the built-in runtime finds only its own classes in the shipped
// corpus: the committed token, the pull request title expanded in a workflow script, the
// third-party actions not pinned to a commit and the outdated checkout action actionlint knows.
// It finds none of the logic defects.
func TestShippedCorpusBuiltin(t *testing.T) {
	c, err := eval.Load(shipped)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eval.Run(context.Background(), c, builtinOptions())
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, r := range rep.Results {
		for i, d := range r.Defects {
			if d.MatchedBy >= 0 {
				found = append(found, r.ID+"#"+string(rune('0'+i)))
			}
		}
	}
	want := []string{"prometheus-buf-lint-unpinned-actions#0", "prometheus-buf-lint-unpinned-actions#1",
		"synthetic-hardcoded-token#0", "synthetic-workflow-title-injection#0"}
	if !slices.Equal(found, want) {
		t.Errorf("found %v, want %v", found, want)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("built-in runtime over the shipped corpus:\n%s", table.String())
}

// TestShippedCorpusFakeModel: a fake model that finds every other known defect of the shipped
// corpus, in the defect's words, and makes one remark on each clean pull request gets exactly
// that recall and precision.
func TestShippedCorpusFakeModel(t *testing.T) {
	c, err := eval.Load(shipped)
	if err != nil {
		t.Fatal(err)
	}
	// By case title: the same file is changed by several cases.
	p := map[string]map[string][]modelfake.Finding{}
	hits, golden := map[string]int{}, map[string]int{}
	n, extras := 0, 0
	for _, k := range c.Cases {
		p[k.Title] = map[string][]modelfake.Finding{}
		for _, g := range k.Golden {
			golden[g.Lens]++
			if n%2 == 0 {
				p[k.Title][g.Lens] = append(p[k.Title][g.Lens], hit(g.Lens, g, g.StartLine))
				hits[g.Lens]++
			}
			n++
		}
		if len(k.Golden) == 0 {
			path, line := firstAdded(t, filepath.Join(c.Dir(), k.Fixture))
			p[k.Title]["correctness"] = append(p[k.Title]["correctness"], extra(path, line, "warn"))
			extras++
		}
	}
	srv := modelfake.New("sk-eval", func(req modelfake.Request) modelfake.Reply {
		for title, findings := range p {
			if strings.Contains(req.User, "## Title\n"+title+"\n") {
				return modelfake.Reply{Content: modelfake.ReviewAnswer(req.Lenses(), findings), PromptTokens: 1000, CompletionTokens: 50}
			}
		}
		t.Errorf("a review of no case of the corpus:\n%s", req.User)
		return modelfake.Reply{}
	})
	defer srv.Close()
	opts := modelOptions(t, srv)
	opts.Window = -1
	rep, err := eval.Run(context.Background(), c, opts)
	if err != nil {
		t.Fatal(err)
	}
	h, g := hits["correctness"]+hits["security"], golden["correctness"]+golden["security"]
	checkSummary(t, "overall", rep.Overall, want{g, h + extras, h, float64(h) / float64(g), float64(h) / float64(h+extras),
		f1(float64(h)/float64(g), float64(h)/float64(h+extras))})
	sec := float64(hits["security"])
	checkSummary(t, "security", lensSummary(t, rep, "security"), want{golden["security"], hits["security"], hits["security"],
		sec / float64(golden["security"]), 1, f1(sec/float64(golden["security"]), 1)})
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("fake model over the shipped corpus (every other defect found, one remark per clean pull request):\n%s", table.String())
}

// firstAdded is the first added line of a fixture's patch.
func firstAdded(t *testing.T, fixture string) (string, int) {
	t.Helper()
	patch, err := os.ReadFile(filepath.Join(fixture, "change.patch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range diff.Parse(patch) {
		line := 0
		f.Walk(func(l diff.Line) bool {
			if l.Kind == '+' {
				line = l.New
				return false
			}
			return true
		})
		if line > 0 {
			return f.Path(), line
		}
	}
	t.Fatalf("%s adds no line", fixture)
	return "", 0
}
