package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/disclosure"
)

// TestReviewWitnessKeyAndVerifyObservation: `lensgate review --sign-key --witness-key` prints a
// receipt and the runner's observation; `lensgate receipt verify --observation` reports the
// runner_observation axis apart from the receipt's ok, and each flipped input has its code.
func TestReviewWitnessKeyAndVerifyObservation(t *testing.T) {
	dir := throwAwayRepo(t)
	commit(t, dir, map[string]string{"docs/a.md": "hello\n"}, "Docs")
	keys := t.TempDir()
	receiptKey, witnessKey := filepath.Join(keys, "receipt.key"), filepath.Join(keys, "witness.key")
	code, receiptPub, _ := runReceiptCLI(t, "keygen", "--out", receiptKey)
	if code != 0 {
		t.Fatal("keygen")
	}
	code, witnessPub, stderr := runReceiptCLI(t, "keygen", "--out", witnessKey, "--role", "witness")
	if code != 0 || !strings.Contains(stderr, "witness_key_file") {
		t.Fatalf("keygen --role witness: %d %s", code, stderr)
	}
	receiptPub, witnessPub = strings.TrimSpace(receiptPub), strings.TrimSpace(witnessPub)

	if code, _, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--witness-key", witnessKey); code != exitUsage || !strings.Contains(stderr, "--sign-key") {
		t.Fatalf("witness key without a receipt key: %d %s", code, stderr)
	}
	if code, _, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--sign-key", receiptKey, "--witness-key", receiptKey); code != exitUsage || !strings.Contains(stderr, "key of its own") {
		t.Fatalf("one key for both roles: %d %s", code, stderr)
	}
	code, out, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "json", "--sign-key", receiptKey, "--witness-key", witnessKey)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	var doc struct {
		Receipt     json.RawMessage `json:"receipt"`
		Observation json.RawMessage `json:"observation"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Observation) == 0 {
		t.Fatalf("no observation in output: %v\n%s", err, out)
	}
	files := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	receipt, obs := write("receipt.json", doc.Receipt), write("observation.json", doc.Observation)
	self, _ := os.Executable()
	b, _ := os.ReadFile(self)
	sum := sha256.Sum256(b)
	binary := hex.EncodeToString(sum[:])

	verify := func(args ...string) (int, map[string]any, string) {
		t.Helper()
		code, out, stderr := runReceiptCLI(t, append([]string{"receipt", "verify", "--envelope", receipt, "--public-key", receiptPub, "--format", "json"}, args...)...)
		var res map[string]any
		if code != exitUsage {
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("output: %v\n%s\n%s", err, out, stderr)
			}
		}
		return code, res, stderr
	}
	codes := func(res map[string]any) string {
		o, _ := res["observation"].(map[string]any)
		b, _ := json.Marshal(o["reason_codes"])
		return string(b)
	}
	// The receipt alone has no expected subject, so it is not ok: exit 1 whatever the
	// observation says, and the observation's axis does not change that.
	if code, res, _ := verify(); code != exitNegative || res["runner_observation"] != "ABSENT" {
		t.Fatalf("no observation: %d %v", code, res["runner_observation"])
	}
	code, res, _ := verify("--observation", obs, "--witness-key", witnessPub, "--expect-runtime", "builtin=sha256:"+binary)
	if res["runner_observation"] != "MATCH" || res["ok"] != false || code != exitNegative {
		t.Fatalf("observation: exit %d, %v %s, ok %v", code, res["runner_observation"], codes(res), res["ok"])
	}
	if _, res, _ := verify("--observation", obs, "--witness-key", receiptPub); res["runner_observation"] != "MISMATCH" || !strings.Contains(codes(res), "OBSERVATION_WRONG_WITNESS_KEY") {
		t.Fatalf("receipt key as witness key: %v %s", res["runner_observation"], codes(res))
	}
	if _, res, _ := verify("--observation", obs, "--witness-key", witnessPub, "--expect-runtime", "builtin=sha256:"+strings.Repeat("0", 64)); !strings.Contains(codes(res), "OBSERVATION_RUNTIME_IDENTITY_DIFFERS") {
		t.Fatalf("another binary: %s", codes(res))
	}
	// With the expected subject the receipt is ok; --require-observation then makes the
	// observation decide the exit code too.
	subject := disclosure.Verify(doc.Receipt, disclosure.Options{}).SubjectDigest
	if code, res, _ := verify("--subject-digest", subject, "--observation", obs, "--witness-key", witnessPub, "--require-observation"); code != exitOK || res["ok"] != true {
		t.Fatalf("ok receipt, matching observation: exit %d", code)
	}
	if code, res, _ := verify("--subject-digest", subject, "--observation", obs, "--witness-key", receiptPub); code != exitOK || res["runner_observation"] != "MISMATCH" {
		t.Fatalf("the observation axis changed the receipt's exit code: %d", code)
	}
	if code, _, _ := verify("--subject-digest", subject, "--observation", obs, "--witness-key", receiptPub, "--require-observation"); code != exitNegative {
		t.Fatalf("--require-observation with a mismatch: exit %d", code)
	}
	for _, bad := range [][]string{
		{"--observation", obs},
		{"--witness-key", witnessPub},
		{"--observation", obs, "--witness-key", witnessPub, "--expect-runtime", "builtin"},
		{"--observation", obs, "--witness-key", witnessPub, "--expect-runtime", "builtin=color:blue"},
	} {
		if code, _, stderr := verify(bad...); code != exitUsage || stderr == "" {
			t.Errorf("%v: exit %d %s", bad, code, stderr)
		}
	}
	// The text report says what the observation does and does not prove.
	_, text, _ := runReceiptCLI(t, "receipt", "verify", "--envelope", receipt, "--public-key", receiptPub, "--observation", obs, "--witness-key", witnessPub)
	for _, want := range []string{"runner observation: MATCH", "what this shows", "what it does not show", "correct"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}
