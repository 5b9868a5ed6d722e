package builtin

import (
	"context"
	"math/rand/v2"
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
		{`key_id = "`, "AKIA" + "Z7Q3LM4VXP2KRT5N", `"`, "aws-access-token", "AKIA…(20 chars)"},
		{`aws_secret_access_key = "`, "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYzz9ax8Kq1W", `"`, "aws-secret-access-key", "(…(40 chars))"},
		{`token: `, "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A", ``, "github-pat", "ghp_…(40 chars)"},
		{`password = "`, "Tr0ub4dor" + "&3xyzQ", `"`, "credential-literal", "(…(15 chars))"},
		{`STRIPE = "`, "sk_" + "live_4eC39HqLyjWDarjtT1zdp7dc", `"`, "stripe-access-token", "sk_live_…(32 chars)"},
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

// TestRedactor: secrets become placeholders naming their kind, a private key block becomes one
// placeholder per line, CRLF line ends and diff markers stay, and the input is never changed.
func TestRedactor(t *testing.T) {
	aws := "AKIA" + "Z7Q3LM4VXP2KRT5N"
	gh := "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
	body := "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2" + "Lkq8ZzUvLvu9rE3h1qHzX4J2bAa"
	in := "diff --git a/k.txt b/k.txt\n--- a/k.txt\n+++ b/k.txt\n@@ -1,2 +1,6 @@\n" +
		" id = " + aws + "\r\n" +
		"+-----BEGIN " + "PRIVATE KEY-----\r\n+" + body + "\r\n+" + body + "\r\n+-----END " + "PRIVATE KEY-----\r\n" +
		"-old token " + gh + " and " + gh + "\n" +
		"+after the key\n"
	orig := in
	r := testRedactor(t)
	out := string(r.Diff([]byte(in)))
	if in != orig {
		t.Fatal("the input was modified")
	}
	want := "diff --git a/k.txt b/k.txt\n--- a/k.txt\n+++ b/k.txt\n@@ -1,2 +1,6 @@\n" +
		" id = [redacted aws-access-token]\r\n" +
		"+[redacted private-key]\r\n+[redacted private-key]\r\n+[redacted private-key]\r\n+[redacted private-key]\r\n" +
		"-old token [redacted github-pat] and [redacted github-pat]\n" +
		"+after the key\n"
	if out != want {
		t.Fatalf("redacted diff:\n%q\nwant:\n%q", out, want)
	}
	if r.Counts["aws-access-token"] != 1 || r.Counts["private-key"] != 1 || r.Counts["github-pat"] != 2 || r.Total() != 4 {
		t.Fatalf("counts %v", r.Counts)
	}
	// A key header without an END line stops at the first line that is not key material.
	if got := r.Text("-----BEGIN " + "PRIVATE KEY-----\n" + body + "\nplain prose\n"); got != "[redacted private-key]\n[redacted private-key]\nplain prose\n" {
		t.Fatalf("open key block: %q", got)
	}
	// A key inline in a string literal, and text around it.
	if got := r.Text(`k = "-----BEGIN ` + `PRIVATE KEY-----\n` + body + `\n-----END ` + `PRIVATE KEY-----" # x`); got != `k = "[redacted private-key]" # x` {
		t.Fatalf("inline key: %q", got)
	}
	// Documentation placeholders are not secrets and stay.
	if got := r.Text("key_id = AKIA" + "IOSFODNN7EXAMPLE"); !strings.Contains(got, "EXAMPLE") {
		t.Fatalf("placeholder redacted: %q", got)
	}
}

// FuzzRedactor: any text keeps its line count and line ends, redacting twice changes nothing
// more, and nothing panics.
func FuzzRedactor(f *testing.F) {
	for _, s := range []string{
		"+key = \"AKIA" + "Z7Q3LM4VXP2KRT5N\"\r\n", "-----BEGIN " + "PRIVATE KEY-----\nAAAA\n", "+-----END PRIVATE KEY-----",
		"password = \"Tr0ub4dor" + "&3xyzQ\"", "", "\n\n\r\n", "postgres://u:hunter2" + "Xy9@db/x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, isDiff := range []bool{false, true} {
			once := string(testRedactor(t).lines([]byte(s), isDiff))
			if strings.Count(once, "\n") != strings.Count(s, "\n") || strings.Count(once, "\r\n") != strings.Count(s, "\r\n") {
				t.Fatalf("line structure changed: %q -> %q", s, once)
			}
			if twice := string(testRedactor(t).lines([]byte(once), isDiff)); twice != once {
				t.Fatalf("not stable: %q -> %q -> %q", s, once, twice)
			}
		}
	})
}

// TestRedactorFreeText: an environment snippet pasted into a description is redacted as in a
// configuration file.
func TestRedactorFreeText(t *testing.T) {
	v := gen{rand.New(rand.NewPCG(5, 5))}.alnum(20)
	if got := testRedactor(t).Text("Deploy with\n\nDB_PASSWORD=" + v + "\n"); strings.Contains(got, v) {
		t.Fatalf("not redacted: %q", got)
	}
}
