package exec_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/review"
	rtexec "github.com/lensgate/lensgate/review/runtime/exec"
)

// TestAdapterInterpreterObserved: a script's "#!" program is named and hashed in the
// observation, directly or through env(1) and the adapter's PATH; a changed interpreter under
// an unchanged script shows as another identity.
func TestAdapterInterpreterObserved(t *testing.T) {
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh")
	}
	shBytes, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	mysh := filepath.Join(bin, "mysh")
	if err := os.WriteFile(mysh, shBytes, 0o755); err != nil {
		t.Fatal(err)
	}
	observe := func(t *testing.T, shebang string, opts rtexec.Options) (*observation.Signed, *disclosure.Receipt) {
		t.Helper()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "acme"), []byte(shebang+"\n"+adapterReview), 0o755); err != nil {
			t.Fatal(err)
		}
		d := reviewWith(t, dir, "acme", opts, "code")
		if l := lens(d, "code"); l.Outcome == review.OutcomePending {
			t.Fatalf("the adapter did not run: %s", l.Cause)
		}
		rc := receiptFor(t, d)
		obs, err := review.SignObservation(d, rc, "test", observation.Signer{Key: witnessKey}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return obs, rc
	}
	want := observation.Expectation{Name: "acme", InterpreterSHA256: fileDigest(t, mysh)}
	for _, c := range []struct {
		name, shebang string
		opts          rtexec.Options
	}{
		{"direct", "#!" + mysh, rtexec.Options{}},
		{"through env", "#!/usr/bin/env mysh", rtexec.Options{Path: bin + ":/usr/bin:/bin"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs, rc := observe(t, c.shebang, c.opts)
			res := verify(t, obs, rc, want)
			rt := res.Statement.Calls[0].Runtime
			if res.RunnerObservation != observation.Match || rt.InterpreterPath != mysh {
				t.Fatalf("%s %v: runtime %+v", res.RunnerObservation, res.Errors, rt)
			}
			p, _ := observation.Parse(obs.Envelope)
			if p == nil || p.Statement.Calls[0].Runtime.InterpreterSHA256 != want.InterpreterSHA256 {
				t.Fatal("the published statement does not carry the interpreter")
			}
		})
	}
	t.Run("rebuilt interpreter", func(t *testing.T) {
		// The same script; its interpreter has one more byte at the end and still runs.
		if err := os.WriteFile(mysh, append(append([]byte(nil), shBytes...), 0), 0o755); err != nil {
			t.Fatal(err)
		}
		obs, rc := observe(t, "#!"+mysh, rtexec.Options{})
		res := verify(t, obs, rc, want)
		if res.RunnerObservation != observation.Mismatch || !slices.Equal(res.ReasonCodes, []string{observation.CodeRuntimeDiffers}) {
			t.Fatalf("%s %v", res.RunnerObservation, res.ReasonCodes)
		}
	})
}
