package builtin

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/review/runtime"
)

// TestUnquotedCredentials: credentials in .env lines and connection URLs are found; the
// look-alikes developers write every day are not. Values are split so this file stays clean.
func TestUnquotedCredentials(t *testing.T) {
	pw := "Xk9mP2vL" + "8qR4wZ7t"
	cases := []struct {
		line string
		want string // rule, or "" for nothing
	}{
		{"DB_PASSWORD=" + pw, "generic-api-key"}, // named as gitleaks names it, which finds it too
		{"export STRIPE_API_KEY=" + pw + "  # prod", "generic-api-key"},
		{"DATABASE_URL=postgres://admin:" + pw + "@db.internal:5432/app", "url-credentials"},
		{`dsn = "mysql://root:` + pw + `@tcp(10.0.0.5:3306)/shop"`, "url-credentials"},
		{"amqp_url: amqp://:" + pw + "@broker:5672/", "url-credentials"},
		// One token, one finding: the specific rule wins over the generic ones.
		{"GITHUB_TOKEN=ghp_" + "sMehGAkWvj7FAc9QeWJKY40uvSwMFLZDe1f8", "github-pat"},

		{"DB_PASSWORD=changeme123", ""},
		{"db_host=db.internal", ""},
		{"DB_PASSWORD=${DB_PASSWORD}", ""},
		{"SECRET_NAME=my-app-secret-name", ""},
		{"TOKEN_FILE=/run/secrets/token", ""},
		{"API_KEY=", ""},
		// Lower-case keys are .env lines too (and code assigning a literal).
		{"db_password=" + pw, "generic-api-key"},
		{"url = postgres://postgres:postgres@localhost:5432/test", ""},
		{"url = https://user:${TOKEN}@github.com/o/r.git", ""},
		{"url = https://user:<password>@example.com", ""},
		{"see https://example.com/a:b@c for details", ""},
		{"redis://:password12@localhost", ""},
	}
	for _, c := range cases {
		t.Run(c.line, func(t *testing.T) {
			d := "diff --git a/deploy.env b/deploy.env\n--- a/deploy.env\n+++ b/deploy.env\n@@ -1,0 +1,1 @@\n+" + c.line + "\n"
			req := requestFor(t, []byte(d))
			req.Lenses = []runtime.Lens{{Name: "secrets", Preset: "secrets"}}
			res, err := New(Options{}).Review(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			got := found(res)
			if c.want == "" {
				if len(got) != 0 {
					t.Fatalf("false positive: %q", got)
				}
				return
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], c.want+" deploy.env:1") {
				t.Fatalf("found %q, want one %s", got, c.want)
			}
			for _, f := range res.Lenses[0].Findings {
				if strings.Contains(f.Message, pw[:6]) || strings.Contains(f.Message, pw[6:]) {
					t.Fatalf("the finding shows the secret: %q", f.Message)
				}
			}
		})
	}
}

// TestSecretBoundaries: an AWS secret key ending in / or + and a Google API key ending in - are
// found whole, and a finding under a test or fixture path is reported at low severity.
func TestSecretBoundaries(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(7, 7))}
	slash, plus, dash := g.alnum(39)+"/", g.alnum(39)+"+", "AIza"+g.alnum(34)+"-"
	dash2, fixture, token := "AIza"+g.alnum(34)+"-", g.alnum(39)+"/", "ghp_"+g.alnum(36)
	cases := []struct {
		path, before, secret, after, want, severity string
	}{
		{"app/aws.py", `aws_secret_access_key = "`, slash, `"`, "aws-secret-access-key", runtime.SeverityCritical},
		{"app/aws.sh", `AWS_SECRET_ACCESS_KEY=`, plus, ``, "aws-secret-access-key", runtime.SeverityCritical},
		{"web/maps.js", `const k = "`, dash, `";`, "gcp-api-key", runtime.SeverityHigh},
		{"web/maps.html", `<meta name="maps">`, dash2, `</meta>`, "google-api-key", runtime.SeverityHigh},
		{"internal/tls/testdata/aws.py", `aws_secret_access_key = "`, fixture, `"`, "aws-secret-access-key", runtime.SeverityLow},
		{"tests/fixtures/tokens.txt", "GH_TOKEN=", token, ``, "github-pat", runtime.SeverityLow},
	}
	for _, c := range cases {
		t.Run(c.want+" "+c.path, func(t *testing.T) {
			line := c.before + c.secret + c.after
			d := "diff --git a/" + c.path + " b/" + c.path + "\n--- a/" + c.path + "\n+++ b/" + c.path + "\n@@ -1,0 +1,1 @@\n+" + line + "\n"
			req := requestFor(t, []byte(d))
			req.Lenses = []runtime.Lens{{Name: "secrets", Preset: "secrets"}}
			res, err := New(Options{}).Review(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			fs := res.Lenses[0].Findings
			if len(fs) != 1 || fs[0].Rule != c.want || fs[0].Severity != c.severity {
				t.Fatalf("findings %+v, want one %s at %s", fs, c.want, c.severity)
			}
			if out := testRedactor(t).Text(line); strings.Contains(out, c.secret[:12]) || strings.Contains(out, c.secret[len(c.secret)-12:]) {
				t.Fatalf("not redacted whole: %q", out)
			}
		})
	}
}

// TestFixtureKeyDoesNotBlock: a private key under a test path is reported at low severity and the
// lens does not ask for changes; the same key elsewhere is critical.
func TestFixtureKeyDoesNotBlock(t *testing.T) {
	body := gen{rand.New(rand.NewPCG(3, 3))}.pemBody(10)
	for path, want := range map[string]string{"tests/certs/server.key": runtime.SeverityLow, "deploy/server.key": runtime.SeverityCritical} {
		lines := append(append([]string{"-----BEGIN RSA " + "PRIVATE KEY-----"}, body...), "-----END RSA "+"PRIVATE KEY-----")
		d := (plant{path: path, lines: lines}).diff()
		req := requestFor(t, []byte(d))
		req.Lenses = []runtime.Lens{{Name: "secrets", Preset: "secrets"}}
		res, err := New(Options{}).Review(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		l := res.Lenses[0]
		if len(l.Findings) != 1 || l.Findings[0].Rule != "private-key" || l.Findings[0].Severity != want {
			t.Fatalf("%s: findings %+v, want one private-key at %s", path, l.Findings, want)
		}
		if want == runtime.SeverityLow && l.Verdict == runtime.VerdictRequestChanges {
			t.Fatalf("%s: a fixture key asks for changes", path)
		}
	}
}

// testRedactor is a redactor over the embedded rule set.
func testRedactor(tb testing.TB) *Redactor {
	tb.Helper()
	rules, err := LoadSecretRules()
	if err != nil {
		tb.Fatal(err)
	}
	return NewRedactor(rules)
}

// TestSecretRulesThatDoNotBuild: a rule set that does not build is an error naming the cause,
// not a panic, whether TOML or an expression is wrong.
func TestSecretRulesThatDoNotBuild(t *testing.T) {
	for name, extra := range map[string]string{
		"toml":       "[[rules]\nid = ",
		"expression": "[[rules]]\nid = \"broken\"\nregex = '''(unclosed'''\n",
	} {
		t.Run(name, func(t *testing.T) {
			rules, err := buildSecretRules(extra)
			if err == nil || rules != nil {
				t.Fatalf("built %v, err %v; want an error", rules, err)
			}
			if !strings.Contains(err.Error(), "secret rules") {
				t.Fatalf("error %q does not say what failed", err)
			}
			t.Log(err)
		})
	}
}
