package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/review/runner"
)

// TestReviewThroughARunner: `lensgate runner --check` loads a runner configuration; `lensgate
// review --runner` runs the lenses in a runner listening on a real unix socket, signs the
// receipt itself and prints the observation the runner signed, which verifies MATCH under the
// runner's witness key. The CLI never reads that key.
func TestReviewThroughARunner(t *testing.T) {
	dir := throwAwayRepo(t)
	commit(t, dir, map[string]string{"docs/a.md": "hello\n"}, "Docs")
	keys, err := os.MkdirTemp("", "lgcli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(keys) })
	receiptKey, witnessKey, tokenFile := filepath.Join(keys, "receipt.key"), filepath.Join(keys, "witness.key"), filepath.Join(keys, "token")
	receiptPub, err := disclosure.GenerateKey(receiptKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := disclosure.GenerateKey(witnessKey, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte(strings.Repeat("3c", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(keys, "r.sock")
	cfgFile := filepath.Join(keys, "runner.yml")
	if err := os.WriteFile(cfgFile, []byte(fmt.Sprintf("listen: unix://%s\ntoken_file: %s\nwitness_key_file: %s\nruntimes:\n  enabled: [builtin]\n", sock, tokenFile, witnessKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"runner", "--check", "--config", cfgFile}, &out, &errb); code != 0 || !strings.Contains(out.String(), "runtimes builtin") {
		t.Fatalf("runner --check: %d %s %s", code, out.String(), errb.String())
	}

	// The runner as `lensgate runner` builds it, served on the socket.
	rc, err := config.LoadRunner(cfgFile, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	reg, err := runtimeRegistry(rc.Runtime, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	wk, _ := disclosure.LoadPrivateKey(witnessKey)
	token, _ := runner.LoadToken(tokenFile)
	srv, err := runner.NewServer(runner.Options{Runtimes: reg, Witness: observation.Signer{Key: wk}, Token: token, Version: version, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := listenRunner("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket %v %v", fi, err)
	}

	if code, _, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--sign-key", receiptKey, "--witness-key", witnessKey,
		"--runner", "unix://"+sock, "--runner-token", tokenFile); code != exitUsage || !strings.Contains(stderr, "the runner holds the witness key") {
		t.Fatalf("--runner with --witness-key: %d %s", code, stderr)
	}
	code, js, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "json", "--sign-key", receiptKey,
		"--runner", "unix://"+sock, "--runner-token", tokenFile)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, js, stderr)
	}
	var doc struct {
		Receipt     json.RawMessage `json:"receipt"`
		Observation json.RawMessage `json:"observation"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.Observation) == 0 {
		t.Fatalf("no observation: %v\n%s", err, js)
	}
	res := observation.Verify(doc.Observation, observation.Options{WitnessKey: srv.WitnessPublicKey(), ReceiptKey: receiptPub, Receipt: doc.Receipt})
	if res.RunnerObservation != observation.Match || len(res.Statement.Calls) == 0 || res.Statement.Calls[0].Runtime.Kind != observation.KindBuiltin {
		t.Fatalf("observation %s %v %v", res.RunnerObservation, res.ReasonCodes, res.Errors)
	}

	// A socket path taken by another file is not removed.
	plain := filepath.Join(keys, "plain")
	_ = os.WriteFile(plain, nil, 0o600)
	if _, err := listenRunner("unix://" + plain); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("listen on a plain file: %v", err)
	}
}
