package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/rs/zerolog"
)

// serveEnv points every GitHub setting of `lensgate serve` at the fake.
func serveEnv(t *testing.T, gh *githubfake.Server) {
	t.Helper()
	ac := gh.AppConfig()
	t.Setenv("GITHUB_WEB_URL", ac.WebURL)
	t.Setenv("GITHUB_V3_API_URL", ac.V3APIURL)
	t.Setenv("GITHUB_V4_API_URL", ac.V4APIURL)
	t.Setenv("GITHUB_APP_INTEGRATION_ID", "4242")
	t.Setenv("GITHUB_APP_WEBHOOK_SECRET", ac.App.WebhookSecret)
	t.Setenv("GITHUB_APP_PRIVATE_KEY", ac.App.PrivateKey)
	t.Setenv("LENSGATE_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	t.Setenv("LENSGATE_AUDIT_FILE", filepath.Join(t.TempDir(), "audit.jsonl"))
	t.Setenv("LENSGATE_QUEUE_DSN", "memory") // tests that want the SQLite default unset it
	t.Setenv("LENSGATE_LOG_LEVEL", "warn")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestServeRefusesUnsafeConfig(t *testing.T) {
	gh := githubfake.New(t)
	tests := []struct {
		name, key, value, want string
	}{
		{"empty webhook secret", "GITHUB_APP_WEBHOOK_SECRET", "", "webhook_secret"},
		{"invalid private key", "GITHUB_APP_PRIVATE_KEY", "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n", "private_key"},
		{"unknown runtime", "LENSGATE_RUNTIMES", "builtin,magic", "magic"},
		{"preset of a runtime not enabled", "LENSGATE_RUNTIME_PRESETS", "deep=openai", "runtimes.presets (LENSGATE_RUNTIME_PRESETS): preset \"deep\" names runtime \"openai\""},
		{"preset with a bad name", "LENSGATE_RUNTIME_PRESETS", "Deep Review=builtin", "runtimes.presets (LENSGATE_RUNTIME_PRESETS): preset \"Deep Review\""},
		{"unknown queue", "LENSGATE_QUEUE_DSN", "redis://h", "queue.dsn (LENSGATE_QUEUE_DSN)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serveEnv(t, gh)
			t.Setenv(tt.key, tt.value)
			var stderr bytes.Buffer
			code := run(context.Background(), []string{"serve"}, io.Discard, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want 2 mentioning %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// TestServeComesUpBeforeGitHubConfirmsTheApp: with an App GitHub refuses, serve keeps running:
// /healthz answers, /readyz answers 503 with the reason, webhooks 503 with Retry-After, the log
// says why; it stops cleanly.
func TestServeComesUpBeforeGitHubConfirmsTheApp(t *testing.T) {
	gh := githubfake.New(t)
	serveEnv(t, gh)
	t.Setenv("GITHUB_APP_INTEGRATION_ID", "999") // the fake App is 4242: its JWT is refused
	addr := freeAddr(t)
	t.Setenv("LENSGATE_LISTEN", addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var stderr syncBuffer
	go func() { done <- run(ctx, []string{"serve"}, io.Discard, &stderr) }()
	base := "http://" + addr
	if err := waitStatus(base+handlers.RouteHealth, http.StatusOK, 20*time.Second); err != nil {
		t.Fatalf("healthz: %v; stderr %s", err, stderr.String())
	}
	// The first check fails at once; from then on the reason names the failed call.
	var body string
	if err := waitFor(20*time.Second, func() bool {
		code, b := getStatus(base + handlers.RouteReady)
		body = b
		return code == http.StatusServiceUnavailable && strings.Contains(b, "GET /app failed")
	}); err != nil {
		t.Fatalf("readyz never gave the reason: %s", body)
	}
	req, _ := githubfake.WebhookRequest(base+handlers.RouteHook, "star", "d1", gh.WebhookSecret(), []byte(`{"action":"created"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("webhook while starting: %v %v", err, resp)
	}
	resp.Body.Close()
	if !strings.Contains(stderr.String(), "GitHub App not confirmed") || !strings.Contains(stderr.String(), "GET /app") {
		t.Errorf("the log does not say why: %s", stderr.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no shutdown while starting")
	}
}

// TestServeRetriesUntilGitHubAnswers: GET /app failing at first (GitHub not reachable yet)
// delays readiness, it does not end the process.
func TestServeRetriesUntilGitHubAnswers(t *testing.T) {
	gh := githubfake.New(t)
	serveEnv(t, gh)
	t.Setenv("LENSGATE_LOG_LEVEL", "info")
	gh.FailNext("GET /app", http.StatusBadGateway, 2)
	addr := freeAddr(t)
	t.Setenv("LENSGATE_LISTEN", addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var stderr syncBuffer
	go func() { done <- run(ctx, []string{"serve"}, io.Discard, &stderr) }()
	if err := waitReady("http://"+addr, 60*time.Second); err != nil {
		t.Fatalf("never ready: %v; stderr %s", err, stderr.String())
	}
	if n := strings.Count(stderr.String(), "GitHub App not confirmed"); n != 2 || gh.PendingFaults("GET /app") != 0 {
		t.Errorf("%d failed checks logged, %d faults left; want 2 and 0:\n%s", n, gh.PendingFaults("GET /app"), stderr.String())
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// syncBuffer is a bytes.Buffer the server's log goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// getStatus GETs url and returns the status and body (0 and the error when it fails).
func getStatus(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitStatus polls url until it answers want or within passes.
func waitStatus(url string, want int, within time.Duration) error {
	var last string
	err := waitFor(within, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			last = err.Error()
			return false
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == want
	})
	if err != nil {
		return fmt.Errorf("%s: last %s", url, last)
	}
	return nil
}

// waitFor polls cond until it holds or within passes.
func waitFor(within time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("condition not met in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func TestServeCheck(t *testing.T) {
	gh := githubfake.New(t)
	serveEnv(t, gh)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--check"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "App 4242 (lensgate)") {
		t.Fatalf("stdout %q", stdout.String())
	}
	if _, err := os.Stat(os.Getenv("LENSGATE_AUDIT_FILE")); !os.IsNotExist(err) {
		t.Fatalf("--check created the audit ledger (%v)", err)
	}
}

func TestServeRunsAndShutsDown(t *testing.T) {
	gh := githubfake.New(t)
	serveEnv(t, gh)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "receipt.key")
	pub, err := disclosure.GenerateKey(keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	oldPub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LENSGATE_PREVIOUS_PUBLIC_KEYS", hex.EncodeToString(oldPub)+","+hex.EncodeToString(pub))
	witnessFile := filepath.Join(dir, "witness.key")
	witnessPub, err := disclosure.GenerateKey(witnessFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "server.yml")
	addr := freeAddr(t)
	if err := os.WriteFile(cfgFile, []byte("listen: "+addr+"\nsigning_key_file: "+keyFile+"\nwitness_key_file: "+witnessFile+"\nshutdown_timeout: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() { done <- run(ctx, []string{"serve", "--config", cfgFile}, io.Discard, &stderr) }()
	base := "http://" + addr
	if err := waitReady(base, 20*time.Second); err != nil {
		cancel()
		t.Fatalf("server not ready: %v; stderr %s", err, stderr.String())
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(handlers.RouteHealth); code != http.StatusOK || !strings.Contains(body, `"ok"`) {
		t.Fatalf("healthz %d %s", code, body)
	}
	code, body := get(handlers.RouteKeys)
	var ks handlers.KeySet
	// The current key first, then the retired one; the current key listed again is not repeated.
	// The witness key follows the receipt keys, with its own role.
	if err := json.Unmarshal([]byte(body), &ks); code != http.StatusOK || err != nil || len(ks.Keys) != 3 {
		t.Fatalf("keys %d %s", code, body)
	}
	if ks.Keys[0].Hex != hex.EncodeToString(pub) || ks.Keys[0].Crv != "Ed25519" || ks.Keys[1].Hex != hex.EncodeToString(oldPub) ||
		ks.Keys[0].Role != handlers.RoleReceipt || ks.Keys[1].Role != handlers.RoleReceipt {
		t.Fatalf("served keys %+v, want %x then %x", ks.Keys, pub, oldPub)
	}
	if ks.Keys[2].Hex != hex.EncodeToString(witnessPub) || ks.Keys[2].Role != handlers.RoleWitness {
		t.Fatalf("witness key %+v, want %x with role witness", ks.Keys[2], witnessPub)
	}
	// A signed unknown event is acknowledged; a metric scrape shows the App and client metrics.
	req, _ := githubfake.WebhookRequest(base+handlers.RouteHook, "star", "d1", gh.WebhookSecret(), []byte(`{"action":"created"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: %v %v", err, resp)
	}
	resp.Body.Close()
	_, metrics := get(handlers.RouteMetrics)
	for _, want := range []string{"lensgate_github_requests_total", "lensgate_github_event_queued", "lensgate_queue_depth", "go_goroutines"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after shutdown: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no graceful shutdown")
	}
}

func TestServeWithDurableQueueAndRoles(t *testing.T) {
	gh := githubfake.New(t)
	serveEnv(t, gh)
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "queue.db")
	t.Setenv("LENSGATE_QUEUE_DSN", dsn)
	t.Setenv("LENSGATE_CATCHUP_WINDOW", "0")
	for _, role := range []string{"web", "worker"} {
		t.Run(role, func(t *testing.T) {
			addr := freeAddr(t)
			t.Setenv("LENSGATE_LISTEN", addr)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			var stderr bytes.Buffer
			go func() { done <- run(ctx, []string{"serve", "--role", role}, io.Discard, &stderr) }()
			base := "http://" + addr
			if err := waitReady(base, 30*time.Second); err != nil {
				cancel()
				t.Fatalf("not ready: %v; stderr %s", err, stderr.String())
			}
			req, _ := githubfake.WebhookRequest(base+handlers.RouteHook, "star", "d-"+role, gh.WebhookSecret(), []byte(`{}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			// A worker replica takes no webhooks; a web replica does.
			want := map[string]int{"web": http.StatusAccepted, "worker": http.StatusNotFound}[role]
			if resp.StatusCode != want {
				t.Fatalf("webhook on a %s replica: %d, want %d", role, resp.StatusCode, want)
			}
			cancel()
			if code := <-done; code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
		})
	}
}

func TestServeRoleNeedsDurableQueue(t *testing.T) {
	gh := githubfake.New(t)
	serveEnv(t, gh)
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--role", "web"}, io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "LENSGATE_QUEUE_DSN") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

func TestRuntimeRegistryPresets(t *testing.T) {
	reg, err := runtimeRegistry(config.ServerRuntime{Enabled: []string{"builtin", "dryrun"}, Presets: map[string]string{"house-style": "dryrun", "deep": "builtin"}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for preset, want := range map[string]string{"house-style": "dryrun", "deep": "builtin"} {
		if got, ok := reg.Preset(preset); !ok || got != want {
			t.Errorf("preset %s → %q %v, want %s", preset, got, ok, want)
		}
	}
	if _, err := runtimeRegistry(config.ServerRuntime{Enabled: []string{"builtin"}, Presets: map[string]string{"deep": "dryrun"}}, zerolog.Nop()); err == nil ||
		!strings.Contains(err.Error(), "runtimes.presets (LENSGATE_RUNTIME_PRESETS)") || !strings.Contains(err.Error(), "enabled: builtin") {
		t.Fatalf("preset of a disabled runtime: %v", err)
	}
}

// TestServeStateDirDefault: with no queue.dsn and no audit_file the server creates its state
// directory and keeps the SQLite queue and the audit ledger in it; --check creates nothing.
func TestServeStateDirDefault(t *testing.T) {
	gh := githubfake.New(t)
	serveEnv(t, gh)
	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("LENSGATE_STATE_DIR", state)
	t.Setenv("LENSGATE_QUEUE_DSN", "")
	t.Setenv("LENSGATE_AUDIT_FILE", "")
	t.Setenv("LENSGATE_CATCHUP_WINDOW", "0")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--check"}, io.Discard, &stderr); code != exitOK {
		t.Fatalf("check: exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Fatalf("--check created the state directory (%v)", err)
	}
	addr := freeAddr(t)
	t.Setenv("LENSGATE_LISTEN", addr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "--role", "web"}, io.Discard, &stderr) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + handlers.RouteReady)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("not ready: %v; stderr %s", err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	fi, err := os.Stat(state)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state directory: %v %v", fi, err)
	}
	for _, f := range []string{"queue.db", "audit.jsonl"} {
		if _, err := os.Stat(filepath.Join(state, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// waitReady polls /readyz of the server at base until it answers 200 or within passes.
func waitReady(base string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(base + handlers.RouteReady)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("readyz answered %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeRefusesOneKeyForBothRoles: a witness key that is also the receipt key (two files of
// the same key) would make the observation one more self-declaration; serve refuses it.
func TestServeRefusesOneKeyForBothRoles(t *testing.T) {
	gh := githubfake.New(t)
	serveEnv(t, gh)
	dir := t.TempDir()
	receipt := filepath.Join(dir, "receipt.key")
	if _, err := disclosure.GenerateKey(receipt, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(receipt)
	if err != nil {
		t.Fatal(err)
	}
	copyOf := filepath.Join(dir, "witness.key")
	if err := os.WriteFile(copyOf, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LENSGATE_SIGNING_KEY_FILE", receipt)
	t.Setenv("LENSGATE_WITNESS_KEY_FILE", copyOf)
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve"}, io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "witness_key_file") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeRefusesARetiredWitnessKeyThatSignsReceipts: the receipt key listed among the
// retired witness keys would let it vouch for observations; serve refuses to start and names
// the key and both roles.
func TestServeRefusesARetiredWitnessKeyThatSignsReceipts(t *testing.T) {
	gh := githubfake.New(t)
	serveEnv(t, gh)
	receipt := filepath.Join(t.TempDir(), "receipt.key")
	pk, err := disclosure.GenerateKey(receipt, nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := hex.EncodeToString(pk)
	t.Setenv("LENSGATE_SIGNING_KEY_FILE", receipt)
	t.Setenv("LENSGATE_PREVIOUS_WITNESS_PUBLIC_KEYS", pub)
	// Bounded, so that a server that starts anyway stops and the test fails instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	if code := run(ctx, []string{"serve"}, io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), pub) ||
		!strings.Contains(stderr.String(), "both a receipt key") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeStopsWithNewConnections: connections that have not sent a whole request (a client's
// spare connection, one with part of a request) do not hold a graceful stop past
// shutdown_timeout, as net/http would until they are 5 s old; the stop closes them
// (TestShutdownAnswersNoRequestBegunBefore shows that loses nothing).
func TestServeStopsWithNewConnections(t *testing.T) {
	gh := githubfake.New(t)
	serveEnv(t, gh)
	addr := freeAddr(t)
	t.Setenv("LENSGATE_LISTEN", addr)
	t.Setenv("LENSGATE_SHUTDOWN_TIMEOUT", "3s") // below net/http's 5 s
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() { done <- run(ctx, []string{"serve"}, io.Discard, &stderr) }()
	if err := waitReady("http://"+addr, 20*time.Second); err != nil {
		cancel()
		<-done
		t.Fatalf("server not ready: %v; stderr %s", err, stderr.String())
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// Bounds a hang, not a speed: the server's own read header timeout is 10 s.
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		return c
	}
	quiet, partial := dial(), dial()
	if _, err := io.WriteString(partial, "GET "+handlers.RouteHealth+" HTTP/1.1\r\nHost: lensgate\r\n"); err != nil {
		t.Fatal(err)
	}

	cancel()
	if n, err := quiet.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("connection without a request: read %d bytes, %v; want it closed by the stop", n, err)
	}
	if n, err := partial.Read(make([]byte, 1)); !closedConn(n, err) {
		t.Errorf("connection with part of a request: read %d bytes, %v; want it closed by the stop", n, err)
	}
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d after the stop with new connections open: %s", code, stderr.String())
	}
}
