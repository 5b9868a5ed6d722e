package config

// Aggregation modes of a named-lens policy.
const (
	AggregationAllRequired = "all-required" // every required lens must pass
	AggregationAnyRequired = "any-required" // one passing required lens is enough
)

// Outcome roles of a lens.
const (
	OutcomeReview   = "review"   // the lens may be required and block the gate
	OutcomeAdvisory = "advisory" // the lens only reports
)

// Publication modes of a lens: how its result is shown on the pull request.
const (
	PublicationComment  = "comment"
	PublicationInline   = "inline"
	PublicationReaction = "reaction"
	PublicationReview   = "review"
	PublicationCheck    = "check"
)

// What a delegated review with findings does to its lens (outcome_on_findings).
const (
	OnFindingsFail = "fail" // the lens fails (the default)
	OnFindingsPass = "pass" // the findings are reported and the lens passes
)

// Limits of the policy model, shared with receipts.
const (
	MaxLenses           = 32
	MaxInstructionBytes = 4096
	MaxPolicyFileBytes  = 1 << 20
)

// Presets of the default policy. A preset is a free lower-case label naming how a lens runs;
// the builtin runtime knows these three.
const (
	PresetSecurity    = "security"
	PresetCorrectness = "correctness"
	PresetTests       = "tests"
)

// Policy is the named-lens review policy: which lenses run, which of them are required, how the
// required ones aggregate into the gate, and how each lens publishes.
type Policy struct {
	Version     int    // always 1
	Aggregation string // AggregationAllRequired or AggregationAnyRequired
	// Required names the blocking lenses in the order the policy lists them. That order is
	// the order of blocking failures and blocking pending lenses in an evaluation.
	Required []string
	// Lenses in document order; that order is the plan order.
	Lenses []Lens
}

// Lens is one named review lens.
type Lens struct {
	Name        string // ^[a-z][a-z0-9-]{0,63}$
	Preset      string // same pattern as Name
	Instruction string // non-blank, at most 4096 UTF-8 bytes, no NUL
	Outcome     string // OutcomeReview or OutcomeAdvisory (default review)
	Publication string // one of the Publication* modes (default review)
	// Required is true when the lens is named in Policy.Required; only such a lens blocks.
	Required bool
	// OutcomeOnFindings is lensgate's own key (.asdd.yml only, not part of the plan): for a
	// lens answered by another review bot, whether a review with findings fails ("fail", the
	// default when empty) or passes ("pass") the lens.
	OutcomeOnFindings string
	// Independent (.asdd.yml only) has a model runtime judge the lens in its own inference,
	// apart from the other lenses, as the quality preset always is. It is how the lens runs,
	// not what the policy decides, so it is not part of the plan digest.
	Independent bool
	// Paths (.asdd.yml only) limits the lens to changed files matching one of these globs;
	// empty means every file. Part of the plan digest when set.
	Paths []string
	// PathInstructions (.asdd.yml only) add an instruction for files matching their globs.
	// Part of the plan digest when set.
	PathInstructions []PathInstruction
}

// PathInstruction is an extra lens instruction for the changed files matching Paths.
type PathInstruction struct {
	Paths       []string
	Instruction string
}

// MaxPathGlobs bounds the globs of one lens's paths and of one path instruction; MaxPathInstructions
// bounds a lens's path instructions.
const (
	MaxPathGlobs        = 64
	MaxPathInstructions = 32
)

// Lens returns the lens with the given name.
func (p Policy) Lens(name string) (Lens, bool) {
	for _, l := range p.Lenses {
		if l.Name == name {
			return l, true
		}
	}
	return Lens{}, false
}

// DefaultPolicy is the policy of a repository that configures none: a required security lens,
// a required correctness lens and an advisory tests lens, all-required.
func DefaultPolicy() Policy {
	return Policy{
		Version:     1,
		Aggregation: AggregationAllRequired,
		Required:    []string{"security", "correctness"},
		Lenses: []Lens{
			{
				Name:   "security",
				Preset: PresetSecurity,
				Instruction: "Look for changes that weaken a trust boundary: secrets in code, " +
					"injection through untrusted input, missing authorisation checks, unsafe " +
					"deserialisation and widened permissions.",
				Outcome:     OutcomeReview,
				Publication: PublicationReview,
				Required:    true,
			},
			{
				Name:   "correctness",
				Preset: PresetCorrectness,
				Instruction: "Check that the change does what it claims: logic errors, unhandled " +
					"errors, broken edge cases and incompatible changes to public behaviour.",
				Outcome:     OutcomeReview,
				Publication: PublicationInline,
				Required:    true,
			},
			{
				Name:   "tests",
				Preset: PresetTests,
				Instruction: "Note changed behaviour that no test exercises and tests that were " +
					"removed or weakened.",
				Outcome:     OutcomeAdvisory,
				Publication: PublicationComment,
				Required:    false,
			},
		},
	}
}
