package builtin

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/viper"
	gitleaks "github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/sources"

	"github.com/lensgate/lensgate/review/runtime"
)

// Character sets of the planted tokens beyond corpus_test.go's.
const (
	letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	bech32  = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
	urlSafe = alnum + "_-"
)

// plantedFiles are realistic files with realistic (fake) credentials of many gitleaks rules,
// one per rule and file, written the way they leak: configuration, code, CI and shell files.
func plantedFiles(t *testing.T) map[string]string {
	t.Helper()
	g := gen{mrand.New(mrand.NewPCG(27, 2026))}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	jwt := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUgRG9lIiwiaWF0IjoxNzAwMDAwMDAwfQ." + g.from(urlSafe, 43)
	return map[string]string{
		"deploy/aws.env": "# production credentials\nAWS_REGION=eu-west-1\nAWS_ACCESS_KEY_ID=AKIA" + g.from(upper32, 16) + "\n",
		"scripts/release.sh": "#!/bin/sh\nset -eu\nexport GITHUB_TOKEN=ghp_" + g.from(alnum, 36) + "\n" +
			"curl -H \"Authorization: token $GITHUB_TOKEN\" https://api.github.com/user\n",
		"ci/gitlab.yml": "variables:\n  DEPLOY_TOKEN: glpat-" + g.from(urlSafe, 20) + "\n",
		"src/notify.py": "import requests\n\nSLACK = \"xoxb-" + g.from("0123456789", 11) + "-" + g.from("0123456789", 13) + "-" + g.from(alnum, 24) + "\"\n" +
			"HOOK = \"https://hooks.slack.com/services/T" + g.from(upper32, 8) + "/B" + g.from(upper32, 8) + "/" + g.from(alnum, 24) + "\"\n",
		"billing/stripe.rb":   "Stripe.api_key = 'sk_live_" + g.from(alnum, 24) + "'\n",
		"keys/deploy_key.pem": pemKey,
		"app/ai.ts": "const openai = new OpenAI({ apiKey: \"sk-" + g.from(alnum, 20) + "T3BlbkFJ" + g.from(alnum, 20) + "\" });\n" +
			"const claude = new Anthropic({ apiKey: \"sk-ant-api03-" + g.from(urlSafe, 93) + "AA\" });\n",
		"web/.npmrc":            "//registry.npmjs.org/:_authToken=npm_" + g.from(alnum, 36) + "\n",
		"mail/settings.py":      "SENDGRID_API_KEY = \"SG." + g.from(urlSafe, 22) + "." + g.from(urlSafe, 43) + "\"\n",
		"sms/twilio.js":         "const client = twilio(\"SK" + g.from(hexLow, 32) + "\", secret);\n",
		"ml/hub.py":             "login(token=\"hf_" + g.from(letters, 34) + "\")\n",
		"web/session.txt":       "Authorization: Bearer " + jwt + "\n",
		"maps/config.js":        "export const mapsKey = \"AIza" + g.from(urlSafe, 35) + "\";\n",
		"shop/.env":             "SHOPIFY_ACCESS_TOKEN=shpat_" + g.from(hexLow, 32) + "\n",
		"infra/do.tf":           "provider \"digitalocean\" {\n  token = \"dop_v1_" + g.from(hexLow, 64) + "\"\n}\n",
		"ops/age.txt":           "# created: 2026-12-05\nAGE-SECRET-KEY-1" + g.from(bech32, 58) + "\n",
		"tools/linear.go":       "package tools\n\nconst linearKey = \"lin_api_" + g.from(alnum, 40) + "\"\n",
		"jobs/databricks.cfg":   "[DEFAULT]\nhost = https://dbc.cloud.databricks.com\ntoken = dapi" + g.from(hexLow, 32) + "\n",
		"svc/client.go":         "package svc\n\nvar apiKey = \"" + g.from(alnum, 32) + "\" // api_key for the partner service\n",
		"ci/tokens.yml":         "env:\n  APP_TOKEN: ghs_" + g.from(alnum, 36) + "\n  OAUTH: gho_" + g.from(alnum, 36) + "\n  REFRESH: ghr_" + g.from(alnum, 36) + "\n",
		"cloud/alibaba.ini":     "[default]\naccess_key_id = LTAI" + g.from(alnum, 20) + "\n",
		"deploy/heroku.sh":      "heroku config:set HEROKU_API_KEY=HRKU-AA" + g.from(urlSafe, 58) + "\n",
		"ops/doppler.env":       "DOPPLER_TOKEN=dp.pt." + g.from(alnum, 43) + "\n",
		"mail/mailchimp.php":    "$mailchimp_key = '" + g.from(hexLow, 32) + "-us21';\n",
		"monitor/dynatrace.yml": "api_token: dt0c01." + strings.ToUpper(g.from(alnum, 24)) + "." + strings.ToUpper(g.from(alnum, 64)) + "\n",
		"chat/discord.py":       "DISCORD_BOT_SECRET = \"" + g.from(hexLow, 64) + "\"\n",
		"obs/newrelic.js":       "const newrelic_key = 'NRAK-" + strings.ToUpper(g.from(alnum, 27)) + "';\n",
		// Look-alikes neither reports: placeholders, references and sample values.
		"docs/setup.md": "Set `AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE` and `password: changeme`.\n\n" +
			"    GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}\n    token = \"<your token here>\"\n    api_key = os.environ[\"API_KEY\"]\n",
		// A test fixture: reported by both (the secrets lens at low severity).
		"internal/testdata/creds.json": "{\"client_secret\": \"" + g.from(alnum, 40) + "\", \"slack\": \"xoxp-" +
			g.from("0123456789", 12) + "-" + g.from("0123456789", 12) + "-" + g.from("0123456789", 13) + "-" + g.from(hexLow, 32) + "\"}\n",
	}
}

type planted struct {
	rule, path string
	line       int
}

func (p planted) String() string { return fmt.Sprintf("%s %s:%d", p.rule, p.path, p.line) }

// gitleaksFindings scans dir as `gitleaks dir` does: gitleaks' default configuration, its file
// source and its detector, with the command's default decoding depth.
func gitleaksFindings(t *testing.T, dir string) []planted {
	t.Helper()
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(gitleaks.DefaultConfig)); err != nil {
		t.Fatal(err)
	}
	var vc gitleaks.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		t.Fatal(err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		t.Fatal(err)
	}
	d := detect.NewDetector(cfg)
	d.MaxDecodeDepth = 5 // gitleaks' --max-decode-depth default
	fs, err := d.DetectSource(context.Background(), &sources.Files{Config: &cfg, Path: dir, Sema: d.Sema, MaxFileSize: 0})
	if err != nil {
		t.Fatal(err)
	}
	var out []planted
	for _, f := range fs {
		rel, err := filepath.Rel(dir, f.File)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, planted{f.RuleID, filepath.ToSlash(rel), f.StartLine})
	}
	return out
}

// lensgateFindings reviews the files as one pull request adding them, with the secrets lens.
func lensgateFindings(t *testing.T, files map[string]string) []planted {
	t.Helper()
	var d strings.Builder
	for path, body := range files {
		lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		fmt.Fprintf(&d, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, len(lines))
		for _, l := range lines {
			d.WriteString("+" + l + "\n")
		}
	}
	req := requestFor(t, []byte(d.String()))
	req.Lenses = []runtime.Lens{{Name: "secrets", Preset: "secrets"}}
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var out []planted
	for _, f := range res.Lenses[0].Findings {
		out = append(out, planted{f.Rule, f.Path, f.Line})
	}
	return out
}

func sorted(ps []planted) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	sort.Strings(out)
	return out
}

// Recall parity with gitleaks: on files with planted credentials of many gitleaks rules, the
// secrets lens reports exactly what gitleaks itself reports: the same rule ids, files and lines.
func TestSecretsRecallMatchesGitleaks(t *testing.T) {
	files := plantedFiles(t)
	dir := t.TempDir()
	for path, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := sorted(gitleaksFindings(t, dir))
	got := sorted(lensgateFindings(t, files))
	rules := map[string]bool{}
	for _, w := range want {
		rules[strings.Fields(w)[0]] = true
	}
	t.Logf("gitleaks: %d findings of %d rules in %d files; lensgate: %d findings", len(want), len(rules), len(files), len(got))
	missing, extra := diffSets(want, got)
	for _, m := range missing {
		t.Errorf("gitleaks finds %s; the secrets lens does not", m)
	}
	for _, e := range extra {
		t.Errorf("the secrets lens finds %s; gitleaks does not", e)
	}
	if len(want) < len(files) {
		t.Fatalf("gitleaks found %d findings in %d planted files: the plants are not realistic enough", len(want), len(files))
	}
	t.Run("gitleaks command", func(t *testing.T) {
		cli := gitleaksCLI(t, dir)
		if missing, extra := diffSets(cli, got); len(missing)+len(extra) > 0 {
			t.Fatalf("gitleaks dir finds %d the secrets lens does not: %q; the lens finds %d it does not: %q", len(missing), missing, len(extra), extra)
		}
		t.Logf("gitleaks dir: %d findings, the same as the secrets lens", len(cli))
	})
}

// gitleaksCLI runs the gitleaks command (v8.30.1: go install
// github.com/zricethezav/gitleaks/v8@v8.30.1) over dir, when it is installed.
func gitleaksCLI(t *testing.T, dir string) []string {
	t.Helper()
	bin, err := exec.LookPath("gitleaks")
	if err != nil {
		t.Skip("the gitleaks command is not installed (go install github.com/zricethezav/gitleaks/v8@v8.30.1); compared with gitleaks' library only")
	}
	out, err := exec.Command(bin, "dir", dir, "--no-banner", "--log-level", "error", "--report-format", "json", "--report-path", "-", "--exit-code", "0").Output()
	if err != nil {
		t.Fatalf("gitleaks dir: %v", err)
	}
	var fs []struct {
		RuleID    string
		File      string
		StartLine int
	}
	if err := json.Unmarshal(out, &fs); err != nil {
		t.Fatalf("gitleaks report: %v", err)
	}
	var ps []planted
	for _, f := range fs {
		rel, err := filepath.Rel(dir, f.File)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, planted{f.RuleID, filepath.ToSlash(rel), f.StartLine})
	}
	return sorted(ps)
}

func diffSets(want, got []string) (missing, extra []string) {
	in := func(s []string, x string) bool { i := sort.SearchStrings(s, x); return i < len(s) && s[i] == x }
	for _, w := range want {
		if !in(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !in(want, g) {
			extra = append(extra, g)
		}
	}
	return missing, extra
}
