package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

// copilotConfig is the documented Copilot example, with an account id filled in.
const copilotConfig = `github:
  app:
    integration_id: 1
    webhook_secret: s
runtimes:
  delegates:
    copilot:
      login: copilot-pull-request-reviewer[bot]
      user_id: 175728472
      request: reviewers
      reviewer: copilot-pull-request-reviewer[bot]
      evidence: [review]
`

func TestDelegatePresetsFromServerConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.yml")
	if err := os.WriteFile(path, []byte(copilotConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	key := githubfake.New(t).PrivateKeyPEM()
	cfg, err := config.LoadServer(path, func(name string) (string, bool) { return key, name == "GITHUB_APP_PRIVATE_KEY" })
	if err != nil {
		t.Fatal(err)
	}
	dl, err := delegateRuntime(cfg.Runtime)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := dl.Preset("copilot")
	if !ok || p.RequestVia != delegate.RequestReviewers || p.Bot.UserID != 175728472 || !p.Accepts(delegate.EvidenceReview) || p.Accepts(delegate.EvidenceComment) {
		t.Fatalf("copilot preset %+v", p)
	}
	if _, ok := dl.Preset(delegate.CodexPreset); !ok {
		t.Fatal("the built-in codex preset is missing")
	}
	reg, err := runtimeRegistry(config.ServerRuntime{Enabled: []string{"builtin"}}, zerolog.Nop(), dl)
	if err != nil {
		t.Fatal(err)
	}
	if err := addDelegatePresets(reg, dl, nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"codex", "copilot"} {
		if rt, ok := reg.Preset(n); !ok || rt != delegate.Name {
			t.Errorf("preset %s → %q %v", n, rt, ok)
		}
	}

	for name, mod := range map[string]func(*config.ServerDelegate){
		"no user id":       func(d *config.ServerDelegate) { d.UserID = 0 },
		"unknown evidence": func(d *config.ServerDelegate) { d.Evidence = []string{"status"} },
		"bad request":      func(d *config.ServerDelegate) { d.Request = "email" },
	} {
		d := cfg.Runtime.Delegates["copilot"]
		mod(&d)
		rc := config.ServerRuntime{Delegates: map[string]config.ServerDelegate{"copilot": d}}
		if _, err := delegateRuntime(rc); err == nil || !strings.Contains(err.Error(), "runtimes.delegates") {
			t.Errorf("%s: %v", name, err)
		}
	}
	clash := config.ServerRuntime{Presets: map[string]string{"copilot": "builtin"}, Delegates: cfg.Runtime.Delegates}
	if _, err := delegateRuntime(clash); err == nil {
		t.Error("a name in both runtimes.presets and runtimes.delegates was accepted")
	}
}
