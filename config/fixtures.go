package config

// DefaultFixturePaths returns the test and fixture paths used when fixture_paths is absent: the
// test-file conventions of the common ecosystems and the usual test and fixture directories.
// Secrets and disabled protections found there are reported at low severity.
func DefaultFixturePaths() []string {
	return []string{
		"**/*_test.go", "**/test_*.py", "**/*_test.py", "**/*.test.*", "**/*.spec.*",
		"**/*Test.java", "**/*Tests.java", "**/*_spec.rb", "**/*_test.rb", "**/*Tests.cs", "**/*Test.kt",
		"**/test/**", "**/tests/**", "**/Tests/**", "**/__tests__/**", "**/spec/**", "**/testdata/**",
		"**/testing/**", "**/fixtures/**", "**/fixture/**",
	}
}

// DefaultVendoredPaths returns the directories of vendored third-party code used when
// vendored_paths is absent. Findings of the secrets and disabled-protection rules there are
// reported at low severity: the code is public upstream, where the fix belongs.
func DefaultVendoredPaths() []string {
	return []string{"**/vendor/**", "**/third_party/**", "**/third-party/**", "**/node_modules/**"}
}

// The fixture_paths and vendored_paths keys.
var (
	fixturePathsField  = listField("fixture_paths", false, checkGlob, func(r *Repo, v []string) { r.FixturePaths = v })
	vendoredPathsField = listField("vendored_paths", false, checkGlob, func(r *Repo, v []string) { r.VendoredPaths = v })
)
