package config

import (
	"slices"
	"strings"
	"testing"
)

// fixture_paths, vendored_paths and protected_paths_require decode with their defaults, and bad
// values are problems at their line.
func TestFixturePathsAndApprovalKeys(t *testing.T) {
	r, err := ParseRepo(".asdd.yml", []byte("runtime: builtin\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.FixturePaths, DefaultFixturePaths()) || !slices.Equal(r.VendoredPaths, DefaultVendoredPaths()) ||
		r.CodeOwnerApproval() {
		t.Fatalf("defaults: %v %v %q", r.FixturePaths, r.VendoredPaths, r.ProtectedPathsRequire)
	}
	r, err = ParseRepo(".asdd.yml", []byte("fixture_paths: [\"certs/**\"]\nvendored_paths: []\nprotected_paths_require: code_owner_approval\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.FixturePaths, []string{"certs/**"}) || r.VendoredPaths == nil || len(r.VendoredPaths) != 0 || !r.CodeOwnerApproval() {
		t.Fatalf("set: %v %v %q", r.FixturePaths, r.VendoredPaths, r.ProtectedPathsRequire)
	}
	r, err = ParseRepo(".asdd.yml", []byte("protected_paths: []\nprotected_paths_require: code_owner_approval\n"))
	if err != nil || r.CodeOwnerApproval() {
		t.Fatalf("no protected paths, nothing to approve: %v %v", r.CodeOwnerApproval(), err)
	}
	_, err = ParseRepo(".asdd.yml", []byte("fixture_paths: [\"../x\"]\nprotected_paths_require: owners\n"))
	if err == nil || !strings.Contains(err.Error(), ".asdd.yml:1") || !strings.Contains(err.Error(), ".asdd.yml:2") {
		t.Fatalf("problems: %v", err)
	}
}
