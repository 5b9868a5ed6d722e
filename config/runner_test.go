package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServerRunnerSettings(t *testing.T) {
	key := testRSAKeyPEM(t)
	base := map[string]string{"GITHUB_APP_INTEGRATION_ID": "1", "GITHUB_APP_WEBHOOK_SECRET": "x", "GITHUB_APP_PRIVATE_KEY": key}
	tests := []struct {
		name string
		env  map[string]string
		want string // "" when it loads
	}{
		{"unix socket", map[string]string{"LENSGATE_RUNNER_URL": "unix:///run/r.sock", "LENSGATE_RUNNER_TOKEN_FILE": "/t"}, ""},
		{"tcp", map[string]string{"LENSGATE_RUNNER_URL": "http://10.0.0.2:8091", "LENSGATE_RUNNER_TOKEN_FILE": "/t",
			"LENSGATE_RUNNER_WITNESS_PUBLIC_KEY": strings.Repeat("ab", 32), "LENSGATE_RUNNER_CONNECT_TIMEOUT": "5s"}, ""},
		{"no token", map[string]string{"LENSGATE_RUNNER_URL": "unix:///run/r.sock"}, "runner.token_file"},
		{"relative socket", map[string]string{"LENSGATE_RUNNER_URL": "unix://r.sock", "LENSGATE_RUNNER_TOKEN_FILE": "/t"}, "runner.url"},
		{"https", map[string]string{"LENSGATE_RUNNER_URL": "https://r:1", "LENSGATE_RUNNER_TOKEN_FILE": "/t"}, "runner.url"},
		{"witness key beside a runner", map[string]string{"LENSGATE_RUNNER_URL": "unix:///run/r.sock", "LENSGATE_RUNNER_TOKEN_FILE": "/t",
			"LENSGATE_WITNESS_KEY_FILE": "/w"}, "witness_key_file"},
		{"bad pinned key", map[string]string{"LENSGATE_RUNNER_URL": "unix:///run/r.sock", "LENSGATE_RUNNER_TOKEN_FILE": "/t",
			"LENSGATE_RUNNER_WITNESS_PUBLIC_KEY": "zz"}, "runner.witness_public_key"},
		{"token without url", map[string]string{"LENSGATE_RUNNER_TOKEN_FILE": "/t"}, "runner.url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"LENSGATE_STATE_DIR": t.TempDir()}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}
			s, err := LoadServer("", envMap(env))
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want == "" && s.Runner.URL != tc.env["LENSGATE_RUNNER_URL"]:
				t.Fatalf("runner %+v", s.Runner)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

func TestLoadRunner(t *testing.T) {
	ok := map[string]string{"LENSGATE_RUNNER_LISTEN": "unix:///run/r.sock", "LENSGATE_RUNNER_TOKEN_FILE": "/t", "LENSGATE_WITNESS_KEY_FILE": "/w"}
	r, err := LoadRunner("", envMap(ok))
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxRuns != 256 || r.RunTTL.Minutes() != 30 || r.Runtime.Enabled[0] != "builtin" {
		t.Fatalf("defaults %+v", r)
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range ok {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{with("LENSGATE_RUNNER_LISTEN", ""), "listen (LENSGATE_RUNNER_LISTEN)"},
		{with("LENSGATE_RUNNER_LISTEN", "nowhere"), "listen"},
		{with("LENSGATE_RUNNER_TOKEN_FILE", ""), "token_file"},
		{with("LENSGATE_WITNESS_KEY_FILE", ""), "witness_key_file"},
		{with("LENSGATE_RUNNER_RUN_TTL", "10s"), "run_ttl"},
		{with("LENSGATE_RUNNER_MAX_RUNS", "x"), "max_runs"},
		{with("LENSGATE_PREVIOUS_WITNESS_PUBLIC_KEYS", "abc"), "previous_witness_public_keys"},
		{with("LENSGATE_RUNTIMES", "builtin,openai"), ""},
	} {
		r, err := LoadRunner("", envMap(tc.env))
		if tc.want == "" {
			if err != nil || len(r.Runtime.Enabled) != 2 {
				t.Errorf("%v: %v %+v", tc.env, err, r)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %s", tc.env, err, tc.want)
		}
	}
}

// TestLoadRunnerReportsEveryProblemAtOnce: the runner's file and environment are reported as the
// server's are: every problem, at its line or variable, in the configuration's own words.
func TestLoadRunnerReportsEveryProblemAtOnce(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "runner.yml")
	if err := os.WriteFile(cfg, []byte("listen: relative.sock\nmax_run: 3\nrun_ttl: 60\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadRunner(cfg, envMap(map[string]string{"LENSGATE_RUNNER_MAX_REQUEST_BYTES": "1MB"}))
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{
		`runner.yml:2: max_run: unknown key (hint: did you mean "max_runs"?)`,
		`runner.yml:3: run_ttl (LENSGATE_RUNNER_RUN_TTL): must be a duration, found a whole number (hint: a duration needs a unit: 60s, 60m or 60h)`,
		`max_request_bytes (LENSGATE_RUNNER_MAX_REQUEST_BYTES): must be a whole number of bytes`,
		`runner.yml:1: listen (LENSGATE_RUNNER_LISTEN):`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("lacks %q in\n%v", want, err)
		}
	}
}
