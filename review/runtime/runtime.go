// Package runtime defines the seam between the review pipeline and whatever reviews a change:
// lensgate's own offline reviewer, a model behind an OpenAI-compatible endpoint, or an adapter
// an operator installed. A runtime gets untrusted data and fixed lens instructions and returns
// data; it never acts on the repository.
package runtime

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/modelctx"
)

// ASDD lens verdicts (asdd/review/v0.1).
const (
	VerdictOK             = "ok"
	VerdictConcerns       = "concerns"
	VerdictRequestChanges = "request-changes"
	VerdictSkipped        = "skipped"
)

// Severities, on the agent-review predicate's scale. ASDD's note, warn and block map onto
// info, medium and high (see FromASDDSeverity).
const (
	SeverityCritical = "critical"
	SeverityHigh     = "high"
	SeverityMedium   = "medium"
	SeverityLow      = "low"
	SeverityInfo     = "info"
)

// Request kinds.
const (
	KindReview = "review"
	KindTriage = "triage"
)

// Runtime reviews the lenses of one request.
type Runtime interface {
	// Name is the name a policy or the operator uses to choose the runtime.
	Name() string
	// Review returns one report per requested lens it could judge. An error is an
	// operational failure; the pipeline then records every lens of the request as pending
	// with the error as its cause. A lens missing from the result is pending too.
	Review(ctx context.Context, req *Request) (*Result, error)
}

// Bounded is implemented by a runtime whose review may take longer than the repository's
// review.timeout_seconds suggests (its operator set a longer deadline per call, or it splits a
// change into several calls): MaxReview is the longest one Review of req can take.
type Bounded interface {
	MaxReview(req *Request) time.Duration
}

// Lens is one lens to review: its name, its preset and its fixed instruction.
type Lens struct {
	Name        string
	Preset      string
	Instruction string
	// Independent asks for the lens to be judged in a separate inference that sees no other
	// lens and no other answer (the policy's independent: true).
	Independent bool
}

// Request is what a runtime gets. Everything under Subject and Diff is untrusted data.
type Request struct {
	Kind string // KindReview or KindTriage
	// WorkDir is the private directory of untrusted data files (the ASDD contract).
	WorkDir string
	Lenses  []Lens
	Subject Subject
	// Diff is the part of the change sent to this runtime (within its budget); Files is Diff
	// split into files.
	Diff  []byte
	Files []diff.File
	// Changed lists every changed file of the subject, including the ones left out of Diff.
	Changed  []Changed
	Settings Settings
	// Delegation is what the App observed for lenses delegated to another review bot (nil
	// outside the App, where no bot can be asked).
	Delegation *Delegation
	// Budget caps the model tokens of the review; nil means no cap.
	Budget Budget
	// Slots bounds the review's model calls in flight; nil means no bound (see Paced).
	Slots Slots
	// Since, when set, is the earlier reviewed head: Diff then holds only the changes since
	// it, and Changed still lists every file of the pull request as context.
	Since string
	// Chunk and Chunks number the part of a large change this request holds (1 of 1 when
	// the change fits one request; 0 when unset).
	Chunk, Chunks int
	// Context is what a model is given besides the diff: the repository's instruction files
	// (trusted, from the base branch), linked issues and the code around the changes
	// (untrusted). nil when there is none.
	Context *modelctx.Context
}

// Budget caps the tokens a review may spend on models. A runtime asks Reserve for the most a
// call can cost before making it; when it answers false the call is not made and its lenses
// are skipped with the cause. Settle replaces a reservation by what the call really cost.
type Budget interface {
	Reserve(ctx context.Context, tokens int) (ok bool, cause string)
	// Settle goes on when ctx has ended: the tokens were spent all the same.
	Settle(ctx context.Context, reserved, used int)
}

// Tokens is the token count of one model call. Estimated is true when the server reported
// none and lensgate counted the bytes instead (see EstimateTokens).
type Tokens struct {
	PromptTokens     int  `json:"promptTokens"`
	CompletionTokens int  `json:"completionTokens"`
	Estimated        bool `json:"estimated,omitempty"`
	// CachedPromptTokens is the part of PromptTokens the server read from its prefix cache, as
	// it reported it (usage.prompt_tokens_details.cached_tokens; 0 when it did not say).
	CachedPromptTokens int `json:"cachedPromptTokens,omitempty"`
}

// Total is prompt plus completion tokens.
func (u Tokens) Total() int { return u.PromptTokens + u.CompletionTokens }

// Add sums two counts; the sum is estimated when either part is.
func (u Tokens) Add(v Tokens) Tokens {
	return Tokens{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		Estimated: u.Estimated || v.Estimated, CachedPromptTokens: u.CachedPromptTokens + v.CachedPromptTokens}
}

// EstimateTokens is the count used when a server reports no usage: one token per four bytes,
// rounded up, and never zero for a non-empty text. It over-counts code and English slightly
// for the tokenizers of common models, which is the safe side for a spending cap.
func EstimateTokens(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + 3) / 4
}

// Call is one request a runtime sent to a model: which lenses it judged, what it cost, how
// long it took and, when its answer was not used, why.
type Call struct {
	Lenses []string `json:"lenses"`
	// Independent marks the separate adversarial inference.
	Independent bool   `json:"independent,omitempty"`
	Model       string `json:"model,omitempty"`
	// Format is the structured-output level the answer was asked with: json_schema,
	// json_object or none.
	Format string `json:"format,omitempty"`
	// Temperature and Seed are the sampling parameters the last request of the call sent
	// (nil when it sent none: the server refused it, or the runtime has no such setting).
	Temperature *float64      `json:"temperature,omitempty"`
	Seed        *int          `json:"seed,omitempty"`
	Attempts    int           `json:"attempts"`
	Started     time.Time     `json:"started,omitzero"`
	Duration    time.Duration `json:"duration"`
	Usage       Tokens        `json:"usage"`
	// Cause says why the answer was not used ("" when it was).
	Cause string `json:"cause,omitempty"`
}

// Subject is the untrusted description of the change or issue.
type Subject struct {
	Owner   string
	Repo    string
	Number  int
	HeadSHA string
	BaseSHA string
	Title   string
	Body    string
	Author  string
	Labels  []string
	Commits []string
}

// Changed is one changed file as the forge reports it.
type Changed struct {
	Path         string
	PreviousPath string
	Status       string
	Binary       bool
	SizeBytes    int64
	// HeadContent is the whole file at the head revision when the caller supplied it (for
	// changed CI workflows, see IsWorkflowPath), so checks can see context the diff hunks
	// leave out. nil when unknown.
	HeadContent []byte
}

// MaxHeadContentBytes bounds a file's HeadContent; a larger file is reviewed from its diff only.
const MaxHeadContentBytes = 1 << 20

// IsWorkflowPath reports whether path is a GitHub Actions workflow or composite action.
func IsWorkflowPath(path string) bool {
	lower := strings.ToLower(path)
	if strings.HasPrefix(lower, ".github/workflows/") && (strings.HasSuffix(lower, ".yml") || strings.HasSuffix(lower, ".yaml")) {
		return true
	}
	base := lower[strings.LastIndexByte(lower, '/')+1:]
	return base == "action.yml" || base == "action.yaml"
}

// Settings are the trusted repository settings a runtime may need.
type Settings struct {
	ProtectedPaths []string
	// ProtectedRequireOwner is true when the gate requires a code owner's approval of changed
	// protected paths (protected_paths_require), so notes about them say so.
	ProtectedRequireOwner bool
	// SecretsIgnore and SecretsConfig are the repository's .gitleaksignore and .gitleaks.toml
	// from its base branch (nil when absent); SecretsProblems says what of them could not be read.
	SecretsIgnore   []byte
	SecretsConfig   []byte
	SecretsProblems string
	// FixturePaths and VendoredPaths are globs of test and fixture paths and of vendored code,
	// where the builtin runtime reports secrets and disabled protections at low severity; nil
	// means the defaults of .asdd.yml, empty means none.
	FixturePaths  []string
	VendoredPaths []string
	IgnorePaths   []string
	RequireSpec   bool
	SpecPaths     []string
	TriageLabels  []string
	// Model is the reviewer model from models.reviewer ("" to use the runtime's fallback).
	Model string
	// TimeoutSeconds bounds each model call or adapter run.
	TimeoutSeconds int
	// DelegateTimeout is how long a delegated lens waits for the bot's answer (0: the
	// delegate runtime's default).
	DelegateTimeout time.Duration
	// OutcomeOnFindings says, by lens name, whether a delegated review with findings fails
	// ("fail") or passes ("pass") the lens; a lens not listed takes the default, fail.
	OutcomeOnFindings map[string]string
}

// Result is a runtime's answer.
type Result struct {
	// Model is the model that produced the result, when one did.
	Model  string
	Lenses []LensReport
	// Triage is set for triage requests.
	Triage *Triage
	// Calls lists every model call made, answered or not, in order.
	Calls []Call
}

// LensReport is one lens's verdict.
type LensReport struct {
	Lens     string
	Verdict  string // one of the Verdict* values
	Summary  string
	Findings []Finding
	// Cause explains a skipped verdict (for example, no runtime was configured).
	Cause string
}

// Finding is one reported problem.
type Finding struct {
	Rule     string
	Severity string // one of the Severity* values
	Path     string
	Line     int
	Title    string
	Message  string
	// Key distinguishes findings of the same rule in the same file for a stable id; it must
	// not depend on line numbers (for example, the offending line's text).
	Key string
	// Suggestion is optional replacement text for lines of the new file.
	Suggestion *Suggestion
}

// Suggestion is replacement text for the lines StartLine..EndLine (inclusive) of the new
// version of a finding's file.
type Suggestion struct {
	StartLine   int
	EndLine     int
	Replacement string
}

// Triage is a runtime's triage answer for an issue.
type Triage struct {
	Labels  []string
	Comment string
}

// FromASDDSeverity maps an asdd/review/v0.1 finding severity onto lensgate's scale.
func FromASDDSeverity(s string) (string, bool) {
	switch s {
	case "block":
		return SeverityHigh, true
	case "warn":
		return SeverityMedium, true
	case "note":
		return SeverityInfo, true
	}
	return "", false
}

// ValidVerdict reports whether v is an ASDD lens verdict.
func ValidVerdict(v string) bool {
	switch v {
	case VerdictOK, VerdictConcerns, VerdictRequestChanges, VerdictSkipped:
		return true
	}
	return false
}

// Registry holds the runtimes the operator enabled, and operator-defined presets that name
// one of them. A repository can only choose among these.
type Registry struct {
	runtimes map[string]Runtime
	presets  map[string]string
}

// NewRegistry returns a registry of the given runtimes.
func NewRegistry(rts ...Runtime) *Registry {
	r := &Registry{runtimes: map[string]Runtime{}, presets: map[string]string{}}
	for _, rt := range rts {
		r.runtimes[rt.Name()] = rt
	}
	return r
}

// AddPreset lets lenses with the given preset be reviewed by the named runtime.
func (r *Registry) AddPreset(preset, runtimeName string) error {
	if _, ok := r.runtimes[runtimeName]; !ok {
		return fmt.Errorf("preset %q names runtime %q, which is not enabled", preset, runtimeName)
	}
	r.presets[preset] = runtimeName
	return nil
}

// Get returns an enabled runtime by name.
func (r *Registry) Get(name string) (Runtime, bool) {
	if r == nil {
		return nil, false
	}
	rt, ok := r.runtimes[name]
	return rt, ok
}

// Preset returns the runtime name an operator-defined preset maps to.
func (r *Registry) Preset(preset string) (string, bool) {
	if r == nil {
		return "", false
	}
	n, ok := r.presets[preset]
	return n, ok
}

// Names lists the enabled runtimes in sorted order.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.runtimes))
	for n := range r.runtimes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Presets returns the operator-defined presets and the runtime each names.
func (r *Registry) Presets() map[string]string {
	out := map[string]string{}
	if r == nil {
		return out
	}
	for k, v := range r.presets {
		out[k] = v
	}
	return out
}
