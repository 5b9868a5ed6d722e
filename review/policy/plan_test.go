package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
)

func mustPlanFile(t testing.TB, path string) Plan {
	t.Helper()
	pol, err := ReadPolicyFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	p, err := NewPlan(pol)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// The digests below are the ones the vectors' README records (three of them are asserted by
// YAGA's own tests or documentation).
func TestPlanDigestGolden(t *testing.T) {
	tests := []struct{ file, digest string }{
		{"examples/agent-review-policy.toml", "8fab465b0b8ea9bf25e0c993387673ddde272405e885573f2094e09611c02cf0"},
		{"derived/test_cli-single-lens-policy.toml", "7b789548c44c6bb030a7a82bfd378f0a2a225facae6c0024ed872709f4ef34dd"},
		{"derived/test_cli-template-policy.toml", "c11734dc01020bbd3a358a9847b6bdc05a1abfec857172888d3e0061fca489d1"},
		{"derived/test_results-three-lens-policy.toml", "9adadb5cca1a70c8fc2958c3c786551772fc588764d6d10d2842a03572f1edeb"},
		{"derived/test_plan-publication-policy.toml", "0a6ce521e1f1eff2207afc508bfe38ae1dfc8aa42749dad4924363ad97bd298e"},
		{"derived/test_agent_review_cli-policy.toml", "38fbf2cb869859453596bbf906ba861b82a31828387c005b43ef39ef670aa410"},
		{"derived/any-required-policy.toml", "70cd65fa1fe376061c21c588d5dccc10bbaf94ac66c36e3aaab5f488890276e4"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := mustPlanFile(t, filepath.Join("testdata", "yaga", tt.file))
			if p.Digest() != tt.digest {
				t.Errorf("digest %s, want %s", p.Digest(), tt.digest)
			}
			sum := sha256.Sum256(p.CanonicalJSON())
			if hex.EncodeToString(sum[:]) != p.Digest() {
				t.Error("Digest is not the SHA-256 of CanonicalJSON")
			}
		})
	}
}

func TestCanonicalJSONOfExample(t *testing.T) {
	p := mustPlanFile(t, filepath.Join("testdata", "yaga", "examples", "agent-review-policy.toml"))
	want := `{"aggregation":"all-required","lenses":[` +
		`{"instruction":"Review behavior, tests, and compatibility regressions.","name":"correctness","outcome":"review","preset":"codex","publication":"inline","required":true},` +
		`{"instruction":"Review trust boundaries, permissions, and untrusted input handling.","name":"security","outcome":"review","preset":"codex","publication":"review","required":true},` +
		`{"instruction":"Review public documentation and developer ergonomics.","name":"documentation","outcome":"advisory","preset":"docs","publication":"comment","required":false}],"version":1}`
	if got := string(p.CanonicalJSON()); got != want {
		t.Errorf("canonical JSON:\n%s\nwant:\n%s", got, want)
	}
	if len(want) != 574 {
		t.Fatalf("reference length is 574, test literal has %d", len(want))
	}
}

// The same policy written as .asdd.yml, .yaga.toml and pyproject.toml must give one digest. The
// instruction mixes everything the canonical encoding treats specially. The expected canonical
// bytes and digest were computed with Python's json.dumps(ensure_ascii=False, sort_keys=True,
// separators=(",", ":")) and hashlib.
func TestSameDigestAcrossFormats(t *testing.T) {
	const toml = `
[agent-review]
version = 1
aggregation = "any-required"
required = ["security"]

[agent-review.agents.security]
preset = "codex"
instruction = "Prüfe <script>&amp; \"quoted\" \\ back\u2028line\u2029para\u0001ctl\u001f\u007f\ttab\nnl – 日本 😀"
outcome = "review"
publication = "check"

[agent-review.agents.docs]
preset = "docs-2"
instruction = "Plain."
outcome = "advisory"
publication = "reaction"
`
	pyproject := "[project]\nname = \"x\"\n\n" + strings.NewReplacer("[agent-review", "[tool.yaga.agent-review").Replace(toml)
	const yaml = `
runtime: builtin
agent_review:
  version: 1
  aggregation: any-required
  required: [security]
  agents:
    security:
      preset: codex
      instruction: "Prüfe <script>&amp; \"quoted\" \\ back\u2028line\u2029para\x01ctl\x1f\x7f\ttab\nnl – 日本 😀"
      outcome: review
      publication: check
    docs:
      preset: docs-2
      instruction: Plain.
      outcome: advisory
      publication: reaction
`
	const wantDigest = "a7601e97b7e368400b13763759fcc7cf22992768adaf3eb99a0d978d52dbd484"
	wantCanon := "{\"aggregation\":\"any-required\",\"lenses\":[{\"instruction\":\"Prüfe <script>&amp; \\\"quoted\\\" \\\\ back\u2028line\u2029para\\u0001ctl\\u001f\x7f\\ttab\\nnl – 日本 😀\",\"name\":\"security\",\"outcome\":\"review\",\"preset\":\"codex\",\"publication\":\"check\",\"required\":true},{\"instruction\":\"Plain.\",\"name\":\"docs\",\"outcome\":\"advisory\",\"preset\":\"docs-2\",\"publication\":\"reaction\",\"required\":false}],\"version\":1}"

	dir := t.TempDir()
	files := map[string]string{".yaga.toml": toml, "pyproject.toml": pyproject, ".asdd.yml": yaml}
	for name, body := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			p := mustPlanFile(t, path)
			if got := string(p.CanonicalJSON()); got != wantCanon {
				t.Errorf("canonical JSON:\n%q\nwant:\n%q", got, wantCanon)
			}
			if p.Digest() != wantDigest {
				t.Errorf("digest %s, want %s", p.Digest(), wantDigest)
			}
		})
	}
}

func TestExampleInEveryFormat(t *testing.T) {
	const yaml = `agent_review:
  version: 1
  required: [correctness, security]
  agents:
    correctness:
      preset: codex
      instruction: Review behavior, tests, and compatibility regressions.
      publication: inline
    security:
      preset: codex
      instruction: Review trust boundaries, permissions, and untrusted input handling.
    documentation:
      preset: docs
      instruction: Review public documentation and developer ergonomics.
      outcome: advisory
      publication: comment
`
	r, err := config.ParseRepo(".asdd.yml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(r.Policy)
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest() != "8fab465b0b8ea9bf25e0c993387673ddde272405e885573f2094e09611c02cf0" {
		t.Errorf("digest %s", p.Digest())
	}
}

func TestNewPlanRejectsInvalidPolicies(t *testing.T) {
	base := config.DefaultPolicy
	tests := []struct {
		name   string
		mutate func(*config.Policy)
	}{
		{"version", func(p *config.Policy) { p.Version = 2 }},
		{"aggregation", func(p *config.Policy) { p.Aggregation = "some" }},
		{"no lenses", func(p *config.Policy) { p.Lenses = nil }},
		{"no required", func(p *config.Policy) { p.Required = nil }},
		{"bad name", func(p *config.Policy) { p.Lenses[0].Name = "Bad" }},
		{"bad preset", func(p *config.Policy) { p.Lenses[0].Preset = "" }},
		{"duplicate", func(p *config.Policy) { p.Lenses[1].Name = p.Lenses[0].Name }},
		{"blank instruction", func(p *config.Policy) { p.Lenses[0].Instruction = " \u2028\x1c" }},
		{"NUL instruction", func(p *config.Policy) { p.Lenses[0].Instruction = "a\x00b" }},
		{"oversized instruction", func(p *config.Policy) { p.Lenses[0].Instruction = strings.Repeat("é", 2049) }},
		{"required advisory", func(p *config.Policy) { p.Required = append(p.Required, "tests") }},
		{"required unknown", func(p *config.Policy) { p.Required = []string{"ghost"} }},
		{"required repeated", func(p *config.Policy) { p.Required = []string{"security", "security"} }},
		{"bad publication", func(p *config.Policy) { p.Lenses[2].Publication = "email" }},
		{"bad outcome", func(p *config.Policy) { p.Lenses[2].Outcome = "maybe" }},
	}
	if _, err := NewPlan(base()); err != nil {
		t.Fatalf("default policy: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			tt.mutate(&p)
			_, err := NewPlan(p)
			if err == nil {
				t.Fatal("accepted")
			}
			if AsError(err).Kind != KindConfiguration {
				t.Errorf("kind %s", AsError(err).Kind)
			}
		})
	}
}

func TestTemplateEvaluatesPending(t *testing.T) {
	p := mustPlanFile(t, filepath.Join("testdata", "yaga", "derived", "test_results-three-lens-policy.toml"))
	doc := RenderTemplate(p)
	r, err := LoadReceipt("template.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Evaluate(p, r)
	if err != nil {
		t.Fatal(err)
	}
	if ev.State != Pending || ev.Passed() {
		t.Errorf("state %s", ev.State)
	}
	if strings.Contains(doc, "summary") {
		t.Error("template must not carry summaries")
	}
}

// The default policy's digest is part of every receipt made without a configuration; changing
// the default policy invalidates them. The value was computed independently with Python's json
// and hashlib from the same lenses.
func TestDefaultPolicyDigest(t *testing.T) {
	p, err := NewPlan(config.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest() != "fa50ae8e62a7a2afce82e0d642ee5bf6e927e67a55fff4de552c576238ea2696" {
		t.Errorf("default policy digest changed: %s", p.Digest())
	}
	names := []string{}
	for _, it := range p.Items {
		names = append(names, it.Name+"/"+it.Role()+"/"+it.Publication)
	}
	if strings.Join(names, ",") != "security/required/review,correctness/required/inline,tests/advisory/comment" {
		t.Errorf("%v", names)
	}
}

func TestPerPathKeysEnterTheDigestOnlyWhenSet(t *testing.T) {
	base := config.Policy{Version: 1, Aggregation: config.AggregationAllRequired, Required: []string{"sec"},
		Lenses: []config.Lens{{Name: "sec", Preset: "security", Instruction: "Look.", Outcome: config.OutcomeReview, Publication: config.PublicationReview}}}
	plain, err := NewPlan(base)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain.CanonicalJSON()), "path") {
		t.Fatalf("a policy without per-path keys has them in its plan: %s", plain.CanonicalJSON())
	}
	withPaths := base
	withPaths.Lenses = []config.Lens{base.Lenses[0]}
	withPaths.Lenses[0].Paths = []string{"api/**"}
	a, err := NewPlan(withPaths)
	if err != nil {
		t.Fatal(err)
	}
	withInstr := base
	withInstr.Lenses = []config.Lens{base.Lenses[0]}
	withInstr.Lenses[0].PathInstructions = []config.PathInstruction{{Paths: []string{"api/**"}, Instruction: "Check authz."}}
	b, err := NewPlan(withInstr)
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest() == plain.Digest() || b.Digest() == plain.Digest() || a.Digest() == b.Digest() {
		t.Fatal("per-path keys do not change the digest")
	}
	want := `{"aggregation":"all-required","lenses":[{"instruction":"Look.","name":"sec","outcome":"review","path_instructions":[{"instruction":"Check authz.","paths":["api/**"]}],"preset":"security","publication":"review","required":true}],"version":1}`
	if got := string(b.CanonicalJSON()); got != want {
		t.Fatalf("canonical plan\n got %s\nwant %s", got, want)
	}
}
