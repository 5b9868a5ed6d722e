package config

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testRSAKeyPEM(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadServerFromEnvOnly(t *testing.T) {
	key := testRSAKeyPEM(t)
	s, err := LoadServer("", envMap(map[string]string{
		"GITHUB_APP_INTEGRATION_ID": "42",
		"GITHUB_APP_WEBHOOK_SECRET": "s3cret",
		"GITHUB_APP_PRIVATE_KEY":    key,
		"GITHUB_V3_API_URL":         "https://ghe.example/api/v3/",
		"LENSGATE_QUEUE_WORKERS":    "7",
		"LENSGATE_RUNTIMES":         "builtin, exec",
		"LENSGATE_REVIEW_DRAFTS":    "true",
		"LENSGATE_JOB_TIMEOUT":      "90s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if s.GitHub.App.IntegrationID != 42 || s.GitHub.V3APIURL != "https://ghe.example/api/v3/" ||
		s.Queue.Workers != 7 || !s.Review.ReviewDrafts || s.Review.JobTimeout != 90*time.Second {
		t.Fatalf("env not applied: %+v", s)
	}
	if strings.Join(s.Runtime.Enabled, ",") != "builtin,exec" {
		t.Fatalf("runtimes %q", s.Runtime.Enabled)
	}
	if s.Listen != ":8080" || s.Queue.Size != 100 || s.Review.OrgConfigRepo != ".github" {
		t.Fatalf("defaults lost: %+v", s)
	}
}

func TestLoadServerFileThenEnv(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(keyFile, []byte(testRSAKeyPEM(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "server.yml")
	yml := "listen: 127.0.0.1:9000\ngithub:\n  app:\n    integration_id: 7\n    webhook_secret: fromfile\n    private_key_file: " + keyFile + "\nqueue:\n  size: 5\n"
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadServer(cfg, envMap(map[string]string{"LENSGATE_QUEUE_SIZE": "9"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Listen != "127.0.0.1:9000" || s.GitHub.App.WebhookSecret != "fromfile" || s.Queue.Size != 9 {
		t.Fatalf("got %+v", s)
	}
	if !strings.Contains(s.GitHub.App.PrivateKey, "PRIVATE KEY") {
		t.Fatal("private key file not read")
	}
}

func TestLoadServerRefuses(t *testing.T) {
	key := testRSAKeyPEM(t)
	base := map[string]string{
		"GITHUB_APP_INTEGRATION_ID": "1",
		"GITHUB_APP_WEBHOOK_SECRET": "x",
		"GITHUB_APP_PRIVATE_KEY":    key,
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}
	withAll := func(extra map[string]string) map[string]string {
		m := with("", "")
		delete(m, "")
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"empty secret", with("GITHUB_APP_WEBHOOK_SECRET", ""), "webhook_secret"},
		{"blank secret", with("GITHUB_APP_WEBHOOK_SECRET", "  "), "webhook_secret"},
		{"garbage key", with("GITHUB_APP_PRIVATE_KEY", "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"), "private_key"},
		{"not pem", with("GITHUB_APP_PRIVATE_KEY", "hello"), "not a PEM block"},
		{"no app id", with("GITHUB_APP_INTEGRATION_ID", "0"), "integration_id"},
		{"non-numeric app id", with("GITHUB_APP_INTEGRATION_ID", "abc"), "GITHUB_APP_INTEGRATION_ID"},
		{"bad url", with("GITHUB_V3_API_URL", "ftp://x"), "v3_api_url"},
		{"bad duration", with("LENSGATE_JOB_TIMEOUT", "soon"), "LENSGATE_JOB_TIMEOUT"},
		{"zero workers", with("LENSGATE_QUEUE_WORKERS", "0"), "worker"},
		{"no runtimes", with("LENSGATE_RUNTIMES", " , "), "runtimes.enabled (LENSGATE_RUNTIMES): is empty"},
		{"zero queue size names key and env", with("LENSGATE_QUEUE_SIZE", "0"), "queue.size (LENSGATE_QUEUE_SIZE): must be at least 1"},
		{"bad log level names key and env", with("LENSGATE_LOG_LEVEL", "loud"), "log_level (LENSGATE_LOG_LEVEL)"},
		{"bad previous key", with("LENSGATE_PREVIOUS_PUBLIC_KEYS", strings.Repeat("ab", 32)+",xyz"), "previous_public_keys[1] (LENSGATE_PREVIOUS_PUBLIC_KEYS)"},
		{"bad previous witness key", with("LENSGATE_PREVIOUS_WITNESS_PUBLIC_KEYS", "xyz"), "previous_witness_public_keys[0] (LENSGATE_PREVIOUS_WITNESS_PUBLIC_KEYS)"},
		{"witness key is the receipt key", withAll(map[string]string{"LENSGATE_SIGNING_KEY_FILE": "/k", "LENSGATE_WITNESS_KEY_FILE": "/k"}), "witness_key_file (LENSGATE_WITNESS_KEY_FILE): is the receipt key file"},
		{"negative catch-up", with("LENSGATE_CATCHUP_WINDOW", "-1h"), "queue.catchup_window (LENSGATE_CATCHUP_WINDOW)"},
		{"empty secret names env", with("GITHUB_APP_WEBHOOK_SECRET", ""), "github.app.webhook_secret (GITHUB_APP_WEBHOOK_SECRET): is empty"},
		{"details page without a session key", withAll(map[string]string{"LENSGATE_PUBLIC_URL": "https://lg.example", "GITHUB_OAUTH_CLIENT_ID": "Iv1.a", "GITHUB_OAUTH_CLIENT_SECRET": "s"}),
			"details.session_key (LENSGATE_DETAILS_SESSION_KEY): is required"},
		{"short session key", withAll(map[string]string{"LENSGATE_PUBLIC_URL": "https://lg.example", "LENSGATE_DETAILS_PUBLIC_REPOS": "true", "LENSGATE_DETAILS_SESSION_KEY": "abcd"}),
			"details.session_key (LENSGATE_DETAILS_SESSION_KEY): has 2 bytes; want at least 32"},
		{"session key not hex", withAll(map[string]string{"LENSGATE_PUBLIC_URL": "https://lg.example", "LENSGATE_DETAILS_PUBLIC_REPOS": "true", "LENSGATE_DETAILS_SESSION_KEY": "zz"}),
			"details.session_key (LENSGATE_DETAILS_SESSION_KEY): must be hex"},
		{"details page without login or public repositories", withAll(map[string]string{"LENSGATE_PUBLIC_URL": "https://lg.example", "LENSGATE_DETAILS_SESSION_KEY": strings.Repeat("ab", 32)}),
			"github.oauth.client_id (GITHUB_OAUTH_CLIENT_ID): the details page needs the App's OAuth client"},
		{"public url with a path", withAll(map[string]string{"LENSGATE_PUBLIC_URL": "https://lg.example/app", "LENSGATE_DETAILS_PUBLIC_REPOS": "true", "LENSGATE_DETAILS_SESSION_KEY": strings.Repeat("ab", 32)}),
			"public_url (LENSGATE_PUBLIC_URL)"},
		{"client id without secret", with("GITHUB_OAUTH_CLIENT_ID", "Iv1.a"), "github.oauth.client_secret (GITHUB_OAUTH_CLIENT_SECRET): client_id and client_secret go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadServer("", envMap(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
			if strings.Contains(err.Error(), key[40:80]) {
				t.Fatal("error echoes the private key")
			}
		})
	}
}

func TestLoadServerDetailsPage(t *testing.T) {
	s, err := LoadServer("", envMap(map[string]string{
		"GITHUB_APP_INTEGRATION_ID": "1", "GITHUB_APP_WEBHOOK_SECRET": "x", "GITHUB_APP_PRIVATE_KEY": testRSAKeyPEM(t),
		"LENSGATE_PUBLIC_URL": "https://lg.example", "GITHUB_OAUTH_CLIENT_ID": "Iv1.a", "GITHUB_OAUTH_CLIENT_SECRET": "s",
		"LENSGATE_DETAILS_SESSION_KEY": strings.Repeat("ab", 32), "LENSGATE_DETAILS_PUBLIC_REPOS": "true",
	}))
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.SessionKeyBytes()
	if err != nil || len(k) != 32 || !s.Details.PublicRepos || s.GitHub.OAuth.ClientSecret != "s" || s.PublicURL != "https://lg.example" {
		t.Fatalf("details settings not applied: %+v %v", s.Details, err)
	}
}

func TestLoadServerUnknownKeyHasLine(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "server.yml")
	if err := os.WriteFile(cfg, []byte("listen: :1\nqueue:\n  sise: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadServer(cfg, envMap(nil))
	if err == nil || !strings.Contains(err.Error(), "server.yml:3: queue.sise: unknown key (hint: did you mean \"queue.size\"?)") {
		t.Fatalf("err = %v, want line 3 and the unknown key", err)
	}
}

func TestServerEnvVarsNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, ev := range ServerEnvVars() {
		if seen[ev.Name] {
			t.Fatalf("duplicate %s", ev.Name)
		}
		seen[ev.Name] = true
		if !strings.HasPrefix(ev.Name, "GITHUB_") && !strings.HasPrefix(ev.Name, "LENSGATE_") {
			t.Fatalf("%s lacks a GITHUB_ or LENSGATE_ prefix", ev.Name)
		}
	}
}

func TestLoadServerTypeErrorNamesKey(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "server.yml")
	if err := os.WriteFile(cfg, []byte("listen: :1\nqueue:\n  size: 3\n  workers: many\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadServer(cfg, envMap(nil))
	if err == nil || !strings.Contains(err.Error(), "server.yml:4: queue.workers (LENSGATE_QUEUE_WORKERS): must be a whole number, found a string") {
		t.Fatalf("err = %v, want the line, key and env var", err)
	}
}

func TestServerPreviousKeysAndDefaults(t *testing.T) {
	key := testRSAKeyPEM(t)
	k1 := strings.Repeat("01", 32)
	s, err := LoadServer("", envMap(map[string]string{
		"GITHUB_APP_INTEGRATION_ID": "1", "GITHUB_APP_WEBHOOK_SECRET": "x", "GITHUB_APP_PRIVATE_KEY": key,
		"LENSGATE_PREVIOUS_PUBLIC_KEYS": " " + k1 + " ,",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if pk := s.ServerPreviousKeys(); len(pk) != 1 || pk[0][0] != 1 {
		t.Fatalf("previous keys %x", pk)
	}
	if s.Queue.CatchupWindow != 24*time.Hour || s.AuditFile == "" || s.GitHub.ContentSpacing != time.Second {
		t.Fatalf("defaults %+v", s.Queue)
	}
}

func TestServerStateDefaults(t *testing.T) {
	key := testRSAKeyPEM(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name               string
		env                map[string]string
		wantDir, wantAudit string
		wantDSN            string
		wantMemory         bool
	}{
		{"working directory", nil, filepath.Join(wd, DefaultStateDir), filepath.Join(wd, DefaultStateDir, "audit.jsonl"), "sqlite://" + filepath.Join(wd, DefaultStateDir, "queue.db"), false},
		{"systemd", map[string]string{"STATE_DIRECTORY": "/var/lib/lensgate:/var/lib/other"}, "/var/lib/lensgate", "/var/lib/lensgate/audit.jsonl", "sqlite:///var/lib/lensgate/queue.db", false},
		{"state_dir wins over systemd", map[string]string{"STATE_DIRECTORY": "/var/lib/lensgate", "LENSGATE_STATE_DIR": "/srv/lg"}, "/srv/lg", "/srv/lg/audit.jsonl", "sqlite:///srv/lg/queue.db", false},
		{"relative state_dir", map[string]string{"LENSGATE_STATE_DIR": "st"}, filepath.Join(wd, "st"), filepath.Join(wd, "st", "audit.jsonl"), "sqlite://" + filepath.Join(wd, "st", "queue.db"), false},
		{"explicit paths", map[string]string{"LENSGATE_STATE_DIR": "/srv/lg", "LENSGATE_AUDIT_FILE": "/log/a.jsonl", "LENSGATE_QUEUE_DSN": "postgres://db/lensgate"}, "/srv/lg", "/log/a.jsonl", "postgres://db/lensgate", false},
		{"memory queue", map[string]string{"LENSGATE_STATE_DIR": "/srv/lg", "LENSGATE_QUEUE_DSN": "memory"}, "/srv/lg", "/srv/lg/audit.jsonl", "memory", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"GITHUB_APP_INTEGRATION_ID": "1", "GITHUB_APP_WEBHOOK_SECRET": "x", "GITHUB_APP_PRIVATE_KEY": key}
			for k, v := range tt.env {
				env[k] = v
			}
			s, err := LoadServer("", envMap(env))
			if err != nil {
				t.Fatal(err)
			}
			if s.StateDir != tt.wantDir || s.AuditFile != tt.wantAudit || s.Queue.DSN != tt.wantDSN || s.MemoryQueue() != tt.wantMemory {
				t.Fatalf("state %q audit %q dsn %q memory %v", s.StateDir, s.AuditFile, s.Queue.DSN, s.MemoryQueue())
			}
		})
	}
}

func TestServerQueueAndPresetErrors(t *testing.T) {
	key := testRSAKeyPEM(t)
	tests := []struct {
		name string
		env  map[string]string
		want string // "" = loads
	}{
		{"mysql dsn", map[string]string{"LENSGATE_QUEUE_DSN": "mysql://u:secret@h/db"}, "queue.dsn (LENSGATE_QUEUE_DSN): want memory"},
		{"empty sqlite path", map[string]string{"LENSGATE_QUEUE_DSN": "sqlite://"}, "queue.dsn (LENSGATE_QUEUE_DSN): sqlite:// needs a file path"},
		{"rescue below job timeout", map[string]string{"LENSGATE_JOB_TIMEOUT": "1m", "LENSGATE_QUEUE_RESCUE_AFTER": "30s"}, "queue.rescue_after (LENSGATE_QUEUE_RESCUE_AFTER): must exceed"},
		{"rescue above job timeout", map[string]string{"LENSGATE_JOB_TIMEOUT": "10s", "LENSGATE_QUEUE_RESCUE_AFTER": "12s"}, ""},
		{"preset without runtime", map[string]string{"LENSGATE_RUNTIME_PRESETS": "deep=openai,house"}, "runtimes.presets (LENSGATE_RUNTIME_PRESETS): \"house\": want name=runtime"},
		{"presets", map[string]string{"LENSGATE_RUNTIME_PRESETS": " deep = openai , house=builtin"}, ""},
		{"content spacing off", map[string]string{"LENSGATE_GITHUB_CONTENT_SPACING": "0"}, ""},
		{"content spacing", map[string]string{"LENSGATE_GITHUB_CONTENT_SPACING": "2500ms"}, ""},
		{"negative content spacing", map[string]string{"LENSGATE_GITHUB_CONTENT_SPACING": "-1s"}, "github.content_spacing (LENSGATE_GITHUB_CONTENT_SPACING): must be 0 (off) or positive up to 1m0s"},
		{"content spacing too long", map[string]string{"LENSGATE_GITHUB_CONTENT_SPACING": "61s"}, "github.content_spacing (LENSGATE_GITHUB_CONTENT_SPACING): must be 0 (off)"},
		{"content spacing not a duration", map[string]string{"LENSGATE_GITHUB_CONTENT_SPACING": "1"}, "LENSGATE_GITHUB_CONTENT_SPACING"},
		{"model settings", map[string]string{"LENSGATE_OPENAI_TIMEOUT": "10m", "LENSGATE_OPENAI_TEMPERATURE": "0.2", "LENSGATE_OPENAI_SEED": "7"}, ""},
		{"model timeout above an hour", map[string]string{"LENSGATE_OPENAI_TIMEOUT": "2h"}, "runtimes.openai_timeout (LENSGATE_OPENAI_TIMEOUT): must be 0"},
		{"negative temperature", map[string]string{"LENSGATE_OPENAI_TEMPERATURE": "-1"}, "runtimes.openai_temperature (LENSGATE_OPENAI_TEMPERATURE): must be between 0 and 2"},
		{"temperature not a number", map[string]string{"LENSGATE_OPENAI_TEMPERATURE": "cold"}, "runtimes.openai_temperature (LENSGATE_OPENAI_TEMPERATURE): must be a number"},
		{"seed not a number", map[string]string{"LENSGATE_OPENAI_SEED": "x"}, "runtimes.openai_seed (LENSGATE_OPENAI_SEED): must be a whole number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"GITHUB_APP_INTEGRATION_ID": "1", "GITHUB_APP_WEBHOOK_SECRET": "x", "GITHUB_APP_PRIVATE_KEY": key, "LENSGATE_STATE_DIR": t.TempDir()}
			for k, v := range tt.env {
				env[k] = v
			}
			s, err := LoadServer("", envMap(env))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error echoes the DSN: %v", err)
			}
			_ = s
		})
	}
	s, err := LoadServer("", envMap(map[string]string{"GITHUB_APP_INTEGRATION_ID": "1", "GITHUB_APP_WEBHOOK_SECRET": "x", "GITHUB_APP_PRIVATE_KEY": key, "LENSGATE_STATE_DIR": t.TempDir(), "LENSGATE_RUNTIME_PRESETS": "deep=openai, house=builtin"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Runtime.Presets) != 2 || s.Runtime.Presets["deep"] != "openai" || s.Runtime.Presets["house"] != "builtin" {
		t.Fatalf("presets %v", s.Runtime.Presets)
	}
}

// TestServerRefusesAKeyInBothRoles: a retired receipt key listed as a witness key (a retired
// one, or the runner's) is refused with the keys named.
func TestServerRefusesAKeyInBothRoles(t *testing.T) {
	key := testRSAKeyPEM(t)
	k := strings.Repeat("ab", 32)
	for _, witness := range []map[string]string{
		{"LENSGATE_PREVIOUS_WITNESS_PUBLIC_KEYS": strings.Repeat("01", 32) + "," + strings.ToUpper(k)},
		{"LENSGATE_RUNNER_URL": "unix:///run/r.sock", "LENSGATE_RUNNER_TOKEN_FILE": "/run/token", "LENSGATE_RUNNER_WITNESS_PUBLIC_KEY": k},
	} {
		env := map[string]string{
			"GITHUB_APP_INTEGRATION_ID": "1", "GITHUB_APP_WEBHOOK_SECRET": "x", "GITHUB_APP_PRIVATE_KEY": key,
			"LENSGATE_PREVIOUS_PUBLIC_KEYS": k,
		}
		for a, b := range witness {
			env[a] = b
		}
		_, err := LoadServer("", envMap(env))
		if err == nil || !strings.Contains(err.Error(), "previous_public_keys") || !strings.Contains(err.Error(), "witness key") {
			t.Fatalf("%v: %v", witness, err)
		}
	}
}

// TestLoadServerReportsEveryProblemAtOnce: the file's unknown keys and wrong values, the
// environment's bad values and the validation of what remains come in one error, each with its
// line or variable, a did-you-mean or the form wanted, and no Go type names.
func TestLoadServerReportsEveryProblemAtOnce(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "server.yml")
	yml := `listen: :1
log_levl: debug
queue:
  worker: 3
  size: "5"
  lease: 30
review:
  job_timeout: soon
  command: ""
github:
  app:
    integration_id: 7
    webhook_secret: s
    private_key: not a key
  timeout: [1s]
timeout: 5s
runtimes:
  presets: deep
  delegates:
    bot:
      logn: x
      user_id: many
`
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadServer(cfg, envMap(map[string]string{
		"LENSGATE_JOB_TIMEOUT": "5", "LENSGATE_DRY_RUN": "maybe", "LENSGATE_QUEUE_SIZE": "lots", "LENSGATE_DETAILS_SESSION_KEY": "secretvalue",
	}))
	if err == nil {
		t.Fatal("loaded")
	}
	msg := err.Error()
	for _, want := range []string{
		`server.yml:2: log_levl: unknown key (hint: did you mean "log_level"?)`,
		`server.yml:4: queue.worker: unknown key (hint: did you mean "queue.workers"?)`,
		`server.yml:5: queue.size (LENSGATE_QUEUE_SIZE): must be a whole number, found a string (hint: write it without quotes)`,
		`server.yml:6: queue.lease (LENSGATE_QUEUE_LEASE): must be a duration, found a whole number (hint: a duration needs a unit: 30s, 30m or 30h)`,
		`server.yml:8: review.job_timeout (LENSGATE_JOB_TIMEOUT): must be a duration, found a string (hint: write a number with a unit, such as 30s, 10m or 1h30m)`,
		`server.yml:15: github.timeout (LENSGATE_GITHUB_TIMEOUT): must be a duration, found a list`,
		`server.yml:16: timeout: unknown key (hint: did you mean "github.timeout"? (it belongs under another key))`,
		`server.yml:18: runtimes.presets (LENSGATE_RUNTIME_PRESETS): must be a mapping, found a string`,
		`server.yml:21: runtimes.delegates.bot.logn: unknown key (hint: did you mean "runtimes.delegates.bot.login"?)`,
		`server.yml:22: runtimes.delegates.bot.user_id: must be a whole number, found a string`,
		`review.job_timeout (LENSGATE_JOB_TIMEOUT): must be a duration with a unit: 5s, 5m or 5h`,
		`dry_run (LENSGATE_DRY_RUN): must be true or false`,
		`queue.size (LENSGATE_QUEUE_SIZE): must be a whole number, such as 4`,
		// Validation of the settings that did load, at the line that set them.
		`server.yml:9: review.command (LENSGATE_REVIEW_COMMAND): is empty`,
		`server.yml:14: github.app.private_key (GITHUB_APP_PRIVATE_KEY): not a PEM block`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("lacks %q", want)
		}
	}
	for _, leak := range []string{"config.", "type ", "!!", "unmarshal", "invalid value", "secretvalue", "not a key"} {
		if strings.Contains(msg, leak) {
			t.Errorf("mentions %q", leak)
		}
	}
	if t.Failed() {
		t.Log(msg)
	}
}

// TestLoadServerYAMLSyntaxErrorHasLine: a file yaml cannot parse is reported at its line.
func TestLoadServerYAMLSyntaxErrorHasLine(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "server.yml")
	if err := os.WriteFile(cfg, []byte("listen: :1\nqueue:\n  size: [1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadServer(cfg, envMap(nil))
	if err == nil || !strings.Contains(err.Error(), "server.yml:") || !strings.Contains(err.Error(), "YAML syntax error") {
		t.Fatalf("err = %v", err)
	}
}

// TestLoadServerKeepsYAMLMerges: a "<<: *anchor" merge still works in the server file.
func TestLoadServerKeepsYAMLMerges(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "server.yml")
	yml := "x-queue: &q {size: 7, workers: 3}\n"
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadServer(cfg, envMap(nil)); err == nil || !strings.Contains(err.Error(), "x-queue: unknown key") {
		t.Fatalf("an unknown top-level key: %v", err)
	}
	yml = "queue:\n  <<: {size: 7, workers: 3}\n  event_workers: 4\ngithub:\n  app:\n    integration_id: 1\n    webhook_secret: x\n"
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadServer(cfg, envMap(map[string]string{"GITHUB_APP_PRIVATE_KEY": testRSAKeyPEM(t), "LENSGATE_STATE_DIR": t.TempDir()}))
	if err != nil || s.Queue.Size != 7 || s.Queue.Workers != 3 || s.Queue.EventWorkers != 4 {
		t.Fatalf("merge: %v %+v", err, s)
	}
}
