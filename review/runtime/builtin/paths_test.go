package builtin

import (
	"context"
	"fmt"
	"testing"

	"github.com/lensgate/lensgate/review/runtime"
)

// fixtureDiff adds the same credential to each path.
func fixtureDiff(paths ...string) []byte {
	var d string
	for _, p := range paths {
		d += fmt.Sprintf("diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1,0 +1,1 @@\n+GH=%s\n", p, p, p, p, plantGitHub)
	}
	return []byte(d)
}

// severities returns the severity of the secret found in each file.
func severities(t *testing.T, s runtime.Settings, paths ...string) map[string]string {
	t.Helper()
	req := requestFor(t, fixtureDiff(paths...))
	req.Lenses = []runtime.Lens{{Name: "secrets", Preset: "secrets"}}
	req.Settings = s
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range res.Lenses[0].Findings {
		out[f.Path] = f.Severity
	}
	if len(out) != len(paths) {
		t.Fatalf("findings in %v, want one in each of %v", out, paths)
	}
	return out
}

// fixture_paths and vendored_paths decide where a secret is only a low finding; nil settings
// take .asdd.yml's defaults, a list replaces them, an empty list turns them off.
func TestFixtureAndVendoredPathsAreConfigurable(t *testing.T) {
	paths := []string{"app/main.env", "pkg/testdata/keys.env", "tests/conf.env", "certs/dev.env", "vendor/lib/x.env", "deps/lib/x.env"}
	low, crit := runtime.SeverityLow, runtime.SeverityCritical
	cases := []struct {
		name     string
		settings runtime.Settings
		want     []string // severity per path, in the order of paths
	}{
		{"defaults", runtime.Settings{}, []string{crit, low, low, crit, low, crit}},
		{"own fixture and vendored globs", runtime.Settings{FixturePaths: []string{"certs/**"}, VendoredPaths: []string{"deps/**"}},
			[]string{crit, crit, crit, low, crit, low}},
		{"turned off", runtime.Settings{FixturePaths: []string{}, VendoredPaths: []string{}}, []string{crit, crit, crit, crit, crit, crit}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := severities(t, c.settings, paths...)
			for i, p := range paths {
				if got[p] != c.want[i] {
					t.Errorf("%s: severity %s, want %s", p, got[p], c.want[i])
				}
			}
		})
	}
}
