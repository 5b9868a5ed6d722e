package builtin

import (
	"context"
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
		{"DB_PASSWORD=" + pw, "env-credential"},
		{"export STRIPE_API_KEY=" + pw + "  # prod", "env-credential"},
		{"DATABASE_URL=postgres://admin:" + pw + "@db.internal:5432/app", "url-credentials"},
		{`dsn = "mysql://root:` + pw + `@tcp(10.0.0.5:3306)/shop"`, "url-credentials"},
		{"amqp_url: amqp://:" + pw + "@broker:5672/", "url-credentials"},
		// One token, one finding: the specific rule wins over the generic ones.
		{"GITHUB_TOKEN=ghp_" + "sMehGAkWvj7FAc9QeWJKY40uvSwMFLZDe1f8", "github-token"},

		{"DB_PASSWORD=changeme123", ""},
		{"DB_PASSWORD=${DB_PASSWORD}", ""},
		{"SECRET_NAME=my-app-secret-name", ""},
		{"TOKEN_FILE=/run/secrets/token", ""},
		{"API_KEY=", ""},
		{"db_password=" + pw, ""}, // lower case is code, not an env file line: the quoted rule covers code
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
