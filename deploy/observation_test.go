package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPublishedObservationVerifiesOffline: the built server publishes, beside the receipt in
// the check run and in the advisory comment, the runner's observation of the review; taking
// the published bytes and the keys from /.well-known/lensgate/keys, `lensgate receipt verify
// --observation` answers MATCH offline, and MISMATCH when the receipt key is passed as the
// witness key.
func TestPublishedObservationVerifiesOffline(t *testing.T) {
	fe := newFakeEnv(t)
	s := startServe(t, fe.vars)
	var set struct{ Keys []struct{ Hex, Role string } }
	if err := json.Unmarshal([]byte(s.mustGet("/.well-known/lensgate/keys")), &set); err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{}
	for _, k := range set.Keys {
		roles[k.Role] = k.Hex
	}
	if roles["receipt"] != fe.signingPub || roles["witness"] != fe.witnessPub {
		t.Fatalf("published keys %+v", set.Keys)
	}
	cr := reviewFixturePR(t, s, fe.gh)
	s.stop()

	blocks := regexp.MustCompile("(?s)```json\n(.*?)\n```").FindAllStringSubmatch(cr.Text, -1)
	if len(blocks) != 2 || !strings.Contains(cr.Text, "This review was also observed by the runner: observation `sha256:") {
		t.Fatalf("the check run text does not carry a receipt and an observation:\n%.4000s", cr.Text)
	}
	dir := t.TempDir()
	receipt, obs := filepath.Join(dir, "receipt.json"), filepath.Join(dir, "observation.json")
	if err := os.WriteFile(receipt, []byte(blocks[0][1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obs, []byte(blocks[1][1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var comment string
	for _, c := range fe.gh.Comments("Codertocat/Hello-World", 2) {
		if c.User == fe.gh.BotLogin() {
			comment = c.Body
		}
	}
	if !strings.Contains(comment, blocks[1][1]) {
		t.Fatalf("the advisory comment does not carry the same observation:\n%.4000s", comment)
	}
	sm := regexp.MustCompile("Subject digest: `([0-9a-f]{64})`").FindStringSubmatch(cr.Text)
	if sm == nil {
		t.Fatal("no subject digest in the check run text")
	}
	bin := lensgateBinary(t)
	// The builtin runtime ran inside this very binary: the observation names its digest.
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	self := "builtin=sha256:" + hex.EncodeToString(sum[:])
	verify := func(witness string) (int, map[string]any) {
		out, err := exec.Command(bin, "receipt", "verify", "--envelope", receipt, "--public-key", roles["receipt"],
			"--subject-digest", sm[1], "--observation", obs, "--witness-key", witness, "--expect-runtime", self,
			"--format", "json", "--require-observation").Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var res map[string]any
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("verify output: %v\n%s", err, out)
		}
		return code, res
	}
	if code, res := verify(roles["witness"]); code != 0 || res["ok"] != true || res["runner_observation"] != "MATCH" {
		t.Fatalf("published observation: exit %d, ok %v, %v %v", code, res["ok"], res["runner_observation"], res["observation"])
	}
	code, res := verify(roles["receipt"])
	o, _ := res["observation"].(map[string]any)
	if code != 1 || res["ok"] != true || res["runner_observation"] != "MISMATCH" || !strings.Contains(mustString(o["reason_codes"]), "OBSERVATION_WRONG_WITNESS_KEY") {
		t.Fatalf("receipt key as witness key: exit %d, ok %v, %v %v", code, res["ok"], res["runner_observation"], o["reason_codes"])
	}
}

func mustString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
