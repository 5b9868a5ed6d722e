package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/internal/testkit"
)

// localModel is an OpenAI-compatible endpoint that answers every lens with request-changes
// and one blocking finding on README.md.
func localModel(t *testing.T) (*modelfake.Server, func() int) {
	srv := modelfake.New("sk-model-token", func(req modelfake.Request) modelfake.Reply {
		findings := map[string][]modelfake.Finding{}
		for _, name := range req.Lenses() {
			findings[name] = []modelfake.Finding{{Path: "README.md", Line: 2, Severity: "block", Title: "Unclear wording",
				Message: "Say who the line is for."}}
		}
		return modelfake.Reply{Content: modelfake.ReviewAnswer(req.Lenses(), findings), PromptTokens: 900, CompletionTokens: 40}
	})
	t.Cleanup(srv.Close)
	return srv, func() int { return len(srv.Requests()) }
}

// startRunnerProcess runs `lensgate runner` with exactly vars as its environment and waits
// until it listens.
func startRunnerProcess(t *testing.T, vars map[string]string) *server {
	t.Helper()
	cmd := exec.Command(lensgateBinary(t), "runner")
	cmd.Dir = t.TempDir()
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	s := &server{t: t, cmd: cmd, logs: &testkit.SyncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr, cmd.Stdout = s.logs, s.logs
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
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(s.logs.String(), "runner listening") {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("runner exited before it listened (%v):\n%s", err, s.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("runner not listening:\n%s", s.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// TestSplitRoleRunnerThroughTheServer: a `lensgate runner` process holds the witness key and
// runs the builtin runtime and a local OpenAI-compatible model; a `lensgate serve` process
// that has no witness key reviews a pull request of the fake GitHub through it, composes and
// signs the receipt, and publishes the observation the runner signed. Offline, `lensgate
// receipt verify --observation` answers MATCH from the published bytes with the keys served
// at /.well-known/lensgate/keys. Then the runner stops: the next push leaves the model lens
// pending with a cause that names the runner, the gate does not pass, and no observation is
// published. A serve whose token is not the runner's does not start.
func TestSplitRoleRunnerThroughTheServer(t *testing.T) {
	fe := newFakeEnv(t)
	model, modelCalls := localModel(t)
	dir, err := os.MkdirTemp("", "lgrun")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tokenFile := filepath.Join(dir, "runner.token")
	if err := os.WriteFile(tokenFile, []byte(strings.Repeat("7f", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := "unix://" + filepath.Join(dir, "runner.sock")
	witnessKey := fe.vars["LENSGATE_WITNESS_KEY_FILE"]
	rn := startRunnerProcess(t, map[string]string{
		"LENSGATE_RUNNER_LISTEN":     sock,
		"LENSGATE_RUNNER_TOKEN_FILE": tokenFile,
		"LENSGATE_WITNESS_KEY_FILE":  witnessKey,
		"LENSGATE_RUNTIMES":          "builtin,openai",
		"LENSGATE_OPENAI_BASE_URL":   model.URL,
		"LENSGATE_OPENAI_TOKEN":      model.Token,
		"LENSGATE_OPENAI_MODEL":      "reviewer-7b",
	})

	vars := map[string]string{}
	for k, v := range fe.vars {
		if k != "LENSGATE_WITNESS_KEY_FILE" {
			vars[k] = v
		}
	}
	vars["LENSGATE_RUNNER_URL"] = sock
	vars["LENSGATE_RUNNER_TOKEN_FILE"] = tokenFile
	vars["LENSGATE_GITHUB_CONTENT_SPACING"] = "0"

	// A worker with another token is refused before it starts.
	badToken := filepath.Join(dir, "other.token")
	if err := os.WriteFile(badToken, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := exec.Command(lensgateBinary(t), "serve", "--check")
	for k, v := range vars {
		if k == "LENSGATE_RUNNER_TOKEN_FILE" {
			v = badToken
		}
		bad.Env = append(bad.Env, k+"="+v)
	}
	bad.Env = append(bad.Env, "LENSGATE_RUNNER_CONNECT_TIMEOUT=2s")
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "not authenticated") {
		t.Fatalf("serve with another token: %v\n%s", err, out)
	}
	// Nor may the worker be given the witness key.
	both := exec.Command(lensgateBinary(t), "serve", "--check")
	for k, v := range vars {
		both.Env = append(both.Env, k+"="+v)
	}
	both.Env = append(both.Env, "LENSGATE_WITNESS_KEY_FILE="+witnessKey)
	if out, err := both.CombinedOutput(); err == nil || !strings.Contains(string(out), "witness_key_file") {
		t.Fatalf("serve with runner.url and a witness key: %v\n%s", err, out)
	}

	s := startServe(t, vars)
	// The worker process holds no witness key: not in its environment or arguments, and it
	// has no such file open; it serves the runner's public key.
	for _, f := range []string{"environ", "cmdline"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", s.cmd.Process.Pid, f))
		if err == nil && strings.Contains(string(b), witnessKey) {
			t.Fatalf("the serve process's %s names the witness key", f)
		}
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid)); err == nil {
		for _, fd := range fds {
			if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", s.cmd.Process.Pid, fd.Name())); target == witnessKey {
				t.Fatal("the serve process has the witness key file open")
			}
		}
	}
	var set struct{ Keys []struct{ Hex, Role string } }
	if err := json.Unmarshal([]byte(s.mustGet("/.well-known/lensgate/keys")), &set); err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{}
	for _, k := range set.Keys {
		roles[k.Role] = k.Hex
	}
	if roles["receipt"] != fe.signingPub || roles["witness"] != fe.witnessPub {
		t.Fatalf("published keys %+v, want the runner's witness key %s", set.Keys, fe.witnessPub)
	}

	payload, err := os.ReadFile("testdata/webhooks/pull_request.opened.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	diff := "diff --git a/README.md b/README.md\nindex 1111111..2222222 100644\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # Hello-World\n+A friendly line.\n"
	repo, pr, err := fe.gh.AddFromPullRequestEvent(payload, []byte(diff))
	if err != nil {
		t.Fatal(err)
	}
	fe.gh.SetFile(repo, "master", ".asdd.yml", "agent_review:\n  version: 1\n  required: [correctness, secrets]\n  agents:\n"+
		"    correctness:\n      preset: openai\n      instruction: Find unclear documentation.\n"+
		"    secrets:\n      preset: builtin\n      instruction: Look for committed secrets.\nmodels:\n  reviewer: reviewer-7b\n")
	// The repository adopted an .asdd.yml, so its intake wants a lane label and the authorship tick.
	fe.gh.SetPullBody(repo, pr.Number, fe.gh.PullBody(repo, pr.Number)+"\n- [x] human\n")
	if _, _, err := fe.gh.TokenClient().Issues.AddLabelsToIssue(context.Background(), "Codertocat", "Hello-World", pr.Number, []string{"fix"}); err != nil {
		t.Fatal(err)
	}
	s.deliver("split-1", fe.gh.WebhookSecret(), payload)
	cr := waitGate(t, fe.gh, repo, pr.HeadSHA, s, rn)
	if modelCalls() == 0 {
		t.Fatalf("the model was never called:\n%.5000s\n%s", cr.Text, rn.logs.String())
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)\n```").FindAllStringSubmatch(cr.Text, -1)
	if len(blocks) != 2 || !strings.Contains(cr.Text, "This review was also observed by the runner") {
		t.Fatalf("the check run text does not carry a receipt and an observation:\n%.6000s\n%s\n%s", cr.Text, s.logs.String(), rn.logs.String())
	}
	out := t.TempDir()
	receipt, obs := filepath.Join(out, "receipt.json"), filepath.Join(out, "observation.json")
	_ = os.WriteFile(receipt, []byte(blocks[0][1]+"\n"), 0o600)
	_ = os.WriteFile(obs, []byte(blocks[1][1]+"\n"), 0o600)
	sm := regexp.MustCompile("Subject digest: `([0-9a-f]{64})`").FindStringSubmatch(cr.Text)
	if sm == nil {
		t.Fatal("no subject digest in the check run text")
	}
	host := strings.TrimPrefix(model.Root(), "http://")
	code, res := verifyCLI(t, receipt, roles["receipt"], sm[1], obs, roles["witness"], "openai=host:"+host, "openai=model:reviewer-7b")
	if code != 0 || res["ok"] != true || res["runner_observation"] != "MATCH" {
		t.Fatalf("published observation: exit %d, ok %v, %v %v", code, res["ok"], res["runner_observation"], res["observation"])
	}
	o, _ := res["observation"].(map[string]any)
	if !strings.Contains(mustString(o["calls"]), `"runtime":"openai"`) || !strings.Contains(mustString(o["calls"]), `"runtime":"builtin"`) {
		t.Fatalf("observed calls %v", o["calls"])
	}
	if !strings.Contains(rn.logs.String(), "observation signed") {
		t.Fatalf("the runner did not sign:\n%s", rn.logs.String())
	}

	push := func(id, head, d string) githubfake.CheckRun {
		t.Helper()
		fe.gh.Push(repo, pr.Number, head, []byte(d), nil)
		p := map[string]any{}
		_ = json.Unmarshal(payload, &p)
		p["action"], p["after"] = "synchronize", head
		p["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = head
		body, _ := json.Marshal(p)
		s.deliver(id, fe.gh.WebhookSecret(), body)
		return waitGate(t, fe.gh, repo, head, s, rn)
	}

	// A push that changes nothing the model lens reviewed: its finding is carried forward, not
	// derived again, and the runner accepts it because its own earlier observation lists it.
	calls := modelCalls()
	crc := push("split-carry", strings.Repeat("4", 40), diff)
	if modelCalls() != calls || !strings.Contains(crc.Text, "LG-") {
		t.Fatalf("the unchanged push called the model or lost the finding:\n%.3000s", crc.Text)
	}
	blocks = regexp.MustCompile("(?s)```json\n(.*?)\n```").FindAllStringSubmatch(crc.Text, -1)
	sm = regexp.MustCompile("Subject digest: `([0-9a-f]{64})`").FindStringSubmatch(crc.Text)
	if len(blocks) != 2 || sm == nil {
		t.Fatalf("the push with a carried finding has no observation:\n%.6000s\n%s", crc.Text, rn.logs.String())
	}
	_ = os.WriteFile(receipt, []byte(blocks[0][1]+"\n"), 0o600)
	_ = os.WriteFile(obs, []byte(blocks[1][1]+"\n"), 0o600)
	if code, res := verifyCLI(t, receipt, roles["receipt"], sm[1], obs, roles["witness"]); code != 0 || res["runner_observation"] != "MATCH" {
		t.Fatalf("carried finding: exit %d, %v %v", code, res["runner_observation"], res["observation"])
	}

	if n := strings.Count(rn.logs.String(), `"findings":1,`); n != 2 {
		t.Fatalf("the runner signed %d observations with the finding, want 2:\n%s", n, rn.logs.String())
	}

	// The runner goes away: the next push is reviewed without it and fails closed.
	rn.stop()
	head2 := strings.Repeat("5", 40)
	diff2 := strings.Replace(diff, "+A friendly line.", "+A friendlier line.", 1)
	cr2 := push("split-2", head2, diff2)
	if cr2.Conclusion == "success" || cr2.Conclusion == "neutral" || cr2.Conclusion == "skipped" {
		t.Fatalf("the gate concluded %s without a runner", cr2.Conclusion)
	}
	if !strings.Contains(cr2.Summary+cr2.Text, "runner unreachable") {
		t.Fatalf("the check without a runner names no cause:\n%s\n%.3000s", cr2.Summary, cr2.Text)
	}
	t.Logf("without a runner: %s", regexp.MustCompile(`[^\n]*runner unreachable[^\n]*`).FindString(cr2.Summary+cr2.Text))
	if strings.Contains(cr2.Text, "This review was also observed by the runner") || strings.Contains(cr2.Text, "<!-- lensgate:observation -->") {
		t.Fatalf("the check without a runner claims an observation:\n%.6000s", cr2.Text)
	}
	s.stop()

	// The web role never talks to the runner (which is gone now): it starts, and publishes the
	// runner's key from runner.witness_public_key.
	web := map[string]string{}
	for k, v := range vars {
		web[k] = v
	}
	web["LENSGATE_LISTEN"] = freeAddr(t)
	web["LENSGATE_STATE_DIR"] = t.TempDir()
	web["LENSGATE_AUDIT_FILE"] = filepath.Join(web["LENSGATE_STATE_DIR"], "audit.jsonl")
	web["LENSGATE_RUNNER_WITNESS_PUBLIC_KEY"] = fe.witnessPub
	ws := startServe(t, web, "--role", "web")
	if keys := ws.mustGet("/.well-known/lensgate/keys"); !strings.Contains(keys, fe.witnessPub) || !strings.Contains(keys, `"witness"`) {
		t.Fatalf("the web role's keys: %s", keys)
	}
	ws.stop()
}

func waitGate(t *testing.T, gh *githubfake.Server, repo, head string, procs ...*server) githubfake.CheckRun {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		for _, cr := range gh.CheckRuns(repo, head) {
			if cr.Status == "completed" {
				return cr
			}
		}
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, p := range procs {
				logs.WriteString(p.logs.String())
			}
			t.Fatalf("no completed check run for %s@%s\n%s", repo, head, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func verifyCLI(t *testing.T, receipt, receiptKey, subject, obs, witness string, expect ...string) (int, map[string]any) {
	t.Helper()
	args := []string{"receipt", "verify", "--envelope", receipt, "--public-key", receiptKey, "--subject-digest", subject,
		"--observation", obs, "--witness-key", witness, "--format", "json", "--require-observation"}
	for _, e := range expect {
		args = append(args, "--expect-runtime", e)
	}
	out, err := exec.Command(lensgateBinary(t), args...).Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("verify output: %v\n%s", err, out)
	}
	return code, res
}

// TestRunnerExampleConfigLoads: the example runner configuration loads as it stands (with the
// token and key paths it names), and names every variable the runner reads.
func TestRunnerExampleConfigLoads(t *testing.T) {
	r, err := config.LoadRunner("lensgate-runner.example.yml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if r.Listen != "unix:///run/lensgate-runner/runner.sock" || r.WitnessKeyFile == "" || r.TokenFile == "" {
		t.Fatalf("example runner config %+v", r)
	}
	data, _ := os.ReadFile("lensgate-runner.example.yml")
	for _, name := range config.RunnerEnvVars() {
		if !strings.Contains(string(data), name) && !strings.HasPrefix(name, "LENSGATE_OPENAI_") && name != "LENSGATE_RUNTIMES" &&
			name != "LENSGATE_ADAPTER_DIR" && name != "LENSGATE_RUNTIME_PRESETS" {
			t.Errorf("the example runner config does not name %s", name)
		}
	}
}

// TestKubernetesRunnerOverlay: in the runner overlay the witness key is mounted into the
// runner container only, the App's container reaches the runner's socket through a volume
// they share and gets the token, and the model token moved to the runner.
func TestKubernetesRunnerOverlay(t *testing.T) {
	dir := "kubernetes/overlays/runner"
	kus := k8s(t, filepath.Join(dir, "kustomization.yaml"))
	for _, r := range dig(t, kus, "resources").([]any) {
		if _, err := os.Stat(filepath.Join(dir, r.(string))); err != nil {
			t.Errorf("resource: %v", err)
		}
	}
	cm := k8s(t, filepath.Join(dir, "runner-configmap.yaml"))
	rcText := dig(t, cm, "data", "runner.yml").(string)
	f := filepath.Join(t.TempDir(), "runner.yml")
	_ = os.WriteFile(f, []byte(rcText), 0o600)
	rc, err := config.LoadRunner(f, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	patch := k8s(t, filepath.Join(dir, "deployment-patch.yaml"))
	spec := dig(t, patch, "spec", "template", "spec")
	volumes := map[string]any{}
	for _, v := range dig(t, spec, "volumes").([]any) {
		volumes[dig(t, v, "name").(string)] = v
	}
	holdsWitness := func(c any) bool {
		mounts, _ := dig(t, c, "volumeMounts").([]any)
		for _, m := range mounts {
			v := volumes[dig(t, m, "name").(string)]
			if v == nil {
				continue
			}
			if s, ok := v.(map[string]any)["secret"].(map[string]any); ok {
				for _, it := range s["items"].([]any) {
					if it.(map[string]any)["key"] == "witness-key" {
						return true
					}
				}
			}
		}
		return false
	}
	var app, run any
	for _, c := range dig(t, spec, "containers").([]any) {
		switch dig(t, c, "name") {
		case "lensgate":
			app = c
		case "runner":
			run = c
		}
	}
	if app == nil || run == nil {
		t.Fatal("the patch lacks the App or the runner container")
	}
	if holdsWitness(app) || !holdsWitness(run) {
		t.Errorf("witness key mounted into the App: %v, into the runner: %v", holdsWitness(app), holdsWitness(run))
	}
	env := map[string]any{}
	for _, e := range dig(t, app, "env").([]any) {
		env[dig(t, e, "name").(string)] = e.(map[string]any)["value"]
	}
	names := envNames(t)
	for n := range env {
		if names[n] == "" {
			t.Errorf("the App container sets %s, which the server does not read", n)
		}
	}
	if env["LENSGATE_RUNNER_URL"] != rc.Listen {
		t.Errorf("the App reaches %v, the runner listens on %s", env["LENSGATE_RUNNER_URL"], rc.Listen)
	}
	if args := dig(t, run, "args").([]any); args[0] != "runner" {
		t.Errorf("runner args %v", args)
	}
	base := k8s(t, "kubernetes/base/configmap.yaml")
	if strings.Contains(dig(t, base, "data", "lensgate.yml").(string), "witness_key_file") {
		t.Error("the base configuration gives the App a witness key")
	}
}

// TestSystemdRunnerUnit: the runner unit gets the witness key as a credential of its own and
// sets only variables the runner reads.
func TestSystemdRunnerUnit(t *testing.T) {
	unit, err := os.ReadFile("systemd/lensgate-runner.service")
	if err != nil {
		t.Fatal(err)
	}
	text := string(unit)
	known := map[string]bool{}
	for _, n := range config.RunnerEnvVars() {
		known[n] = true
	}
	for _, m := range regexp.MustCompile(`(?m)^Environment=([A-Z0-9_]+)=`).FindAllStringSubmatch(text, -1) {
		if !known[m[1]] {
			t.Errorf("unit sets env %s, which the runner does not read", m[1])
		}
	}
	for _, want := range []string{"ExecStart=/usr/local/bin/lensgate runner --config /etc/lensgate-runner/runner.yml",
		"LoadCredential=witness.key:", "NoNewPrivileges=yes", "ProtectSystem=strict"} {
		if !strings.Contains(text, want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	app, _ := os.ReadFile("systemd/lensgate.service")
	if regexp.MustCompile(`(?m)^LoadCredential=witness`).Match(app) {
		t.Error("lensgate.service loads the witness key")
	}
}
