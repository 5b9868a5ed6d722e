package handlers_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/publish"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/repoconfig"
	"github.com/lensgate/lensgate/review"
)

// yagaPolicy names two lenses no default policy has, so their presence proves the file applied.
const yagaPolicy = "[agent-review]\nversion = 1\nrequired = [\"trust-boundary\"]\n\n" +
	"[agent-review.agents.trust-boundary]\npreset = \"security\"\ninstruction = \"Check every input that crosses a trust boundary.\"\n" +
	"outcome = \"review\"\npublication = \"check\"\n\n" +
	"[agent-review.agents.docs-tone]\npreset = \"docs\"\ninstruction = \"Point out unclear wording.\"\n" +
	"outcome = \"advisory\"\npublication = \"comment\"\n"

// pyprojectPolicy is yagaPolicy inside a pyproject.toml.
var pyprojectPolicy = "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n" +
	strings.ReplaceAll(yagaPolicy, "[agent-review", "[tool.yaga.agent-review")

func lensNames(d *review.Decision) []string {
	var names []string
	for _, l := range d.Lenses {
		names = append(names, l.Name)
	}
	return names
}

// TestYAGAPolicyOfTheBaseApplies: without an .asdd.yml, the base branch's .yaga.toml, else its
// pyproject.toml [tool.yaga], is the policy; a pyproject.toml without the table is no
// configuration, and an .asdd.yml wins over both.
func TestYAGAPolicyOfTheBaseApplies(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		wantPath  string // "" for the server default
		wantLens  bool
		wantDiffs int // review.max_diff_lines of the applied configuration
	}{
		{"yaga.toml", map[string]string{".yaga.toml": yagaPolicy}, ".yaga.toml", true, config.DefaultMaxDiffLines},
		{"pyproject tool.yaga", map[string]string{"pyproject.toml": pyprojectPolicy}, "pyproject.toml", true, config.DefaultMaxDiffLines},
		{"yaga.toml before pyproject", map[string]string{".yaga.toml": yagaPolicy, "pyproject.toml": "[tool.yaga.agent-review]\nversion = 2\n"}, ".yaga.toml", true, config.DefaultMaxDiffLines},
		{"pyproject without tool.yaga", map[string]string{"pyproject.toml": "[project]\nname = \"demo\"\n\n[tool.ruff]\nline-length = 100\n"}, "", false, config.DefaultMaxDiffLines},
		{"asdd.yml first", map[string]string{".asdd.yml": baseConfig, ".yaga.toml": yagaPolicy}, ".asdd.yml", false, 1234},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.addFixturePR(readmeDiff)
			for path, body := range tt.files {
				e.gh.SetFile(fixtureRepo, fixtureRef, path, body)
			}
			if code, body := e.send("pull_request", "d-yaga", fixture(t, "pull_request.opened.payload.json")); code != http.StatusAccepted {
				t.Fatalf("%d %q", code, body)
			}
			e.drain()
			pubs := e.pub.all()
			if len(pubs) != 1 || pubs[0].Decision == nil || len(pubs[0].ConfigProblems) != 0 {
				t.Fatalf("publications %d: %+v", len(pubs), pubs)
			}
			p := pubs[0]
			if tt.wantPath == "" {
				if p.Config.Origin != repoconfig.OriginServer {
					t.Fatalf("config %+v, want the server default", p.Config)
				}
			} else if p.Config.Origin != repoconfig.OriginRepository || p.Config.Source != fixtureRepo+"@"+fixtureRef || p.Config.Path != tt.wantPath {
				t.Fatalf("config %+v, want %s of the base branch", p.Config, tt.wantPath)
			}
			if e.reviewer.calls() != 1 || e.reviewer.cfgs[0].Review.MaxDiffLines != tt.wantDiffs {
				t.Fatalf("reviewed %d times with %+v", e.reviewer.calls(), e.reviewer.cfgs)
			}
			names := lensNames(p.Decision)
			has := slices.Contains(names, "trust-boundary") && slices.Contains(names, "docs-tone")
			if has != tt.wantLens {
				t.Fatalf("decision lenses %v; the YAGA lenses present = %v, want %v", names, has, tt.wantLens)
			}
			if tt.wantLens {
				cfg := e.reviewer.cfgs[0]
				if cfg.PolicyDefaulted || len(cfg.Policy.Required) != 1 || cfg.Policy.Required[0] != "trust-boundary" {
					t.Fatalf("policy %+v", cfg.Policy)
				}
				if !slices.Contains(p.Decision.Gate.AdvisoryPending, "docs-tone") && !slices.Contains(p.Decision.Gate.AdvisoryFailures, "docs-tone") && p.Decision.Gate.State != review.OutcomePassed {
					t.Fatalf("gate %+v does not account for the advisory lens", p.Decision.Gate)
				}
			}
		})
	}
}

// TestYAGAPolicyReachesTheChecks: with the real publisher, the lenses of a .yaga.toml show in
// the gate check GitHub receives and the policy source names the file.
func TestYAGAPolicyReachesTheChecks(t *testing.T) {
	p, err := publish.New(publish.Options{Audit: &pdp.MemorySink{}, ContentSpacing: -1})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(_ *config.Server, o *handlers.Options) { o.Publisher = p })
	e.addFixturePR(readmeDiff)
	e.gh.SetFile(fixtureRepo, fixtureRef, ".yaga.toml", yagaPolicy)
	e.send("pull_request", "d-yaga-check", fixture(t, "pull_request.opened.payload.json"))
	e.drain()
	var out strings.Builder
	for _, r := range e.gh.CheckRuns(fixtureRepo, fixtureHead) {
		out.WriteString(r.Name + "\n" + r.Title + "\n" + r.Summary + "\n" + r.Text + "\n")
	}
	for _, c := range e.gh.Comments(fixtureRepo, fixturePR) {
		out.WriteString(c.Body + "\n")
	}
	for _, want := range []string{"trust-boundary", "docs-tone", ".yaga.toml"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("published checks and comment lack %q:\n%s", want, out.String())
		}
	}
}

// TestInvalidYAGAPolicyFailsGateWithLine: a broken .yaga.toml or pyproject.toml policy is the
// failing gate, naming the file and the line, and no lens runs with defaults.
func TestInvalidYAGAPolicyFailsGateWithLine(t *testing.T) {
	tests := []struct {
		name, path, body, wantAt string
	}{
		{"version", ".yaga.toml", "# policy\n[agent-review]\nversion = 2\nrequired = [\"a\"]\n", ".yaga.toml:3"},
		{"unknown outcome", ".yaga.toml", strings.Replace(yagaPolicy, "outcome = \"advisory\"", "outcome = \"advise\"", 1), ".yaga.toml:14"},
		{"syntax", ".yaga.toml", "[agent-review]\nversion = 1\nrequired = [\"a\"\n", ".yaga.toml:3"},
		{"missing required", ".yaga.toml", "\n[agent-review]\nversion = 1\n[agent-review.agents.a]\npreset = \"security\"\ninstruction = \"x\"\n", ".yaga.toml:2"},
		{"pyproject", "pyproject.toml", "[project]\nname = \"demo\"\n\n[tool.yaga.agent-review]\nversion = 2\n", "pyproject.toml:5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.addFixturePR(readmeDiff)
			e.gh.SetFile(fixtureRepo, fixtureRef, tt.path, tt.body)
			e.send("pull_request", "d-bad-yaga", fixture(t, "pull_request.opened.payload.json"))
			e.drain()
			p, f := e.configRejected()
			if f.Path != tt.path || f.Line == 0 || f.Title == "" || !strings.Contains(p.Decision.Gate.Reason, tt.wantAt+":") && !strings.HasSuffix(p.Decision.Gate.Reason, tt.wantAt) {
				t.Fatalf("finding %+v reason %q, want %s", f, p.Decision.Gate.Reason, tt.wantAt)
			}
			if p.Config.Path != tt.path || p.Config.Origin != repoconfig.OriginRepository {
				t.Fatalf("config source %+v", p.Config)
			}
		})
	}
}

// TestYAGAPolicyEditInPullRequestUsesBasePolicy: a pull request that changes the policy file is
// reviewed with the base branch's file; the head's file is validated and reported, not applied.
func TestYAGAPolicyEditInPullRequestUsesBasePolicy(t *testing.T) {
	fileDiff := func(path string) string {
		return readmeDiff + "diff --git a/" + path + " b/" + path + "\n" +
			"index 3333333..4444444 100644\n--- a/" + path + "\n+++ b/" + path + "\n" +
			"@@ -1,3 +1,3 @@\n [agent-review]\n-version = 1\n+version = 2\n"
	}
	tests := []struct {
		name, path, base, head string
		wantProposed           bool
		wantLine               int
	}{
		{"yaga.toml made invalid", ".yaga.toml", yagaPolicy, strings.Replace(yagaPolicy, "version = 1", "version = 2", 1), true, 2},
		{"yaga.toml valid edit", ".yaga.toml", yagaPolicy, strings.Replace(yagaPolicy, "Point out unclear wording.", "Flag jargon.", 1), true, 0},
		{"pyproject policy edited", "pyproject.toml", pyprojectPolicy, strings.Replace(pyprojectPolicy, "version = 1", "version = 2", 1), true, 6},
		{"pyproject tool.yaga removed", "pyproject.toml", pyprojectPolicy, "[project]\nname = \"demo\"\n", true, 0},
		{"plain pyproject edited", "pyproject.toml", "[project]\nname = \"demo\"\n", "[project]\nname = \"demo2\"\n", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.addFixturePR(fileDiff(tt.path))
			e.gh.SetFile(fixtureRepo, fixtureRef, tt.path, tt.base)
			e.gh.SetFile(fixtureRepo, fixtureHead, tt.path, tt.head)
			e.send("pull_request", "d-yaga-edit", fixture(t, "pull_request.opened.payload.json"))
			e.drain()
			pubs := e.pub.all()
			if len(pubs) != 1 || pubs[0].Decision == nil {
				t.Fatalf("publications %d", len(pubs))
			}
			p := pubs[0]
			if basePolicy := tt.base != "[project]\nname = \"demo\"\n"; basePolicy && (p.Config.Source != fixtureRepo+"@"+fixtureRef || p.Config.Path != tt.path) {
				t.Fatalf("config source %+v, want the base branch's %s", p.Config, tt.path)
			}
			if e.reviewer.calls() != 1 {
				t.Fatalf("reviewed %d times", e.reviewer.calls())
			}
			if tt.base != "[project]\nname = \"demo\"\n" {
				pol := e.reviewer.cfgs[0].Policy
				if len(pol.Required) != 1 || pol.Required[0] != "trust-boundary" {
					t.Fatalf("reviewed with required %v, want the base branch's trust-boundary", pol.Required)
				}
			}
			if !tt.wantProposed {
				if p.Proposed != nil {
					t.Fatalf("an ordinary pyproject.toml edit reported as a configuration change: %+v", p.Proposed)
				}
				return
			}
			if p.Proposed == nil || p.Proposed.Path != tt.path || p.Proposed.HeadSHA != fixtureHead || p.Proposed.Err != nil {
				t.Fatalf("proposed config not validated: %+v", p.Proposed)
			}
			if tt.name == "yaga.toml valid edit" {
				if len(p.Proposed.Problems) != 0 {
					t.Fatalf("a valid new file reported problems: %+v", p.Proposed.Problems)
				}
				return
			}
			if len(p.Proposed.Problems) == 0 {
				t.Fatal("proposed problems empty")
			}
			if pr := p.Proposed.Problems[0]; pr.File != tt.path || pr.Line != tt.wantLine {
				t.Fatalf("proposed problem %+v, want %s line %d", pr, tt.path, tt.wantLine)
			}
		})
	}
}
