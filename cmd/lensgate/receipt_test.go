package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const pbCorpus = "../../disclosure/testdata/proofbundle"

func runReceiptCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestKeygenEmitVerify(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "receipt.key")
	code, out, stderr := runReceiptCLI(t, "keygen", "--out", key)
	if code != 0 {
		t.Fatalf("keygen: %d %s", code, stderr)
	}
	pub := strings.TrimSpace(out)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(pub) {
		t.Fatalf("keygen printed %q", out)
	}
	st, err := os.Stat(key)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v %v", st.Mode(), err)
	}
	if code, _, _ := runReceiptCLI(t, "keygen", "--out", key); code != exitUsage {
		t.Fatal("keygen overwrote an existing key")
	}

	pred := filepath.Join(pbCorpus, "agent_review", "agent-review-v02-positive-control-emitter-default-is-v02", "predicate.json")
	env := filepath.Join(dir, "receipt.json")
	code, _, stderr = runReceiptCLI(t, "receipt", "emit", "--predicate", pred, "--key", key, "--out", env)
	if code != 0 {
		t.Fatalf("emit: %d %s", code, stderr)
	}
	subject := regexp.MustCompile(`subject ([0-9a-f]{64})`).FindStringSubmatch(stderr)
	if subject == nil {
		t.Fatalf("emit did not name the subject: %s", stderr)
	}

	code, out, _ = runReceiptCLI(t, "receipt", "verify", "--envelope", env, "--public-key", pub, "--subject-digest", subject[1], "--format", "json")
	if code != 0 {
		t.Fatalf("verify: %d %s", code, out)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep["ok"] != true || rep["policy_decision"] != "accept" || rep["currentness"] != "CURRENTNESS_UNKNOWN" ||
		rep["predicateVersionStatus"] != "current" {
		t.Fatalf("report: %s", out)
	}
	// Without the expected subject a receipt is never ok.
	if code, out, _ := runReceiptCLI(t, "receipt", "verify", "--envelope", env, "--public-key", pub); code != exitNegative ||
		!strings.Contains(out, "receipt:               NOT OK") {
		t.Fatalf("verify without subject: %d\n%s", code, out)
	}
	// The corpus key (a file) is not the key that signed this receipt.
	keyFile := filepath.Join(pbCorpus, "agent_review", "publickey.hex")
	if code, out, _ := runReceiptCLI(t, "receipt", "verify", "--envelope", env, "--public-key", keyFile, "--subject-digest", subject[1]); code != exitNegative ||
		!strings.Contains(out, "signature:             NO") {
		t.Fatalf("verify with a foreign key: %d\n%s", code, out)
	}
	if code, _, _ := runReceiptCLI(t, "receipt", "verify", "--envelope", env, "--public-key", strings.Repeat("0", 64)); code != exitUsage {
		t.Fatal("a low-order public key was accepted")
	}
	// Refusals exit 1 and say why.
	refused := filepath.Join(pbCorpus, "agent_review", "agent-review-v02-counter-proof-fixcommit-must-be-the-full-sha", "predicate.json")
	if code, _, stderr := runReceiptCLI(t, "receipt", "emit", "--predicate", refused, "--key", key); code != exitNegative ||
		!strings.Contains(stderr, "FIXCOMMIT_NOT_FULL_SHA") {
		t.Fatalf("refusal: %d %s", code, stderr)
	}
}

func TestVerifyPublishedReceiptWithBody(t *testing.T) {
	dir := filepath.Join(pbCorpus, "published-receipts")
	env := filepath.Join(dir, "proofbundle_185.r2.receipt.json")
	key := filepath.Join(dir, "proofbundle_185.r2.publickey.hex")
	code, out, _ := runReceiptCLI(t, "receipt", "verify", "--envelope", env, "--public-key", key,
		"--subject-digest", "0dde610e4f77e6dd6074b14ef0672fcbd3b2b7456030603dcf43de1713dd0b71", "--format", "json")
	if code != 0 || !strings.Contains(out, `"COVERAGE_LEGACY_FIELDS"`) {
		t.Fatalf("185.r2: %d\n%s", code, out)
	}
	// The published 185 block reproduces the signed disclosureCoreDigest.
	code, out, _ = runReceiptCLI(t, "receipt", "verify", "--envelope", filepath.Join(dir, "proofbundle_185.receipt.json"),
		"--public-key", key, "--body", filepath.Join(dir, "proofbundle_185.block.md"), "--format", "json")
	if !strings.Contains(out, `"disclosure_core_digest_match": "MATCH"`) {
		t.Fatalf("185 block: %d\n%s", code, out)
	}
}

func TestReceiptConformanceCommand(t *testing.T) {
	corpus := filepath.Join(pbCorpus, "agent_review")
	code, out, stderr := runReceiptCLI(t, "receipt", "conformance", "--dir", corpus, "--format", "json")
	if code != 0 {
		t.Fatalf("conformance: %d %s", code, stderr)
	}
	var results []struct {
		CaseID   string `json:"caseId"`
		Passed   bool   `json:"passed"`
		Got      any    `json:"got"`
		Expected any    `json:"expected"`
	}
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatal(err)
	}
	if len(results) != 35 {
		t.Fatalf("%d results", len(results))
	}
	for _, r := range results {
		if !r.Passed || r.Got == nil && r.Expected != nil && !strings.Contains(r.CaseID, "without-policy") {
			t.Errorf("%s: %+v", r.CaseID, r)
		}
	}
	if code, out, _ := runReceiptCLI(t, "receipt", "conformance", "--dir", corpus); code != 0 || !strings.Contains(out, "35/35 cases passed") {
		t.Fatalf("text: %d\n%s", code, out)
	}
	if code, _, _ := runReceiptCLI(t, "receipt", "conformance", "--dir", t.TempDir()); code != exitUsage {
		t.Fatalf("empty dir exit %d", code)
	}
	// One failing case exits 1.
	dir := t.TempDir()
	src := filepath.Join(corpus, "agent-review-counter-proof-duplicate-disclosure-block-fails-closed")
	dst := filepath.Join(dir, "case-a")
	_ = os.MkdirAll(dst, 0o755)
	body, _ := os.ReadFile(filepath.Join(src, "body.json"))
	_ = os.WriteFile(filepath.Join(dst, "body.json"), body, 0o644)
	_ = os.WriteFile(filepath.Join(dst, "case.json"), []byte(`{"caseId":"case-a","input":"body.json","expected":{"classification":"valid"}}`), 0o644)
	if code, _, _ := runReceiptCLI(t, "receipt", "conformance", "--dir", dir); code != exitNegative {
		t.Fatalf("failing case exit %d", code)
	}
}

func TestDisclosureDigestCommand(t *testing.T) {
	dir := t.TempDir()
	body := "# Title\n\nSome PR text.\n\n<!-- proofbundle:agent-review:begin -->\n- **X:** y\n<!-- proofbundle:agent-review:end -->\n\nTail.\n"
	p := filepath.Join(dir, "body.md")
	_ = os.WriteFile(p, []byte(body), 0o644)
	code, out, _ := runReceiptCLI(t, "disclosure", "digest", "--body", p)
	if code != 0 || !strings.Contains(out, "bodyCoreDigest       ad3dd98c8782995d4665fa0bfeb2e4bf17d78cf6df392da0878d2052cdaa5a9a") {
		t.Fatalf("digest: %d\n%s", code, out)
	}
	_ = os.WriteFile(p, []byte(body+body), 0o644)
	if code, _, stderr := runReceiptCLI(t, "disclosure", "digest", "--body", p); code != exitUsage || !strings.Contains(stderr, "more than one") {
		t.Fatalf("two blocks: %d %s", code, stderr)
	}
}

// Exit codes: 0 ok, 1 a negative verdict about a receipt, 2 input the command cannot use.
func TestReceiptVerifyExitCodesAndMessages(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pub := filepath.Join(pbCorpus, "published-receipts", "proofbundle_185.r2.publickey.hex")
	env := filepath.Join(pbCorpus, "published-receipts", "proofbundle_185.r2.receipt.json")
	const subject = "0dde610e4f77e6dd6074b14ef0672fcbd3b2b7456030603dcf43de1713dd0b71"
	body := write("body.md", "crlf\r\n")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"ok", []string{"--envelope", env, "--public-key", pub, "--subject-digest", subject}, 0, ""},
		{"upper-case and prefixed digest", []string{"--envelope", env, "--public-key", pub, "--subject-digest", "sha256:" + strings.ToUpper(subject)}, 0, ""},
		{"no expectation", []string{"--envelope", env, "--public-key", pub}, exitNegative, ""},
		{"other subject", []string{"--envelope", env, "--public-key", pub, "--subject-digest", strings.Repeat("0", 64)}, exitNegative, ""},
		{"body without block", []string{"--envelope", env, "--public-key", pub, "--subject-digest", subject, "--body", body}, exitNegative, ""},
		{"bad payload", []string{"--envelope", write("p.json", `{"payload":"e30K\n","payloadType":"x","signatures":[]}`), "--public-key", pub}, exitNegative, ""},
		{"truncated envelope", []string{"--envelope", write("t.json", `{"payload":`), "--public-key", pub}, exitUsage, "not a DSSE envelope"},
		{"missing envelope", []string{"--envelope", filepath.Join(dir, "none.json"), "--public-key", pub}, exitUsage, "no such file"},
		{"malformed subject digest", []string{"--envelope", env, "--public-key", pub, "--subject-digest", "abc"}, exitUsage, "64 hex"},
		{"low-order key", []string{"--envelope", env, "--public-key", "01" + strings.Repeat("0", 62)}, exitUsage, "low-order"},
		{"private key as public key", []string{"--envelope", env, "--public-key", write("k", "ed25519-seed:"+strings.Repeat("00", 32)+"\n")}, exitUsage, "private signing key"},
		{"missing key file", []string{"--envelope", env, "--public-key", filepath.Join(dir, "none.hex")}, exitUsage, "not 64 hex characters and not a readable file"},
		{"missing policy", []string{"--envelope", env, "--public-key", pub, "--policy", filepath.Join(dir, "none.json")}, exitUsage, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runReceiptCLI(t, append([]string{"receipt", "verify"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)\n%s", code, tt.code, stderr, tt.stderr, out)
			}
		})
	}
	// A huge envelope is refused before it is read into memory.
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if code, _, stderr := runReceiptCLI(t, "receipt", "verify", "--envelope", huge, "--public-key", pub); code != exitUsage || !strings.Contains(stderr, "larger than") {
		t.Fatalf("huge envelope: %d %q", code, stderr)
	}
}

// A .publickey.hex file passed as the signing key must not become a seed anyone can recompute.
func TestReceiptEmitRefusesAPublicKeyAsSigningKey(t *testing.T) {
	pred := filepath.Join(pbCorpus, "agent_review", "agent-review-v02-positive-control-emitter-default-is-v02", "predicate.json")
	code, out, stderr := runReceiptCLI(t, "receipt", "emit", "--predicate", pred, "--key", filepath.Join(pbCorpus, "agent_review", "publickey.hex"))
	if code != exitUsage || out != "" || !strings.Contains(stderr, "public key") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// A v0.3 receipt names the build that produced it; the text report shows it, and a Go verifier
// never claims to match a block measured on another build.
func TestReceiptVerifyShowsTheVerifierBlock(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "k")
	code, out, stderr := runReceiptCLI(t, "keygen", "--out", key)
	if code != 0 {
		t.Fatalf("keygen: %s", stderr)
	}
	pub := strings.TrimSpace(out)
	pred := filepath.Join(pbCorpus, "agent_review", "agent-review-v03-positive-control-verifier-block-is-accepted", "predicate.json")
	env := filepath.Join(dir, "r.json")
	if code, _, stderr := runReceiptCLI(t, "receipt", "emit", "--predicate", pred, "--key", key, "--out", env); code != 0 {
		t.Fatalf("emit: %s", stderr)
	}
	_, out, _ = runReceiptCLI(t, "receipt", "verify", "--envelope", env, "--public-key", pub)
	if !regexp.MustCompile(`verifier block: +\S+ \S+ \S+, valid yes, matches this verifier NOT_EVALUATED`).MatchString(out) ||
		!strings.Contains(out, "agent-review/v0.3 (current)") {
		t.Fatalf("report:\n%s", out)
	}
}
