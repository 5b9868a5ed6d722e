package disclosure

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"

	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/internal/digest"
)

// MaxEnvelopeBytes bounds the envelope JSON a verifier reads: an 8 MiB payload in base64 plus
// room for 512 signatures.
const MaxEnvelopeBytes = 16 << 20

// Options are the relying party's inputs to a verification.
type Options struct {
	// PublicKey is the trusted Ed25519 key (32 bytes). Nothing in the envelope chooses it.
	PublicKey ed25519.PublicKey
	// ExpectedSubjectDigest is the subject digest the relying party expects (lowercase hex).
	// Without it a receipt is never ok: a valid signature over another PR proves nothing here.
	ExpectedSubjectDigest string
	// Body is the pull request or issue body as the reader sees it; nil skips the visible
	// block checks.
	Body *string
	// Policy decides v0.2/v0.3 receipts; nil leaves the decision null (POLICY_NOT_EVALUATED).
	Policy *Policy
}

// Verify is the dispatcher: it reads the predicate type, routes to the verifier of that version
// and reports predicateVersionStatus. It never panics.
func Verify(envelope []byte, opts Options) (r *Report) {
	defer func() {
		if p := recover(); p != nil {
			r = internalError(V01, p)
			r.PredicateVersionStatus = VersionUnknown
		}
	}()
	unreadable := func(msg string) *Report {
		r := newReport(V01)
		r.reason(CodeEnvelopeUnreadable)
		r.Errors = append(r.Errors, "envelope unreadable: "+msg)
		r.PredicateVersionStatus = VersionUnknown
		r.finish()
		return r
	}
	if len(envelope) > MaxEnvelopeBytes {
		return unreadable("envelope exceeds the input budget")
	}
	env, err := jcs.Parse(envelope)
	if err != nil {
		return unreadable(err.Error())
	}
	pre, err := readParsed(env)
	if err != nil {
		return unreadable(err.Error())
	}
	st := pre.statement
	pt, _ := st["predicateType"].(string)
	v, known := versionOfType(pt)
	if !known {
		r := newReport(V01)
		r.PredicateType = pt
		r.PredicateTypeOK = ptr(false)
		r.reason(CodePredicateTypeUnknown)
		r.Errors = append(r.Errors, fmt.Sprintf("unknown predicateType: '%v'", st["predicateType"]))
		r.PredicateVersionStatus = VersionUnknown
		r.finish()
		return r
	}
	if v == V01 {
		dropped := opts.Policy != nil
		opts.Policy = nil
		r = verifyTree(V01, env, opts, pre)
		r.advise(AdvisoryLegacyV01)
		if dropped {
			r.Warnings = append(r.Warnings, "policy is not applicable to agent-review v0.1 and was ignored")
			r.advise(AdvisoryArgumentDropped)
			r.advise(AdvisoryPolicyNotEvaluated)
			r.PolicyDecision = nil
		}
		r.PredicateVersionStatus = VersionLegacy
		checkReceiptLine(r, envelope, opts.Body)
		return r
	}
	r = verifyTree(v, env, opts, pre)
	r.PredicateVersionStatus = VersionCurrent
	checkReceiptLine(r, envelope, opts.Body)
	return r
}

// checkReceiptLine compares the block's Receipt: line with the receipt being verified. The
// line is masked in the disclosure core (it cannot be part of its own preimage), so nothing
// signed covers it; a line naming another file is worth a warning, never a verdict.
func checkReceiptLine(r *Report, envelope []byte, body *string) {
	if body == nil {
		return
	}
	lines, err := block.Parse(*body)
	if err != nil {
		return
	}
	got := block.ReceiptDigest(lines)
	if got == "" || got == digest.SHA256Hex(envelope) || got == r.ReceiptDigest {
		return
	}
	r.Warnings = append(r.Warnings, "the block's Receipt: line names sha256:"+got+
		", which is neither this receipt file's hash nor its receipt digest: the block may point at another receipt")
}

// VerifyVersion runs the verifier of one predicate version directly, without the dispatcher.
// A receipt of another version fails its predicate-type axis.
func VerifyVersion(v Version, envelope []byte, opts Options) (r *Report) {
	defer func() {
		if p := recover(); p != nil {
			r = internalError(v, p)
		}
	}()
	if len(envelope) > MaxEnvelopeBytes {
		r = newReport(v)
		failClosed(r, errors.New("envelope exceeds the input budget"))
		return r
	}
	env, err := jcs.Parse(envelope)
	if err != nil {
		r = newReport(v)
		failClosed(r, err)
		return r
	}
	return verifyTree(v, env, opts, nil)
}

func internalError(v Version, p any) *Report {
	r := newReport(v)
	r.StructureOK = ptr(false)
	r.reason(CodeInternalError)
	r.Errors = append(r.Errors, fmt.Sprintf("internal error: %v", p))
	r.computeAutomation(false)
	r.finish()
	return r
}

// readStatement decodes and strictly parses the payload of an envelope tree.
func readStatement(env any) (map[string]any, []byte, error) {
	p, err := readParsed(env)
	if err != nil {
		return nil, nil, err
	}
	return p.statement, p.payload, nil
}

// parsed carries a statement the dispatcher already decoded, so it is not parsed twice.
type parsed struct {
	statement map[string]any
	payload   []byte
	decoded   *dsse.Decoded
	canonical bool // the payload is its own RFC 8785 form
}

func readParsed(env any) (*parsed, error) {
	m, ok := asObj(env)
	if !ok {
		return nil, errors.New("envelope is not a JSON object")
	}
	p64, ok := m["payload"].(string)
	if !ok {
		return nil, errors.New("payload is missing or not a string")
	}
	if dsse.DecodedLenBound(len(p64)) > dsse.MaxPayload+2 {
		return nil, errors.New("payload exceeds the input budget")
	}
	pt, _ := m["payloadType"].(string)
	d, err := dsse.DecodePayload(pt, p64)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	payload := d.Payload
	st, canonical, err := jcs.ParseCanonical(payload)
	if err != nil {
		return nil, err
	}
	sm, ok := asObj(st)
	if !ok {
		return nil, errors.New("statement is not a JSON object")
	}
	return &parsed{statement: sm, payload: payload, decoded: d, canonical: canonical}, nil
}

func failClosed(r *Report, err error) {
	r.StructureOK = ptr(false)
	r.OK = false
	r.Errors = append(r.Errors, "DSSE payload is not a well-formed in-toto Statement: "+err.Error())
	r.computeAutomation(false)
	r.finish()
}

// verifyTree is the per-version verifier over a parsed envelope.
func verifyTree(v Version, env any, opts Options, pre *parsed) *Report {
	r := newReport(v)
	v2 := v != V01
	o, crypto, ok := openSigned(r, env, opts, pre)
	if !ok {
		return r
	}
	var stv any
	var canonical bool
	var err error
	if pre != nil {
		stv, canonical = pre.statement, pre.canonical
	} else if stv, canonical, err = jcs.ParseCanonical(o.Payload); err != nil {
		failClosed(r, err)
		return r
	}
	st, _ := asObj(stv)
	pred, predObj := asObj(st["predicate"])
	sc := checkStructure(r, v, stv, o.Payload, canonical)

	if subj, ok := subjectEntry(st); ok {
		if d, ok := asObj(subj["digest"]); ok {
			r.SubjectDigest, _ = d["sha256"].(string)
		}
		r.SubjectName, _ = subj["name"].(string)
	}
	// Semantic axes need a trusted, well-shaped statement.
	if predObj && crypto && sc.shapeOK && (!v2 || sc.typeOK) {
		checkSemantics(r, v2, st, pred, o.Payload, sc.canonicalOK, opts.ExpectedSubjectDigest)
	}
	timeSemantics(r, v, pred, predObj, sc.typeOK)
	if v == V03 && predObj {
		r.VerifierBlock = verifierBlockReport(pred)
	}
	if opts.Body != nil {
		checkBody(r, st["predicate"], *opts.Body)
	}
	if v2 {
		evaluatePolicy(r, pred, predObj, opts.Policy)
	}
	conclude(r, crypto, sc.typeOK, v2)
	return r
}

// openSigned opens the envelope and checks its signature under the trusted key. ok is false
// when the envelope cannot be opened (the report is then final); crypto says whether a
// signature verifies.
func openSigned(r *Report, env any, opts Options, pre *parsed) (o *dsse.Opened, crypto, ok bool) {
	var err error
	if pre != nil {
		o, err = dsse.OpenDecoded(env, pre.decoded)
	} else {
		o, err = dsse.Open(env)
	}
	if err != nil {
		failClosed(r, err)
		return nil, false, false
	}
	if o.Alphabet == dsse.Standard {
		r.ReceiptDigest = digest.SHA256Hex(o.Payload)
	}
	if kerr := dsse.CheckPublicKey(opts.PublicKey); kerr != nil {
		r.Errors = append(r.Errors, "public key refused: "+kerr.Error())
	} else if o.PayloadType != dsse.PayloadType {
		r.Errors = append(r.Errors, "payloadType is not "+dsse.PayloadType)
	} else if crypto = o.Verify(opts.PublicKey); !crypto {
		r.Errors = append(r.Errors, "no signature verifies under the supplied public key")
	}
	r.CryptoOK = ptr(crypto)
	return o, crypto, true
}

// structure is what checkStructure found.
type structure struct {
	typeOK, shapeOK, canonicalOK bool
}

// checkStructure checks the predicate type, the statement's shape, the predicate's rules and
// that the signed bytes are the canonical form of what they say, and sets StructureOK.
func checkStructure(r *Report, v Version, stv any, payload []byte, canonical bool) structure {
	st, stObj := asObj(stv)
	pt, _ := st["predicateType"].(string)
	r.PredicateType = pt
	typeOK := stObj && pt == v.PredicateType()
	r.PredicateTypeOK = ptr(typeOK)
	if !typeOK {
		if sib, known := versionOfType(pt); known && (v != V01 || sib == V02) {
			r.reason(CodeUnknownPredicateVersion)
			r.Errors = append(r.Errors, fmt.Sprintf("predicateType is %s, this verifier reads %s", sib, v))
		} else {
			r.Errors = append(r.Errors, fmt.Sprintf("unknown predicateType: '%v'", st["predicateType"]))
		}
	}

	shape := shapeCheck(stv)
	r.StatementShapeOK = ptr(len(shape) == 0)
	for _, is := range shape {
		if is.Code != "" {
			r.reason(is.Code)
		}
		r.Errors = append(r.Errors, is.Text)
	}
	var vissues []Issue
	if stObj {
		vissues = ValidatePredicate(st["predicate"], v)
	}
	for _, is := range vissues {
		if is.Code != "" {
			r.reason(is.Code)
		}
		r.Errors = append(r.Errors, "predicate: "+is.Text)
	}

	// Hash binding: the signed bytes must be the canonical form of what they say. The parser
	// already knows when they are; otherwise re-serialize to tell "not canonical" from "cannot
	// be canonicalized".
	canonicalOK := canonical
	if !canonical {
		if canon, err := jcs.AppendCanonical(make([]byte, 0, len(payload)), stv); err != nil {
			r.reason(CodeStatementNotCanonicalizable)
			r.Errors = append(r.Errors, "statement cannot be canonicalized: "+err.Error())
		} else if canonicalOK = string(canon) == string(payload); !canonicalOK {
			r.Errors = append(r.Errors, "payload is not RFC-8785 canonical (hash_binding fail-closed)")
		}
	}
	r.StructureOK = ptr(len(vissues) == 0 && len(shape) == 0 && typeOK && canonicalOK)
	return structure{typeOK: typeOK, shapeOK: len(shape) == 0, canonicalOK: canonicalOK}
}

// checkSemantics checks the time axes (v0.2 and later), the subject binding, the findings
// root and the assurance of a trusted, well-shaped statement.
func checkSemantics(r *Report, v2 bool, st, pred map[string]any, payload []byte, canonicalOK bool, expectedSubject string) {
	if v2 {
		ax := timeAxes(pred)
		r.EventTimeStatus, r.ObservationTimeStatus = ax.Event, ax.Observation
		r.SignatureTimeStatus, r.ExternalTimeStatus = ax.Signature, ax.External
		if cov, ok := asObj(pred["coverage"]); ok && !hasCap1(cov) {
			r.advise(AdvisoryCoverageLegacy)
		}
		consistent := ax.Event != TimeConflict && ax.Observation != TimeConflict
		r.TimeConsistencyOK = ptr(consistent)
		if !consistent {
			r.reason(CodeTimeClaimsConflict)
			r.Errors = append(r.Errors, "time claims conflict")
		}
	}
	// A canonical payload already holds the canonical bytes of every member: hash those
	// instead of serialising the parsed tree again. Only members inside the predicate are
	// read, so its own end is not looked for.
	var canonPred []byte
	if canonicalOK {
		canonPred = jcs.MemberFrom(payload, "predicate")
	}
	bindSubject(r, st, pred, expectedSubject, canonPred)
	checkFindingsAndAssurance(r, pred, canonPred)
}

// timeSemantics names which time semantics the receipt's version has.
func timeSemantics(r *Report, v Version, pred map[string]any, predObj, typeOK bool) {
	if v == V01 && predObj && typeOK {
		r.TimeSemantics = ptr("LEGACY_V0_1")
		times, _ := asObj(pred["times"])
		if times["observedAt"] != nil {
			r.ObservedTimeAssurance = ptr("SELF_DECLARED_OR_UNKNOWN")
			r.advise(AdvisoryLegacyObservedAt)
		} else {
			r.ObservedTimeAssurance = ptr(TimeAbsent)
		}
	}
	if v != V01 && typeOK {
		r.TimeSemantics = ptr("V0_2")
	}
}

// conclude combines the axes into internal consistency and ok, and fills the automation
// summary.
func conclude(r *Report, crypto, typeOK, v2 bool) {
	r.InternalConsistencyOK = ptr(crypto && isTrue(r.StructureOK) && typeOK &&
		!isFalse(r.SubjectBindingOK) && !isFalse(r.FindingsRootOK) && !isFalse(r.AssuranceOK) &&
		notBad(r.BodyCoreDigestMatch) && notBad(r.DisclosureCoreDigestMatch))
	r.OK = *r.InternalConsistencyOK && r.SubjectExpectation == "checked"
	if v2 {
		d := strOr(r.PolicyDecision)
		r.OK = r.OK && (d == "" || d == DecisionAccept) && !isFalse(r.TimeConsistencyOK)
	}
	if *r.InternalConsistencyOK && r.SubjectExpectation != "checked" {
		r.Errors = append(r.Errors, "ok=false because no expected subject digest was supplied: a signature alone does not say which pull request or issue this receipt is about")
	}
	r.computeAutomation(v2)
	r.finish()
}

func subjectEntry(st map[string]any) (map[string]any, bool) {
	list, _ := asArr(st["subject"])
	if len(list) != 1 {
		return nil, false
	}
	return asObj(list[0])
}

func bindSubject(r *Report, st, pred map[string]any, expected string, canonPred []byte) {
	var derived string
	var err error
	if sc := jcs.Member(canonPred, "subjectContext"); sc != nil {
		derived = digest.SHA256Hex(sc)
	} else {
		derived, err = SubjectDigest(pred["subjectContext"])
	}
	subj, _ := subjectEntry(st)
	d, _ := asObj(subj["digest"])
	claimed, _ := d["sha256"].(string)
	bindSubjectDigest(r, derived, err, claimed, expected)
}

// bindSubjectDigest judges the subject digest derived from the signed subjectContext (err when
// it cannot be derived) against the statement's claim and the relying party's expectation.
func bindSubjectDigest(r *Report, derived string, err error, claimed, expected string) {
	internal := err == nil && derived == claimed
	r.InternalSubjectConsistencyOK = ptr(internal)
	if !internal {
		r.Errors = append(r.Errors, "subject digest does not match the signed subjectContext")
	}
	if expected == "" {
		r.ExpectedSubjectMatch = MatchNotEvaluated
		if !internal {
			r.SubjectBindingOK = ptr(false)
		}
		r.Warnings = append(r.Warnings, "no expected_subject_digest supplied: the receipt is not bound to the subject you are looking at")
		return
	}
	r.SubjectExpectation = "checked"
	if err != nil || derived != expected {
		r.ExpectedSubjectMatch = MatchMismatch
		r.SubjectBindingOK = ptr(false)
		r.Errors = append(r.Errors, "the receipt is about a different subject than the expected one")
		return
	}
	r.ExpectedSubjectMatch = MatchMatch
	r.SubjectBindingOK = ptr(internal)
}

func checkFindingsAndAssurance(r *Report, pred map[string]any, canonPred []byte) {
	d, ok := asObj(pred["declaration"])
	if !ok {
		r.FindingsRootOK, r.AssuranceOK = ptr(false), ptr(false)
		return
	}
	if root, ok := d["findingsRoot"].(string); ok {
		list, isList := asArr(d["findings"])
		if _, present := d["findings"]; !present {
			isList = true
		}
		var got string
		var err error
		if spans, ok := canonicalFindings(canonPred, len(list)); ok {
			got = findingsRootOfCanonical(spans)
		} else {
			got, err = FindingsRoot(list)
		}
		setFindingsRootOK(r, isList && err == nil && got == root)
	}
	assured := true
	for _, a := range assuranceValues(pred) {
		if a != nil && a != SelfDeclared {
			assured = false
		}
	}
	r.AssuranceOK = ptr(assured)
	if !assured {
		r.Errors = append(r.Errors, "an assurance above selfDeclared is claimed without a witness")
	}
}

func setFindingsRootOK(r *Report, ok bool) {
	r.FindingsRootOK = ptr(ok)
	if !ok {
		r.Errors = append(r.Errors, "findingsRoot does not cover the listed findings")
	}
}

// canonicalFindings returns the canonical bytes of each declared finding, read from the
// canonical predicate; ok is false when they cannot be read that way (no canonical payload).
func canonicalFindings(canonPred []byte, n int) ([][]byte, bool) {
	decl := jcs.Member(canonPred, "declaration")
	if decl == nil {
		return nil, false
	}
	list := jcs.Member(decl, "findings")
	if list == nil {
		return nil, n == 0
	}
	spans, ok := jcs.Elements(list, make([][]byte, 0, n))
	return spans, ok && len(spans) == n
}

// checkBody compares the signed body digests with the body the reader sees (§ visible block).
func checkBody(r *Report, predV any, body string) {
	pred, ok := asObj(predV)
	sc, scOK := asObj(pred["subjectContext"])
	if !ok || !scOK {
		r.BodyCoreDigestMatch, r.DisclosureCoreDigestMatch = MatchNotMeasurable, MatchNotMeasurable
		return
	}
	compare := func(name string, signed any, compute func(string) (string, error)) string {
		want, isStr := signed.(string)
		if !isStr {
			return MatchAbsentInReceipt
		}
		got, err := compute(body)
		if err != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s cannot be measured on the body: %v", name, err))
			return MatchNotMeasurable
		}
		if got != want {
			r.Errors = append(r.Errors, fmt.Sprintf("%s of the body differs from the signed value", name))
			if hint := lineEndingHint(body, want, compute); hint != "" {
				r.Warnings = append(r.Warnings, name+": "+hint)
			}
			return MatchMismatch
		}
		return MatchMatch
	}
	r.BodyCoreDigestMatch = compare("bodyCoreDigest", sc["bodyCoreDigest"], block.BodyCoreDigest)
	r.DisclosureCoreDigestMatch = compare("disclosureCoreDigest", sc["disclosureCoreDigest"], block.DisclosureCoreDigest)
	r.VisibleBlockRendering = visibleBlockRendering(pred, body)
	if r.VisibleBlockRendering == MatchMismatch {
		r.Warnings = append(r.Warnings, "the visible disclosure block does not say what the signed predicate says")
	}
}

// lineEndingHint explains the common innocent mismatches: a body re-saved with other line
// endings (GitHub's web editor stores CRLF), with a final newline an editor added, or with a
// byte-order mark. The verdict stays MISMATCH, because the digests are over exact bytes; the
// hint only tells the reader what to look at.
func lineEndingHint(body, want string, compute func(string) (string, error)) string {
	type edit struct {
		what string
		fn   func(string) string
	}
	toLF := edit{"CRLF line endings are turned into LF", func(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }}
	toCRLF := edit{"LF line endings are turned into CRLF", func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
	}}
	noFinal := edit{"final newline is removed", func(s string) string {
		if t, ok := strings.CutSuffix(s, "\r\n"); ok {
			return t
		}
		return strings.TrimSuffix(s, "\n")
	}}
	noBOM := edit{"byte-order mark is removed", func(s string) string { return strings.TrimPrefix(s, "\ufeff") }}
	chains := [][]edit{{toLF}, {toCRLF}, {noFinal}, {noBOM}, {toLF, noFinal}, {toCRLF, noFinal},
		{noBOM, noFinal}, {noBOM, toLF}, {noBOM, toLF, noFinal}}
	for _, chain := range chains {
		alt, whats := body, make([]string, 0, len(chain))
		for _, e := range chain {
			alt = e.fn(alt)
			whats = append(whats, e.what)
		}
		if alt == body {
			continue
		}
		if got, err := compute(alt); err == nil && got == want {
			return "the body would match once its " + strings.Join(whats, " and its ") +
				"; it was probably re-saved by an editor or copied through a browser. Digests cover exact bytes, so this stays a mismatch: fetch the body through the API instead (jq -j .body)"
		}
	}
	return ""
}

func evaluatePolicy(r *Report, pred map[string]any, predObj bool, p *Policy) {
	if p == nil {
		r.advise(AdvisoryPolicyNotEvaluated)
		return
	}
	r.PolicyName, r.PolicyDigest = ptr(p.Name), ptr(p.Digest)
	if !predObj {
		r.reason(CodePolicyNotEvaluable)
		r.Errors = append(r.Errors, "policy not evaluable: the predicate is not an object")
		r.PolicyDecision = ptr(DecisionInsufficientEvidence)
		r.PolicyOK = ptr(false)
		return
	}
	cov, _ := asObj(pred["coverage"])
	applyPolicy(r, p, LimitationCodes(pred), cov["status"])
}

// applyPolicy decides under p from a predicate's derived limitation codes and coverage status.
func applyPolicy(r *Report, p *Policy, codes []string, coverageStatus any) {
	ax := TimeAxes{Event: r.EventTimeStatus, Observation: r.ObservationTimeStatus,
		Signature: r.SignatureTimeStatus, External: r.ExternalTimeStatus}
	decision, reason, err := p.decideOn(codes, coverageStatus, ax)
	if err != nil {
		r.reason(CodePolicyNotEvaluable)
		r.Errors = append(r.Errors, "policy not evaluable: "+err.Error())
	}
	r.PolicyDecision = ptr(decision)
	r.PolicyReason = reason
	if reason != nil && reason.Time != nil {
		r.TimePolicyDecision = ptr(reason.Time.Decision)
	}
	r.PolicyOK = ptr(decision == DecisionAccept)
}
