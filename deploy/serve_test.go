package deploy

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/testkit"
)

// testVersion is stamped into the test build; /healthz and --version must report it.
const testVersion = "9.8.7-deploytest"

// binDir holds the binary built by deploy/build.sh for this test run.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lensgate-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var buildOnce = sync.OnceValues(func() (string, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	out := filepath.Join(binDir, "lensgate")
	cmd := exec.Command("sh", "deploy/build.sh", out, testVersion)
	cmd.Dir = root
	// build.sh itself must turn cgo off, whatever the caller's environment says.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("deploy/build.sh: %v\n%s", err, b)
	}
	return out, nil
})

// lensgateBinary builds the binary exactly as the container image does (once per test run).
func lensgateBinary(t testing.TB) string {
	t.Helper()
	p, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBuiltBinaryIsStaticAndStamped(t *testing.T) {
	bin := lensgateBinary(t)
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("build settings CGO_ENABLED=%q -trimpath=%q", settings["CGO_ENABLED"], settings["-trimpath"])
	}
	// Go leaves -ldflags out of the build info under -trimpath; --version below shows the stamp.
	if f, err := elf.Open(bin); err == nil {
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("binary needs a dynamic loader; the distroless static image has none")
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) != 0 {
			t.Errorf("binary links %v", libs)
		}
	}

	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(out)) != testVersion {
		t.Errorf("--version printed %q, want %q", out, testVersion)
	}
}

// server is one `lensgate serve` process.
type server struct {
	t    testing.TB
	cmd  *exec.Cmd
	base string
	logs *testkit.SyncBuffer
	done chan error
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// fakeEnv is the environment that points a server at the fake GitHub, with fresh keys.
type fakeEnv struct {
	gh         *githubfake.Server
	signingPub string // hex
	witnessPub string // hex
	vars       map[string]string
}

func newFakeEnv(t testing.TB, opts ...githubfake.Option) *fakeEnv {
	t.Helper()
	gh := githubfake.New(t, opts...)
	dir := t.TempDir()
	appKey := filepath.Join(dir, "app-key.pem")
	if err := os.WriteFile(appKey, []byte(gh.PrivateKeyPEM()), 0o600); err != nil {
		t.Fatal(err)
	}
	sk := filepath.Join(dir, "signing.key")
	pub, err := disclosure.GenerateKey(sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	wk := filepath.Join(dir, "witness.key")
	wpub, err := disclosure.GenerateKey(wk, nil)
	if err != nil {
		t.Fatal(err)
	}
	ac := gh.AppConfig()
	return &fakeEnv{gh: gh, signingPub: hex.EncodeToString(pub), witnessPub: hex.EncodeToString(wpub), vars: map[string]string{
		"LENSGATE_LISTEN":                      freeAddr(t),
		"GITHUB_WEB_URL":                       ac.WebURL,
		"GITHUB_V3_API_URL":                    ac.V3APIURL,
		"GITHUB_V4_API_URL":                    ac.V4APIURL,
		"GITHUB_APP_INTEGRATION_ID":            fmt.Sprint(gh.AppID()),
		"GITHUB_APP_WEBHOOK_SECRET":            gh.WebhookSecret(),
		"LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE": appKey,
		"LENSGATE_SIGNING_KEY_FILE":            sk,
		"LENSGATE_WITNESS_KEY_FILE":            wk,
		"LENSGATE_AUDIT_FILE":                  filepath.Join(dir, "audit.jsonl"),
	}}
}

// startServe runs the built binary with exactly vars as its environment (nothing inherited, so
// the host's GITHUB_* cannot leak in) and waits until /readyz answers 200.
func startServe(t testing.TB, vars map[string]string, args ...string) *server {
	t.Helper()
	bin := lensgateBinary(t)
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Dir = t.TempDir()
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	s := &server{t: t, cmd: cmd, base: "http://" + vars["LENSGATE_LISTEN"], logs: &testkit.SyncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.logs
	cmd.Stdout = s.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("serve exited before it was ready (%v):\n%s", err, s.logs.String())
		default:
		}
		if code, _ := s.get("/readyz"); code == http.StatusOK {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready:\n%s", s.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) get(path string) (int, string) {
	resp, err := http.Get(s.base + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (s *server) mustGet(path string) string {
	s.t.Helper()
	code, body := s.get(path)
	if code != http.StatusOK {
		s.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return body
}

// deliver posts one pull_request webhook signed with secret and requires a 2xx answer.
func (s *server) deliver(id, secret string, payload []byte) {
	s.t.Helper()
	req, err := githubfake.WebhookRequest(s.base+"/api/github/hook", "pull_request", id, secret, payload)
	if err != nil {
		s.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("webhook answered %d", resp.StatusCode)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("serve exited with %v after SIGTERM:\n%s", err, s.logs.String())
		}
	case <-time.After(60 * time.Second):
		s.t.Fatalf("serve did not stop after SIGTERM:\n%s", s.logs.String())
	}
}

// reviewFixturePR seeds the fake with the octokit pull request, delivers its signed
// pull_request.opened webhook to the server and waits for the gate check run to complete.
func reviewFixturePR(t *testing.T, s *server, gh *githubfake.Server) githubfake.CheckRun {
	t.Helper()
	payload, err := os.ReadFile("testdata/webhooks/pull_request.opened.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	diff := "diff --git a/README.md b/README.md\nindex 1111111..2222222 100644\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # Hello-World\n+A friendly line.\n"
	repo, pr, err := gh.AddFromPullRequestEvent(payload, []byte(diff))
	if err != nil {
		t.Fatal(err)
	}
	// A request with a wrong signature is refused before anything else happens.
	bad, _ := githubfake.WebhookRequest(s.base+"/api/github/hook", "pull_request", "deploy-bad", "wrong-secret", payload)
	if resp, err := http.DefaultClient.Do(bad); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("badly signed webhook: %v %v", resp, err)
	}
	s.deliver("deploy-1", gh.WebhookSecret(), payload)
	deadline := time.Now().Add(90 * time.Second)
	for {
		for _, cr := range gh.CheckRuns(repo, pr.HeadSHA) {
			if cr.Status == "completed" {
				return cr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no completed check run for %s@%s; calls %v\n%s", repo, pr.HeadSHA, gh.Calls(), s.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestExampleConfigServes starts the built binary with deploy/lensgate.example.yml, the
// environment overriding what differs (the fake GitHub's URLs and the App's keys), and runs
// one review through it.
func TestExampleConfigServes(t *testing.T) {
	fe := newFakeEnv(t)
	vars := fe.vars
	// The example's state directory is /var/lib/lensgate; here a temporary one, which holds the
	// default SQLite queue.
	state := filepath.Join(t.TempDir(), "state")
	vars["LENSGATE_STATE_DIR"] = state
	// Receipts signed before a key rotation stay verifiable: retired keys are still published.
	retired := ""
	if slices.ContainsFunc(config.ServerEnvVars(), func(v config.ServerEnvVar) bool { return v.Name == "LENSGATE_PREVIOUS_PUBLIC_KEYS" }) {
		pub, err := disclosure.GenerateKey(filepath.Join(t.TempDir(), "old.key"), nil)
		if err != nil {
			t.Fatal(err)
		}
		retired = hex.EncodeToString(pub)
		vars["LENSGATE_PREVIOUS_PUBLIC_KEYS"] = retired
	}
	example, err := filepath.Abs("lensgate.example.yml")
	if err != nil {
		t.Fatal(err)
	}
	s := startServe(t, vars, "--config", example)

	var health struct{ Status, Version string }
	if err := json.Unmarshal([]byte(s.mustGet("/healthz")), &health); err != nil || health.Status != "ok" || health.Version != testVersion {
		t.Errorf("/healthz: %+v %v", health, err)
	}
	var keys struct {
		Keys []struct{ Hex, Kid, Crv string }
	}
	if err := json.Unmarshal([]byte(s.mustGet("/.well-known/lensgate/keys")), &keys); err != nil {
		t.Fatal(err)
	}
	var hexes []string
	for _, k := range keys.Keys {
		hexes = append(hexes, k.Hex)
	}
	if len(hexes) == 0 || hexes[0] != fe.signingPub {
		t.Errorf("keys %v: the current signing key %s must come first", hexes, fe.signingPub)
	}
	if retired != "" && !slices.Contains(hexes, retired) {
		t.Errorf("keys %v lack the retired key %s", hexes, retired)
	}

	cr := reviewFixturePR(t, s, fe.gh)
	if cr.Conclusion == "" {
		t.Errorf("check run %q completed without a conclusion", cr.Name)
	}
	checkMetricsDocumented(t, s.mustGet("/metrics"))
	s.stop()
	checkLogs(t, s.logs.String(), vars)
	if _, err := os.Stat(filepath.Join(state, "queue.db")); err != nil {
		t.Errorf("the default SQLite queue is not in the state directory: %v", err)
	}
}

// TestEnvironmentOnlyServes runs the built binary with no configuration file at all (so with
// the SQLite queue in ./lensgate-state) and checks the probes, the version and a review.
func TestEnvironmentOnlyServes(t *testing.T) {
	fe := newFakeEnv(t)
	vars := fe.vars
	vars["LENSGATE_LOG_LEVEL"] = "debug"
	s := startServe(t, vars)
	if body := s.mustGet("/healthz"); !strings.Contains(body, testVersion) {
		t.Errorf("/healthz %s lacks version %s", body, testVersion)
	}
	s.mustGet("/readyz")
	reviewFixturePR(t, s, fe.gh)
	checkMetricsDocumented(t, s.mustGet("/metrics"))
	s.stop()
	checkLogs(t, s.logs.String(), vars)
	if _, err := os.Stat(filepath.Join(s.cmd.Dir, config.DefaultStateDir, "queue.db")); err != nil {
		t.Errorf("no SQLite queue in the default state directory: %v", err)
	}
}

// TestSQLiteDefaultKeepsJobsAcrossRestart: with no queue setting, a job accepted by one process
// (web role, no workers) survives its exit and is reviewed by the next process on the same state
// directory.
func TestSQLiteDefaultKeepsJobsAcrossRestart(t *testing.T) {
	fe := newFakeEnv(t)
	vars := fe.vars
	vars["LENSGATE_STATE_DIR"] = filepath.Join(t.TempDir(), "state")
	vars["LENSGATE_CATCHUP_WINDOW"] = "0"
	payload, err := os.ReadFile("testdata/webhooks/pull_request.opened.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	repo, pr, err := fe.gh.AddFromPullRequestEvent(payload, []byte("diff --git a/README.md b/README.md\nindex 1111111..2222222 100644\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # Hello-World\n+A friendly line.\n"))
	if err != nil {
		t.Fatal(err)
	}
	web := startServe(t, vars, "--role", "web")
	for _, id := range []string{"restart-1", "restart-1"} { // a redelivery is ignored
		web.deliver(id, fe.gh.WebhookSecret(), payload)
	}
	web.stop()
	if n := len(fe.gh.CheckRuns(repo, pr.HeadSHA)); n != 0 {
		t.Fatalf("a web-only process published %d check runs", n)
	}
	worker := startServe(t, vars, "--role", "worker")
	deadline := time.Now().Add(60 * time.Second)
	for {
		crs := fe.gh.CheckRuns(repo, pr.HeadSHA)
		if len(crs) == 1 && crs[0].Status == "completed" {
			break
		}
		if len(crs) > 1 || time.Now().After(deadline) {
			t.Fatalf("check runs %+v after the restart\n%s", crs, worker.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	worker.stop()
	sticky := 0
	for _, c := range fe.gh.Comments(repo, pr.Number) {
		if c.User == fe.gh.BotLogin() {
			sticky++
		}
	}
	if sticky != 1 {
		t.Fatalf("%d advisory comments, want 1", sticky)
	}
}

// TestServeNamesTheSetting runs serve with missing or wrong settings: it must exit 2 before
// listening and name both the setting and its environment variable.
func TestServeNamesTheSetting(t *testing.T) {
	fe := newFakeEnv(t)
	without := func(drop ...string) map[string]string {
		m := map[string]string{}
		for k, v := range fe.vars {
			if !slices.Contains(drop, k) {
				m[k] = v
			}
		}
		return m
	}
	with := func(k, v string) map[string]string {
		m := without()
		m[k] = v
		return m
	}
	tests := []struct {
		name string
		vars map[string]string
		want []string
	}{
		{"no app id", without("GITHUB_APP_INTEGRATION_ID"), []string{"github.app.integration_id", "GITHUB_APP_INTEGRATION_ID"}},
		{"no webhook secret", without("GITHUB_APP_WEBHOOK_SECRET"), []string{"github.app.webhook_secret", "GITHUB_APP_WEBHOOK_SECRET"}},
		{"no app key", without("LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE"), []string{"github.app.private_key", "GITHUB_APP_PRIVATE_KEY"}},
		{"app id not a number", with("GITHUB_APP_INTEGRATION_ID", "twelve"), []string{"github.app.integration_id", "GITHUB_APP_INTEGRATION_ID"}},
		{"workers not a number", with("LENSGATE_QUEUE_WORKERS", "many"), []string{"queue.workers", "LENSGATE_QUEUE_WORKERS"}},
		{"bad duration", with("LENSGATE_JOB_TIMEOUT", "10 minutes"), []string{"review.job_timeout", "LENSGATE_JOB_TIMEOUT"}},
		{"bad boolean", with("LENSGATE_REVIEW_DRAFTS", "sometimes"), []string{"review.review_drafts", "LENSGATE_REVIEW_DRAFTS"}},
		{"no workers", with("LENSGATE_QUEUE_WORKERS", "0"), []string{"queue.workers", "LENSGATE_QUEUE_WORKERS"}},
		{"unknown log level", with("LENSGATE_LOG_LEVEL", "loud"), []string{"log_level", "LENSGATE_LOG_LEVEL"}},
		{"API URL not http", with("GITHUB_V3_API_URL", "api.github.com"), []string{"github.v3_api_url", "GITHUB_V3_API_URL"}},
		{"app key file missing", with("LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE", "/nonexistent/app.pem"), []string{"github.app.private_key_file", "LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE"}},
		{"signing key file missing", with("LENSGATE_SIGNING_KEY_FILE", "/nonexistent/signing.key"), []string{"signing_key_file", "LENSGATE_SIGNING_KEY_FILE"}},
		{"wrong type in the file", with("LENSGATE_CONFIG", writeFile(t, "queue:\n  workers: many\n")), []string{"lensgate.yml:2: queue.workers (LENSGATE_QUEUE_WORKERS): must be a whole number, found a string"}},
		{"unknown key in the file", with("LENSGATE_CONFIG", writeFile(t, "queue:\n  worker: 3\n")), []string{`lensgate.yml:2: queue.worker: unknown key (hint: did you mean "queue.workers"?)`}},
	}
	bin := lensgateBinary(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, "serve")
			cmd.Dir = t.TempDir()
			for k, v := range tt.vars {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2; stderr %s", err, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not name %s:\n%s", w, stderr.String())
				}
			}
			// A value that may be a secret is never echoed.
			if v := tt.vars["GITHUB_APP_INTEGRATION_ID"]; v == "twelve" && strings.Contains(stderr.String(), v) {
				t.Errorf("stderr echoes the value: %s", stderr.String())
			}
		})
	}
}

// scrapedFamilies lists the lensgate_ metric families in a Prometheus text exposition.
func scrapedFamilies(exposition string) map[string]bool {
	fams := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(exposition))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Fields(line)
			if len(f) >= 3 && strings.HasPrefix(f[2], "lensgate_") {
				fams[f[2]] = true
			}
		}
	}
	return fams
}

// documentedMetrics lists the metric names docs/metrics-and-logs.md names in backticks.
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("../docs/metrics-and-logs.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile("`(lensgate_[a-z0-9_]+)").FindAllStringSubmatch(string(data), -1) {
		out[m[1]] = true
	}
	return out
}

// sourceMetricNames lists the metric names written as string literals in the App's code.
func sourceMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	re := regexp.MustCompile(`"(lensgate_[a-z0-9_]+)"`)
	err := filepath.WalkDir("../handlers", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkMetricsDocumented: every lensgate_ family the server exposes is documented, and every
// documented name is either exposed here or defined in the App's code (labelled series only
// appear once something happened, e.g. a dead letter).
func checkMetricsDocumented(t *testing.T, exposition string) {
	t.Helper()
	scraped := scrapedFamilies(exposition)
	if len(scraped) == 0 {
		t.Fatalf("no lensgate_ metrics scraped:\n%.2000s", exposition)
	}
	doc := documentedMetrics(t)
	src := sourceMetricNames(t)
	t.Logf("%d lensgate_ families exposed, %d documented", len(scraped), len(doc))
	for name := range scraped {
		if !doc[name] {
			t.Errorf("metric %s is exposed but not documented in docs/metrics-and-logs.md", name)
		}
	}
	for name := range doc {
		if !scraped[name] && !src[name] && !bridged(name) {
			t.Errorf("docs/metrics-and-logs.md documents %s, which the code does not define", name)
		}
	}
}

// bridged reports whether name is one of go-githubapp's metrics, which the server bridges as
// lensgate_ + the key with dots as underscores (+ _total for counters) and which appear only
// after the matching activity.
func bridged(name string) bool {
	u := func(key string) string { return "lensgate_" + strings.ReplaceAll(key, ".", "_") }
	counters := []string{githubapp.MetricsKeyRequests, githubapp.MetricsKeyRequests2xx, githubapp.MetricsKeyRequests3xx,
		githubapp.MetricsKeyRequests4xx, githubapp.MetricsKeyRequests5xx, githubapp.MetricsKeyRequestsCached,
		githubapp.MetricsKeyDroppedEvents, githubapp.MetricsKeyHandlerError}
	others := []string{githubapp.MetricsKeyRateLimit, githubapp.MetricsKeyRateLimitRemaining,
		githubapp.MetricsKeyQueueLength, githubapp.MetricsKeyActiveWorkers, githubapp.MetricsKeyEventAge}
	for _, k := range counters {
		if name == u(k)+"_total" {
			return true
		}
	}
	for _, k := range others {
		if name == u(k) {
			return true
		}
	}
	return false
}

// checkLogs: every line is a JSON object with the documented fields, no field is undocumented,
// and no secret appears.
func checkLogs(t *testing.T, logs string, vars map[string]string) {
	t.Helper()
	data, err := os.ReadFile("../docs/metrics-and-logs.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	secrets := []string{vars["GITHUB_APP_WEBHOOK_SECRET"], "PRIVATE KEY"}
	for _, f := range []string{vars["LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE"], vars["LENSGATE_SIGNING_KEY_FILE"]} {
		b, err := os.ReadFile(f)
		if err == nil {
			secrets = append(secrets, strings.TrimSpace(string(b)))
		}
	}
	lines := 0
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		lines++
		for _, s := range secrets {
			if s != "" && strings.Contains(line, s) {
				t.Errorf("log line contains a secret: %.200s", line)
			}
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("log line is not JSON: %.200s", line)
			continue
		}
		if k := testkit.DuplicateKey(line); k != "" {
			t.Errorf("log line carries %q twice: %.300s", k, line)
		}
		for _, k := range []string{"level", "time", "message", "service"} {
			if _, ok := m[k]; !ok {
				t.Errorf("log line lacks %q: %.200s", k, line)
			}
		}
		for k := range m {
			seen[k] = true
		}
	}
	for k := range seen {
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("log field %q is not documented in docs/metrics-and-logs.md", k)
		}
	}
	if lines < 3 {
		t.Errorf("only %d log lines:\n%s", lines, logs)
	}
	if !strings.Contains(logs, `"stopped"`) {
		t.Errorf("no clean shutdown logged:\n%s", logs)
	}
}

// TestKeyRotationKeepsOldReceiptsVerifiable follows docs/keys.md: a receipt signed before the
// rotation still verifies with a key from /.well-known/lensgate/keys after it, because the
// retired key is published as previous_public_keys.
func TestKeyRotationKeepsOldReceiptsVerifiable(t *testing.T) {
	fe := newFakeEnv(t)
	s := startServe(t, fe.vars)
	cr := reviewFixturePR(t, s, fe.gh)
	s.stop()
	envelope := receiptFromText(t, cr.Text)
	// The subject this test expects is the one the check run names; docs/receipts.md says how a
	// reader derives it independently.
	sm := regexp.MustCompile("Subject digest: `([0-9a-f]{64})`").FindStringSubmatch(cr.Text)
	if sm == nil {
		t.Fatalf("no subject digest in the check run text:\n%.3000s", cr.Text)
	}
	subject := sm[1]
	receipt := filepath.Join(t.TempDir(), "receipt.json")
	if err := os.WriteFile(receipt, envelope, 0o600); err != nil {
		t.Fatal(err)
	}

	// Rotate: a new signing key, the old public key listed as previous.
	newKey := filepath.Join(t.TempDir(), "signing-2.key")
	newPub, err := disclosure.GenerateKey(newKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for k, v := range fe.vars {
		vars[k] = v
	}
	vars["LENSGATE_LISTEN"] = freeAddr(t)
	vars["LENSGATE_SIGNING_KEY_FILE"] = newKey
	vars["LENSGATE_PREVIOUS_PUBLIC_KEYS"] = fe.signingPub
	s2 := startServe(t, vars)
	var all struct{ Keys []struct{ Hex, Role string } }
	if err := json.Unmarshal([]byte(s2.mustGet("/.well-known/lensgate/keys")), &all); err != nil {
		t.Fatal(err)
	}
	s2.stop()
	// Receipt keys only: the witness key that follows them signs observations, not receipts.
	var set struct{ Keys []struct{ Hex string } }
	for _, k := range all.Keys {
		if k.Role == "receipt" {
			set.Keys = append(set.Keys, struct{ Hex string }{k.Hex})
		}
	}
	if len(set.Keys) != 2 || set.Keys[0].Hex != hex.EncodeToString(newPub) || set.Keys[1].Hex != fe.signingPub {
		t.Fatalf("published keys %+v, want the new key then the retired one", set.Keys)
	}

	// The operator's verification: try each published key; the retired one verifies the old
	// receipt, the new one does not.
	bin := lensgateBinary(t)
	verified := map[string]bool{}
	for _, k := range set.Keys {
		out, err := exec.Command(bin, "receipt", "verify", "--envelope", receipt, "--public-key", k.Hex, "--subject-digest", subject).CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			verified[k.Hex] = true
		case errors.As(err, &ee) && ee.ExitCode() == 1:
		default:
			t.Fatalf("receipt verify: %v\n%s", err, out)
		}
	}
	if !verified[fe.signingPub] || verified[hex.EncodeToString(newPub)] {
		t.Errorf("verified with %v; want only the retired key %s", verified, fe.signingPub)
	}
}

// receiptFromText takes the signed receipt out of a check run's text (a ```json block).
func receiptFromText(t *testing.T, text string) []byte {
	t.Helper()
	m := regexp.MustCompile("(?s)```json\n(.*?)\n```").FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no receipt in the check run text:\n%.3000s", text)
	}
	return []byte(m[1] + "\n")
}

// TestCatchUpAfterDowntime: deliveries GitHub failed to make while lensgate was down are
// redelivered when it starts (docs/troubleshooting.md); successful and too old ones are not.
func TestCatchUpAfterDowntime(t *testing.T) {
	fe := newFakeEnv(t)
	now := time.Now().UTC()
	failed := fe.gh.AddHookDelivery(githubfake.HookDelivery{GUID: "down-1", Event: "pull_request", Action: "opened", StatusCode: 502, DeliveredAt: now.Add(-time.Hour)})
	ok := fe.gh.AddHookDelivery(githubfake.HookDelivery{GUID: "up-1", Event: "pull_request", Action: "synchronize", StatusCode: 202, DeliveredAt: now.Add(-30 * time.Minute)})
	old := fe.gh.AddHookDelivery(githubfake.HookDelivery{GUID: "down-old", Event: "issues", Action: "opened", StatusCode: 502, DeliveredAt: now.Add(-30 * time.Hour)})
	s := startServe(t, fe.vars)
	// The run ends with its summary line; wait for it (it follows the redelivery requests).
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(s.logs.String(), `"message":"webhook catch-up"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no catch-up summary; redeliveries %v\n%s", fe.gh.Redeliveries(), s.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	got := fe.gh.Redeliveries()
	if slices.Contains(got, ok.ID) || slices.Contains(got, old.ID) || len(got) != 1 {
		t.Errorf("redeliveries %v; want only %d", got, failed.ID)
	}
	if !strings.Contains(s.logs.String(), `"redelivered":1`) {
		t.Errorf("no catch-up summary in the logs:\n%s", s.logs.String())
	}
}

// writeFile writes text to a new temporary file and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lensgate.yml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServeCheck: `serve --check` validates the configuration, asks GitHub for the App and
// exits 0 without listening, as docs/deploy.md recommends before a deploy.
func TestServeCheck(t *testing.T) {
	fe := newFakeEnv(t)
	cmd := exec.Command(lensgateBinary(t), "serve", "--check")
	cmd.Dir = t.TempDir()
	for k, v := range fe.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("serve --check: %v\n%s", err, stderr.String())
	}
	want := fmt.Sprintf("App %d (%s)", fe.gh.AppID(), githubfake.DefaultAppSlug)
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout %q lacks %q", stdout.String(), want)
	}
	if c, err := net.Dial("tcp", fe.vars["LENSGATE_LISTEN"]); err == nil {
		c.Close()
		t.Error("serve --check left something listening")
	}

	// A key of another App is caught here, not at the first webhook.
	other, err := githubfake.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	kf := filepath.Join(t.TempDir(), "other.pem")
	if err := os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)}), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(lensgateBinary(t), "serve", "--check")
	cmd.Dir = t.TempDir()
	for k, v := range fe.vars {
		if k == "LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE" {
			v = kf
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr.Reset()
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "GET /app") {
		t.Errorf("serve --check with another App's key: %v %s", err, stderr.String())
	}
}

// TestSetupOutputServes: what `lensgate setup convert` writes is a working server
// configuration. The conversion answers with the fake GitHub's App (id, key, secret); serve then
// starts from the written file, with only the API addresses pointed at the fake.
func TestSetupOutputServes(t *testing.T) {
	gh := githubfake.New(t)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v3/app-manifests/{code}/conversions", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("code") != "the-code" {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": gh.AppID(), "slug": githubfake.DefaultAppSlug, "name": "lensgate",
			"html_url": gh.URL() + "/apps/lensgate", "webhook_secret": gh.WebhookSecret(), "pem": gh.PrivateKeyPEM(),
		})
	})
	conv := httptest.NewServer(mux)
	defer conv.Close()

	out := filepath.Join(t.TempDir(), "conf")
	b, err := exec.Command(lensgateBinary(t), "setup", "convert", "--code", "the-code", "--api-url", conv.URL+"/api/v3/", "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("setup convert: %v\n%s", err, b)
	}
	pubHex := regexp.MustCompile(`public key ([0-9a-f]{64})`).FindSubmatch(b)
	if pubHex == nil {
		t.Fatalf("setup did not print the receipt public key:\n%s", b)
	}
	ac := gh.AppConfig()
	s := startServe(t, map[string]string{
		"LENSGATE_LISTEN":   freeAddr(t),
		"GITHUB_WEB_URL":    ac.WebURL,
		"GITHUB_V3_API_URL": ac.V3APIURL,
		"GITHUB_V4_API_URL": ac.V4APIURL,
	}, "--config", filepath.Join(out, "lensgate.yml"))
	if keys := s.mustGet("/.well-known/lensgate/keys"); !strings.Contains(keys, string(pubHex[1])) {
		t.Errorf("keys %s lack the key setup made (%s)", keys, pubHex[1])
	}
	reviewFixturePR(t, s, gh)
	s.stop()
	for _, f := range []string{"audit.jsonl", "queue.db"} {
		if _, err := os.Stat(filepath.Join(out, "state", f)); err != nil {
			t.Errorf("no %s in the state directory next to the keys: %v", f, err)
		}
	}
}
