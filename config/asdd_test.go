package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ignoredKeys(r *Repo) []string {
	var out []string
	for _, k := range r.Ignored {
		out = append(out, k.Key)
	}
	return out
}

func TestParseRepoASDDExamples(t *testing.T) {
	t.Run("template", func(t *testing.T) {
		r, err := ParseRepo(".asdd.example.yml", readTestdata(t, "asdd", ".asdd.example.yml"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Runtime != "generic" || r.MergePosture != "advisory" || r.MaxActionsPerRun != 5 {
			t.Errorf("top level: %+v", r)
		}
		if r.Review != (Review{MaxDiffLines: 2000, TimeoutSeconds: 45, MaxChunks: 8, Quality: defaultReviewQuality()}) || !r.RequireSpec || r.MaxOpenPRsPerAuthor != 0 {
			t.Errorf("review/spec: %+v %v", r.Review, r.RequireSpec)
		}
		if !slices.Equal(r.ProtectedPaths, DefaultProtectedPaths()) || !slices.Equal(r.Lanes, DefaultLanes()) || !slices.Equal(r.TriageLabels, DefaultTriageLabels()) {
			t.Errorf("lists: %v %v %v", r.ProtectedPaths, r.Lanes, r.TriageLabels)
		}
		if r.Intake.SpecContext != "docs" || r.Claim.TTLHours != 168 || r.Audit.Sink != "none" || r.Models.Reviewer != "" {
			t.Errorf("sections: %+v %+v %+v", r.Intake, r.Claim, r.Audit)
		}
		if !r.PolicyDefaulted || !reflect.DeepEqual(r.Policy, DefaultPolicy()) {
			t.Errorf("policy: %+v", r.Policy)
		}
		want := []string{"standard_version", "models.developer", "models.test_author", "models.test_runner",
			"models.documentation", "models.interaction", "merge_reviewer", "agents", "intake", "identity",
			"claim", "contributor_review", "insights", "audit"}
		if got := ignoredKeys(r); !slices.Equal(got, want) {
			t.Errorf("ignored %v\nwant    %v", got, want)
		}
		if r.Ignored[0].Line != 6 {
			t.Errorf("standard_version line %d", r.Ignored[0].Line)
		}
	})
	t.Run("ASDD's own config", func(t *testing.T) {
		r, err := ParseRepo(".asdd.yml", readTestdata(t, "asdd", ".asdd.yml"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Models.Reviewer != "zai:glm@5.2" || r.Models.TestAuthor != "moonshotai:kimi@k2.6" {
			t.Errorf("models %+v", r.Models)
		}
		if r.Review.TimeoutSeconds != DefaultTimeoutSeconds || r.RequireSpec {
			t.Errorf("absent keys must take defaults: %+v require_spec=%v", r.Review, r.RequireSpec)
		}
		if !slices.Contains(r.ProtectedPaths, ".asdd.yml") || len(r.ProtectedPaths) != 13 {
			t.Errorf("protected %v", r.ProtectedPaths)
		}
		if ex, ok := r.Conventions["exempt_lanes"].([]any); !ok || len(ex) != 1 || ex[0] != "chore" {
			t.Errorf("conventions %v", r.Conventions)
		}
		if !slices.Contains(ignoredKeys(r), "conventions") {
			t.Error("conventions must be reported as ignored")
		}
	})
	t.Run("validation fixture", func(t *testing.T) {
		r, err := ParseRepo("dev-equals-tester.yml", readTestdata(t, "asdd", "dev-equals-tester.yml"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Models.Tester != "provider:model-x" || r.Models.Reviewer != "provider:model-y" {
			t.Errorf("%+v", r.Models)
		}
	})
}

func TestParseRepoDefaults(t *testing.T) {
	for _, body := range []string{"", "# only a comment\n", "---\n"} {
		r, err := ParseRepo("x.yml", []byte(body))
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		want := DefaultRepo()
		want.Source = "x.yml"
		if !reflect.DeepEqual(r, want) {
			t.Errorf("%q: %+v\nwant %+v", body, r, want)
		}
	}
	tests := []struct {
		yaml  string
		check func(*Repo) bool
	}{
		{"spec_tool: openspec\n", func(r *Repo) bool { return slices.Equal(r.SpecPaths, DefaultSpecPaths("openspec")) }},
		{"spec_tool: openspec\nspec_paths: [docs/x/*.md]\n", func(r *Repo) bool { return slices.Equal(r.SpecPaths, []string{"docs/x/*.md"}) }},
		{"lanes: []\n", func(r *Repo) bool { return slices.Equal(r.Lanes, DefaultLanes()) }},
		{"lanes: [govern, operate]\n", func(r *Repo) bool { return slices.Equal(r.Lanes, []string{"govern", "operate"}) }},
		{"triage_labels: []\n", func(r *Repo) bool { return len(r.TriageLabels) == 0 }},
		{"protected_paths: []\n", func(r *Repo) bool { return len(r.ProtectedPaths) == 0 }},
		{"review:\n  max_diff_lines: 0\n", func(r *Repo) bool { return r.Review.MaxDiffLines == 0 && r.Review.TimeoutSeconds == 45 }},
		{"review:\nruntime:\n", func(r *Repo) bool { return r.Review.MaxDiffLines == 2000 && r.Runtime == DefaultRuntime }},
		{"ignore_paths: [\"testdata/**\", \"**/fixtures/*.go\"]\n", func(r *Repo) bool { return len(r.IgnorePaths) == 2 }},
		{"max_open_prs_per_author: 3\nrequire_spec: true\nmerge_posture: earned-automerge\n", func(r *Repo) bool {
			return r.MaxOpenPRsPerAuthor == 3 && r.RequireSpec && r.MergePosture == "earned-automerge"
		}},
		{"models:\n  reviewer: \"acme:model@1\"\n", func(r *Repo) bool { return r.Models.Reviewer == "acme:model@1" && len(r.Ignored) == 0 }},
		{"base: &b\n  max_diff_lines: 10\nreview: *b\n", nil}, // "base" is unknown: anchors do not create keys
	}
	for _, tt := range tests {
		r, err := ParseRepo("x.yml", []byte(tt.yaml))
		if tt.check == nil {
			if err == nil {
				t.Errorf("%q accepted", tt.yaml)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.yaml, err)
			continue
		}
		if !tt.check(r) {
			t.Errorf("%q: %+v", tt.yaml, r)
		}
	}
}

// want describes one expected problem: its line, and substrings of its message and hint.
type want struct {
	line      int
	msg, hint string
}

func TestParseRepoProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []want
	}{
		{"top-level typo", "runtime: builtin\nmerge_posure: advisory\n", []want{{2, `unknown key "merge_posure"`, `did you mean "merge_posture"?`}}},
		{"nested typo", "review:\n  max_dif_lines: 10\n", []want{{2, `unknown key "review.max_dif_lines"`, `did you mean "review.max_diff_lines"?`}}},
		{"key in the wrong section", "timeout_seconds: 10\n", []want{{1, `unknown key "timeout_seconds"`, `"review.timeout_seconds"`}}},
		{"far-off key", "completely_unrelated: 1\n", []want{{1, `unknown key "completely_unrelated"`, "docs/configuration.md"}}},
		{"hyphenated section", "agent-review: {}\n", []want{{1, `unknown key "agent-review"`, `did you mean "agent_review"?`}}},
		{"merge key", "review:\n  <<: {max_diff_lines: 10}\n  timeout_seconds: 5\n", []want{{2, "YAML merge keys (<<) are not supported", "write the keys out"}}},
		{"wrong types", "require_spec: \"yes\"\nlanes: feature\nreview:\n  max_diff_lines: \"2000\"\nmodels: reviewer\n", []want{
			{1, "require_spec must be true or false, found a string", "without quotes"},
			{2, "lanes must be a list of strings, found a string", "a list"},
			{4, "review.max_diff_lines must be an integer, found a string", "whole number"},
			{5, "models must be a mapping, found a string", ""},
		}},
		{"float where int", "max_open_prs_per_author: 1.5\n", []want{{1, "must be an integer, found a float", ""}}},
		{"bad list item", "triage_labels:\n  - bug\n  - 3\n  - \"\"\n", []want{{3, "triage_labels[1] must be a non-empty string, found an integer", ""}, {4, "triage_labels[2]", ""}}},
		{"enum", "merge_posture: advisry\nspec_tool: openspek\n", []want{
			{1, `merge_posture: "advisry" is not an allowed value`, `did you mean "advisory"?`},
			{2, `spec_tool: "openspek"`, `did you mean "openspec"?`},
		}},
		{"range", "review:\n  timeout_seconds: 0\nmax_actions_per_run: 0\nmax_open_prs_per_author: -1\n", []want{
			{2, "review.timeout_seconds: 0 is out of range", "from 1 to 3600"},
			{3, "max_actions_per_run: 0 is out of range", ""},
			{4, "max_open_prs_per_author: -1 is out of range", ""},
		}},
		{"huge int", "max_open_prs_per_author: 99999999999999999999999\n", []want{{1, "must be an integer, found a float", ""}}},
		{"globs", "spec_paths: [\"../secret/*.md\", \"docs/a b.md\"]\nignore_paths: [\"/etc/*\"]\nprotected_paths: [\"a/../b\"]\n", []want{
			{1, `spec_paths[0]: "../secret/*.md" is not valid`, "never '..'"},
			{1, `spec_paths[1]`, ""},
			{2, `ignore_paths[0]`, "repository-relative"},
			{3, `protected_paths[0]`, ""},
		}},
		{"runtime name", "runtime: \"../bin/sh\"\n", []want{{1, `runtime: "../bin/sh" is not valid`, "adapter name"}}},
		{"duplicate key", "runtime: a\nruntime: b\n", []want{{2, `key "runtime" is repeated (first defined on line 1)`, ""}}},
		{"syntax error", "runtime: builtin\nlanes: [a, b\n", []want{{1, "YAML syntax error", "indentation"}}},
		{"tab indentation", "review:\n\tmax_diff_lines: 1\n", []want{{2, "YAML syntax error", ""}}},
		{"root not a mapping", "- a\n- b\n", []want{{1, "must be a mapping", ""}}},
		{"timestamp", "runtime: 2026-01-01\n", []want{{1, "runtime must be a string, found an unsupported value", "quote"}}},
		{"not UTF-8", "runtime: \xff\n", []want{{0, "not valid UTF-8", ""}}},
		{"policy problems all reported", `agent_review:
  version: 2
  aggregation: all-requird
  required: [security, docs, ghost, security]
  extra: 1
  agents:
    security:
      preset: Codex
      instruction: "  "
      pubilcation: inline
    docs:
      preset: docs
      instruction: Review docs.
      outcome: advisory
    Bad_Name:
      preset: x
      instruction: y
`, []want{
			{2, "agent_review.version must be integer 1", "version: 1"},
			{3, "agent_review.aggregation is invalid", `did you mean "all-required"?`},
			{4, "agent_review.required lens docs must have outcome review", ""},
			{4, "agent_review.required names unknown lens ghost", "defined lenses: security, docs, Bad_Name"},
			{4, "agent_review.required repeats security", ""},
			{5, "agent_review has unknown key extra", ""},
			{8, "agent_review.agents.security.preset is invalid", ""},
			{9, "agent_review.agents.security.instruction is required", ""},
			{10, "agent_review.agents.security has unknown key pubilcation", `did you mean "publication"?`},
			{15, "agent_review lens name is invalid", "lower-case"},
		}},
		{"policy without agents", "agent_review:\n  version: 1\n  required: [a]\n", []want{
			{1, "agent_review.agents must be a nonempty table", ""},
		}},
		{"policy null", "agent_review:\n", []want{{1, "agent_review must be a table", ""}}},
		{"instruction oversized", "agent_review:\n  version: 1\n  required: [a]\n  agents:\n    a:\n      preset: p\n      instruction: \"" + strings.Repeat("x", 4097) + "\"\n", []want{
			{7, "agent_review.agents.a.instruction is oversized or unsafe", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRepo("c.yml", []byte(tt.yaml))
			probs, ok := err.(Problems)
			if !ok {
				t.Fatalf("error %v (%T), want Problems", err, err)
			}
			if len(probs) != len(tt.want) {
				t.Fatalf("%d problems, want %d:\n%s", len(probs), len(tt.want), probs.Error())
			}
			for i, w := range tt.want {
				p := probs[i]
				if p.File != "c.yml" || p.Line != w.line || !strings.Contains(p.Message, w.msg) || !strings.Contains(p.Hint, w.hint) {
					t.Errorf("problem %d = %s\nwant line %d, message ~ %q, hint ~ %q", i, p, w.line, w.msg, w.hint)
				}
				if p.Hint == "" {
					t.Errorf("problem %d has no hint: %s", i, p)
				}
			}
		})
	}
}

func TestParseRepoBounds(t *testing.T) {
	t.Run("alias expansion", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
		for i := 1; i < 9; i++ {
			fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
		}
		_, err := ParseRepo("bomb.yml", []byte(b.String()))
		if err == nil || !strings.Contains(err.Error(), "expands to more than") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("nesting", func(t *testing.T) {
		doc := strings.Repeat("[", 200) + strings.Repeat("]", 200)
		_, err := ParseRepo("deep.yml", []byte("conventions: {x: "+doc+"}\n"))
		if err == nil || !strings.Contains(err.Error(), "nested deeper") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("size", func(t *testing.T) {
		_, err := ParseRepo("big.yml", []byte("# "+strings.Repeat("x", MaxRepoFileBytes)))
		if err == nil || !strings.Contains(err.Error(), "exceeds") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestCheckRepoKeepsIgnoredWithProblems(t *testing.T) {
	r, probs := CheckRepo("c.yml", []byte("standard_version: \"0.1\"\nruntim: x\nclaim:\n  ttl_hours: 2\n"))
	if len(probs) != 1 || probs[0].Line != 2 {
		t.Fatalf("%v", probs)
	}
	if got := ignoredKeys(r); !slices.Equal(got, []string{"standard_version", "claim"}) {
		t.Errorf("%v", got)
	}
}

func TestKeyPaths(t *testing.T) {
	keys := KeyPaths()
	for k, ignored := range map[string]bool{
		"runtime": false, "models.reviewer": false, "review.max_diff_lines": false, "review.timeout_seconds": false,
		"protected_paths": false, "ignore_paths": false, "triage_labels": false, "require_spec": false,
		"spec_paths": false, "lanes": false, "max_open_prs_per_author": false, "merge_posture": false,
		"agent_review": false, "models.developer": true, "conventions": true, "audit.sink_repo": true,
		"dev_council": true, "review_override_owners": true, "merge_reviewer": true,
	} {
		got, ok := keys[k]
		if !ok || got != ignored {
			t.Errorf("%s: present=%v ignored=%v, want ignored=%v", k, ok, got, ignored)
		}
	}
}

func TestNearest(t *testing.T) {
	cands := []string{"preset", "instruction", "outcome", "publication"}
	for in, want := range map[string]string{"pubilcation": "publication", "instrucion": "instruction", "Preset": "preset", "zzz": "", "out": ""} {
		if got := nearest(in, cands); got != want {
			t.Errorf("nearest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseRepoSingleDocument(t *testing.T) {
	_, err := ParseRepo("c.yml", []byte("runtime: builtin\n---\nruntime: other\n"))
	probs, ok := err.(Problems)
	if !ok || len(probs) != 1 || !strings.Contains(probs[0].Message, "more than one YAML document") || probs[0].Line != 2 {
		t.Fatalf("got %v", err)
	}
	if _, err := ParseRepo("c.yml", []byte("---\nruntime: builtin\n...\n")); err != nil {
		t.Fatalf("one explicit document: %v", err)
	}
}

func TestParseRepoProblemsBounded(t *testing.T) {
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "unknown_key_with_a_rather_long_name_number_%06d_and_more_text_here: 1\n", i)
	}
	_, err := ParseRepo("many.yml", []byte(b.String()))
	probs, ok := err.(Problems)
	if !ok || len(probs) != maxProblems+1 || !strings.Contains(probs[maxProblems].Message, "more problems follow") {
		t.Fatalf("%d problems", len(probs))
	}
}

// TestModelLimitsAndIndependentLens: the model keys of lensgate and a lens's independent flag
// are read from .asdd.yml, with their defaults; a YAGA file keeps YAGA's lens keys.
func TestModelLimitsAndIndependentLens(t *testing.T) {
	def := DefaultRepo()
	if def.Models.MaxTokensPerReview != 200_000 || strings.Join(def.Models.ExcludePaths, ",") != ".env*,*.pem,*.key,id_rsa*,*.p12" {
		t.Fatalf("defaults %+v", def.Models)
	}
	yml := "models:\n  max_tokens_per_review: 5000\n  exclude_paths: [\"secrets/**\"]\nagent_review:\n  version: 1\n  required: [quality]\n" +
		"  agents:\n    quality:\n      preset: house\n      instruction: Find needless complexity.\n      independent: true\n" +
		"    style:\n      preset: house\n      instruction: Check naming.\n      outcome: advisory\n"
	cfg, err := ParseRepo(".asdd.yml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Models.MaxTokensPerReview != 5000 || strings.Join(cfg.Models.ExcludePaths, ",") != "secrets/**" {
		t.Fatalf("models %+v", cfg.Models)
	}
	q, _ := cfg.Policy.Lens("quality")
	s, _ := cfg.Policy.Lens("style")
	if !q.Independent || s.Independent {
		t.Fatalf("independent: quality %v, style %v", q.Independent, s.Independent)
	}
	if _, err := ParseRepo(".asdd.yml", []byte(strings.Replace(yml, "independent: true", "independent: yes-please", 1))); err == nil ||
		!strings.Contains(err.Error(), "independent must be true or false") {
		t.Fatalf("a non-boolean independent: %v", err)
	}
	toml := "[agent-review]\nversion = 1\nrequired = [\"q\"]\n[agent-review.agents.q]\npreset = \"x\"\ninstruction = \"y\"\nindependent = true\n"
	if _, err := ParsePolicyFile(".yaga.toml", []byte(toml)); err == nil {
		t.Fatal("a YAGA file accepted the .asdd.yml-only key independent")
	}
}

// TestPerPathLensKeys: paths and path_instructions are read from .asdd.yml, checked like every
// other glob, and refused in a YAGA file, whose lens keys stay YAGA's.
func TestPerPathLensKeys(t *testing.T) {
	yml := "agent_review:\n  version: 1\n  required: [api]\n  agents:\n    api:\n      preset: security\n      instruction: Review the API.\n" +
		"      paths: [\"services/api/**\"]\n      path_instructions:\n        - paths: [\"**/*_handler.go\"]\n          instruction: Check authorisation.\n"
	cfg, err := ParseRepo(".asdd.yml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := cfg.Policy.Lens("api")
	if !slices.Equal(l.Paths, []string{"services/api/**"}) || len(l.PathInstructions) != 1 ||
		l.PathInstructions[0].Instruction != "Check authorisation." || !slices.Equal(l.PathInstructions[0].Paths, []string{"**/*_handler.go"}) {
		t.Fatalf("lens %+v", l)
	}
	for _, bad := range []struct{ from, to, want string }{
		{`["services/api/**"]`, `["../etc/**"]`, "unusable glob"},
		{`["services/api/**"]`, `[]`, "must be a list of 1 to"},
		{"instruction: Check authorisation.", "instruction: \"\"", "instruction is required"},
		{"          instruction: Check authorisation.", "          instruction: Check.\n          extra: 1", "unknown key"},
	} {
		_, err := ParseRepo(".asdd.yml", []byte(strings.Replace(yml, bad.from, bad.to, 1)))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s -> %s: %v, want %q", bad.from, bad.to, err, bad.want)
		}
	}
	toml := "[agent-review]\nversion = 1\nrequired = [\"api\"]\n[agent-review.agents.api]\npreset = \"security\"\ninstruction = \"x\"\npaths = [\"a/**\"]\n"
	if _, err := ParseRepo(".yaga.toml", []byte(toml)); err == nil {
		t.Error("a YAGA file accepted lensgate's paths key")
	}
}

// A hint says "without quotes" only about a value that has quotes, and a duration given for a
// number of seconds is answered with the number to write.
func TestWrongTypeHintsDescribeWhatWasWritten(t *testing.T) {
	for _, tc := range []struct{ yaml, hint, not string }{
		{"review:\n  timeout_seconds: 45s\n", "write the number of seconds without a unit: timeout_seconds: 45", "quotes"},
		{"review:\n  timeout_seconds: \"2m\"\n", "timeout_seconds: 120", ""},
		{"review:\n  max_diff_lines: \"2000\"\n", "write a whole number without quotes", ""},
		{"review:\n  max_diff_lines: many\n", "write a whole number", "quotes"},
		{"require_spec: yes please\n", "write true or false", "quotes"},
	} {
		_, err := ParseRepo(".asdd.yml", []byte(tc.yaml))
		ps, ok := err.(Problems)
		if !ok || len(ps) != 1 {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if !strings.Contains(ps[0].Hint, tc.hint) || (tc.not != "" && strings.Contains(ps[0].Hint, tc.not)) {
			t.Errorf("%q: hint %q, want %q without %q", tc.yaml, ps[0].Hint, tc.hint, tc.not)
		}
	}
}

// The version hint is written in the syntax of the file it is about.
func TestVersionHintFollowsTheFileFormat(t *testing.T) {
	_, err := ParseRepo(".asdd.yml", []byte("agent_review:\n  version: \"1\"\n"))
	if ps, ok := err.(Problems); !ok || !strings.Contains(ps.Error(), "write version: 1") || strings.Contains(ps.Error(), "version = 1") {
		t.Errorf("yaml: %v", err)
	}
	_, err = ParseYAGATOML(".yaga.toml", []byte("[agent-review]\nversion = \"1\"\n"))
	if ps, ok := err.(Problems); !ok || !strings.Contains(ps[0].Hint, "write version = 1") {
		t.Errorf("toml: %v", err)
	}
}
