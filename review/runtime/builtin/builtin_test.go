package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// defaultLenses are the default policy's lenses.
func defaultLenses() []runtime.Lens {
	var out []runtime.Lens
	for _, l := range config.DefaultPolicy().Lenses {
		out = append(out, runtime.Lens{Name: l.Name, Preset: l.Preset, Instruction: l.Instruction})
	}
	return out
}

func requestFor(t testing.TB, d []byte) *runtime.Request {
	t.Helper()
	files := diff.Parse(d)
	req := &runtime.Request{
		Kind: runtime.KindReview, Lenses: defaultLenses(), Diff: d, Files: files,
		Settings: runtime.Settings{ProtectedPaths: config.DefaultProtectedPaths(), SpecPaths: config.DefaultSpecPaths("builtin")},
	}
	for i := range files {
		req.Changed = append(req.Changed, runtime.Changed{Path: files[i].Path(), Status: files[i].Status, Binary: files[i].Binary})
	}
	return req
}

// found lists a result's findings as "rule path:line", sorted.
func found(res *runtime.Result) []string {
	var out []string
	for _, l := range res.Lenses {
		for _, f := range l.Findings {
			out = append(out, fmt.Sprintf("%s %s:%d", f.Rule, f.Path, f.Line))
		}
	}
	sort.Strings(out)
	return out
}

// TestPlantedDiffs runs the default lenses over real-looking diffs with planted problems (and
// clean look-alikes) and requires exactly the planted findings: every one found, nothing else.
func TestPlantedDiffs(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		{"private-key.diff", []string{"private-key deploy/keys/deploy_ed25519.pem:1"}},
		{"aws-keys.diff", []string{
			"aws-access-token app/settings/production.py:4",
			"aws-secret-access-key app/settings/production.py:5",
			"code-without-tests app/settings/production.py:0",
		}},
		{"github-token.diff", []string{"github-pat scripts/release.sh:4", "protected-path scripts/release.sh:0"}},
		{"chat-tokens.diff", []string{
			"code-without-tests services/notify/config.js:0",
			"slack-bot-token services/notify/config.js:2",
			"stripe-access-token services/notify/config.js:3",
		}},
		{"conflict.diff", []string{
			// One finding per rule and file; its message names lines 12, 14 and 16.
			"conflict-marker internal/cart/total.go:12",
		}},
		{"workflow.diff", []string{
			"protected-path .github/workflows/preview.yml:0",
			"workflow-permissions-write-all .github/workflows/preview.yml:5",
			"workflow-pull-request-target-checkout .github/workflows/preview.yml:12",
			"workflow-untrusted-input .github/workflows/preview.yml:15",
		}},
		{"workflow-inline-run.diff", []string{
			"protected-path .github/workflows/triage.yml:0",
			"workflow-untrusted-input .github/workflows/triage.yml:11",
		}},
		{"bidi.diff", []string{"code-without-tests pkg/access/check.go:0", "hidden-unicode pkg/access/check.go:4"}},
		{"no-tests.diff", []string{"code-without-tests internal/billing/invoice.go:0"}},
		// Both files fall under one protected_paths pattern: one note names them.
		{"protected.diff", []string{"protected-path :0"}},
		{"unsafe.diff", []string{
			"remote-script-piped-to-shell Dockerfile:3",
			"tls-verification-disabled internal/client/http.go:11",
		}},
		{"clean-docs.diff", nil},
		{"clean-code.diff", nil},
		{"clean-workflow.diff", []string{"protected-path .github/workflows/ci.yml:0"}},
	}
	rt := New(Options{})
	var planted, reported, correct int
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			d, err := os.ReadFile(filepath.Join("testdata", "diffs", c.file))
			if err != nil {
				t.Fatal(err)
			}
			res, err := rt.Review(context.Background(), requestFor(t, d))
			if err != nil {
				t.Fatal(err)
			}
			got := found(res)
			planted += len(c.want)
			reported += len(got)
			for _, g := range got {
				if slices.Contains(c.want, g) {
					correct++
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("findings:\n got %q\nwant %q", got, c.want)
			}
		})
	}
	t.Logf("planted %d, reported %d, correct %d: precision %.3f, recall %.3f",
		planted, reported, correct, float64(correct)/float64(reported), float64(correct)/float64(planted))
}

func TestVerdictsAndLensAssignment(t *testing.T) {
	d, err := os.ReadFile(filepath.Join("testdata", "diffs", "workflow.diff"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := New(Options{}).Review(context.Background(), requestFor(t, d))
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, l := range res.Lenses {
		verdicts[l.Lens] = l.Verdict
	}
	want := map[string]string{"security": "request-changes", "correctness": "ok", "tests": "ok"}
	for k, v := range want {
		if verdicts[k] != v {
			t.Errorf("lens %s verdict %q, want %q", k, verdicts[k], v)
		}
	}
}

func TestUnknownPresetIsSkipped(t *testing.T) {
	req := requestFor(t, nil)
	req.Lenses = []runtime.Lens{{Name: "documentation", Preset: "docs", Instruction: "x"}}
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lenses) != 1 || res.Lenses[0].Verdict != runtime.VerdictSkipped || res.Lenses[0].Cause == "" {
		t.Fatalf("unknown preset: %+v", res.Lenses)
	}
}

func TestLargeBinaryAndMissingSpec(t *testing.T) {
	d := []byte("diff --git a/assets/model.bin b/assets/model.bin\nnew file mode 100644\nBinary files /dev/null and b/assets/model.bin differ\n" +
		"diff --git a/cmd/run.go b/cmd/run.go\n--- a/cmd/run.go\n+++ b/cmd/run.go\n@@ -1,1 +1,1 @@\n-a\n+b\n")
	req := requestFor(t, d)
	req.Changed[0].SizeBytes = 30 << 20
	req.Settings.RequireSpec = true
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"code-without-tests cmd/run.go:0", "large-binary assets/model.bin:0", "missing-spec :0"}
	if got := found(res); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	// A spec in the change, or named in the body, satisfies the requirement.
	req.Subject.Body = "Implements docs/specs/runner.md"
	res, _ = New(Options{}).Review(context.Background(), req)
	if slices.Contains(found(res), "missing-spec :0") {
		t.Fatal("spec named in the body was not accepted")
	}
}

func TestIgnorePaths(t *testing.T) {
	d, err := os.ReadFile(filepath.Join("testdata", "diffs", "private-key.diff"))
	if err != nil {
		t.Fatal(err)
	}
	req := requestFor(t, d)
	req.Settings.IgnorePaths = []string{"deploy/keys/**"}
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := found(res); len(got) != 0 {
		t.Fatalf("ignored path produced findings: %q", got)
	}
}

func TestTriageLabelsStayInAllowList(t *testing.T) {
	req := &runtime.Request{Kind: runtime.KindTriage,
		Subject:  runtime.Subject{Title: "Crash when saving", Body: "Possible security vulnerability too"},
		Settings: runtime.Settings{TriageLabels: []string{"bug", "needs-triage"}}}
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Triage.Labels, []string{"bug"}) {
		t.Fatalf("labels %q", res.Triage.Labels)
	}
}

func TestKeyPlaceholdersAreNotSecrets(t *testing.T) {
	header := "-----BEGIN " + "RSA PRIVATE KEY-----"
	cases := []struct {
		name  string
		lines []string
		want  int
	}{
		{"header only", []string{"    #   " + header, "    # File holding the key."}, 0},
		{"stub in a string", []string{`key := "` + header + `\nAAAA\n-----END RSA PRIVATE KEY-----\n"`}, 0},
		{"real body", []string{header, strings.Repeat("MIIEpAIBAAKCAQEA", 4), strings.Repeat("x3K9Lm2PqR7sT1vW", 4), "-----END RSA PRIVATE KEY-----"}, 1},
		{"real body in a string", []string{`k := "` + header + `\n` + strings.Repeat("MIIEpAIBAAKCAQEA", 5) + `\n-----END RSA PRIVATE KEY-----"`}, 1},
	}
	for _, c := range cases {
		var b strings.Builder
		b.WriteString("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -0,0 +1," + fmt.Sprint(len(c.lines)) + " @@\n")
		for _, l := range c.lines {
			b.WriteString("+" + l + "\n")
		}
		req := requestFor(t, []byte(b.String()))
		req.Lenses = []runtime.Lens{{Name: "security", Preset: "secrets"}}
		res, err := New(Options{}).Review(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Lenses[0].Findings); got != c.want {
			t.Errorf("%s: %d findings, want %d", c.name, got, c.want)
		}
	}
}

// TestASDDSecurityScanVector runs the diff of the ASDD reference security scanner's vector
// (testdata/asdd-security-scan, Apache-2.0). lensgate deliberately differs on two lines: a key
// header without a key body and a low-entropy password are placeholders here.
func TestASDDSecurityScanVector(t *testing.T) {
	d, err := os.ReadFile(filepath.Join("testdata", "asdd-security-scan", "changes.diff"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := New(Options{}).Review(context.Background(), requestFor(t, d))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"aws-access-token app/net.py:12",
		"code-without-tests app/net.py:0",
		"hidden-unicode app/net.py:21",
		"remote-script-piped-to-shell app/net.py:15",
		"tls-verification-disabled app/net.py:13", // and line 14: one finding per rule and file
	}
	if got := found(res); !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
