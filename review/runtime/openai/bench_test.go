package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// reference is the framing of the ASDD reference's prompts and request body, read from its
// generated vectors (testdata/asdd).
type reference struct {
	preamble   string // up to the first lens block
	dataHeader string // the "===== DATA TO REVIEW …" line
	system     string // the system message of its request body
	body       map[string]any
}

var (
	refLens  = regexp.MustCompile(`(?m)^===== LENS: `)
	refData  = regexp.MustCompile(`(?m)^===== DATA TO REVIEW[^\n]*\n`)
	refFence = regexp.MustCompile(`(?s)<<<ASDD_UNTRUSTED_DATA_([0-9a-f]{32})\n# PR #(\d+) \(head ([0-9a-f]+)\)\n## Title\n(.*?)\n## Body\n(.*?)\n## Diff\n` +
		"```diff\n(.*)```\nASDD_UNTRUSTED_DATA_([0-9a-f]{32})\n$")
)

func loadReference(t testing.TB) reference {
	t.Helper()
	main, err := os.ReadFile(filepath.Join("testdata", "asdd", "prompt-main.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := os.ReadFile(filepath.Join("testdata", "asdd", "request-body.first-attempt.json"))
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(rb, &body); err != nil {
		t.Fatal(err)
	}
	s := string(main)
	first := refLens.FindStringIndex(s)
	data := refData.FindStringIndex(s)
	if first == nil || data == nil {
		t.Fatal("the reference prompt has no lens or data block")
	}
	msgs := body["messages"].([]any)
	return reference{preamble: s[:first[0]], dataHeader: s[data[0]:data[1]], body: body,
		system: msgs[0].(map[string]any)["content"].(string)}
}

// prompt is the reference's prompt for lens blocks and the data, as its generic.sh assembles
// it (checked against its own vector in TestReferenceFramingIsExact).
func (r reference) prompt(lensBlocks []string, nonce string, pr int, head, title, body string, diff []byte) string {
	var b strings.Builder
	b.WriteString(r.preamble)
	for _, l := range lensBlocks {
		b.WriteString(l)
	}
	b.WriteString(r.dataHeader)
	fmt.Fprintf(&b, "<<<ASDD_UNTRUSTED_DATA_%s\n# PR #%d (head %s)\n## Title\n%s\n## Body\n%s\n## Diff\n```diff\n", nonce, pr, head, title, body)
	b.Write(diff)
	fmt.Fprintf(&b, "```\nASDD_UNTRUSTED_DATA_%s\n", nonce)
	return b.String()
}

// request is the reference's exact request body for one prompt.
func (r reference) request(model, prompt string) []byte {
	doc := map[string]any{
		"model": model, "temperature": 0, "response_format": r.body["response_format"],
		"messages": []any{map[string]any{"role": "system", "content": r.system}, map[string]any{"role": "user", "content": prompt}},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(doc)
	return buf.Bytes()
}

// TestReferenceFramingIsExact: the reference's prompt rebuilt from its parts is its vector,
// byte for byte, so the benchmark prices the reference's real framing.
func TestReferenceFramingIsExact(t *testing.T) {
	ref := loadReference(t)
	main, _ := os.ReadFile(filepath.Join("testdata", "asdd", "prompt-main.txt"))
	s := string(main)
	data := refData.FindStringIndex(s)
	var blocks []string
	idx := refLens.FindAllStringIndex(s[:data[0]], -1)
	for i, m := range idx {
		end := data[0]
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		blocks = append(blocks, s[m[0]:end])
	}
	m := refFence.FindStringSubmatch(s[data[1]:])
	if m == nil || m[1] != m[7] {
		t.Fatal("the reference's data block does not have the documented shape")
	}
	var pr int
	fmt.Sscan(m[2], &pr)
	if got := ref.prompt(blocks, m[1], pr, m[3], m[4], m[5], []byte(m[6])); got != s {
		t.Fatalf("rebuilt reference prompt differs from its vector")
	}
}

// benchDiff is a 500-line change over five Go files.
func benchDiff() []byte {
	var b bytes.Buffer
	for f := 0; f < 5; f++ {
		fmt.Fprintf(&b, "diff --git a/internal/store/part%d.go b/internal/store/part%d.go\nnew file mode 100644\n--- /dev/null\n+++ b/internal/store/part%d.go\n@@ -0,0 +1,95 @@\n", f, f, f)
		b.WriteString("+package store\n+\n+import (\n+\t\"context\"\n+\t\"fmt\"\n+)\n+\n")
		for i := 0; len(strings.Split(b.String(), "\n")) < (f+1)*100; i++ {
			fmt.Fprintf(&b, "+// Load%d reads record %d of the table and checks its version.\n", i, i)
			fmt.Fprintf(&b, "+func (s *Store) Load%d(ctx context.Context, id int64) (*Record, error) {\n", i)
			fmt.Fprintf(&b, "+\tr, err := s.db.QueryRow(ctx, \"select id, version from t%d where id = $1\", id)\n", i)
			b.WriteString("+\tif err != nil {\n+\t\treturn nil, fmt.Errorf(\"load: %w\", err)\n+\t}\n+\treturn r, nil\n+}\n+\n")
		}
	}
	lines := strings.SplitAfter(b.String(), "\n")
	return []byte(strings.Join(lines[:500], ""))
}

// spend is the tokens a review sends, counted the same way for both designs: lensgate's
// estimate (one token per four bytes) of every request body.
type spend struct {
	calls, bytes, tokens int
}

func (s *spend) add(body []byte) {
	s.calls++
	s.bytes += len(body)
	s.tokens += runtime.EstimateTokens(len(body))
}

var benchInstructions = map[string]string{
	"correctness": "Check that the change does what it claims: logic errors, unhandled errors, broken edge cases and incompatible changes to public behaviour.",
	"security":    "Look for changes that weaken a trust boundary: secrets in code, injection through untrusted input, missing authorisation checks, unsafe deserialisation and widened permissions.",
	"quality":     "Find needless complexity, duplication, dead or speculative code, defensive bloat and misleading names.",
	"tests":       "Note changed behaviour that no test exercises and tests that were removed or weakened.",
}

func benchSubject(diff []byte) *review.Subject {
	return &review.Subject{Kind: review.KindPullRequest, Owner: "o", Repo: "r", Number: 42, Title: "Store: typed loaders for every table",
		Body: "Adds one loader per table so callers stop building queries by hand.", Author: "alice",
		HeadSHA: strings.Repeat("2", 40), BaseSHA: strings.Repeat("1", 40), Diff: diff, Local: true, OpenPRsByAuthor: -1}
}

// lensgateSpend runs one review of the diff with the lenses through a local model and counts
// what was sent.
func lensgateSpend(tb testing.TB, diff []byte, names ...string) spend {
	srv := newModel(tb, func(req modelfake.Request) modelfake.Reply {
		var ls []string
		for _, m := range lensLine.FindAllStringSubmatch(req.System, -1) {
			ls = append(ls, m[1]+"=ok")
		}
		// The server counts the tokens of what it was sent, as a real one does.
		return replyCounted(reviewJSON("ok", ls...), len(req.Body)/4)
	})
	defer srv.Close()
	rt, err := openai.New(openai.Options{BaseURL: srv.URL, Token: srv.Token, Backoff: time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := config.DefaultRepo()
	cfg.Models.Reviewer = "m"
	cfg.Walkthrough.Enabled = false // the lens calls are measured; the walkthrough's call is its own
	cfg.Policy = config.Policy{Version: 1, Aggregation: config.AggregationAllRequired}
	for _, n := range names {
		cfg.Policy.Lenses = append(cfg.Policy.Lenses, config.Lens{Name: n, Preset: openai.Name, Instruction: benchInstructions[n],
			Outcome: config.OutcomeReview, Publication: config.PublicationReview, Required: true})
		cfg.Policy.Required = append(cfg.Policy.Required, n)
	}
	p := review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt), Logger: zerolog.Nop()})
	d, err := p.Review(context.Background(), benchSubject(diff), cfg)
	if err != nil || d.Gate.State != review.OutcomePassed {
		tb.Fatalf("review: %v %+v", err, d.Lenses)
	}
	var got spend
	for _, r := range srv.Requests() {
		got.add(r.Body)
	}
	return got
}

// referenceSpend is the reference's two calls on the same diff and lens instructions: the
// main call with the ordinary lenses, the adversarial call with quality.
func referenceSpend(ref reference, diff []byte, main, adversarial []string) spend {
	var s spend
	subj := benchSubject(diff)
	for _, group := range [][]string{main, adversarial} {
		var blocks []string
		for _, n := range group {
			blocks = append(blocks, "===== LENS: review-"+n+" =====\n"+benchInstructions[n]+"\n\n")
		}
		p := ref.prompt(blocks, strings.Repeat("ab", 16), subj.Number, subj.HeadSHA, subj.Title, subj.Body, diff)
		s.add(ref.request("m", p))
	}
	return s
}

var benchCases = []struct {
	name   string
	lenses []string
	calls  int
}{
	{"with-independent-pass", []string{"correctness", "security", "quality"}, 2},
	{"without-independent-pass", []string{"correctness", "security", "tests"}, 1},
}

// BenchmarkTokensSent prices a 500-line, 3-lens review: lensgate with the independent pass (a
// quality lens), lensgate without it (three ordinary lenses), and the ASDD reference's two
// calls on the same diff and lens instructions. Run with
// go test -run XXX -bench TokensSent ./review/runtime/openai/
func BenchmarkTokensSent(b *testing.B) {
	ref := loadReference(b)
	diff := benchDiff()
	refSpend := referenceSpend(ref, diff, []string{"correctness", "security"}, []string{"quality"})
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			var s spend
			for i := 0; i < b.N; i++ {
				s = lensgateSpend(b, diff, c.lenses...)
			}
			b.ReportMetric(float64(s.calls), "calls/review")
			b.ReportMetric(float64(s.tokens), "tokens/review")
			b.ReportMetric(float64(refSpend.tokens), "asdd-tokens/review")
			b.ReportMetric(float64(s.tokens)/float64(refSpend.tokens), "x-asdd")
		})
	}
}

// TestTokensSentWithinGoal holds the benchmark's goal: with the independent pass, a 500-line
// 3-lens review sends at most 1.1 times the tokens of the reference's two calls; without it,
// one call and well under the reference.
func TestTokensSentWithinGoal(t *testing.T) {
	ref := loadReference(t)
	diff := benchDiff()
	if n := strings.Count(string(diff), "\n"); n != 500 {
		t.Fatalf("the benchmark diff has %d lines", n)
	}
	refSpend := referenceSpend(ref, diff, []string{"correctness", "security"}, []string{"quality"})
	for _, c := range benchCases {
		s := lensgateSpend(t, diff, c.lenses...)
		ratio := float64(s.tokens) / float64(refSpend.tokens)
		t.Logf("%s: %d call(s), %d tokens (%d bytes); reference %d calls, %d tokens (%d bytes); %.3fx",
			c.name, s.calls, s.tokens, s.bytes, refSpend.calls, refSpend.tokens, refSpend.bytes, ratio)
		if s.calls != c.calls || ratio > 1.1 {
			t.Errorf("%s: %d calls (want %d), %.3fx the reference (goal <= 1.1)", c.name, s.calls, c.calls, ratio)
		}
	}
}
