package disclosure

// Report is the verifier's result. Every axis is reported on its own; OK combines them by the
// format's formula but never replaces them. Field names follow the reference verifier so that
// results can be compared across implementations. A nil pointer is JSON null: "not evaluated".
type Report struct {
	OK                           bool     `json:"ok"`
	StructureOK                  *bool    `json:"structure_ok"`
	CryptoOK                     *bool    `json:"crypto_ok"`
	PredicateTypeOK              *bool    `json:"predicate_type_ok"`
	StatementShapeOK             *bool    `json:"statement_shape_ok"`
	ReasonCode                   *string  `json:"reason_code"`
	ReasonCodes                  []string `json:"reason_codes"`
	AdvisoryCodes                []string `json:"advisory_codes"`
	TimeSemantics                *string  `json:"time_semantics"`
	ObservedTimeAssurance        *string  `json:"observed_time_assurance"`
	SubjectBindingOK             *bool    `json:"subject_binding_ok"`
	SubjectExpectation           string   `json:"subject_expectation"`
	InternalSubjectConsistencyOK *bool    `json:"internal_subject_consistency_ok"`
	ExpectedSubjectMatch         string   `json:"expected_subject_match"`
	InternalConsistencyOK        *bool    `json:"internal_consistency_ok"`
	BodyCoreDigestMatch          string   `json:"body_core_digest_match"`
	DisclosureCoreDigestMatch    string   `json:"disclosure_core_digest_match"`
	FindingsRootOK               *bool    `json:"findings_root_ok"`
	AssuranceOK                  *bool    `json:"assurance_ok"`
	Currentness                  string   `json:"currentness"`

	// v0.2 and v0.3 only (empty or nil on v0.1 results).
	EventTimeStatus       string               `json:"event_time_status,omitempty"`
	ObservationTimeStatus string               `json:"observation_time_status,omitempty"`
	SignatureTimeStatus   string               `json:"signature_time_status,omitempty"`
	ExternalTimeStatus    string               `json:"external_time_status,omitempty"`
	TimeConsistencyOK     *bool                `json:"time_consistency_ok,omitempty"`
	PolicyDecision        *string              `json:"policy_decision"`
	TimePolicyDecision    *string              `json:"time_policy_decision,omitempty"`
	PolicyOK              *bool                `json:"policy_ok,omitempty"`
	PolicyName            *string              `json:"policy_name,omitempty"`
	PolicyDigest          *string              `json:"policy_digest,omitempty"`
	PolicyReason          *PolicyReason        `json:"policy_reason,omitempty"`
	VerifierBlock         *VerifierBlockReport `json:"verifier_block,omitempty"`

	// Set by the dispatcher (Verify).
	PredicateVersionStatus string `json:"predicateVersionStatus,omitempty"`

	Automation *Automation `json:"automation"`
	Warnings   []string    `json:"warnings"`
	Errors     []string    `json:"errors"`

	// lensgate additions, informational.
	PredicateType         string `json:"predicate_type,omitempty"`
	ReceiptDigest         string `json:"receipt_digest,omitempty"`
	SubjectDigest         string `json:"subject_digest,omitempty"`
	SubjectName           string `json:"subject_name,omitempty"`
	VisibleBlockRendering string `json:"visible_block_rendering,omitempty"`

	version Version
}

// Automation summarizes whether a machine may act on the receipt, and why not.
type Automation struct {
	CryptoValid        bool     `json:"cryptoValid"`
	StructureValid     bool     `json:"structureValid"`
	PolicyAuthorized   *bool    `json:"policyAuthorized"`
	ReferencesResolved bool     `json:"referencesResolved"`
	SafeForAutomation  bool     `json:"safeForAutomation"`
	AutomationBlockers []string `json:"automationBlockers"`
}

// Predicate version statuses reported by the dispatcher.
const (
	VersionCurrent = "current"
	VersionLegacy  = "legacy"
	VersionUnknown = "unknown"
)

func ptr[T any](v T) *T { return &v }

func newReport(v Version) *Report {
	r := &Report{
		ReasonCodes:               []string{},
		AdvisoryCodes:             []string{},
		SubjectExpectation:        "not_supplied",
		ExpectedSubjectMatch:      MatchNotEvaluated,
		BodyCoreDigestMatch:       MatchNotEvaluated,
		DisclosureCoreDigestMatch: MatchNotEvaluated,
		Currentness:               CurrentnessUnknown,
		Warnings:                  []string{},
		Errors:                    []string{},
		version:                   v,
	}
	if v != V01 {
		r.EventTimeStatus = TimeNotEvaluated
		r.ObservationTimeStatus = TimeNotEvaluated
		r.SignatureTimeStatus = TimeNotEvaluated
		r.ExternalTimeStatus = TimeNotEvaluated
	}
	return r
}

func (r *Report) reason(code string) {
	for _, c := range r.ReasonCodes {
		if c == code {
			return
		}
	}
	r.ReasonCodes = append(r.ReasonCodes, code)
}

func (r *Report) advise(code string) {
	for _, c := range r.AdvisoryCodes {
		if c == code {
			return
		}
	}
	r.AdvisoryCodes = append(r.AdvisoryCodes, code)
}

func (r *Report) finish() {
	if len(r.ReasonCodes) > 0 {
		r.ReasonCode = ptr(r.ReasonCodes[0])
	} else {
		r.ReasonCode = nil
	}
}

func isTrue(b *bool) bool  { return b != nil && *b }
func isFalse(b *bool) bool { return b != nil && !*b }
func okOrNil(b *bool) bool { return b == nil || *b }
func notBad(m string) bool { return m != MatchMismatch && m != MatchNotMeasurable }
func strOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// computeAutomation fills the automation summary; policyApplies is false on fail-closed paths
// and for v0.1.
func (r *Report) computeAutomation(policyApplies bool) {
	a := &Automation{CryptoValid: isTrue(r.CryptoOK), StructureValid: isTrue(r.StructureOK), AutomationBlockers: []string{}}
	if !a.CryptoValid {
		a.AutomationBlockers = append(a.AutomationBlockers, BlockerCryptoNotOK)
	}
	if !a.StructureValid {
		a.AutomationBlockers = append(a.AutomationBlockers, BlockerStructureNotOK)
	}
	if policyApplies {
		a.PolicyAuthorized = ptr(isTrue(r.PolicyOK))
		if r.PolicyOK == nil {
			a.AutomationBlockers = append(a.AutomationBlockers, BlockerPolicyNotEvaluated)
		} else if !*r.PolicyOK {
			a.AutomationBlockers = append(a.AutomationBlockers, BlockerPolicyFailed)
		}
	}
	a.ReferencesResolved = okOrNil(r.InternalSubjectConsistencyOK) && okOrNil(r.SubjectBindingOK) &&
		okOrNil(r.FindingsRootOK) && okOrNil(r.AssuranceOK)
	if !a.ReferencesResolved {
		a.AutomationBlockers = append(a.AutomationBlockers, BlockerReferencesNotResolved)
	}
	if !r.OK {
		a.AutomationBlockers = append(a.AutomationBlockers, BlockerReceiptNotOK)
	}
	a.SafeForAutomation = len(a.AutomationBlockers) == 0
	r.Automation = a
}
