package runner_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runner"
	"github.com/lensgate/lensgate/review/runtime"
	rtexec "github.com/lensgate/lensgate/review/runtime/exec"
)

// TestExecAdapterThroughTheRunner: an operator's adapter installed on the runner's host runs
// there on the work directory the worker built (shipped file by file and laid out by the
// runner), and the observation names the digest of the adapter file the runner started.
func TestExecAdapterThroughTheRunner(t *testing.T) {
	adapters := t.TempDir()
	script := "#!/bin/sh\nset -eu\ntitle=$(cat \"$ASDD_WORKDIR/title.txt\")\ncat > \"$ASDD_OUT\" <<JSON\n" +
		`{"schema":"asdd/review/v0.1","recommendation":"request-changes","summary":"reviewed: $title","lenses":[` +
		`{"lens":"code","verdict":"request-changes","summary":"reviewed: $title","findings":[{"severity":"block","message":"The nil check is gone.","path":"loader.go:2"}]}]}` + "\nJSON\n"
	if err := os.WriteFile(filepath.Join(adapters, "acme"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rt, err := rtexec.New(adapters, "acme", rtexec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	witness := seedKey(7)
	srv, err := runner.NewServer(runner.Options{Runtimes: runtime.NewRegistry(rt), Witness: observation.Signer{Key: witness},
		Token: token, Logger: zerolog.Nop(), WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := os.MkdirTemp("", "lgx")
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "r.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	s := newSplit(t, "unix://"+sock, token)
	s.pipe = review.NewPipeline(review.Options{Runtimes: mustRegistry(t, s.client), Logger: zerolog.Nop(), WorkRoot: t.TempDir()})
	cfg := config.DefaultRepo()
	cfg.Models.Reviewer = "m"
	cfg.Policy = config.Policy{Version: 1, Aggregation: config.AggregationAllRequired, Required: []string{"code"},
		Lenses: []config.Lens{{Name: "code", Preset: "acme", Instruction: "Check the code.", Outcome: config.OutcomeReview, Publication: config.PublicationReview, Required: true}}}
	subj := subject()
	d, err := s.pipe.Review(context.Background(), subj, cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := lensOf(d, "code")
	if l.Outcome != review.OutcomeFailed || !strings.Contains(l.Summary, "reviewed: Simplify Load") {
		t.Fatalf("code lens %+v", l)
	}
	rc := s.sign(d, subj, nil)
	obs, err := runner.RunOf(d.Session).Observe(context.Background(), rc.Envelope, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(script))
	res := observation.Verify(obs.Envelope, observation.Options{WitnessKey: witness.Public().(ed25519.PublicKey), Receipt: rc.Envelope,
		Expected: []observation.Expectation{{Name: "acme", ExecutableSHA256: hex.EncodeToString(sum[:])}}})
	if res.RunnerObservation != observation.Match {
		t.Fatalf("observation %s %v %v", res.RunnerObservation, res.ReasonCodes, res.Errors)
	}
	c := res.Statement.Calls[0]
	if c.Runtime.Kind != observation.KindExec || c.Runtime.ExitStatus == nil || *c.Runtime.ExitStatus != 0 || c.Exchanges[0].Response == nil {
		t.Fatalf("exec call %+v", c)
	}
	// The adapter swapped on the runner's host after the review: the expectation of the old
	// digest no longer holds for a new review.
	if err := os.WriteFile(filepath.Join(adapters, "acme"), []byte(strings.Replace(script, "gone", "missing", 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	d2, _ := s.pipe.Review(context.Background(), subj, cfg)
	rc2 := s.sign(d2, subj, nil)
	obs2, err := runner.RunOf(d2.Session).Observe(context.Background(), rc2.Envelope, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	res2 := observation.Verify(obs2.Envelope, observation.Options{WitnessKey: witness.Public().(ed25519.PublicKey), Receipt: rc2.Envelope,
		Expected: []observation.Expectation{{Name: "acme", ExecutableSHA256: hex.EncodeToString(sum[:])}}})
	if res2.RunnerObservation != observation.Mismatch || !strings.Contains(strings.Join(res2.ReasonCodes, ","), observation.CodeRuntimeDiffers) {
		t.Fatalf("swapped adapter: %s %v", res2.RunnerObservation, res2.ReasonCodes)
	}
}

func mustRegistry(t *testing.T, c *runner.Client) *runtime.Registry {
	t.Helper()
	reg, _, err := c.Registry(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
