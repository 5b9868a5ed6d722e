package exec_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	rtexec "github.com/lensgate/lensgate/review/runtime/exec"
)

func writeScript(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func subject() *review.Subject {
	return &review.Subject{
		Kind: review.KindPullRequest, Owner: "o", Repo: "r", Number: 5, Title: "Add caching", Body: "Body $(whoami)",
		HeadSHA: strings.Repeat("e", 40), BaseSHA: strings.Repeat("f", 40), Local: true, OpenPRsByAuthor: -1,
		Diff: []byte("diff --git a/c.go b/c.go\n--- a/c.go\n+++ b/c.go\n@@ -1,1 +1,1 @@\n-a\n+b\n"),
	}
}

func config2(adapter string, lenses ...string) *config.Repo {
	cfg := config.DefaultRepo()
	cfg.Models.Reviewer = "model-x"
	cfg.Policy = config.Policy{Version: 1, Aggregation: config.AggregationAllRequired}
	for _, l := range lenses {
		cfg.Policy.Lenses = append(cfg.Policy.Lenses, config.Lens{Name: l, Preset: adapter, Instruction: "Check " + l + ".",
			Outcome: config.OutcomeReview, Publication: config.PublicationReview, Required: true})
		cfg.Policy.Required = append(cfg.Policy.Required, l)
	}
	return cfg
}

func reviewWith(t *testing.T, dir, name string, opts rtexec.Options, lenses ...string) *review.Decision {
	t.Helper()
	rt, err := rtexec.New(dir, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt), Logger: zerolog.Nop()})
	d, err := p.Review(context.Background(), subject(), config2(name, lenses...))
	if err != nil {
		t.Fatalf("Review: %v", err)
	}
	return d
}

func lens(d *review.Decision, name string) review.LensResult {
	for _, l := range d.Lenses {
		if l.Name == name {
			return l
		}
	}
	return review.LensResult{}
}

func TestAdapterSuccessMapsLensesByName(t *testing.T) {
	dir := t.TempDir()
	// The adapter reads the untrusted title as data and writes review.json; it answers for
	// "code" and an extra lens the policy does not have, but not for "docs".
	writeScript(t, dir, "acme.sh", `set -eu
title=$(cat "$ASDD_WORKDIR/title.txt")
test -f "$ASDD_ROOT/agents/code.md"
cat > "$ASDD_OUT" <<JSON
{"schema":"asdd/review/v0.1","pr_number":5,"head_sha":"eeee","mode":"live","recommendation":"request-changes",
 "summary":"reviewed: $title","lenses":[
 {"lens":"code","verdict":"request-changes","findings":[{"severity":"block","message":"Cache is never invalidated.","path":"c.go:1"}]},
 {"lens":"extra","verdict":"ok","findings":[]}]}
JSON
`)
	d := reviewWith(t, dir, "acme", rtexec.Options{}, "code", "docs")
	if l := lens(d, "code"); l.Outcome != review.OutcomeFailed || len(l.Findings) != 1 || l.Findings[0].Path != "c.go" || l.Findings[0].Line != 1 || l.Findings[0].Severity != review.SeverityHigh {
		t.Fatalf("code %+v", l)
	}
	if l := lens(d, "docs"); l.Outcome != review.OutcomePending || !strings.Contains(l.Cause, "no result") {
		t.Fatalf("docs %+v", l)
	}
	if d.Runs[0].Model != "model-x" || d.Runs[0].Runtime != "acme" {
		t.Fatalf("runs %+v", d.Runs)
	}
}

func TestAdapterFailuresArePending(t *testing.T) {
	cases := []struct {
		name   string
		script string
		opts   rtexec.Options
		cause  string
	}{
		{"non-zero exit", "echo 'model endpoint refused' >&2\nexit 3\n", rtexec.Options{}, "status 3: model endpoint refused"},
		{"no output", "exit 0\n", rtexec.Options{}, "no review output"},
		{"invalid JSON", "echo '{\"schema\": \"asdd/review/v0.1\", oops' > \"$ASDD_OUT\"\n", rtexec.Options{}, "invalid JSON"},
		{"prose", "echo 'All good, ship it!' > \"$ASDD_OUT\"\n", rtexec.Options{}, "invalid JSON"},
		{"huge output", "head -c 5000000 /dev/zero | tr '\\0' ' ' > \"$ASDD_OUT\"\n", rtexec.Options{}, "1048576"},
		{"huge output, small cap", "printf '%4096s' x > \"$ASDD_OUT\"\n", rtexec.Options{MaxOutputBytes: 1024}, "over the 1024 byte limit"},
		{"huge stdout", "head -c 20000000 /dev/zero\nexit 1\n", rtexec.Options{}, "status 1"},
		{"token on stderr", "echo \"token is $ASDD_RUNTIME_TOKEN\" >&2\nexit 2\n", rtexec.Options{Token: "tok-very-secret"}, "[redacted]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeScript(t, dir, "acme", c.script)
			d := reviewWith(t, dir, "acme", c.opts, "code")
			l := lens(d, "code")
			if l.Outcome != review.OutcomePending || !strings.Contains(l.Cause, c.cause) {
				t.Fatalf("code %+v, want pending with %q", l, c.cause)
			}
			if strings.Contains(l.Cause, "tok-very-secret") {
				t.Fatal("token in cause")
			}
			if d.Gate.State != review.OutcomePending {
				t.Fatalf("gate %s", d.Gate.State)
			}
		})
	}
}

func alive(pid int) bool {
	// A zombie still answers kill(0); check its state too.
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

func TestHangingAdapterIsKilledWithItsChildren(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(t.TempDir(), "pids")
	writeScript(t, dir, "acme", `sleep 300 &
echo $! > `+pids+`.child
echo $$ > `+pids+`.parent
sh -c 'sleep 300' &
echo $! >> `+pids+`.child
wait
`)
	start := time.Now()
	d := reviewWith(t, dir, "acme", rtexec.Options{Timeout: 300 * time.Millisecond}, "code")
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("review took %s", took)
	}
	if l := lens(d, "code"); l.Outcome != review.OutcomePending || !strings.Contains(l.Cause, "timed out") {
		t.Fatalf("code %+v", l)
	}
	var all []int
	for _, f := range []string{pids + ".parent", pids + ".child"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(s)
			all = append(all, n)
		}
	}
	if len(all) != 3 {
		t.Fatalf("pids %v", all)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range all {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("process %d survived the timeout", pid)
		}
	}
}

func TestAdapterSeesOnlyTheASDDEnvironment(t *testing.T) {
	t.Setenv("GITHUB_APP_PRIVATE_KEY", "server-app-key")
	t.Setenv("GITHUB_APP_WEBHOOK_SECRET", "server-webhook-secret")
	t.Setenv("LENSGATE_DB_PASSWORD", "server-db-password")
	dir := t.TempDir()
	envFile := filepath.Join(t.TempDir(), "env")
	writeScript(t, dir, "acme", `tr '\0' '\n' < /proc/$$/environ > `+envFile+`
echo '{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"","lenses":[{"lens":"code","verdict":"ok","findings":[]}]}' > "$ASDD_OUT"
`)
	d := reviewWith(t, dir, "acme", rtexec.Options{Token: "model-token", ModelURL: "http://model.invalid/v1", Model: "fallback"}, "code")
	if l := lens(d, "code"); l.Outcome != review.OutcomePassed {
		t.Fatalf("code %+v", l)
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
		names = append(names, k)
	}
	slices.Sort(names)
	want := []string{"ASDD_MODEL", "ASDD_MODEL_TIMEOUT", "ASDD_MODEL_URL", "ASDD_OUT", "ASDD_ROOT", "ASDD_RUNTIME_TOKEN", "ASDD_WORKDIR", "PATH"}
	if !slices.Equal(names, want) {
		t.Fatalf("adapter environment %q, want exactly %q", names, want)
	}
	if got["ASDD_RUNTIME_TOKEN"] != "model-token" || got["ASDD_MODEL"] != "model-x" || got["ASDD_MODEL_URL"] != "http://model.invalid/v1" {
		t.Fatalf("values %v", got)
	}
	for _, secret := range []string{"server-app-key", "server-webhook-secret", "server-db-password"} {
		if strings.Contains(string(b), secret) {
			t.Fatalf("server secret %q visible to the adapter", secret)
		}
	}
	if _, err := os.Stat(got["ASDD_WORKDIR"]); !os.IsNotExist(err) {
		t.Fatal("work directory not removed")
	}
}

func TestOnlyAdaptersFromTheDirectory(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	writeScript(t, outside, "evil", "exit 0\n")
	if err := os.Symlink(filepath.Join(outside, "evil"), filepath.Join(dir, "evil")); err != nil {
		t.Fatal(err)
	}
	writeScript(t, dir, "good.sh", "exit 0\n")
	if err := os.WriteFile(filepath.Join(dir, "notexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeScript(t, dir, "builtin", "exit 0\n")
	for _, name := range []string{"evil", "notexec", "builtin", "../" + filepath.Base(outside) + "/evil", "missing"} {
		if _, err := rtexec.New(dir, name, rtexec.Options{}); err == nil {
			t.Errorf("New(%q) accepted", name)
		}
	}
	rts, err := rtexec.Discover(dir, rtexec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rts {
		names = append(names, r.Name())
	}
	if !slices.Equal(names, []string{"good"}) {
		t.Fatalf("discovered %q", names)
	}
}

func TestTriageAdapter(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "acme", "exit 1\n")
	writeScript(t, dir, "triage-acme", `echo '{"schema":"asdd/triage/v0.1","labels":["bug","invented"],"comment":"Thanks!"}' > "$ASDD_OUT"`+"\n")
	rt, err := rtexec.New(dir, "acme", rtexec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultRepo()
	cfg.Runtime = "acme"
	p := review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt), Logger: zerolog.Nop()})
	td, err := p.Triage(context.Background(), &review.Subject{Kind: review.KindIssue, Number: 9, Title: "Crash"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(td.Labels, []string{"bug"}) || td.Comment != "Thanks!" || td.Cause != "" {
		t.Fatalf("triage %+v", td)
	}
}

// TestAdapterMayAnswerWithSARIF: an adapter that runs a linter writes its SARIF log; the
// results on added lines become the lens's findings and the others are dropped.
func TestAdapterMayAnswerWithSARIF(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "lint.sh", `cat > "$ASDD_OUT" <<'JSON'
{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"golangci-lint"}},"results":[
 {"ruleId":"errcheck","level":"error","message":{"text":"Error return value is not checked"},
  "locations":[{"physicalLocation":{"artifactLocation":{"uri":"c.go"},"region":{"startLine":1}}}]},
 {"ruleId":"unused","level":"warning","message":{"text":"func old is unused"},
  "locations":[{"physicalLocation":{"artifactLocation":{"uri":"d.go"},"region":{"startLine":9}}}]}]}]}
JSON
`)
	d := reviewWith(t, dir, "lint", rtexec.Options{}, "lint")
	l := lens(d, "lint")
	if l.Outcome != review.OutcomeFailed || len(l.Findings) != 1 || l.Findings[0].Rule != "errcheck" || l.Findings[0].Path != "c.go" {
		t.Fatalf("lens %+v", l)
	}
	if !strings.Contains(l.Summary, "1 outside the diff were dropped") {
		t.Fatalf("summary %q", l.Summary)
	}
}
