package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The same policy in .asdd.yml, .yaga.toml and pyproject.toml yields one plan through the CLI.
func TestPolicyPlanSameAcrossFormats(t *testing.T) {
	dir := t.TempDir()
	toml := "[agent-review]\nversion = 1\nrequired = [\"sec\"]\n[agent-review.agents.sec]\npreset = \"codex\"\ninstruction = \"Größe <a&b> \\u2028 \\u0007 end\"\n[agent-review.agents.doc]\npreset = \"docs\"\ninstruction = \"Docs.\"\noutcome = \"advisory\"\npublication = \"comment\"\n"
	files := []string{
		writeTestFile(t, dir, ".yaga.toml", toml),
		writeTestFile(t, dir, "pyproject.toml", strings.ReplaceAll(toml, "[agent-review", "[tool.yaga.agent-review")),
		writeTestFile(t, dir, ".asdd.yml", "agent_review:\n  version: 1\n  required: [sec]\n  agents:\n    sec:\n      preset: codex\n      instruction: \"Größe <a&b> \\u2028 \\a end\"\n    doc: {preset: docs, instruction: Docs., outcome: advisory, publication: comment}\n"),
	}
	var first string
	for _, f := range files {
		code, out, errOut := runPolicyCLI(t, "policy", "plan", "--file", f, "--format", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d %s", f, code, errOut)
		}
		if !strings.Contains(out, "Größe <a&b> \u2028 \\u0007 end") {
			t.Errorf("%s: instruction not written raw:\n%s", f, out)
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Errorf("%s plan differs:\n%s\nvs\n%s", f, out, first)
		}
	}
}

func TestPolicyCommandsOnASDDConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := writeTestFile(t, dir, ".asdd.yml", "runtime: builtin\n")
	code, out, _ := runPolicyCLI(t, "policy", "check", "--file", cfg)
	if code != 0 || !strings.Contains(out, "3 lens(es), 2 required (security, correctness), aggregation all-required.") {
		t.Errorf("default policy check: %d %q", code, out)
	}
	code, tmpl, _ := runPolicyCLI(t, "policy", "template", "--file", cfg)
	if code != 0 {
		t.Fatal(code)
	}
	results := writeTestFile(t, dir, "results.json", strings.ReplaceAll(tmpl, `"pending"`, `"passed"`))
	code, out, _ = runPolicyCLI(t, "policy", "evaluate", "--file", cfg, "--results", results, "--format", "github")
	if code != 0 || !strings.HasPrefix(out, "::notice title=YAGA Agent review::Agent review result: passed;") {
		t.Errorf("evaluate: %d %q", code, out)
	}
	pending := writeTestFile(t, dir, "pending.json", tmpl)
	if code, _, _ = runPolicyCLI(t, "policy", "evaluate", "--file", cfg, "--results", pending); code != exitNegative {
		t.Errorf("pending must exit 1, got %d", code)
	}

	bad := writeTestFile(t, dir, "bad.asdd.yml", "runtme: x\nagent_review:\n  version: 2\n")
	code, out, errOut := runPolicyCLI(t, "policy", "check", "--file", bad, "--format", "json")
	if code != exitUsage || out != "" {
		t.Fatalf("exit %d stdout %q", code, out)
	}
	var doc struct {
		Error struct{ Kind, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(errOut), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Error.Kind != "configuration" || !strings.Contains(doc.Error.Message, bad+":1: unknown key \"runtme\"") || !strings.Contains(doc.Error.Message, bad+":3: agent_review.version must be integer 1") {
		t.Errorf("%+v", doc)
	}
}

func TestPolicyUsageErrors(t *testing.T) {
	if code, _, _ := runPolicyCLI(t, "policy", "check"); code != exitUsage {
		t.Errorf("missing --file: exit %d", code)
	}
	code, out, errOut := runPolicyCLI(t, "policy", "plan", "--file", filepath.Join(t.TempDir(), "none.toml"), "--format", "json")
	if code != exitUsage || out != "" || !strings.Contains(errOut, `"message": "cannot read Agent review policy `) {
		t.Errorf("%d %q %q", code, out, errOut)
	}
}

// Bad input always exits 2 with a message naming the file, whatever the format.
func TestPolicyBadInputNamesFile(t *testing.T) {
	dir := t.TempDir()
	inputs := map[string]string{
		"big.asdd.yml":  "# " + strings.Repeat("x", 1<<20),
		"utf.asdd.yml":  "runtime: \xff\n",
		"syn.asdd.yml":  "lanes: [a\n",
		"big.yaga.toml": "# " + strings.Repeat("x", 1<<20),
		"syn.yaga.toml": "[agent-review\n",
	}
	for name, body := range inputs {
		path := writeTestFile(t, dir, name, body)
		for _, format := range []string{"text", "json"} {
			code, out, errOut := runPolicyCLI(t, "policy", "check", "--file", path, "--format", format)
			if code != exitUsage || out != "" || !strings.Contains(errOut, path) {
				t.Errorf("%s/%s: exit %d, stdout %q, stderr %q", name, format, code, out, errOut)
			}
		}
	}
}
