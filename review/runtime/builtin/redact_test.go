package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/review/runtime"
)

// TestFindingsNeverShowTheSecret: a finding names the kind of credential and its length, and
// at most the public marker of its kind, never the secret itself or a part of it.
func TestFindingsNeverShowTheSecret(t *testing.T) {
	// The secrets are split so this file itself stays clean for the builtin reviewer.
	cases := []struct {
		before, secret, after, rule, shown string
	}{
		{`key_id = "`, "AKIA" + "Z7Q3LM4VXP2KRT5N", `"`, "aws-access-key-id", "AKIA…(20 chars)"},
		{`aws_secret_access_key = "`, "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYzz9ax8Kq1W", `"`, "aws-secret-access-key", "(…(40 chars))"},
		{`token: `, "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A", ``, "github-token", "ghp_…(40 chars)"},
		{`password = "`, "Tr0ub4dor" + "&3xyzQ", `"`, "hardcoded-password", "(…(15 chars))"},
		{`STRIPE = "`, "sk_" + "live_4eC39HqLyjWDarjtT1zdp7dc", `"`, "stripe-live-key", "sk_live_…(32 chars)"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			d := "diff --git a/app/conf.py b/app/conf.py\n--- a/app/conf.py\n+++ b/app/conf.py\n@@ -1,0 +1,1 @@\n+" + c.before + c.secret + c.after + "\n"
			res, err := New(Options{}).Review(context.Background(), requestFor(t, []byte(d)))
			if err != nil {
				t.Fatal(err)
			}
			var hit bool
			for _, l := range res.Lenses {
				for _, f := range l.Findings {
					if f.Rule != c.rule {
						continue
					}
					hit = true
					all := f.Title + "\n" + f.Message + "\n" + f.Key
					if !strings.Contains(f.Message, c.shown) {
						t.Errorf("message %q does not describe the secret as %q", f.Message, c.shown)
					}
					// No five consecutive bytes of the secret past its public marker.
					from := strings.Index(c.shown, "…")
					if c.shown[0] == '(' {
						from = 0
					}
					for k := from; k+5 <= len(c.secret); k++ {
						if strings.Contains(all, c.secret[k:k+5]) {
							t.Fatalf("finding shows %q of the secret: %q", c.secret[k:k+5], all)
						}
					}
				}
			}
			if !hit {
				t.Fatalf("no %s finding", c.rule)
			}
		})
	}
}

// TestSecretEntropyIsTheSecretOnly: the entropy floor applies to the secret, not to the key
// name around it, so a repetitive placeholder under a long variable name is not a finding.
func TestSecretEntropyIsTheSecretOnly(t *testing.T) {
	d := "diff --git a/c.py b/c.py\n--- a/c.py\n+++ b/c.py\n@@ -1,0 +1,1 @@\n" +
		`+aws_prod_key_secret_access_key_v2: "` + strings.Repeat("abcdefgh", 5) + "\"\n"
	req := requestFor(t, []byte(d))
	req.Lenses = []runtime.Lens{{Name: "secrets", Preset: "secrets"}}
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := found(res); len(got) != 0 {
		t.Fatalf("found %q", got)
	}
}
