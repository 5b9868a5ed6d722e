package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runPolicyCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func writeTestFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDoctorExplainsEveryProblem(t *testing.T) {
	cfg := writeTestFile(t, t.TempDir(), ".asdd.yml", `standard_version: "0.1"
runtime: builtin
merge_posure: advisory
review:
  timeout_seconds: "45"
claim:
  ttl_hours: 1
agent_review:
  version: 1
  required: [security]
  agents:
    security:
      preset: codex
      instruction: Check trust boundaries.
      pubilcation: inline
`)
	code, out, _ := runPolicyCLI(t, "doctor", "--config", cfg)
	if code != exitUsage {
		t.Errorf("exit %d, want 2", code)
	}
	for _, want := range []string{
		cfg + `:3:1: error: unknown key "merge_posure"`,
		`hint: did you mean "merge_posture"?`,
		cfg + ":5:20: error: review.timeout_seconds must be an integer, found a string",
		cfg + ":15:7: error: agent_review.agents.security has unknown key pubilcation",
		`hint: did you mean "publication"?`,
		cfg + ":1: ignored: standard_version",
		cfg + ":6: ignored: claim",
		"3 problem(s), 2 ignored key(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDoctorValidConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := writeTestFile(t, dir, ".asdd.yml", "runtime: builtin\nmodels:\n  reviewer: m\n  developer: d\n")
	code, out, _ := runPolicyCLI(t, "doctor", "--config", cfg)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "ignored: models.developer") || !strings.Contains(out, "the default policy") || !strings.Contains(out, "0 problems, 1 ignored key(s)") {
		t.Errorf("%s", out)
	}
	code, out, _ = runPolicyCLI(t, "doctor", "--config", cfg, "--format", "json")
	var doc struct {
		Valid      bool   `json:"valid"`
		PlanDigest string `json:"plan_digest"`
		Ignored    []struct {
			Key  string `json:"key"`
			Line int    `json:"line"`
		} `json:"ignored"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("%d %v\n%s", code, err, out)
	}
	if !doc.Valid || len(doc.PlanDigest) != 64 || len(doc.Ignored) != 1 || doc.Ignored[0].Line != 4 {
		t.Errorf("%+v", doc)
	}
}

func TestDoctorUnreadable(t *testing.T) {
	code, _, errOut := runPolicyCLI(t, "doctor", "--config", filepath.Join(t.TempDir(), "missing.yml"))
	if code != exitUsage || !strings.Contains(errOut, "missing.yml") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestDoctorTOMLPolicy(t *testing.T) {
	p := writeTestFile(t, t.TempDir(), ".yaga.toml", "[agent-review]\nversion = 2\n")
	code, out, _ := runPolicyCLI(t, "doctor", "--config", p)
	if code != exitUsage || !strings.Contains(out, "agent-review.version must be integer 1 in "+p) {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestDoctorDefaultsToTheRepositoryConfig: run in a repository root, doctor checks .asdd.yml.
func TestDoctorDefaultsToTheRepositoryConfig(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if code, _, errOut := runPolicyCLI(t, "doctor"); code != exitUsage || !strings.Contains(errOut, ".asdd.yml") {
		t.Fatalf("no .asdd.yml: exit %d, stderr %q", code, errOut)
	}
	writeTestFile(t, dir, ".asdd.yml", "runtime: builtin\nreveiw: {}\n")
	code, out, _ := runPolicyCLI(t, "doctor")
	if code != exitUsage || !strings.Contains(out, `.asdd.yml:2:1: error: unknown key "reveiw"`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
