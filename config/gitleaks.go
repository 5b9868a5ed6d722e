package config

// Secrets is a repository's own gitleaks settings, read by the App from the base branch (never
// from the pull request, which could otherwise silence a finding about itself). They are not
// .asdd.yml keys: the files are gitleaks' own, at the repository root.
type Secrets struct {
	// Ignore is .gitleaksignore: finding fingerprints (file:rule-id:line) gitleaks skips.
	Ignore []byte
	// Config is .gitleaks.toml, of which only the allowlists apply.
	Config []byte
	// Problems says what of them could not be read or applied ("" when all applied).
	Problems string
}

// The repository files Secrets are read from, and the bound on each.
const (
	GitleaksIgnorePath = ".gitleaksignore"
	GitleaksConfigPath = ".gitleaks.toml"
	// MaxGitleaksFileBytes bounds each file: a larger one is not applied (and its problem is
	// reported), so a baseline can never make a review slow.
	MaxGitleaksFileBytes = 1 << 20
)
