package review

import (
	"time"

	"github.com/lensgate/lensgate/disclosure/severity"
	"github.com/lensgate/lensgate/review/modelctx"
	"github.com/lensgate/lensgate/review/runtime"
)

// Outcome is the closed result of one lens and of the gate.
type Outcome string

// The three closed outcomes. Pending means "not decided": an operational failure, a lens that
// was not run, or a result that could not be trusted. It never reads as passing.
const (
	OutcomePassed  Outcome = "passed"
	OutcomeFailed  Outcome = "failed"
	OutcomePending Outcome = "pending"
)

// Severity of a finding, on the scale the agent-review predicate uses.
type Severity string

// Severities from worst to mildest. High and critical findings fail their lens; medium, low and
// info findings are reported without failing it.
const (
	SeverityCritical Severity = "critical"
	SeverityHigh     Severity = "high"
	SeverityMedium   Severity = "medium"
	SeverityLow      Severity = "low"
	SeverityInfo     Severity = "info"
)

// Blocks reports whether a finding of this severity fails its lens.
func (s Severity) Blocks() bool { return s == SeverityCritical || s == SeverityHigh }

// Rank orders severities: critical is 4, info 0, anything unknown -1 (severity.Rank).
func (s Severity) Rank() int { return severity.Rank(string(s)) }

// Recommendations, in ASDD's vocabulary. lensgate recommends; it never approves or merges.
const (
	RecommendComment        = "comment"
	RecommendRequestChanges = "request-changes"
)

// Coverage statuses, as in the agent-review predicate.
const (
	CoverageComplete = "COMPLETE"
	CoveragePartial  = "PARTIAL"
	CoverageUnknown  = "UNKNOWN"
)

// Decision is the result of reviewing one pull request: what the gate says, what each lens
// found, what to publish, and the subject binding a receipt needs.
type Decision struct {
	Gate           Gate            `json:"gate"`
	Recommendation string          `json:"recommendation"`
	PlanDigest     string          `json:"planDigest"`
	Lenses         []LensResult    `json:"lenses"`
	Findings       []Finding       `json:"findings"`
	Comment        string          `json:"comment"`
	Inline         []InlineComment `json:"inline"`
	Intake         Intake          `json:"intake"`
	Coverage       Coverage        `json:"coverage"`
	Subject        SubjectContext  `json:"subject"`
	Runs           []Run           `json:"runs"`
	// Walkthrough is the account of the change shown above the review (nil when turned off);
	// Answers are the replies to the questions of Subject.Questions. Neither affects the gate.
	Walkthrough *Walkthrough     `json:"walkthrough,omitempty"`
	Answers     []QuestionAnswer `json:"answers,omitempty"`
	// Observed is what the pipeline saw of each runtime call, for the review-run observation.
	Observed *Observed `json:"-"`
	// Session is the review's runtime session: a runner in another process keeps its run in it.
	Session *runtime.Session `json:"-"`
	// State is what the next review of this pull request starts from (nil for local reviews
	// and decisions that reviewed nothing).
	State *State `json:"-"`
	// Tokens is what the review spent on models, per call.
	Tokens Tokens `json:"tokens"`
	// ModelInput says what was kept from the models: redacted secrets and withheld files.
	ModelInput ModelInput `json:"modelInput"`
	// Context is the context manifest: what the model requests were given besides the diff
	// (nil when nothing); ContextDigest is its digest, which the receipt binds.
	Context       *modelctx.Manifest `json:"context,omitempty"`
	ContextDigest string             `json:"contextDigest,omitempty"`
	// ChangedInstructions are the repository instruction files the change edits: the review
	// applied their base versions.
	ChangedInstructions []string `json:"changedInstructions,omitempty"`
	// Verification is what was withdrawn on verification or suppressed by earlier feedback:
	// never published on the pull request, shown on the details page and in the receipt.
	Verification Verification `json:"verification"`
}

// TokenCount is a number of model tokens. Estimated is true when some part of it is lensgate's
// estimate because the server reported no usage.
type TokenCount struct {
	Prompt     int  `json:"prompt"`
	Completion int  `json:"completion"`
	Total      int  `json:"total"`
	Estimated  bool `json:"estimated"`
	// Earlier marks tokens spent by an earlier review of the same head whose result this one
	// reuses: reported, not spent again.
	Earlier bool `json:"earlier,omitempty"`
	// CachedPrompt is the part of Prompt the model servers said they read from their prefix
	// cache (usage.prompt_tokens_details.cached_tokens; servers that do not say count 0).
	CachedPrompt int `json:"cachedPrompt,omitempty"`
}

func (t *TokenCount) add(u runtime.Tokens) {
	t.Prompt += u.PromptTokens
	t.Completion += u.CompletionTokens
	t.CachedPrompt += u.CachedPromptTokens
	t.Total = t.Prompt + t.Completion
	t.Estimated = t.Estimated || u.Estimated
}

// Tokens is the model spend of a review: the total and every call.
type Tokens struct {
	TokenCount
	Calls []ModelCall `json:"calls"`
}

// ModelCall is one model call of a review and the runtime that made it.
type ModelCall struct {
	Runtime string `json:"runtime"`
	runtime.Call
}

// ModelInput is what the pipeline kept from model runtimes: secret values replaced by a
// placeholder naming their kind, and files not sent at all (models.exclude_paths).
type ModelInput struct {
	// Sent is true when some model or adapter runtime was given the change.
	Sent bool `json:"sent"`
	// RedactedValues counts the secret values replaced, by kind.
	RedactedValues int            `json:"redactedValues"`
	RedactedKinds  map[string]int `json:"redactedKinds,omitempty"`
	// WithheldFiles are the changed files matching models.exclude_paths.
	WithheldFiles []string `json:"withheldFiles"`
}

// Gate is the aggregated state of the required lenses, with the lens names behind it.
type Gate struct {
	State            Outcome  `json:"state"`
	Reason           string   `json:"reason"`
	BlockingFailures []string `json:"blockingFailures"`
	BlockingPending  []string `json:"blockingPending"`
	AdvisoryFailures []string `json:"advisoryFailures"`
	AdvisoryPending  []string `json:"advisoryPending"`
}

// Passed reports whether the gate passed.
func (g Gate) Passed() bool { return g.State == OutcomePassed }

// LensResult is the closed outcome of one named lens of the policy.
type LensResult struct {
	Name        string  `json:"name"`
	Required    bool    `json:"required"`
	Publication string  `json:"publication"`
	Outcome     Outcome `json:"outcome"`
	Summary     string  `json:"summary"`
	// Runtime is the runtime that reviewed the lens.
	Runtime string `json:"runtime"`
	// Cause is the operational cause of a pending outcome ("" otherwise).
	Cause    string    `json:"cause,omitempty"`
	Findings []Finding `json:"findings"`
	// Tokens is this lens's share of the model calls that judged it (a call that judged
	// several lenses is shared evenly among them); nil when no model judged it.
	Tokens *TokenCount `json:"tokens,omitempty"`
}

// Finding is one problem a lens reported.
type Finding struct {
	// ID is stable across re-runs of the same change: it does not depend on line numbers.
	ID       string   `json:"id"`
	Lens     string   `json:"lens"`
	Rule     string   `json:"rule,omitempty"`
	Severity Severity `json:"severity"`
	Path     string   `json:"path,omitempty"`
	Line     int      `json:"line,omitempty"`
	Title    string   `json:"title"`
	Body     string   `json:"body,omitempty"`
	// Disposition is open ("" reads as open), fixed or dismissed.
	Disposition string `json:"disposition,omitempty"`
	// FixCommit is the full SHA of the head at which a fixed finding was gone.
	FixCommit string `json:"fixCommit,omitempty"`
	// Reason is why a dismissed finding was dismissed; DismissedBy who did.
	Reason      string `json:"reason,omitempty"`
	DismissedBy string `json:"dismissedBy,omitempty"`
	// Head is the head at which the finding was last reported; a finding carried forward from
	// an earlier review keeps the head it was found at.
	Head string `json:"head,omitempty"`
	// Suggestion is replacement text the lens proposes for lines of the new file.
	Suggestion *Suggestion `json:"suggestion,omitempty"`
}

// Open reports whether the finding is neither fixed nor dismissed.
func (f Finding) Open() bool { return f.Disposition == "" || f.Disposition == DispositionOpen }

// Suggestion is replacement text for the lines StartLine..EndLine (inclusive) of the new file.
type Suggestion struct {
	StartLine   int    `json:"startLine"`
	EndLine     int    `json:"endLine"`
	Replacement string `json:"replacement"`
}

// InlineComment is a finding placed on a line of the diff. Fingerprint lets a publisher skip
// comments it already posted.
type InlineComment struct {
	// Lens and Severity let a publisher honour the lens's publication mode.
	Lens        string   `json:"lens"`
	Severity    Severity `json:"severity"`
	Path        string   `json:"path"`
	Line        int      `json:"line"`
	Side        string   `json:"side"` // "RIGHT" (head) or "LEFT" (base)
	Body        string   `json:"body"`
	Fingerprint string   `json:"fingerprint"`
	// Suggestion, when set, is offered as a suggested change where the diff allows it.
	Suggestion *Suggestion `json:"suggestion,omitempty"`
}

// Intake is the result of the spend gate that runs before any model is called.
type Intake struct {
	Passed   bool            `json:"passed"`
	Messages []IntakeMessage `json:"messages"`
}

// IntakeMessage is one intake check, with a message for the author when it did not pass.
type IntakeMessage struct {
	Check   string `json:"check"` // diff-size, spec, lane, open-prs, disclosure
	Passed  bool   `json:"passed"`
	Message string `json:"message"`
}

// Coverage says what part of the change was reviewed; every file left out is a named gap.
type Coverage struct {
	Status        string `json:"status"` // CoverageComplete, CoveragePartial or CoverageUnknown
	FilesTotal    int    `json:"filesTotal"`
	FilesReviewed int    `json:"filesReviewed"`
	Gaps          []Gap  `json:"gaps"`
	// Scope says what the model lenses were sent: "full" (the whole pull request) or
	// "incremental" (the changes since Since), with the reason for a full review.
	Scope       string `json:"scope,omitempty"`
	Since       string `json:"since,omitempty"`
	ScopeReason string `json:"scopeReason,omitempty"`
	// Heads says at which head the model lenses reviewed each changed file: files untouched
	// since an earlier review keep the head they were reviewed at.
	Heads []HeadFiles `json:"heads,omitempty"`
	// Chunks is the number of model calls per lens a large change was split into (0 or 1:
	// one call).
	Chunks int `json:"chunks,omitempty"`
}

// HeadFiles is the set of changed files whose model review happened at Head. Paths are
// listed for every head but the reviewed one.
type HeadFiles struct {
	Head  string   `json:"head"`
	Files int      `json:"files"`
	Paths []string `json:"paths,omitempty"`
}

// Gap is one file (or other unit) that was not reviewed, and why.
type Gap struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// SubjectContext binds a decision to exactly what was reviewed.
type SubjectContext struct {
	Kind             string `json:"kind"`
	Owner            string `json:"owner,omitempty"`
	Repo             string `json:"repo,omitempty"`
	Number           int    `json:"number,omitempty"`
	RepositoryNodeID string `json:"repositoryNodeId,omitempty"`
	NodeID           string `json:"nodeId,omitempty"`
	HeadSHA          string `json:"headSha"`
	BaseSHA          string `json:"baseSha"`
	// ReviewedDiffDigest is the lowercase hex SHA-256 of the exact diff bytes reviewed.
	ReviewedDiffDigest string `json:"reviewedDiffDigest"`
	// BodyCoreDigest is the digest of the body with its disclosure block replaced by the
	// token; empty until the disclosure package computes it.
	BodyCoreDigest string `json:"bodyCoreDigest,omitempty"`
}

// Run records one runtime invocation for the receipt.
type Run struct {
	Lens     string    `json:"lens"`
	Runtime  string    `json:"runtime"`
	Model    string    `json:"model,omitempty"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	Outcome  Outcome   `json:"outcome"`
	Cause    string    `json:"cause,omitempty"`
	// ContextDigest is the digest of the review's context manifest when this lens's model
	// requests were given context ("" otherwise).
	ContextDigest string `json:"contextDigest,omitempty"`
}

// TriageDecision is the result of triaging an issue: labels limited to the configured triage
// labels and a short comment.
type TriageDecision struct {
	Labels  []string `json:"labels"`
	Comment string   `json:"comment"`
	Runtime string   `json:"runtime"`
	// Cause is set when the runtime failed; Labels is then empty (fail closed).
	Cause string `json:"cause,omitempty"`
	Runs  []Run  `json:"runs"`
}

// ReportedCoverage is the coverage status a reader is told, in the comment, the check run and
// the receipt alike: files can all have been read while a lens has no outcome (its model call
// failed, or the server cut its prompt), and then the review covered less than it planned.
// pending counts those lenses.
func (d *Decision) ReportedCoverage() (status string, pending int) {
	for _, l := range d.Lenses {
		if l.Outcome == OutcomePending {
			pending++
		}
	}
	status = d.Coverage.Status
	if status == CoverageComplete && pending > 0 {
		status = CoveragePartial
	}
	return status, pending
}
