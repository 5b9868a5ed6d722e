package builtin

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/review/runtime"
)

// Planted credentials, split so that this file itself stays clean.
var (
	plantAWS    = "AKIA" + "Z7XQ3MRB6TKN4WPY"
	plantGitHub = "ghp_" + "sMehGAkWvj7FAc9QeWJKY40uvSwMFLZDe1f8"
	plantStripe = "sk_" + "live_" + "51HxQ2vKp9TzR8mWc3LnY6aB"
	plantSlack  = "xoxb-" + "2384910294-4839201948374-" + "Ab3dEf9hIj2kLm4nOp6qRs8t"
)

// baselineDiff adds four credentials in three files.
func baselineDiff() string {
	return "diff --git a/config/app.env b/config/app.env\n--- a/config/app.env\n+++ b/config/app.env\n@@ -1,0 +1,2 @@\n" +
		"+AWS_ACCESS_KEY_ID=" + plantAWS + "\n+GH=" + plantGitHub + "\n" +
		"diff --git a/docs/sample.md b/docs/sample.md\n--- a/docs/sample.md\n+++ b/docs/sample.md\n@@ -3,0 +4,1 @@\n" +
		"+stripe: " + plantStripe + "\n" +
		"diff --git a/src/notify.py b/src/notify.py\n--- a/src/notify.py\n+++ b/src/notify.py\n@@ -9,0 +10,1 @@\n" +
		"+token = \"" + plantSlack + "\"\n"
}

func secretsOnly(t *testing.T, s runtime.Settings) []string {
	t.Helper()
	req := requestFor(t, []byte(baselineDiff()))
	req.Lenses = []runtime.Lens{{Name: "secrets", Preset: "secrets"}}
	req.Settings = s
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return found(res)
}

// The repository's .gitleaksignore (fingerprints) and .gitleaks.toml allowlists, read from its
// base branch, silence exactly what gitleaks would silence; [extend] is never followed.
func TestRepositoryGitleaksSettings(t *testing.T) {
	all := []string{"aws-access-token config/app.env:1", "github-pat config/app.env:2", "slack-bot-token src/notify.py:10", "stripe-access-token docs/sample.md:4"}
	if got := secretsOnly(t, runtime.Settings{}); !slices.Equal(got, all) {
		t.Fatalf("without settings %q, want %q", got, all)
	}
	cases := []struct {
		name         string
		ignore, toml string
		want         []string
	}{
		{
			name:   "fingerprint",
			ignore: "# known\nconfig/app.env:github-pat:2\nconfig/app.env:aws-access-token:2\nabc123:src/notify.py:slack-bot-token:10\n",
			want:   []string{all[0], all[2], all[3]},
		},
		{
			name: "global path, targeted line and rule allowlists",
			toml: "[extend]\npath = \"/nonexistent/never-read.toml\"\n\n" +
				"[[allowlists]]\ndescription = \"samples\"\npaths = ['''^docs/''']\n\n" +
				"[[allowlists]]\ntargetRules = [\"slack-bot-token\", \"no-such-rule\"]\nregexTarget = \"line\"\nregexes = ['''^token = ''']\n\n" +
				"[[rules]]\nid = \"aws-access-token\"\n[[rules.allowlists]]\nstopwords = [\"z7xq3mrb\"]\n",
			want: []string{all[1]},
		},
		{
			name: "AND condition that does not hold",
			toml: "[[allowlists]]\ncondition = \"AND\"\npaths = ['''^docs/''']\nregexes = ['''^nomatch$''']\n",
			want: all,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := secretsOnly(t, runtime.Settings{SecretsIgnore: []byte(c.ignore), SecretsConfig: []byte(c.toml)})
			if !slices.Equal(got, c.want) {
				t.Fatalf("found %q, want %q", got, c.want)
			}
		})
	}
}

// Settings that cannot be applied are said so, and silence nothing.
func TestRepositoryGitleaksSettingsProblems(t *testing.T) {
	cases := map[string]runtime.Settings{
		"bad expression":  {SecretsConfig: []byte("[[allowlists]]\nregexes = ['''(''']\n")},
		"empty allowlist": {SecretsConfig: []byte("[[allowlists]]\ndescription = \"nothing\"\n")},
		"not TOML":        {SecretsConfig: []byte("[[allowlists\n")},
		"too large":       {SecretsProblems: ".gitleaksignore is larger than 1048576 bytes and is not applied"},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			got := secretsOnly(t, s)
			if len(got) != 5 || !slices.Contains(got, "gitleaks-settings :0") {
				t.Fatalf("found %q", got)
			}
			req := requestFor(t, []byte(baselineDiff()))
			req.Lenses = []runtime.Lens{{Name: "secrets", Preset: "secrets"}}
			req.Settings = s
			res, _ := New(Options{}).Review(context.Background(), req)
			for _, f := range res.Lenses[0].Findings {
				if f.Rule == "gitleaks-settings" && (f.Severity != runtime.SeverityInfo || !strings.Contains(f.Message, "not")) {
					t.Fatalf("problem note %+v", f)
				}
			}
		})
	}
}

// BenchmarkRepositoryGitleaksSettings measures what the repository's settings add to a review of
// the baseline diff: go test -run '^$' -bench RepositoryGitleaks ./review/runtime/builtin/
func BenchmarkRepositoryGitleaksSettings(b *testing.B) {
	settings := map[string]runtime.Settings{
		"none": {},
		"ignore and allowlists": {SecretsIgnore: []byte("config/app.env:github-pat:2\n"),
			SecretsConfig: []byte("[[allowlists]]\npaths = ['''^docs/''']\n[[allowlists]]\ntargetRules = [\"slack-bot-token\"]\nregexTarget = \"line\"\nregexes = ['''^token = ''']\n")},
	}
	for name, s := range settings {
		b.Run(name, func(b *testing.B) {
			req := requestFor(b, []byte(baselineDiff()))
			req.Lenses = []runtime.Lens{{Name: "secrets", Preset: "secrets"}}
			req.Settings = s
			rt := New(Options{})
			for b.Loop() {
				if _, err := rt.Review(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
