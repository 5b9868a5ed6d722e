package disclosure

import "strings"

// Version is a predicate version of the agent-review format.
type Version string

// The three predicate versions.
const (
	V01 Version = "v0.1"
	V02 Version = "v0.2"
	V03 Version = "v0.3"
)

// Wire strings of the statement.
const (
	StatementType    = "https://in-toto.io/Statement/v1"
	predicateTypeFmt = "https://b7n0de.com/proofbundle/predicates/agent-review/"
	SchemaVersion    = "0.1.0"
	TestResultType   = "https://in-toto.io/attestation/test-result/v0.1"
)

// PredicateType returns the predicateType URI of v.
func (v Version) PredicateType() string { return predicateTypeFmt + string(v) }

// versionOfType maps a predicateType back to its version.
func versionOfType(t string) (Version, bool) {
	rest, ok := strings.CutPrefix(t, predicateTypeFmt)
	if !ok {
		return "", false
	}
	for _, v := range []Version{V01, V02, V03} {
		if rest == string(v) {
			return v, true
		}
	}
	return "", false
}

// Reason codes (fatal).
const (
	CodeStatementNotObject          = "STATEMENT_NOT_OBJECT"
	CodeStatementTypeAbsent         = "STATEMENT_TYPE_ABSENT"
	CodeStatementTypeMismatch       = "STATEMENT_TYPE_MISMATCH"
	CodeSubjectAbsentField          = "SUBJECT_ABSENT_FIELD"
	CodeSubjectNotArray             = "SUBJECT_NOT_ARRAY"
	CodeSubjectAbsent               = "SUBJECT_ABSENT"
	CodeSubjectCardinality          = "SUBJECT_CARDINALITY"
	CodeSubjectEntryNotObject       = "SUBJECT_ENTRY_NOT_OBJECT"
	CodeSubjectDigestAbsent         = "SUBJECT_DIGEST_ABSENT"
	CodeSubjectDigestNotObject      = "SUBJECT_DIGEST_NOT_OBJECT"
	CodeSubjectDigestEmpty          = "SUBJECT_DIGEST_EMPTY"
	CodeSubjectDigestSHA256Absent   = "SUBJECT_DIGEST_SHA256_ABSENT"
	CodeSubjectDigestExtra          = "SUBJECT_DIGEST_EXTRA_ALGORITHMS"
	CodeSubjectDigestForm           = "SUBJECT_DIGEST_FORM"
	CodeSubjectNameAbsent           = "SUBJECT_NAME_ABSENT"
	CodeSubjectNameNull             = "SUBJECT_NAME_NULL"
	CodeSubjectNameNotString        = "SUBJECT_NAME_NOT_STRING"
	CodeSubjectNameEmpty            = "SUBJECT_NAME_EMPTY"
	CodeSubjectNameUnderivable      = "SUBJECT_NAME_UNDERIVABLE"
	CodeSubjectNameDisagrees        = "SUBJECT_NAME_DISAGREES"
	CodeUnknownStatementField       = "UNKNOWN_STATEMENT_FIELD"
	CodeSubjectContextNotObject     = "SUBJECTCONTEXT_SECTION_NOT_OBJECT"
	CodeDeclarationNotObject        = "DECLARATION_SECTION_NOT_OBJECT"
	CodeAuthoringEntryNotObject     = "DECLARATION_AUTHORING_ENTRY_SECTION_NOT_OBJECT"
	CodeReviewRunsEntryNotObject    = "DECLARATION_REVIEWRUNS_ENTRY_SECTION_NOT_OBJECT"
	CodeFindingsEntryNotObject      = "DECLARATION_FINDINGS_ENTRY_SECTION_NOT_OBJECT"
	CodeFindingsRootMalformed       = "DECLARATION_FINDINGS_ROOT_MALFORMED"
	CodeFindingsRootMissing         = "DECLARATION_FINDINGS_ROOT_MISSING"
	CodeCoverageNotObject           = "COVERAGE_SECTION_NOT_OBJECT"
	CodeCoverageUnderExpectation    = "COVERAGE_COMPLETE_UNDER_EXPECTATION"
	CodeCoverageOverNothing         = "COVERAGE_COMPLETE_OVER_NOTHING"
	CodeCoverageWithGaps            = "COVERAGE_COMPLETE_WITH_GAPS"
	CodeCap1Shape                   = "COVERAGE_CAP1_SHAPE"
	CodeCap1SilentRemainder         = "COVERAGE_CAP1_SILENT_REMAINDER"
	CodeCap1DispositionNotClosed    = "COVERAGE_CAP1_DISPOSITION_NOT_CLOSED"
	CodeCap1WithheldWithoutDigest   = "COVERAGE_CAP1_WITHHELD_WITHOUT_DIGEST"
	CodeCap1BasisMissing            = "COVERAGE_CAP1_BASIS_MISSING"
	CodeCap1CountsMalformed         = "COVERAGE_CAP1_COUNTS_MALFORMED"
	CodeCap1AbsenceUnscoped         = "COVERAGE_CAP1_ABSENCE_UNSCOPED"
	CodeCap1IncompleteClaimedClean  = "COVERAGE_CAP1_INCOMPLETE_CLAIMED_CLEAN"
	CodeCap1SupportsMissing         = "COVERAGE_CAP1_SUPPORTS_MISSING"
	CodeCap1StatusContradicts       = "COVERAGE_CAP1_STATUS_CONTRADICTS_STRATA"
	CodeTimesNotObject              = "TIMES_SECTION_NOT_OBJECT"
	CodeSupersessionNotObject       = "SUPERSESSION_SECTION_NOT_OBJECT"
	CodeFixCommitNotFullSHA         = "FIXCOMMIT_NOT_FULL_SHA"
	CodeVerifierBlockInvalid        = "PRODUCER_VERIFIER_BLOCK_INVALID"
	CodeUnknownPredicateVersion     = "UNKNOWN_PREDICATE_VERSION"
	CodeTimeClaimsConflict          = "TIME_CLAIMS_CONFLICT"
	CodePolicyNotEvaluable          = "POLICY_NOT_EVALUABLE"
	CodeStatementNotCanonicalizable = "STATEMENT_NOT_CANONICALIZABLE"
	CodeInternalError               = "internal_error"
	CodeEnvelopeUnreadable          = "AGENT_REVIEW_ENVELOPE_UNREADABLE"
	CodePredicateTypeUnknown        = "AGENT_REVIEW_PREDICATE_TYPE_UNKNOWN"
)

// Advisory codes (never make ok false).
const (
	AdvisoryLegacyObservedAt   = "LEGACY_SELF_DECLARED_OBSERVED_AT"
	AdvisoryPolicyNotEvaluated = "POLICY_NOT_EVALUATED"
	AdvisoryLegacyV01          = "AGENT_REVIEW_LEGACY_V01"
	AdvisoryArgumentDropped    = "ARGUMENT_NOT_APPLICABLE_TO_VERSION"
	AdvisoryCoverageLegacy     = "COVERAGE_LEGACY_FIELDS"
)

// Limitation codes, derived from the predicate and never taken from the signed list.
const (
	LimitIdentityUnbound       = "IDENTITY_UNBOUND"
	LimitTimeSelfDeclared      = "TIME_SELF_DECLARED"
	LimitCurrentnessUnknown    = "CURRENTNESS_UNKNOWN"
	LimitCoveragePartial       = "COVERAGE_PARTIAL"
	LimitNotQualityAttestation = "NOT_QUALITY_ATTESTATION"
)

var limitationCodeSet = map[string]bool{
	LimitIdentityUnbound: true, LimitTimeSelfDeclared: true, LimitCurrentnessUnknown: true,
	LimitCoveragePartial: true, LimitNotQualityAttestation: true,
}

// Assurance rungs, weakest first. Only SelfDeclared can be emitted or accepted.
const (
	SelfDeclared           = "selfDeclared"
	RunnerObserved         = "runnerObserved"
	PlatformAttested       = "platformAttested"
	IndependentlyWitnessed = "independentlyWitnessed"
)

var rungs = []string{SelfDeclared, RunnerObserved, PlatformAttested, IndependentlyWitnessed}

// Time axis states.
const (
	TimeAbsent             = "ABSENT"
	TimeSelfDeclared       = "SELF_DECLARED"
	TimeRunnerObserved     = "RUNNER_OBSERVED"
	TimePlatformAttested   = "PLATFORM_ATTESTED"
	TimeExternallyAnchored = "EXTERNALLY_ANCHORED"
	TimeConflict           = "CONFLICT"
	TimeNotEvaluated       = "NOT_EVALUATED"
)

// Match states of the subject expectation and of the visible-block checks.
const (
	MatchNotEvaluated    = "NOT_EVALUATED"
	MatchAbsentInReceipt = "ABSENT_IN_RECEIPT"
	MatchNotMeasurable   = "NOT_MEASURABLE"
	MatchMatch           = "MATCH"
	MatchMismatch        = "MISMATCH"
)

// Policy decisions.
const (
	DecisionAccept               = "accept"
	DecisionReject               = "reject"
	DecisionInsufficientEvidence = "insufficient_evidence"
)

// Currentness is the only currentness an offline verifier can report.
const CurrentnessUnknown = "CURRENTNESS_UNKNOWN"

// Automation blockers.
const (
	BlockerCryptoNotOK           = "CRYPTO_NOT_OK"
	BlockerStructureNotOK        = "STRUCTURE_NOT_OK"
	BlockerPolicyNotEvaluated    = "POLICY_NOT_EVALUATED"
	BlockerPolicyFailed          = "POLICY_FAILED"
	BlockerReferencesNotResolved = "REFERENCES_NOT_RESOLVED"
	BlockerReceiptNotOK          = "RECEIPT_NOT_OK"
)
