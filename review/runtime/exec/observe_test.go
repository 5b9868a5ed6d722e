package exec_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/review"
	rtexec "github.com/lensgate/lensgate/review/runtime/exec"
)

var (
	receiptKey = ed25519.NewKeyFromSeed(make([]byte, 32))
	witnessKey = ed25519.NewKeyFromSeed([]byte("witness-key-seed-for-tests-only!"))
)

const adapterReview = `cat > "$ASDD_OUT" <<JSON
{"schema":"asdd/review/v0.1","pr_number":5,"head_sha":"eeee","mode":"live","recommendation":"request-changes",
 "summary":"reviewed","lenses":[
 {"lens":"code","verdict":"request-changes","findings":[{"severity":"block","message":"Cache is never invalidated.","path":"c.go:1"}]}]}
JSON
`

// receiptFor composes the receipt of a decision, as the App's composer does.
func receiptFor(t *testing.T, d *review.Decision) *disclosure.Receipt {
	t.Helper()
	disc, err := disclosure.Disclose(subject().Body, review.Predicate(d, subject(), time.Now()), disclosure.Signer{Key: receiptKey})
	if err != nil {
		t.Fatal(err)
	}
	return disc.Receipt
}

func verify(t *testing.T, obs *observation.Signed, rc *disclosure.Receipt, expect ...observation.Expectation) *observation.Result {
	t.Helper()
	return observation.Verify(obs.Envelope, observation.Options{
		WitnessKey: witnessKey.Public().(ed25519.PublicKey), ReceiptKey: receiptKey.Public().(ed25519.PublicKey),
		Receipt: rc.Envelope, Expected: expect,
	})
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// The observation names the adapter file that was started, how it exited and the exact
// review.json it wrote; a swapped adapter or a receipt composed from another review.json is a
// MISMATCH with its own reason.
func TestAdapterObservation(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "acme", adapterReview)
	want := observation.Expectation{Name: "acme", ExecutableSHA256: fileDigest(t, filepath.Join(dir, "acme"))}
	d := reviewWith(t, dir, "acme", rtexec.Options{}, "code")
	rc := receiptFor(t, d)
	obs, err := review.SignObservation(d, rc, "test", observation.Signer{Key: witnessKey}, 0)
	if err != nil {
		t.Fatal(err)
	}
	res := verify(t, obs, rc, want)
	if res.RunnerObservation != observation.Match {
		t.Fatalf("%s %v %v", res.RunnerObservation, res.ReasonCodes, res.Errors)
	}
	call := res.Statement.Calls[0]
	if call.Runtime.Kind != observation.KindExec || call.Runtime.ExitStatus == nil || *call.Runtime.ExitStatus != 0 ||
		call.ReviewDigest == "" || len(call.Exchanges) != 1 || call.Exchanges[0].Response == nil {
		t.Fatalf("call %+v", call)
	}

	t.Run("swapped adapter", func(t *testing.T) {
		dir2 := t.TempDir()
		writeScript(t, dir2, "acme", "# another build\n"+adapterReview)
		d2 := reviewWith(t, dir2, "acme", rtexec.Options{}, "code")
		rc2 := receiptFor(t, d2)
		obs2, err := review.SignObservation(d2, rc2, "test", observation.Signer{Key: witnessKey}, 0)
		if err != nil {
			t.Fatal(err)
		}
		res := verify(t, obs2, rc2, want)
		if res.RunnerObservation != observation.Mismatch || !slices.Equal(res.ReasonCodes, []string{observation.CodeRuntimeDiffers}) {
			t.Fatalf("%s %v", res.RunnerObservation, res.ReasonCodes)
		}
	})
	t.Run("tampered review.json", func(t *testing.T) {
		// The composer worked from a review.json with the finding's severity lowered; the
		// runner observed the real one and binds the composer's receipt.
		dir2 := t.TempDir()
		writeScript(t, dir2, "acme", strings.Replace(adapterReview, `"severity":"block"`, `"severity":"warn"`, 1))
		tampered := reviewWith(t, dir2, "acme", rtexec.Options{}, "code")
		rc2 := receiptFor(t, tampered)
		obs2, err := review.SignObservation(d, rc2, "test", observation.Signer{Key: witnessKey}, 0)
		if err != nil {
			t.Fatal(err)
		}
		res := verify(t, obs2, rc2, want)
		if res.RunnerObservation != observation.Mismatch || !slices.Equal(res.ReasonCodes, []string{observation.CodeFindingsDiffer}) {
			t.Fatalf("%s %v %v", res.RunnerObservation, res.ReasonCodes, res.Errors)
		}
	})
	t.Run("exit status", func(t *testing.T) {
		dir2 := t.TempDir()
		writeScript(t, dir2, "acme", adapterReview+"exit 3\n")
		d2 := reviewWith(t, dir2, "acme", rtexec.Options{}, "code")
		st := d2.ObservationStatement(receiptFor(t, d2), "test")
		c := st.Calls[0]
		if c.Runtime.ExitStatus == nil || *c.Runtime.ExitStatus != 3 || c.Error == "" || c.ReviewDigest != "" {
			t.Fatalf("call %+v", c)
		}
	})
}
