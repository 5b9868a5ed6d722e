package openai_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/review"
)

// Planted secrets, assembled at run time so this file stays clean for the builtin reviewer.
var (
	plantedAWSKey    = "AKIA" + "Q7ZP3LM4VXN2KRT6"
	plantedAWSSecret = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzz9ax8Kq1W"
	plantedGitHub    = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
	plantedKeyLines  = []string{
		"MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2" + "Lkq8ZzUvLvu9rE3h1qHzX4J2bAa",
		"p9xk2Qv7UHfE3mN4b5C6d7E8f9G0h1I2j3K4" + "l5M6n7O8p9Q0r1S2t3U4v5W6x7Y8",
		"Zz9aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPq" + "QrRsStTuUvVwWxXyYz0123456789",
	}
	plantedEnvValue = "pr0d-db-" + "Xq8Lm2Vb7Nc4"
	plantedPEMHead  = "-----BEGIN RSA " + "PRIVATE KEY-----"
	plantedPEMTail  = "-----END RSA " + "PRIVATE KEY-----"
)

// secretDiff plants every kind of secret: an AWS key pair in Python, a PEM key in a text file
// with CRLF line ends (the body split over three lines), a GitHub token in Go, and an .env file.
func secretDiff() string {
	var b strings.Builder
	b.WriteString("diff --git a/loader.go b/loader.go\n--- a/loader.go\n+++ b/loader.go\n@@ -1,4 +1,5 @@\n" +
		" func Load(p string) *Config {\n-\tif p == \"\" { return nil }\n+\tconst token = \"" + plantedGitHub + "\"\n \treturn parse(p)\n }\n")
	b.WriteString("diff --git a/app/aws.py b/app/aws.py\nnew file mode 100644\n--- /dev/null\n+++ b/app/aws.py\n@@ -0,0 +1,2 @@\n" +
		"+key_id = \"" + plantedAWSKey + "\"\n+aws_secret_access_key = \"" + plantedAWSSecret + "\"\n")
	b.WriteString("diff --git a/keys/server.txt b/keys/server.txt\nnew file mode 100644\n--- /dev/null\n+++ b/keys/server.txt\n@@ -0,0 +1,6 @@\n" +
		"+deploy key follows\r\n+" + plantedPEMHead + "\r\n")
	for _, l := range plantedKeyLines {
		b.WriteString("+" + l + "\r\n")
	}
	b.WriteString("+" + plantedPEMTail + "\r\n")
	b.WriteString("diff --git a/.env.production b/.env.production\nnew file mode 100644\n--- /dev/null\n+++ b/.env.production\n@@ -0,0 +1,2 @@\n" +
		"+DB_HOST=db.internal\n+DB_PASSWORD=" + plantedEnvValue + "\n")
	return b.String()
}

// TestNoSecretReachesTheModel: no planted secret, and nothing of the withheld .env file, is in
// any request body sent to the model; the placeholders name what was removed, the decision
// counts it, coverage names the withheld file, and the builtin lens still sees everything.
func TestNoSecretReachesTheModel(t *testing.T) {
	model := obedientModel(t)
	subj := subject()
	subj.Diff = []byte(secretDiff())
	subj.Title = "Rotate " + plantedGitHub
	subj.Body = "Old key " + plantedAWSKey + " is gone.\r\n" + plantedPEMHead + "\r\n" + plantedKeyLines[0] + "\r\n" + plantedPEMTail
	subj.Commits = []review.Commit{{SHA: "c1", Message: "add " + plantedGitHub}}
	d, err := pipeline(t, model, nil).Review(context.Background(), subj, repoConfig("correctness", "quality", "security"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	secrets := append([]string{plantedAWSKey, plantedAWSSecret, plantedGitHub, plantedEnvValue, "db.internal", ".env.production"}, plantedKeyLines...)
	for i, r := range reqs {
		body := string(r.Body)
		for _, s := range secrets {
			// Any 12 bytes of a secret, so a partial leak is caught too.
			for k := 0; k+12 <= len(s); k += 6 {
				if strings.Contains(body, s[k:k+12]) {
					t.Errorf("request %d carries %q of a planted secret", i, s[k:k+12])
				}
			}
		}
		for _, want := range []string{"[redacted github-pat]", "[redacted aws-access-token]", "[redacted aws-secret-access-key]", "[redacted private-key]"} {
			if !strings.Contains(body, want) {
				t.Errorf("request %d has no %s placeholder", i, want)
			}
		}
		// Line numbers are kept: the key's six lines are still six lines.
		if n := strings.Count(r.User, "[redacted private-key]"); n < 5 {
			t.Errorf("request %d: %d private-key placeholder lines, want the header, three body lines and the end (and the body's)", i, n)
		}
	}
	in := d.ModelInput
	if !in.Sent || !slices.Equal(in.WithheldFiles, []string{".env.production"}) || in.RedactedValues < 6 ||
		in.RedactedKinds["private-key"] != 2 || in.RedactedKinds["github-pat"] != 3 {
		t.Fatalf("model input %+v", in)
	}
	var gap bool
	for _, g := range d.Coverage.Gaps {
		if g.Path == ".env.production" && strings.Contains(g.Reason, "models.exclude_paths") {
			gap = true
		}
	}
	if !gap || d.Coverage.Status != review.CoveragePartial {
		t.Fatalf("coverage %+v", d.Coverage)
	}
	// The builtin lens reviewed the change as it is.
	rules := map[string]bool{}
	for _, f := range lens(d, "security").Findings {
		rules[f.Rule] = true
	}
	// The .env password is named generic-api-key, as gitleaks names it.
	for _, r := range []string{"aws-access-token", "github-pat", "private-key", "generic-api-key"} {
		if !rules[r] {
			t.Errorf("the builtin security lens missed %s: %v", r, rules)
		}
	}
}
