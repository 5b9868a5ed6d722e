package details

import "strings"

// explanations say in plain words what each code of the receipt verifier means, in the words of
// docs/receipts.md. Every code disclosure can emit has one (TestEveryVerifierCodeIsExplained
// reads disclosure's constants to make sure); a code without one is shown bare.
var explanations = map[string]string{
	// Reason codes: each makes the receipt not ok.
	"STATEMENT_NOT_OBJECT":                            "The signed payload is not a JSON object, so it is not an in-toto statement.",
	"STATEMENT_TYPE_ABSENT":                           "The statement has no _type field.",
	"STATEMENT_TYPE_MISMATCH":                         "The statement's _type is not in-toto Statement v1.",
	"SUBJECT_ABSENT_FIELD":                            "The statement has no subject field.",
	"SUBJECT_NOT_ARRAY":                               "The statement's subject is not a list.",
	"SUBJECT_ABSENT":                                  "The statement names no subject.",
	"SUBJECT_CARDINALITY":                             "The statement names more than one subject; a receipt is about exactly one.",
	"SUBJECT_ENTRY_NOT_OBJECT":                        "The subject entry is not a JSON object.",
	"SUBJECT_DIGEST_ABSENT":                           "The subject has no digest.",
	"SUBJECT_DIGEST_NOT_OBJECT":                       "The subject's digest is not a JSON object.",
	"SUBJECT_DIGEST_EMPTY":                            "The subject's digest is empty.",
	"SUBJECT_DIGEST_SHA256_ABSENT":                    "The subject's digest has no sha256 value.",
	"SUBJECT_DIGEST_EXTRA_ALGORITHMS":                 "The subject's digest names algorithms besides sha256.",
	"SUBJECT_DIGEST_FORM":                             "The subject's sha256 is not 64 lower-case hex characters.",
	"SUBJECT_NAME_ABSENT":                             "The subject has no name.",
	"SUBJECT_NAME_NULL":                               "The subject's name is null.",
	"SUBJECT_NAME_NOT_STRING":                         "The subject's name is not a string.",
	"SUBJECT_NAME_EMPTY":                              "The subject's name is empty.",
	"SUBJECT_NAME_UNDERIVABLE":                        "No subject name can be derived from the subject context.",
	"SUBJECT_NAME_DISAGREES":                          "The subject's name is not the one the subject context gives.",
	"UNKNOWN_STATEMENT_FIELD":                         "The statement carries a field the format does not know.",
	"SUBJECTCONTEXT_SECTION_NOT_OBJECT":               "The predicate's subject context is not a JSON object.",
	"DECLARATION_SECTION_NOT_OBJECT":                  "The predicate's declaration is not a JSON object.",
	"DECLARATION_AUTHORING_ENTRY_SECTION_NOT_OBJECT":  "An authoring entry of the declaration is not a JSON object.",
	"DECLARATION_REVIEWRUNS_ENTRY_SECTION_NOT_OBJECT": "A review-run entry of the declaration is not a JSON object.",
	"DECLARATION_FINDINGS_ENTRY_SECTION_NOT_OBJECT":   "A finding of the declaration is not a JSON object.",
	"DECLARATION_FINDINGS_ROOT_MALFORMED":             "The findings root is not a well-formed digest.",
	"DECLARATION_FINDINGS_ROOT_MISSING":               "Findings are listed but no findings root covers them.",
	"COVERAGE_SECTION_NOT_OBJECT":                     "The coverage section is not a JSON object.",
	"COVERAGE_COMPLETE_UNDER_EXPECTATION":             "Coverage claims COMPLETE but fewer items were reviewed than expected.",
	"COVERAGE_COMPLETE_OVER_NOTHING":                  "Coverage claims COMPLETE over nothing at all.",
	"COVERAGE_COMPLETE_WITH_GAPS":                     "Coverage claims COMPLETE yet names known gaps.",
	"COVERAGE_CAP1_SHAPE":                             "The CAP-1 coverage strata do not have the required shape.",
	"COVERAGE_CAP1_SILENT_REMAINDER":                  "Part of the change is in no coverage stratum: it is neither reviewed nor named as a gap.",
	"COVERAGE_CAP1_DISPOSITION_NOT_CLOSED":            "A coverage stratum has a disposition outside the closed list.",
	"COVERAGE_CAP1_WITHHELD_WITHOUT_DIGEST":           "A stratum is withheld without the digest that would bind what was withheld.",
	"COVERAGE_CAP1_BASIS_MISSING":                     "A coverage stratum does not say on what basis it was counted.",
	"COVERAGE_CAP1_COUNTS_MALFORMED":                  "The coverage counts are not well-formed numbers, or do not add up.",
	"COVERAGE_CAP1_ABSENCE_UNSCOPED":                  "A claim that something is absent does not say where it was looked for.",
	"COVERAGE_CAP1_INCOMPLETE_CLAIMED_CLEAN":          "Incomplete coverage is presented as a clean result.",
	"COVERAGE_CAP1_SUPPORTS_MISSING":                  "A coverage claim does not name what supports it.",
	"COVERAGE_CAP1_STATUS_CONTRADICTS_STRATA":         "The coverage status contradicts its own strata.",
	"TIMES_SECTION_NOT_OBJECT":                        "The times section is not a JSON object.",
	"SUPERSESSION_SECTION_NOT_OBJECT":                 "The supersession section is not a JSON object.",
	"FIXCOMMIT_NOT_FULL_SHA":                          "A finding's fix commit is not a full commit hash.",
	"PRODUCER_VERIFIER_BLOCK_INVALID":                 "The producer's verifier block does not follow the v0.3 rules.",
	"UNKNOWN_PREDICATE_VERSION":                       "The predicate version is not one this verifier knows.",
	"TIME_CLAIMS_CONFLICT":                            "Two time claims for the same event name different times.",
	"POLICY_NOT_EVALUABLE":                            "The relying-party policy could not be applied to this predicate.",
	"STATEMENT_NOT_CANONICALIZABLE":                   "The payload is not exactly its own RFC 8785 form, so it was not signed as the format requires.",
	"internal_error":                                  "The verifier failed on this input; the receipt is treated as not ok.",
	"AGENT_REVIEW_ENVELOPE_UNREADABLE":                "The envelope or its payload could not be read.",
	"AGENT_REVIEW_PREDICATE_TYPE_UNKNOWN":             "The predicate type is not an agent-review version this verifier knows.",

	// Advisory codes: they never make a receipt fail.
	"LEGACY_SELF_DECLARED_OBSERVED_AT":   "A legacy receipt carries a self-declared observation time; it is read, not trusted.",
	"POLICY_NOT_EVALUATED":               "No policy decided.",
	"AGENT_REVIEW_LEGACY_V01":            "A v0.1 receipt was read (the legacy version).",
	"ARGUMENT_NOT_APPLICABLE_TO_VERSION": "An input of the check does not apply to this receipt's version and was left out.",
	"COVERAGE_LEGACY_FIELDS":             "The coverage uses the legacy counters rather than CAP-1 strata.",

	// Limitation codes, derived from the predicate.
	"IDENTITY_UNBOUND":        "Nothing binds the named reviewer to a verified identity: the signature proves only that the key holder said this.",
	"TIME_SELF_DECLARED":      "The review's times are the producer's own claim; a self-declared time never satisfies a time policy.",
	"CURRENTNESS_UNKNOWN":     "An offline check cannot know whether a newer push or receipt exists.",
	"COVERAGE_PARTIAL":        "Not everything in the change was reviewed; the gaps are listed.",
	"NOT_QUALITY_ATTESTATION": "The receipt says what was reviewed and found, not that the review was good.",

	// Assurance rungs, weakest first.
	"selfDeclared":           "Self-declared: the producer says so; nothing independent witnessed it.",
	"runnerObserved":         "Observed by the runner that ran the review.",
	"platformAttested":       "Attested by the platform the review ran on.",
	"independentlyWitnessed": "Witnessed by an independent party.",

	// Time axis states.
	"ABSENT":              "No claim of this time was made.",
	"SELF_DECLARED":       "The producer states this time itself; it is not evidence.",
	"RUNNER_OBSERVED":     "The runner observed this time.",
	"PLATFORM_ATTESTED":   "The platform attests this time.",
	"EXTERNALLY_ANCHORED": "An external time-stamping service anchors this time.",
	"CONFLICT":            "The claims of this time contradict each other.",
	"NOT_EVALUATED":       "This check was not made: its input was not given, or could not be read.",
	"LEGACY_V0_1":         "Time claims are read with the legacy v0.1 meaning.",
	"V0_2":                "Time claims are read with the v0.2 meaning: each time is a separate axis.",

	// Match states.
	"ABSENT_IN_RECEIPT": "The receipt carries no value to compare.",
	"NOT_MEASURABLE":    "The body has no single unambiguous disclosure block, so there is nothing to measure.",
	"MATCH":             "The value computed here is the one the receipt signed.",
	"MISMATCH":          "The value computed here differs from the one the receipt signed: the text was edited after the review, or belongs to another receipt.",

	// Policy decisions.
	"accept":                "The relying-party policy accepts the receipt.",
	"reject":                "The policy blocks one of the derived limitation codes, or requires a coverage the receipt lacks.",
	"insufficient_evidence": "The receipt does not give the policy enough to decide.",

	// Predicate version status.
	"current": "The receipt uses a current predicate version.",
	"legacy":  "The receipt uses the legacy v0.1 predicate.",
	"unknown": "The predicate version could not be determined.",

	// The runner_observation axis and the reason codes of its MISMATCH (docs/review-run.md).
	"OBSERVATION_MALFORMED":                "The runner's observation is not a well-formed observation statement.",
	"OBSERVATION_SIGNATURE_INVALID":        "The observation's signature does not verify under a published witness key.",
	"OBSERVATION_WRONG_WITNESS_KEY":        "The observation is signed with the receipt key: a statement by the receipt's own signer witnesses nothing.",
	"OBSERVATION_RECEIPT_UNREADABLE":       "The receipt the observation is checked against could not be read.",
	"OBSERVATION_SUBJECT_DIFFERS":          "The observation is about another subject than the receipt.",
	"OBSERVATION_ENVELOPE_DIGEST_DIFFERS":  "The observation names another receipt than the one beside it.",
	"OBSERVATION_PLAN_DIGEST_DIFFERS":      "The runner ran another review plan than the receipt names.",
	"OBSERVATION_FINDINGS_ROOT_DIFFERS":    "The findings the runner derived are not the ones the receipt lists.",
	"OBSERVATION_TIME_OUTSIDE_WINDOW":      "The receipt's review time lies outside the window the runner observed.",
	"OBSERVATION_RUNTIME_IDENTITY_DIFFERS": "A runtime call the runner observed does not show the runtime identity expected.",

	// Automation blockers.
	"CRYPTO_NOT_OK":           "The signature did not verify.",
	"STRUCTURE_NOT_OK":        "The statement or predicate breaks a rule of its version.",
	"POLICY_FAILED":           "The relying-party policy did not accept the receipt.",
	"REFERENCES_NOT_RESOLVED": "Receipts this one refers to could not be resolved.",
	"RECEIPT_NOT_OK":          "The receipt is not ok.",
}

// explain returns the plain-language meaning of a verifier code, or "" when there is none.
func explain(code string) string { return explanations[code] }

// observationVerdicts say what the runner_observation axis's three values mean.
var observationVerdicts = map[string]string{
	"MATCH":    "The observation verifies under a published witness key and agrees with the receipt beside it.",
	"MISMATCH": "The observation does not verify, or disagrees with the receipt beside it; the codes below say where.",
	"ABSENT":   "There is no observation to check.",
}

// observationCodeRows lists the reason codes of a runner observation with their meaning.
func observationCodeRows(ov *observationView) []codeRow {
	var rows []codeRow
	for _, c := range ov.ReasonCodes {
		rows = append(rows, codeRow{"reason (mismatch)", c, explain(c)})
	}
	return rows
}

// codeRow is one line of the codes table of the page.
type codeRow struct {
	Kind, Code, Meaning string
}

// codeRows lists the codes of a verification once each, with their meaning.
func codeRows(sv *serverVerification) []codeRow {
	var rows []codeRow
	add := func(kind string, codes []string) {
		for _, c := range codes {
			rows = append(rows, codeRow{kind, c, explain(c)})
		}
	}
	add("reason (not ok)", sv.ReasonCodes)
	add("advisory", sv.AdvisoryCodes)
	add("limitation", sv.Limitations)
	return rows
}

// axisInfo is what each verification axis checks, in the words of docs/receipts.md.
var axisInfo = map[string]string{
	"structure":                    "The statement and predicate follow every rule of their version, and the payload is exactly its own RFC 8785 form.",
	"signature (crypto)":           "An Ed25519 signature over the payload verifies under a published key.",
	"predicate type":               "The predicate type is an agent-review version this verifier knows.",
	"statement shape":              "The in-toto statement has the fields and types it must have.",
	"subject binding":              "The signed subject is the one expected for this pull request.",
	"expected subject match":       "The subject digest the receipt signed equals the one derived for this pull request.",
	"internal subject consistency": "The statement's subject digest is the digest of its own subject context.",
	"internal consistency":         "The predicate's parts agree with each other.",
	"body core digest":             "The body GitHub serves now, with the block replaced by a fixed token, is the body that was signed.",
	"disclosure core digest":       "The visible disclosure block says what was signed (its Receipt value masked).",
	"findings root":                "The findings root covers exactly the listed findings.",
	"assurance":                    "Nothing claims more than selfDeclared.",
	"currentness":                  "Whether this is the newest receipt: an offline check cannot know, so it is always unknown.",
	"time semantics":               "How the receipt's time claims are read.",
	"event time":                   "The self-declared time the review completed.",
	"observation time":             "A time observed by someone other than the producer.",
	"signature time":               "The time the receipt says it was signed.",
	"external time":                "A time anchored by an external service.",
	"time consistency":             "The time claims do not contradict each other.",
	"policy decision":              "What the relying-party policy agent-review/default decides.",
	"predicate version":            "Whether the predicate version is current or legacy.",
	"payload digest":               "SHA-256 of the signed payload: the receipt digest other receipts name.",
	"subject digest":               "SHA-256 of the subject context in its RFC 8785 form.",
}

// plain turns a code or value into lower-case words for the page ("NOT_EVALUATED" becomes
// "not evaluated"); hex digests and mixed-case words pass unchanged.
func plain(v string) string {
	if v == strings.ToUpper(v) || strings.Contains(v, "_") {
		return strings.ToLower(strings.ReplaceAll(v, "_", " "))
	}
	return v
}
