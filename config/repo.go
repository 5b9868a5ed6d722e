// Package config reads a repository's review configuration: the .asdd.yml file (with the
// named-lens policy in its agent_review section) and the YAGA policy files .yaga.toml and
// pyproject.toml ([tool.yaga]). Every format decodes into the same Policy model, so the same
// policy gives the same plan digest whichever file it came from.
package config

import "time"

// Built-in defaults of .asdd.yml keys. They follow the ASDD adoption template, except Runtime:
// lensgate's offline reviewer is named "builtin".
const (
	DefaultRuntime          = "builtin"
	DefaultMergePosture     = "advisory"
	DefaultMaxActionsPerRun = 5
	DefaultMaxDiffLines     = 2000
	DefaultTimeoutSeconds   = 45
	DefaultMaxChunks        = 8
	// MaxChunks is the largest review.max_chunks.
	MaxChunks       = 64
	DefaultSpecTool = "builtin"
	// DefaultMaxTokensPerReview is models.max_tokens_per_review.
	DefaultMaxTokensPerReview = 200_000
)

// Repo is a decoded .asdd.yml with every default applied. Keys that lensgate accepts but does
// not act on are still decoded (so a configuration round-trips) and listed in Ignored.
type Repo struct {
	// Source is the file name the configuration came from ("" for DefaultRepo).
	Source string

	StandardVersion  string
	Runtime          string
	MergePosture     string // "advisory" or "earned-automerge"
	MaxActionsPerRun int
	Models           Models
	MergeReviewer    MergeReviewer
	ProtectedPaths   []string
	// IgnorePaths is lensgate's own key: path globs whose content is excluded from built-in
	// findings (planted test fixtures, vendored code). It never hides a file from coverage.
	IgnorePaths          []string
	Conventions          map[string]any
	Agents               []string
	Review               Review
	SpecTool             string // "builtin" or "openspec"
	SpecPaths            []string
	RequireSpec          bool
	MaxOpenPRsPerAuthor  int
	Lanes                []string
	TriageLabels         []string
	Intake               Intake
	Identity             Identity
	Claim                Claim
	ContributorReview    ContributorReview
	Insights             Insights
	Audit                Audit
	ReviewOverrideOwners []string
	DevCouncil           map[string]any

	// Walkthrough and Ask configure the walkthrough and the ask command (lensgate's own keys).
	Walkthrough Walkthrough
	Ask         Ask

	// Delegate configures lenses answered by another review bot.
	Delegate Delegate
	// Dismissals configures who may dismiss findings (lensgate's own keys).
	Dismissals Dismissals
	// ProtectedPathsRequire says what a change to a protected path needs (protected.go); ""
	// reads as RequireNone.
	ProtectedPathsRequire ApprovalRequirement
	// Secrets are the repository's own gitleaks files from the base branch (gitleaks.go); not
	// an .asdd.yml key.
	Secrets Secrets
	// FixturePaths are the test and fixture paths, VendoredPaths the vendored third-party code:
	// the builtin runtime reports secrets and disabled protections there at low severity
	// (fixtures.go).
	FixturePaths  []string
	VendoredPaths []string
	// Context configures what model lenses read besides the diff (lensgate's own keys).
	Context Context

	// Policy is the named-lens review policy from agent_review, or DefaultPolicy() when the
	// section is absent.
	Policy Policy
	// PolicyDefaulted is true when the file had no agent_review section.
	PolicyDefaulted bool

	// Ignored lists, in document order, the keys present in the file that lensgate accepts for
	// ASDD compatibility but does not act on.
	Ignored []KeyRef
}

// KeyRef is a dotted key path and the line it is on.
type KeyRef struct {
	Key  string
	Line int
}

// Models is the per-role model roster (only Reviewer is used by lensgate) and lensgate's own
// limits on what reaches a model.
type Models struct {
	Developer     string
	TestAuthor    string
	TestRunner    string
	Reviewer      string
	Documentation string
	Interaction   string
	Tester        string // legacy single tester key
	// MaxTokensPerReview caps the model tokens of one review (prompt and answer of every
	// call); 0 means no cap. A call that could pass it is not made.
	MaxTokensPerReview int
	// ExcludePaths are globs of files never sent to a model runtime; a glob without '/'
	// matches the file name in any directory.
	ExcludePaths []string
}

// MergeReviewer is ASDD's independent merge-review agent (not run by lensgate).
type MergeReviewer struct {
	Enabled        bool
	Posture        string // "review-only" or "earned-automerge"
	AutoMergeClass []string
}

// Review holds the review cost guards.
type Review struct {
	// MaxDiffLines bounds the diff sent to a model; 0 disables the bound.
	MaxDiffLines int
	// TimeoutSeconds is the per-call model timeout.
	TimeoutSeconds int
	// MaxChunks bounds the model calls per lens for a change larger than MaxDiffLines: the
	// change is split into at most this many parts (default 8).
	MaxChunks int
	// Quality keeps comments few and true: verification, the inline floor and cap.
	Quality ReviewQuality
}

// Delegate configures lenses whose preset asks another review bot (lensgate's own keys).
type Delegate struct {
	// Timeout is how long a delegated lens waits for the bot's answer before it reads pending
	// with "no answer" as its cause. Default 15m.
	Timeout time.Duration
	// Approval says when a maintainer must approve before the App asks the bot: "external"
	// (default) for pull requests from forks or from authors without write access, "never".
	Approval string
}

// Dismissals configures who may dismiss a finding, beyond the write access every dismissal needs.
type Dismissals struct {
	// ByAuthor lets the pull request's author dismiss a blocking finding of a required lens on
	// their own pull request. Off by default: separation of duties, another person with write
	// access decides.
	ByAuthor bool
}

// Delegate approval modes.
const (
	DelegateApprovalExternal = "external"
	DelegateApprovalNever    = "never"
)

// DefaultDelegateTimeout is delegate.timeout's default.
const DefaultDelegateTimeout = 15 * time.Minute

// Intake is ASDD's spec-driven intake profile.
type Intake struct {
	DefinitionOfReady []string
	CompletenessGate  bool
	SpecContext       string // "docs" or "codebase"
}

// Identity is ASDD's contributor identity profile.
type Identity struct {
	Authoring string
	Proposing string
	Provider  string
}

// Claim is ASDD's claim protocol.
type Claim struct {
	OneActivePerItem     bool
	MaxActivePerIdentity int
	TTLHours             int
}

// ContributorReview is ASDD's advisory contributor-facing reviewer.
type ContributorReview struct {
	Enabled bool
	Posture string
}

// Insights is ASDD's agent activity log.
type Insights struct {
	Enabled     bool
	ActivityLog string
}

// Audit is ASDD's audit ledger export.
type Audit struct {
	Sink          string // "none", "repo" or "command"
	SinkRepo      string
	SinkCommand   string
	RetentionDays int
}

// Default list values. Functions, not variables, so callers cannot mutate shared state.

// DefaultProtectedPaths returns the ASDD template's protected path globs.
func DefaultProtectedPaths() []string {
	return []string{
		".github/**", "scripts/**", "STANDARD.md", "GOVERNANCE.md", "**/auth/**", "**/crypto/**",
		"**/security/**", "**/*requirements*.txt", "**/package.json", "**/pyproject.toml",
	}
}

// DefaultExcludePaths returns the files never sent to a model when models.exclude_paths is
// absent: environment files, keys and certificates.
func DefaultExcludePaths() []string {
	return []string{".env*", "*.pem", "*.key", "id_rsa*", "*.p12"}
}

// DefaultLanes returns the contribution lanes used when lanes is absent or empty.
func DefaultLanes() []string { return []string{"feature", "fix", "docs", "chore"} }

// DefaultTriageLabels returns the labels the triage runtime may apply by default.
func DefaultTriageLabels() []string {
	return []string{"bug", "enhancement", "documentation", "security", "good first issue", "needs-triage"}
}

// DefaultSpecPaths returns the spec globs for a spec tool when spec_paths is absent.
func DefaultSpecPaths(specTool string) []string {
	if specTool == "openspec" {
		return []string{"openspec/changes/*/specs/**/*.md", "openspec/specs/**/*.md"}
	}
	return []string{"docs/specs/*.md"}
}

// DefaultDefinitionOfReady returns ASDD's readiness floor.
func DefaultDefinitionOfReady() []string {
	return []string{"outcomes", "scope", "constraints", "verification"}
}

// DefaultRepo is the configuration used for a repository without .asdd.yml: every ASDD default,
// the builtin runtime and DefaultPolicy.
func DefaultRepo() *Repo {
	return &Repo{
		StandardVersion:  "0.1",
		Runtime:          DefaultRuntime,
		MergePosture:     DefaultMergePosture,
		MaxActionsPerRun: DefaultMaxActionsPerRun,
		Models:           Models{MaxTokensPerReview: DefaultMaxTokensPerReview, ExcludePaths: DefaultExcludePaths()},
		MergeReviewer:    MergeReviewer{Posture: "review-only", AutoMergeClass: []string{}},
		ProtectedPaths:   DefaultProtectedPaths(),
		IgnorePaths:      []string{},
		Agents:           []string{},
		Review:           Review{MaxDiffLines: DefaultMaxDiffLines, TimeoutSeconds: DefaultTimeoutSeconds, MaxChunks: DefaultMaxChunks, Quality: defaultReviewQuality()},
		SpecTool:         DefaultSpecTool,
		SpecPaths:        DefaultSpecPaths(DefaultSpecTool),
		Lanes:            DefaultLanes(),
		TriageLabels:     DefaultTriageLabels(),
		Intake: Intake{
			DefinitionOfReady: DefaultDefinitionOfReady(),
			CompletenessGate:  true,
			SpecContext:       "docs",
		},
		Identity:             Identity{Authoring: "dco", Proposing: "attributable"},
		Claim:                Claim{OneActivePerItem: true, MaxActivePerIdentity: 1, TTLHours: 168},
		ContributorReview:    ContributorReview{Enabled: true, Posture: "advisory"},
		Insights:             Insights{Enabled: true, ActivityLog: ".asdd-work/audit.jsonl"},
		Audit:                Audit{Sink: "none"},
		Walkthrough:          Walkthrough{Enabled: true},
		Ask:                  Ask{Enabled: true, PerUserPerHour: DefaultAskPerUserPerHour},
		ReviewOverrideOwners: []string{},
		FixturePaths:         DefaultFixturePaths(),
		VendoredPaths:        DefaultVendoredPaths(),
		Delegate:             Delegate{Timeout: DefaultDelegateTimeout, Approval: DelegateApprovalExternal},
		Context:              DefaultContext(),
		Policy:               DefaultPolicy(),
		PolicyDefaulted:      true,
	}
}
