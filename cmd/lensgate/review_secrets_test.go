package main

import (
	"strings"
	"testing"
)

// `lensgate review` applies the base revision's .gitleaksignore, never the head's: the head's
// own ignore entry for the key it adds changes nothing.
func TestReviewUsesBaseGitleaksIgnore(t *testing.T) {
	dir := throwAwayRepo(t)
	key := "AKIA" + "Q4NRTW7ZL2XKHJ5M"
	commit(t, dir, map[string]string{".gitleaksignore": "app/settings.py:aws-access-token:2\n"}, "Known findings")
	commit(t, dir, map[string]string{
		"app/settings.py": "REGION = \"eu-west-1\"\nAWS_ACCESS_KEY_ID = \"" + key + "\"\n",
		"app/other.py":    "AWS_ACCESS_KEY_ID = \"" + key + "\"\n",
		".gitleaksignore": "app/settings.py:aws-access-token:2\napp/other.py:aws-access-token:1\n",
	}, "Keys")
	code, out, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1", "--format", "json")
	if code != exitNegative {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if strings.Contains(out, `"path": "app/settings.py"`) || !strings.Contains(out, `"path": "app/other.py"`) {
		t.Fatalf("the base's fingerprint silences settings.py only:\n%s", out)
	}
}
