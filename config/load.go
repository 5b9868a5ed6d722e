package config

import (
	"path/filepath"
	"strings"
)

// IsRepoConfig reports whether filename names an .asdd.yml-style YAML file rather than a YAGA
// TOML policy.
func IsRepoConfig(filename string) bool {
	ext := strings.ToLower(filepath.Ext(filename))
	return ext == ".yml" || ext == ".yaml"
}

// ParsePolicyFile reads the named-lens policy from any supported file: .asdd.yml (the
// agent_review section, or DefaultPolicy when it has none), .yaga.toml or pyproject.toml.
func ParsePolicyFile(filename string, data []byte) (Policy, error) {
	if IsRepoConfig(filename) {
		r, err := ParseRepo(filename, data)
		if err != nil {
			return Policy{}, err
		}
		return r.Policy, nil
	}
	return ParseYAGATOML(filename, data)
}
