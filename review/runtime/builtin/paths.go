package builtin

import (
	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/pathglob"
	"github.com/lensgate/lensgate/review/runtime"
)

// pathClasses are the repository's test-and-fixture and vendored paths (fixture_paths and
// vendored_paths), where findings of the secrets and disabled-protection rules are reported at
// low severity: keys and disabled TLS checks there are fixtures far more often than leaks, and
// vendored code is fixed upstream.
type pathClasses struct {
	fixture, vendored *pathglob.Set
}

// newPathClasses compiles the settings' globs, or .asdd.yml's defaults when a caller left them
// nil.
func newPathClasses(s runtime.Settings) pathClasses {
	fixture, vendored := s.FixturePaths, s.VendoredPaths
	if fixture == nil {
		fixture = config.DefaultFixturePaths()
	}
	if vendored == nil {
		vendored = config.DefaultVendoredPaths()
	}
	return pathClasses{fixture: pathglob.Compile(fixture), vendored: pathglob.Compile(vendored)}
}

// lowerInTests reports disabled protections in test and fixture files at low severity: a test
// talking to its own self-signed local server is the common, harmless case, and it must not fail
// the gate. Secrets get the same treatment from the secrets scan itself (fixtureFinding).
func (pc pathClasses) lowerInTests(fs []runtime.Finding) []runtime.Finding {
	for i := range fs {
		if rank(fs[i].Severity) > rank(runtime.SeverityLow) && pc.fixture.Match(fs[i].Path) {
			fs[i].Severity = runtime.SeverityLow
			fs[i].Message += " (In a test file, so reported as low: make sure this code is never used outside tests.)"
		}
	}
	return fs
}

// lowerVendored reports findings in vendored third-party code at low severity: the code (and
// any test key it ships) is already public upstream, where the fix belongs, and it must not
// fail the gate of a dependency update.
func (pc pathClasses) lowerVendored(fs []runtime.Finding) []runtime.Finding {
	for i := range fs {
		if rank(fs[i].Severity) > rank(runtime.SeverityLow) && pc.vendored.Match(fs[i].Path) {
			fs[i].Severity = runtime.SeverityLow
			fs[i].Message += " (In vendored third-party code, so reported as low: the fix belongs upstream.)"
		}
	}
	return fs
}

// finish takes one file's secrets findings to what is reported, in gitleaks' order: the
// repository's allowlists (gitleaks applies them as it detects), gitleaks' names, the
// fingerprints of .gitleaksignore (gitleaks checks them as it adds a finding); then findings
// under a test or fixture path are lowered. scan is the file's detection (nil when nothing was
// scanned).
func (s *SecretRules) finish(f *diff.File, scan *secretScan, fs []runtime.Finding, repo *repoSecrets, pc pathClasses) []runtime.Finding {
	if s == nil || len(fs) == 0 {
		return fs
	}
	fs = repo.allowed(f, scan, fs)
	nameAsGitleaks(scan, fs)
	fs = repo.unignored(f.Path(), fs)
	if pc.fixture.Match(f.Path()) {
		for i := range fs {
			fixtureFinding(&fs[i])
		}
	}
	return fs
}
