package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
)

func TestDoctorRefusesPresetsTheBuiltinRuntimeCannotReview(t *testing.T) {
	policyWith := func(runtime, preset string) string {
		return "runtime: " + runtime + "\nagent_review:\n  version: 1\n  required: [perf]\n  agents:\n    perf:\n" +
			"      preset: " + preset + "\n      instruction: Find slow code.\n"
	}
	cases := []struct {
		name, file string
		args       []string
		code       int
		want       []string
	}{
		{"unsupported", policyWith("builtin", "performance"), nil, exitUsage, []string{
			`error: lens perf: the built-in runtime has no checks for preset "performance"; use a model runtime or one of: ci, code, correctness,`,
			"1 problem(s)"}},
		{"typo", policyWith("builtin", "securty"), nil, exitUsage, []string{`did you mean "security"?`}},
		{"model runtime", policyWith("openai", "performance"), nil, exitOK, []string{"0 problems"}},
		{"preset names a runtime", policyWith("builtin", "openai"), nil, exitOK, []string{"0 problems"}},
		{"operator preset", policyWith("builtin", "performance"), []string{"--preset", "performance=openai"}, exitOK, []string{"0 problems"}},
		{"supported", policyWith("builtin", "tests"), nil, exitOK, []string{"0 problems"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeTestFile(t, t.TempDir(), ".asdd.yml", c.file)
			code, out, _ := runPolicyCLI(t, append([]string{"doctor", "--config", cfg}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", code, c.code, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// policy check refuses it as well, as a problem of lensgate's own configuration.
	cfg := writeTestFile(t, t.TempDir(), ".asdd.yml", policyWith("builtin", "performance"))
	code, _, stderr := runPolicyCLI(t, "policy", "check", "--file", cfg)
	if code != exitUsage || !strings.Contains(stderr, `lens perf: the built-in runtime has no checks for preset "performance"`) || strings.Contains(stderr, "YAGA") {
		t.Fatalf("policy check: exit %d, %s", code, stderr)
	}
}

// readmePolicy is the example policy of README.md.
func readmePolicy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "A minimal policy:\n\n```yaml\n")
	if i < 0 {
		t.Fatal("README.md has no example policy")
	}
	s = s[i+len("A minimal policy:\n\n```yaml\n"):]
	return s[:strings.Index(s, "```")]
}

// TestReadmePolicyReviewsACleanChangeClean: the README's example policy is valid and passes a
// clean change with every lens answered, none pending.
func TestReadmePolicyReviewsACleanChangeClean(t *testing.T) {
	cfg := writeTestFile(t, t.TempDir(), ".asdd.yml", readmePolicy(t))
	if code, out, _ := runPolicyCLI(t, "doctor", "--config", cfg); code != exitOK {
		t.Fatalf("doctor: exit %d\n%s", code, out)
	}
	dir := throwAwayRepo(t)
	commit(t, dir, map[string]string{
		"src/app.go":      "package src\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n",
		"src/app_test.go": "package src\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(3, 1) != 2 {\n\t\tt.Fatal(\"sub\")\n\t}\n}\n",
	}, "Add Sub")
	code, out, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--config", cfg, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	var doc struct {
		Gate   struct{ State string } `json:"gate"`
		Lenses []struct {
			Name, Outcome, Summary string
		} `json:"lenses"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Gate.State != "passed" || len(doc.Lenses) != 3 {
		t.Fatalf("gate %s, lenses %+v", doc.Gate.State, doc.Lenses)
	}
	for _, l := range doc.Lenses {
		if l.Outcome != "passed" || !strings.HasPrefix(l.Summary, "Nothing found. ") || !strings.Contains(l.Summary, "Checked: ") {
			t.Errorf("lens %+v", l)
		}
	}
}

// TestReviewTextShowsMessageAndFix: the text format prints each finding's message, with its
// lines, under its title, and a workflow finding of a pull_request_target workflow is found.
func TestReviewTextShowsMessageAndFix(t *testing.T) {
	dir := throwAwayRepo(t)
	marker := strings.Repeat("<", 7)
	commit(t, dir, map[string]string{
		"src/app.go": "package src\n\n" + marker + " HEAD\nfunc Add(a, b int) int {\n" + marker + " other\n\treturn a + b\n}\n",
		".github/workflows/size.yml": "on: [pull_request_target]\npermissions:\n  contents: read\njobs:\n  size:\n    runs-on: ubuntu-latest\n" +
			"    steps:\n      - uses: codelytv/pr-size-labeler@v1.8.1\n        with:\n          GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n",
	}, "Change")
	code, out, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1")
	if code != exitNegative {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"Merge-conflict marker committed",
		"resolve the conflict before merging. (2 places: lines 3, 5.)",
		".github/workflows/size.yml:8  pull_request_target hands secrets to an action pinned only by tag",
		"Fix: pin the action to a full commit SHA",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestReviewSARIFValidates: --format sarif writes a SARIF 2.1.0 log that validates against the
// schema, with one result per finding, its level, location and stable fingerprint.
func TestReviewSARIFValidates(t *testing.T) {
	dir := throwAwayRepo(t)
	commit(t, dir, map[string]string{
		"src/app.go": "package src\n\n" + strings.Repeat("<", 7) + " HEAD\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
	}, "Change")
	code, out, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "sarif")
	if code != exitNegative {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	log, err := sarif.FromString(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Validate(); err != nil {
		t.Fatalf("invalid SARIF: %v\n%s", err, out)
	}
	_, jsonOut, _ := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "json")
	var doc struct {
		Findings []struct{ ID, Path string } `json:"findings"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &doc); err != nil {
		t.Fatal(err)
	}
	res := log.Runs[0].Results
	if log.Version != "2.1.0" || len(res) != len(doc.Findings) || len(res) == 0 {
		t.Fatalf("%d results for %d findings", len(res), len(doc.Findings))
	}
	var conflict *sarif.Result
	for _, r := range res {
		if *r.RuleID == "conflict-marker" {
			conflict = r
		}
	}
	if conflict == nil || conflict.Level != "error" || *conflict.Locations[0].PhysicalLocation.ArtifactLocation.URI != "src/app.go" ||
		*conflict.Locations[0].PhysicalLocation.Region.StartLine != 3 || conflict.PartialFingerprints["lensgate/v1"] == "" {
		t.Fatalf("conflict result %+v", conflict)
	}
	if log.Runs[0].Properties.Properties["gate"] != "failed" {
		t.Fatalf("run properties %+v", log.Runs[0].Properties)
	}
}
