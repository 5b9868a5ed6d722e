package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/internal/modelfake"
)

func runReviewCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"review"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=t@example.invalid",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// throwAwayRepo makes a git repository with one commit (a README and a Go file).
func throwAwayRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	commit(t, dir, map[string]string{
		"README.md":  "# Demo\n\nA demo project.\n",
		"src/app.go": "package src\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
	}, "Initial commit")
	return dir
}

func commit(t *testing.T, dir string, files map[string]string, msg string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", msg)
}

func privateKeyPEM(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// Planted problems are assembled at run time so this file itself stays clean for the builtin
// reviewer.
func plantedChanges(t *testing.T) map[string]map[string]string {
	marker := func(c byte) string { return strings.Repeat(string(c), 7) }
	return map[string]map[string]string{
		"private key": {"deploy/id_ed25519": privateKeyPEM(t)},
		"cloud key":   {"app/settings.py": "REGION = \"eu-west-1\"\nAWS_ACCESS_KEY_ID = \"" + "AKIA" + "Q4NRTW7ZL2XKHJ5M" + "\"\n"},
		"conflict markers": {"src/app.go": "package src\n\nfunc Add(a, b int) int {\n" + marker('<') + " HEAD\n\treturn a + b\n" +
			marker('=') + "\n\treturn b + a\n" + marker('>') + " feature\n}\n"},
		"dangerous workflow": {".github/workflows/preview.yml": "name: preview\non:\n  pull_request_target:\njobs:\n  build:\n" +
			"    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n        with:\n" +
			"          ref: ${{ github.event.pull_request.head" + ".sha }}\n      - run: make preview\n"},
	}
}

func TestReviewDefaultPolicyFailsPlantedProblems(t *testing.T) {
	for name, files := range plantedChanges(t) {
		t.Run(name, func(t *testing.T) {
			dir := throwAwayRepo(t)
			commit(t, dir, files, "Change "+name)
			code, out, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1")
			if code != exitNegative {
				t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
			}
			for path := range files {
				if !strings.Contains(out, path) {
					t.Errorf("output does not name %s:\n%s", path, out)
				}
			}
			if !strings.Contains(out, "Gate: failed") {
				t.Errorf("output:\n%s", out)
			}
		})
	}
}

func TestReviewNamesEveryPlantedFile(t *testing.T) {
	dir := throwAwayRepo(t)
	all := map[string]string{}
	for _, files := range plantedChanges(t) {
		for p, c := range files {
			all[p] = c
		}
	}
	commit(t, dir, all, "Everything at once")
	code, out, _ := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "json")
	if code != exitNegative {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var doc struct {
		Gate     struct{ State string }
		Findings []struct {
			Path     string
			Rule     string
			Severity string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	rules := map[string]string{}
	for _, f := range doc.Findings {
		if f.Severity == "high" || f.Severity == "critical" {
			rules[f.Path] = f.Rule
		}
	}
	want := map[string]string{
		"deploy/id_ed25519": "private-key", "app/settings.py": "aws-access-token",
		"src/app.go": "conflict-marker", ".github/workflows/preview.yml": "workflow-pull-request-target-checkout",
	}
	for p, r := range want {
		if rules[p] != r {
			t.Errorf("%s: blocking rule %q, want %q (all: %v)", p, rules[p], r, rules)
		}
	}
	if doc.Gate.State != "failed" {
		t.Errorf("gate %s", doc.Gate.State)
	}
}

func TestReviewPassesHarmlessDocs(t *testing.T) {
	dir := throwAwayRepo(t)
	commit(t, dir, map[string]string{"docs/guide.md": "Guide\n=====\n\nRun `make` to build.\n"}, "Add a guide")
	code, out, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, want := range []string{"Gate: passed", "security", "correctness", "tests", "Coverage: COMPLETE"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, md, _ := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "markdown")
	if code != exitOK || !strings.Contains(md, "| Lens | Role | Outcome |") || !strings.Contains(md, "gate: `passed`") {
		t.Fatalf("markdown (exit %d):\n%s", code, md)
	}
}

func TestReviewUsesBaseConfig(t *testing.T) {
	dir := throwAwayRepo(t)
	// The base revision ignores deploy/ ; the head tries to re-enable a stricter policy that
	// must not apply, and adds a key under the ignored path.
	commit(t, dir, map[string]string{".asdd.yml": "ignore_paths:\n  - \"deploy/**\"\n"}, "Configure")
	commit(t, dir, map[string]string{"deploy/id_ed25519": privateKeyPEM(t), ".asdd.yml": "ignore_paths: []\n"}, "Key")
	code, out, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "gap: deploy/id_ed25519: matches ignore_paths") {
		t.Fatalf("ignored file is not a named coverage gap:\n%s", out)
	}
}

func TestReviewUnusableInput(t *testing.T) {
	dir := throwAwayRepo(t)
	notRepo := t.TempDir()
	huge := filepath.Join(t.TempDir(), ".asdd.yml")
	if err := os.WriteFile(huge, []byte("protected_paths:\n"+strings.Repeat("  - \"p\"\n", 200_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	bigBase := throwAwayRepo(t)
	commit(t, bigBase, map[string]string{".asdd.yml": "protected_paths:\n" + strings.Repeat("  - \"p\"\n", 200_000)}, "Config")
	commit(t, bigBase, map[string]string{"docs/a.md": "a\n"}, "Docs")
	cases := []struct {
		args []string
		want string // in stderr: what is wrong, naming the input
	}{
		{[]string{"--repo", dir, "--base", "no-such-ref"}, `"no-such-ref" names no commit in ` + dir},
		{[]string{"--repo", dir, "--base", "HEAD", "--head", "nope"}, `head: unusable review input: "nope" names no commit`},
		{[]string{"--repo", notRepo, "--base", "HEAD~1"}, notRepo + `" is not a git repository`},
		{[]string{"--repo", dir, "--base", "--upload-pack=evil"}, "--base"},
		{[]string{"--repo", dir, "--base", "HEAD", "--config", filepath.Join(dir, "missing.yml")}, "missing.yml"},
		{[]string{"--repo", dir, "--base", "HEAD", "--config", huge}, huge + ": the file exceeds 1048576 bytes"},
		{[]string{"--repo", bigBase, "--base", "HEAD~1"}, "HEAD~1:.asdd.yml: the file exceeds 1048576 bytes"},
		{[]string{"--repo", dir, "--base", "HEAD", "--format", "xml"}, "--format"},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		// An endless file is refused after the cap, not read into memory.
		cases = append(cases, struct {
			args []string
			want string
		}{[]string{"--repo", dir, "--base", "HEAD", "--config", "/dev/zero"}, "exceeds 1048576 bytes: /dev/zero"})
	}
	for _, c := range cases {
		code, out, stderr := runReviewCLI(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("%v: exit %d, want 2 with %q\nstdout: %s\nstderr: %s", c.args, code, c.want, out, stderr)
		}
	}
}

func TestReviewSignsReceipt(t *testing.T) {
	dir := throwAwayRepo(t)
	commit(t, dir, map[string]string{"docs/a.md": "hello\n"}, "Docs")
	keyFile := filepath.Join(t.TempDir(), "key")
	pub, err := disclosure.GenerateKey(keyFile, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "json", "--sign-key", keyFile)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	var doc struct {
		Receipt json.RawMessage `json:"receipt"`
		Block   string          `json:"disclosure_block"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Receipt) == 0 {
		t.Fatalf("no receipt in output: %v\n%s", err, out)
	}
	rep := disclosure.Verify(doc.Receipt, disclosure.Options{PublicKey: pub})
	if rep.CryptoOK == nil || !*rep.CryptoOK || rep.StructureOK == nil || !*rep.StructureOK {
		t.Fatalf("receipt does not verify: %+v", rep)
	}
	// The printed block is the one the receipt binds: a body carrying it matches both the body
	// core and the disclosure core; an edited block does not.
	body := doc.Block + "\n"
	rep = disclosure.Verify(doc.Receipt, disclosure.Options{PublicKey: pub, Body: &body})
	if rep.BodyCoreDigestMatch != disclosure.MatchMatch || rep.DisclosureCoreDigestMatch != disclosure.MatchMatch {
		t.Errorf("printed block not bound: body %s, disclosure %s", rep.BodyCoreDigestMatch, rep.DisclosureCoreDigestMatch)
	}
	edited := strings.Replace(doc.Block, "Review:", "Review: (edited)", 1) + "\n"
	rep = disclosure.Verify(doc.Receipt, disclosure.Options{PublicKey: pub, Body: &edited})
	if rep.DisclosureCoreDigestMatch == disclosure.MatchMatch {
		t.Error("an edited block still matches the signed disclosure core")
	}
}

// TestReviewHostileFileNames: file names with newlines, terminal escapes, backticks and comment
// markers are named in every format, and can neither break a line of the text output, send a
// control sequence to the terminal, nor escape the Markdown code span.
func TestReviewHostileFileNames(t *testing.T) {
	dir := throwAwayRepo(t)
	token := "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
	names := []string{"nl\nx.py", "esc\x1b[2Jx.py", "we`ird --> <!-- x.py", "tab\tx.py"}
	files := map[string]string{}
	for _, n := range names {
		files[n] = "token = \"" + token + "\"\n"
	}
	commit(t, dir, files, "Add settings")

	code, out, errOut := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1")
	if code != 1 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{`"nl\nx.py":1`, `"esc\x1b[2Jx.py":1`, "we`ird --> <!-- x.py:1", `"tab\tx.py":1`} {
		if !strings.Contains(out, want) {
			t.Errorf("text output does not name %s:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\t") || strings.Contains(out, token[4:]) {
		t.Errorf("text output carries a control character or the token:\n%q", out)
	}

	_, md, _ := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "markdown")
	for _, want := range []string{"`\"nl\\nx.py\":1`", "`we'ird --> <!-- x.py:1`"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown does not name %s:\n%s", want, md)
		}
	}
	if strings.ContainsAny(md, "\x1b\t") || strings.Contains(md, token[4:]) {
		t.Errorf("markdown carries a control character or the token")
	}

	_, js, _ := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "json")
	var doc struct {
		Findings []struct{ Path string } `json:"findings"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range doc.Findings {
		got[f.Path] = true
	}
	for _, n := range names {
		if !got[n] {
			t.Errorf("JSON has no finding for %q: %v", n, got)
		}
	}
}

// TestReviewJSONListsAreNeverNull: a clean review has empty lists, not null.
func TestReviewJSONListsAreNeverNull(t *testing.T) {
	dir := throwAwayRepo(t)
	commit(t, dir, map[string]string{"README.md": "# Demo\n\nA clearer demo project.\n"}, "Reword the README")
	code, js, errOut := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(js, `"findings": null`) || !strings.Contains(js, `"findings": []`) ||
		strings.Contains(js, `"gaps": null`) || !strings.Contains(js, `"gaps": []`) {
		t.Fatalf("findings or gaps are not an empty list:\n%s", js)
	}
}

// TestReviewOperatorPresets: --preset maps a policy's preset onto an enabled runtime; a preset
// that names a runtime the operator did not enable is refused.
func TestReviewOperatorPresets(t *testing.T) {
	dir := throwAwayRepo(t)
	commit(t, dir, map[string]string{"deploy/id.pem": privateKeyPEM(t)}, "Add a key")
	cfg := filepath.Join(t.TempDir(), "policy.asdd.yml")
	if err := os.WriteFile(cfg, []byte("agent_review:\n  version: 1\n  required: [security]\n  agents:\n    security:\n"+
		"      preset: deep\n      instruction: Find committed secrets.\n      outcome: review\n      publication: review\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		preset  []string
		code    int
		runtime string
		outcome string
	}{
		{nil, exitNegative, "builtin", "failed"}, // an unknown preset is reviewed by the default runtime
		{[]string{"--preset", "deep=dryrun"}, exitNegative, "dryrun", "pending"},
		{[]string{"--preset", "deep=builtin", "--preset", "other=dryrun"}, exitNegative, "builtin", "failed"},
		{[]string{"--preset", "deep=no-such-runtime"}, exitUsage, "", ""},
		{[]string{"--preset", "Deep=builtin"}, exitUsage, "", ""},
	}
	for _, c := range cases {
		args := append([]string{"--repo", dir, "--base", "HEAD~1", "--config", cfg, "--format", "json"}, c.preset...)
		code, out, stderr := runReviewCLI(t, args...)
		if code != c.code {
			t.Fatalf("%v: exit %d, want %d\n%s", c.preset, code, c.code, stderr)
		}
		if c.code == exitUsage {
			if !strings.Contains(stderr, "--preset") {
				t.Errorf("%v: stderr %q does not name the flag", c.preset, stderr)
			}
			continue
		}
		var doc struct {
			Lenses []struct{ Runtime, Outcome string } `json:"lenses"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Lenses) != 1 {
			t.Fatalf("%v: %v\n%s", c.preset, err, out)
		}
		if doc.Lenses[0].Runtime != c.runtime || doc.Lenses[0].Outcome != c.outcome {
			t.Errorf("%v: lens %+v, want %s by %s", c.preset, doc.Lenses[0], c.outcome, c.runtime)
		}
	}
}

// TestReviewReadsYAGAPolicyOfTheBase: without an .asdd.yml, the base revision's .yaga.toml or
// pyproject.toml [tool.yaga] is the policy, with the same plan digest as through `policy plan`.
func TestReviewReadsYAGAPolicyOfTheBase(t *testing.T) {
	const yaga = "[agent-review]\nversion = 1\nrequired = [\"security\"]\n\n" +
		"[agent-review.agents.security]\npreset = \"security\"\ninstruction = \"Review trust boundaries.\"\n" +
		"outcome = \"review\"\npublication = \"review\"\n"
	pyproject := "[project]\nname = \"demo\"\n\n" + strings.ReplaceAll(yaga, "[agent-review", "[tool.yaga.agent-review")
	policyFile := filepath.Join(t.TempDir(), ".yaga.toml")
	if err := os.WriteFile(policyFile, []byte(yaga), 0o644); err != nil {
		t.Fatal(err)
	}
	_, planOut, planErr := func() (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"policy", "plan", "--file", policyFile, "--format", "json"}, &out, &errb)
		return code, out.String(), errb.String()
	}()
	var plan struct {
		Digest string `json:"plan_digest"`
	}
	if err := json.Unmarshal([]byte(planOut), &plan); err != nil || len(plan.Digest) != 64 {
		t.Fatalf("policy plan: %v %s %s", err, planOut, planErr)
	}
	cases := []struct {
		name, file, content string
		wantDigest          string // "" for the default policy
		wantLenses          int
	}{
		{"yaga", ".yaga.toml", yaga, plan.Digest, 1},
		{"pyproject", "pyproject.toml", pyproject, plan.Digest, 1},
		{"pyproject without yaga", "pyproject.toml", "[project]\nname = \"demo\"\n", "", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := throwAwayRepo(t)
			commit(t, dir, map[string]string{c.file: c.content}, "Policy")
			commit(t, dir, map[string]string{"docs/a.md": "a\n"}, "Docs")
			code, out, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "json")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var d struct {
				PlanDigest string            `json:"planDigest"`
				Lenses     []json.RawMessage `json:"lenses"`
			}
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatal(err)
			}
			if c.wantDigest != "" && d.PlanDigest != c.wantDigest || len(d.Lenses) != c.wantLenses {
				t.Fatalf("plan %s with %d lenses, want %q with %d", d.PlanDigest, len(d.Lenses), c.wantDigest, c.wantLenses)
			}
		})
	}
	dir := throwAwayRepo(t)
	commit(t, dir, map[string]string{".yaga.toml": "[agent-review]\nversion = 2\n"}, "Policy")
	commit(t, dir, map[string]string{"docs/a.md": "a\n"}, "Docs")
	if code, _, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1"); code != exitUsage || !strings.Contains(stderr, ".yaga.toml") {
		t.Fatalf("a broken .yaga.toml: exit %d, stderr %q", code, stderr)
	}
}

// TestReviewReportsModelTokens: with an OpenAI-compatible endpoint that sends no usage, the
// JSON decision and the text output carry the same token counts, marked estimated; a secret
// in the change reaches the model only as a placeholder.
func TestReviewReportsModelTokens(t *testing.T) {
	answer := `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"fine","lenses":[` +
		`{"lens":"correctness","verdict":"ok","summary":"Nothing found.","findings":[]}]}`
	srv := modelfake.New("test-token", func(modelfake.Request) modelfake.Reply {
		return modelfake.Reply{Content: answer, NoUsage: true}
	})
	defer srv.Close()
	t.Setenv("ASDD_MODEL_URL", srv.URL)
	t.Setenv("ASDD_RUNTIME_TOKEN", srv.Token)
	t.Setenv("ASDD_MODEL", "m")
	dir := throwAwayRepo(t)
	key := "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
	commit(t, dir, map[string]string{"src/app.go": "package src\n\nconst token = \"" + key + "\"\n"}, "Add a token")
	cfg := filepath.Join(t.TempDir(), "policy.asdd.yml")
	// The walkthrough is off: the test compares the lens's tokens with the review's.
	if err := os.WriteFile(cfg, []byte("walkthrough:\n  enabled: false\nagent_review:\n  version: 1\n  required: [correctness]\n  agents:\n    correctness:\n"+
		"      preset: openai\n      instruction: Find logic errors.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, js, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--config", cfg, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, js)
	}
	var doc struct {
		Tokens struct {
			Prompt, Completion, Total int
			Estimated                 bool
			Calls                     []struct{ Format string }
		} `json:"tokens"`
		Lenses []struct {
			Tokens *struct{ Total int } `json:"tokens"`
		} `json:"lenses"`
		ModelInput struct {
			RedactedValues int `json:"redactedValues"`
		} `json:"modelInput"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	tk := doc.Tokens
	if tk.Total <= 0 || tk.Total != tk.Prompt+tk.Completion || !tk.Estimated || len(tk.Calls) != 1 || tk.Calls[0].Format != "json_schema" {
		t.Fatalf("tokens %+v", tk)
	}
	if len(doc.Lenses) != 1 || doc.Lenses[0].Tokens == nil || doc.Lenses[0].Tokens.Total != tk.Total || doc.ModelInput.RedactedValues != 1 {
		t.Fatalf("lens tokens %+v, model input %+v", doc.Lenses, doc.ModelInput)
	}
	for _, r := range srv.Requests() {
		if b := string(r.Body); strings.Contains(b, key[4:20]) || !strings.Contains(b, "[redacted github-pat]") {
			t.Fatalf("the token reached the model: %s", b)
		}
	}
	_, text, _ := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--config", cfg)
	commas := func(n int) string {
		s := strconv.Itoa(n)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		return s
	}
	want := fmt.Sprintf("Model tokens: %s (prompt %s, completion %s, estimated) in 1 call(s); per lens: correctness %s (estimated).",
		commas(tk.Total), commas(tk.Prompt), commas(tk.Completion), commas(tk.Total))
	if !strings.Contains(text, want) || !strings.Contains(text, "1 secret value(s) replaced") {
		t.Fatalf("text output lacks %q:\n%s", want, text)
	}
}
