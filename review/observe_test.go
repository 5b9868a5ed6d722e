package review

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// The pipeline's own clock and bytes make the observation: the builtin runtime is named by
// lensgate's version and the digest of the running binary; a runtime that fails is a call
// with its error and no review digest; the files are the ones given, by blob SHA.
func TestPipelineObservesEachCall(t *testing.T) {
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex // the runtimes are called at once
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Second)
		return clock
	}
	failing := &fakeRuntime{name: "flaky", fn: func(*runtime.Request) (*runtime.Result, error) {
		// A cause with a NUL and far over the format's bound must not make the statement unsignable.
		return nil, errors.New("deadline\x00" + strings.Repeat("é", 600))
	}}
	p := NewPipeline(Options{Runtimes: runtime.NewRegistry(builtin.New(builtin.Options{}), failing),
		Now: now, Version: "v9.9.9", FreeRuntimes: []string{"builtin", "flaky"}})
	cfg := config.DefaultRepo()
	cfg.Policy = policyWith(config.Lens{Name: "secrets", Preset: "builtin", Required: true}, config.Lens{Name: "deep", Preset: "flaky"})
	subj := prSubject()
	subj.Files[0].BlobSHA = strings.Repeat("3", 40)
	subj.RepositoryNodeID, subj.NodeID = "R_1", "PR_7"
	d, err := p.Review(context.Background(), subj, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := d.Observed
	if o == nil || len(o.Calls) != 2 {
		t.Fatalf("observed %+v", o)
	}
	self, _ := os.Executable()
	b, _ := os.ReadFile(self)
	sum := sha256.Sum256(b)
	bi := o.Calls[0]
	if bi.Runtime.Kind != observation.KindBuiltin || bi.Runtime.Version != "v9.9.9" || bi.Runtime.ExecutableSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("builtin identity %+v", bi.Runtime)
	}
	if !bi.Started.After(o.Started) || !bi.Finished.After(bi.Started) || !o.Finished.After(o.Calls[1].Finished) {
		t.Fatalf("times: window %v..%v, call %v..%v", o.Started, o.Finished, bi.Started, bi.Finished)
	}
	wantFiles := observation.FilesDigest(map[string]string{"README.md": strings.Repeat("3", 40)})
	if bi.Files.Digest != wantFiles || bi.Files.Count != 1 || bi.ReviewDigest == "" || len(bi.Exchanges) != 1 {
		t.Fatalf("builtin call %+v", bi)
	}
	fl := o.Calls[1]
	if fl.Runtime.Kind != observation.KindOther || fl.Error == "" || fl.ReviewDigest != "" {
		t.Fatalf("failing call %+v", fl)
	}
	rc := signedReceipt(t, d, subj)
	st := d.ObservationStatement(rc, "v9.9.9")
	signed, err := observation.Sign(st, observation.Signer{Key: ed25519.NewKeyFromSeed(make([]byte, 32))})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := observation.Parse(signed.Envelope); err != nil || len(p.Statement.Calls[1].Error) > observation.MaxErrorBytes {
		t.Fatalf("parse: %v", err)
	}
	if st.Calls[1].Outcomes[0] != (observation.Outcome{Lens: "deep", Outcome: "pending"}) || st.FindingsTotal != len(d.Findings) {
		t.Fatalf("statement %+v", st)
	}
}

func signedReceipt(t *testing.T, d *Decision, subj *Subject) *disclosure.Receipt {
	t.Helper()
	disc, err := disclosure.Disclose(subj.Body, Predicate(d, subj, time.Now()), disclosure.Signer{Key: ed25519.NewKeyFromSeed(make([]byte, 32))})
	if err != nil {
		t.Fatal(err)
	}
	return disc.Receipt
}
