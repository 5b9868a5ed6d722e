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

// TestPolicyInteropWithYAGA: what YAGA's Python does with line endings, format names, big and
// long integers, and a YAML file, through the CLI.
func TestPolicyInteropWithYAGA(t *testing.T) {
	dir := t.TempDir()
	unix := "[agent-review]\nversion = 1\nrequired = [\"a\"]\n[agent-review.agents.a]\npreset = \"p\"\ninstruction = \"\"\"\nLook at\nthe change.\n\"\"\"\n"
	lf := writeTestFile(t, dir, "lf.toml", unix)
	crlf := writeTestFile(t, dir, "crlf.toml", strings.ReplaceAll(unix, "\n", "\r\n"))
	_, a, _ := runPolicyCLI(t, "policy", "plan", "--file", lf, "--format", "json")
	_, b, _ := runPolicyCLI(t, "policy", "plan", "--file", crlf, "--format", "json")
	if a == "" || a != b {
		t.Errorf("CR LF changes the plan:\n%s\nvs\n%s", a, b)
	}
	// Python's str.lower does not fold İ to i: gİthub is not github, and the error is text.
	results := writeTestFile(t, dir, "r.json", "{}")
	code, out, errOut := runPolicyCLI(t, "policy", "evaluate", "--file", lf, "--results", results, "--format", "gİthub")
	if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "YAGA configuration error: Agent review results.version must be integer 1") {
		t.Errorf("gİthub: %d %q %q", code, out, errOut)
	}
	code, _, errOut = runPolicyCLI(t, "policy", "evaluate", "--file", lf, "--results", results, "--format", "GITHUB")
	if code != exitUsage || !strings.HasPrefix(errOut, "::error title=YAGA Agent review::Agent review results.version") {
		t.Errorf("GITHUB: %d %q", code, errOut)
	}
	// Integers of any size: a version beyond 64 bits is simply not 1; beyond 4,300 digits it
	// is Python's own input error.
	big := writeTestFile(t, dir, "big.toml", strings.Replace(unix, "version = 1", "version = 99999999999999999999", 1))
	if _, _, errOut := runPolicyCLI(t, "policy", "check", "--file", big); errOut != "YAGA configuration error: agent-review.version must be integer 1 in "+big+"\n" {
		t.Errorf("big version: %q", errOut)
	}
	long := writeTestFile(t, dir, "long.toml", strings.Replace(unix, "version = 1", "version = "+strings.Repeat("1", 4301), 1))
	if _, _, errOut := runPolicyCLI(t, "policy", "check", "--file", long); errOut != "YAGA input error: Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits; use sys.set_int_max_str_digits() to increase the limit\n" {
		t.Errorf("long version: %q", errOut)
	}
	// TOML 1.1 is refused with tomllib's message.
	esc := writeTestFile(t, dir, "esc.toml", strings.Replace(unix, "preset = \"p\"", "preset = \"\\e\"", 1))
	if _, _, errOut := runPolicyCLI(t, "policy", "check", "--file", esc); errOut != "YAGA configuration error: invalid Agent review policy TOML in "+esc+": Unescaped '\\' in a string (at line 5, column 13)\n" {
		t.Errorf("\\e: %q", errOut)
	}
	// A .yml policy is lensgate's own extension, read as YAML; the same policy as YAML has the
	// TOML digest.
	yml := writeTestFile(t, dir, "policy.yml", "agent_review:\n  version: 1\n  required: [a]\n  agents:\n    a:\n      preset: p\n      instruction: \"Look at\\nthe change.\\n\"\n")
	if _, c, _ := runPolicyCLI(t, "policy", "plan", "--file", yml, "--format", "json"); c != a {
		t.Errorf("YAML plan differs:\n%s\nvs\n%s", c, a)
	}
}

// TestPolicyCheckListsEveryProblemOfAnASDDFile: YAGA reads no .asdd.yml, so its problems are
// reported as lensgate's, one per line with its line number; json keeps YAGA's error document.
func TestPolicyCheckListsEveryProblemOfAnASDDFile(t *testing.T) {
	cfg := writeTestFile(t, t.TempDir(), ".asdd.yml", "agent_review:\n  version: \"1\"\n  aggregation: all-requird\n  required: [a]\n  agents:\n    a:\n      preset: p\n      instruction: x\n")
	for _, cmd := range []string{"check", "plan"} {
		code, out, errOut := runPolicyCLI(t, "policy", cmd, "--file", cfg)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != exitUsage || out != "" || strings.Contains(errOut, "YAGA") || len(lines) != 3 ||
			!strings.HasPrefix(lines[0], "lensgate configuration error: 2 problem(s) in ") ||
			!strings.Contains(lines[1], ".asdd.yml:2:") || !strings.Contains(lines[1], "write version: 1") ||
			!strings.Contains(lines[2], ".asdd.yml:3:") || !strings.Contains(lines[2], `did you mean "all-required"?`) {
			t.Errorf("%s: exit %d\n%s", cmd, code, errOut)
		}
	}
	code, _, errOut := runPolicyCLI(t, "policy", "check", "--file", cfg, "--format", "json")
	if code != exitUsage || !strings.Contains(errOut, `"kind": "configuration"`) || !strings.Contains(errOut, ".asdd.yml:3:") {
		t.Errorf("json: exit %d\n%s", code, errOut)
	}
}
