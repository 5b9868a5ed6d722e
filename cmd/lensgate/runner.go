package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/review/runner"
	"github.com/lensgate/lensgate/review/runtime"
)

// runnerCmd runs the review runtimes for workers in another process and signs what it saw.
type runnerCmd struct {
	Config string `help:"Runner configuration file (YAML). Every key can also be set from the environment." type:"path" env:"LENSGATE_RUNNER_CONFIG"`
	Check  bool   `help:"Load and validate the configuration, the token and the witness key, print the runtimes, and exit."`
}

func (c *runnerCmd) Run(e *env) error {
	cfg, err := config.LoadRunner(c.Config, nil)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	log := newLogger(e.stderr, cfg.LogLevel, cfg.LogFormat).With().Str("role", "runner").Logger()
	token, err := runner.LoadToken(cfg.TokenFile)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("%s: %w", config.RunnerKeyName("token_file"), err))
	}
	wk, err := disclosure.LoadPrivateKey(cfg.WitnessKeyFile)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("%s: %w", config.RunnerKeyName("witness_key_file"), err))
	}
	dl, err := delegateRuntime(cfg.Runtime)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	reg, err := runtimeRegistry(cfg.Runtime, log, dl)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if err := addDelegatePresets(reg, dl, cfg.Runtime.Presets); err != nil {
		return exitWith(exitUsage, err)
	}
	var previous []ed25519.PublicKey
	for _, k := range cfg.RunnerPreviousWitnessKeys() {
		previous = append(previous, ed25519.PublicKey(k))
	}
	srv, err := runner.NewServer(runner.Options{
		Runtimes: reg, Witness: observation.Signer{Key: wk}, PreviousWitnessKeys: previous, Token: token, Version: version, Logger: log,
		MaxRuns: cfg.MaxRuns, RunTTL: cfg.RunTTL, MaxRequestBytes: cfg.MaxRequestBytes, MaxConcurrent: cfg.MaxConcurrent,
		WorkRoot: cfg.WorkRoot,
	})
	if err != nil {
		return exitWith(exitUsage, err)
	}
	pub := hex.EncodeToString(srv.WitnessPublicKey())
	if c.Check {
		fmt.Fprintf(e.stdout, "runner configuration ok; witness public key %s; runtimes %s\n", pub, strings.Join(reg.Names(), ", "))
		return nil
	}
	ln, err := listenRunner(cfg.Listen)
	if err != nil {
		return err
	}
	// The handler bounds the time a body may take to arrive; the call it asks for may then run
	// as long as its runtime's own deadline (no read or write timeout here).
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: runner.MaxHeaderBytes}
	var fresh newConns
	fresh.watch(hs)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info().Str("listen", cfg.Listen).Str("witness_public_key", pub).Strs("runtimes", reg.Names()).Msg("runner listening")
	select {
	case err := <-errc:
		return fmt.Errorf("runner: %w", err)
	case <-e.ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn().Err(err).Msg("runner shutdown incomplete")
		return err
	}
	log.Info().Msg("runner stopped")
	return nil
}

// listenRunner listens on unix:///path (a stale socket of an earlier run is replaced; the new
// one is mode 0660, for a worker in the same group) or on host:port.
func listenRunner(addr string) (net.Listener, error) {
	sock, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
		return ln, nil
	}
	if fi, err := os.Lstat(sock); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("runner: %s exists and is not a socket", sock)
		}
		if err := os.Remove(sock); err != nil {
			return nil, fmt.Errorf("runner: remove the stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if err := os.Chmod(sock, 0o660); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("runner: %w", err)
	}
	return ln, nil
}

// connectRunner reads the runner's runtimes and witness key, waiting up to the configured
// time for it to answer (a runner started beside the worker may come up later).
func connectRunner(ctx context.Context, cfg config.ServerRunner, log zerolog.Logger) (*runtime.Registry, ed25519.PublicKey, error) {
	token, err := runner.LoadToken(cfg.TokenFile)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", config.ServerKeyName("runner.token_file"), err)
	}
	var pinned ed25519.PublicKey
	if cfg.WitnessPublicKey != "" {
		b, _ := hex.DecodeString(cfg.WitnessPublicKey) // validated by config
		pinned = ed25519.PublicKey(b)
	}
	client, err := runner.NewClient(cfg.URL, token, pinned)
	if err != nil {
		return nil, nil, err
	}
	wait := cfg.ConnectTimeout
	if wait == 0 {
		wait = 30 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		reg, info, err := client.Registry(cctx)
		cancel()
		if err == nil {
			log.Info().Str("runner", cfg.URL).Strs("runtimes", info.Runtimes).Str("witness_public_key", info.WitnessPublicKey).
				Msg("runtimes run in the runner, which signs the observations; this process holds no witness key")
			return reg, client.WitnessPublicKey(), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil || strings.Contains(err.Error(), "not authenticated") ||
			strings.Contains(err.Error(), "refused (HTTP 401)") || strings.Contains(err.Error(), "pinned") {
			return nil, nil, fmt.Errorf("%s: %w", config.ServerKeyName("runner.url"), err)
		}
		log.Info().Err(err).Msg("waiting for the runner")
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
