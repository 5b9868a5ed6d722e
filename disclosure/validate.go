package disclosure

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Issue is one validator finding. Code is empty for findings the format gives no code.
type Issue struct {
	Code string `json:"code,omitempty"`
	Text string `json:"text"`
}

func (i Issue) String() string {
	if i.Code == "" {
		return i.Text
	}
	return i.Code + ": " + i.Text
}

type issues []Issue

func (is *issues) add(code, format string, args ...any) {
	*is = append(*is, Issue{Code: code, Text: fmt.Sprintf(format, args...)})
}

// ValidatePredicate checks a predicate (as parsed by jcs.Parse) against the rules of version v
// and returns every finding; an empty result means valid.
func ValidatePredicate(pred any, v Version) []Issue {
	var is issues
	p, ok := asObj(pred)
	if !ok {
		is.add("", "predicate must be an object")
		return is
	}
	v2 := v != V01

	for _, k := range unknownKeys(p, topLevelKeys) {
		is.add("", "unknown top-level field %q", k)
	}
	for _, k := range []string{"schemaVersion", "reviewId", "subjectContext", "declaration", "coverage", "times", "limitations"} {
		if !has(p, k) {
			is.add("", "missing %s", k)
		}
	}
	if s, ok := p["schemaVersion"].(string); has(p, "schemaVersion") && (!ok || !reSchema.MatchString(s)) {
		is.add("", "schemaVersion must match 0.1.N")
	}
	if has(p, "reviewId") && !nonEmptyString(p["reviewId"]) {
		is.add("", "reviewId must be a non-empty string")
	}

	if has(p, "subjectContext") {
		validateSubjectContext(&is, p["subjectContext"], v2)
	}
	if has(p, "declaration") {
		validateDeclaration(&is, p["declaration"], v2)
	}
	if has(p, "coverage") {
		validateCoverage(&is, p["coverage"], v2)
	}
	// An unlisted finding must be named as a gap.
	if d, ok := asObj(p["declaration"]); ok {
		total, tok := intValue(d["findingsTotal"])
		list, lok := asArr(d["findings"])
		if tok && lok && total > int64(len(list)) {
			cov, _ := asObj(p["coverage"])
			if !truthy(cov["knownGaps"]) {
				is.add("", "findingsTotal exceeds the listed findings: coverage.knownGaps must name the gap")
			}
		}
	}
	if has(p, "times") {
		validateTimes(&is, p["times"], v2)
	}
	if has(p, "limitations") && !nonEmptyStrings(p["limitations"], true) {
		is.add("", "limitations must be a non-empty array of non-empty strings")
	}
	if lc, present := p["limitationCodes"]; present {
		validateLimitationCodes(&is, lc)
	} else if v2 {
		is.add("", "%s: limitationCodes required", v)
	}
	if has(p, "observations") {
		if a, ok := asArr(p["observations"]); !ok || len(a) != 0 {
			is.add("", "observations must be an empty array: no witness exists")
		}
	}
	if has(p, "planRef") && !digestObject(p["planRef"]) {
		is.add("", "planRef must be a digest object")
	}
	if has(p, "supersession") {
		validateSupersession(&is, p["supersession"])
	}
	if has(p, "producer") {
		validateProducer(&is, p["producer"], v)
	}

	if v2 {
		if sc, ok := asObj(p["subjectContext"]); ok {
			if _, isStr := sc["disclosureCoreDigest"].(string); !isStr {
				is.add("", "%s: disclosureCoreDigest required", v)
			}
		}
		if d, ok := asObj(p["declaration"]); ok {
			list, _ := asArr(d["findings"])
			for i, f := range list {
				fm, ok := asObj(f)
				if !ok {
					continue
				}
				if fc, present := fm["fixCommit"]; present && fc != nil && !isLowerHex(40, 40, fc) {
					is.add(CodeFixCommitNotFullSHA, "declaration: findings[%d]: fixCommit must be a full 40-hex commit id", i)
				}
			}
		}
	}
	return is
}

// Closed key sets (read-only tables).
var (
	topLevelKeys = set("schemaVersion", "reviewId", "subjectContext", "declaration", "coverage", "times",
		"limitations", "limitationCodes", "producer", "observations", "supersession", "planRef")
	declarationKeysV01 = set("authoring", "reviewRuns", "findings", "findingsTotal", "findingsRoot", "nonClaims")
	declarationKeysV02 = set("authoring", "reviewRuns", "findings", "findingsTotal", "findingsRoot", "nonClaims", "timeClaims")
	coverageKeysV01    = set(legacyCoverageKeys...)
	coverageKeysV02    = set(append(slices.Clone(legacyCoverageKeys), cap1CoverageKeys...)...)
	timesKeys          = set("declaredAt", "observedAt", "signedAt", "anchoredAt")
)

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func nonEmptyStrings(v any, nonEmptyList bool) bool {
	a, ok := asArr(v)
	if !ok || (nonEmptyList && len(a) == 0) {
		return false
	}
	for _, e := range a {
		if !nonEmptyString(e) {
			return false
		}
	}
	return true
}

func stringList(v any) bool {
	a, ok := asArr(v)
	if !ok {
		return false
	}
	for _, e := range a {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return true
}

var (
	prKeys = map[string]bool{"kind": true, "forge": true, "repositoryId": true, "pullRequestNodeId": true,
		"headSha": true, "baseSha": true, "reviewedDiffDigest": true, "bodyCoreDigest": true,
		"renderedDisclosureDigest": true, "humanRef": true, "disclosureCoreDigest": true}
	prRequired = []string{"kind", "forge", "repositoryId", "pullRequestNodeId", "headSha", "baseSha",
		"reviewedDiffDigest", "bodyCoreDigest"}
	issueKeys = map[string]bool{"kind": true, "forge": true, "repositoryId": true, "issueNodeId": true,
		"bodyCoreDigest": true, "revisedAt": true, "commentNodeId": true, "renderedDisclosureDigest": true,
		"humanRef": true, "disclosureCoreDigest": true}
	issueRequired = []string{"kind", "forge", "repositoryId", "issueNodeId", "bodyCoreDigest", "revisedAt"}
)

// Subject profiles.
const (
	KindPullRequest = "githubPullRequest"
	KindIssue       = "githubIssue"
)

func validateSubjectContext(is *issues, v any, _ bool) {
	sc, ok := asObj(v)
	if !ok {
		is.add(CodeSubjectContextNotObject, "subjectContext must be an object")
		return
	}
	var keys map[string]bool
	var required []string
	switch sc["kind"] {
	case KindPullRequest:
		keys, required = prKeys, prRequired
	case KindIssue:
		keys, required = issueKeys, issueRequired
	default:
		is.add("", "subjectContext: kind must be githubPullRequest or githubIssue")
		return
	}
	for _, k := range unknownKeys(sc, keys) {
		is.add("", "subjectContext: unknown field %q", k)
	}
	for _, k := range required {
		if !has(sc, k) {
			is.add("", "subjectContext: missing %s", k)
		}
	}
	for _, k := range []string{"forge", "repositoryId", "pullRequestNodeId", "issueNodeId", "commentNodeId"} {
		if has(sc, k) && keys[k] && !nonEmptyString(sc[k]) {
			is.add("", "subjectContext: %s must be a non-empty string", k)
		}
	}
	for _, k := range []string{"headSha", "baseSha"} {
		if has(sc, k) && keys[k] && !isLowerHex(40, 40, sc[k]) {
			is.add("", "subjectContext: %s must be 40 lowercase hex characters", k)
		}
	}
	for _, k := range []string{"reviewedDiffDigest", "bodyCoreDigest", "renderedDisclosureDigest"} {
		if has(sc, k) && keys[k] && !isLowerHex(64, 64, sc[k]) {
			is.add("", "subjectContext: %s must be 64 lowercase hex characters", k)
		}
	}
	if has(sc, "revisedAt") && keys["revisedAt"] && !isTimestamp(sc["revisedAt"]) {
		is.add("", "subjectContext: revisedAt must be a timestamp")
	}
}

// section checks that a predicate section is an object with a closed key set.
func section(is *issues, v any, name, code string, allowed map[string]bool) (map[string]any, bool) {
	m, ok := asObj(v)
	if !ok {
		is.add(code, "%s must be an object", name)
		return nil, false
	}
	for _, k := range unknownKeys(m, allowed) {
		is.add("", "%s: unknown field %q", name, k)
	}
	return m, true
}

func validateDeclaration(is *issues, v any, v2 bool) {
	allowed := declarationKeysV01
	if v2 {
		allowed = declarationKeysV02
	}
	d, ok := section(is, v, "declaration", CodeDeclarationNotObject, allowed)
	if !ok {
		return
	}
	for _, k := range []string{"authoring", "reviewRuns", "findings", "findingsTotal", "nonClaims"} {
		if !has(d, k) {
			is.add("", "declaration: missing %s", k)
		}
	}
	validateAssured(is, d, "authoring", CodeAuthoringEntryNotObject)
	validateAssured(is, d, "reviewRuns", CodeReviewRunsEntryNotObject)

	var n int
	if has(d, "findings") {
		list, ok := asArr(d["findings"])
		if !ok {
			is.add("", "declaration: findings must be an array")
		}
		n = len(list)
		seen := map[string]bool{}
		for i, f := range list {
			validateFinding(is, i, f, seen)
		}
	}
	if has(d, "findingsTotal") {
		if t, ok := intValue(d["findingsTotal"]); !ok || t < 0 {
			is.add("", "declaration: findingsTotal must be an integer >= 0")
		} else if t < int64(n) {
			is.add("", "declaration: findingsTotal is less than the listed findings")
		}
	}
	if root, present := d["findingsRoot"]; present {
		if !isLowerHex(64, 64, root) {
			is.add(CodeFindingsRootMalformed, "declaration: findingsRoot must be 64 lowercase hex characters")
		}
	} else if n > 0 {
		is.add(CodeFindingsRootMissing, "declaration: findingsRoot is required when findings are listed")
	}
	if has(d, "nonClaims") && !nonEmptyStrings(d["nonClaims"], true) {
		is.add("", "declaration: nonClaims must be a non-empty array of non-empty strings")
	}
	if v2 && has(d, "timeClaims") {
		validateTimeClaims(is, d["timeClaims"])
	}
}

func validateAssured(is *issues, d map[string]any, key, code string) {
	if !has(d, key) {
		return
	}
	list, ok := asArr(d[key])
	if !ok {
		is.add("", "declaration: %s must be an array", key)
		return
	}
	for i, e := range list {
		m, ok := asObj(e)
		if !ok {
			is.add(code, "declaration: %s[%d] must be an object", key, i)
			continue
		}
		switch a, present := m["assurance"]; {
		case !present:
			is.add("", "declaration: %s[%d]: missing assurance", key, i)
		case !oneOf(a, rungs...):
			is.add("", "declaration: %s[%d]: unknown assurance rung", key, i)
		case a != SelfDeclared:
			is.add("", "declaration: %s[%d]: assurance not emittable", key, i)
		}
		if !nonEmptyString(m["assertedBy"]) {
			is.add("", "declaration: %s[%d]: assertedBy must be a non-empty string", key, i)
		}
		if ob, present := m["observedBy"]; present && ob != nil {
			if _, ok := ob.(string); !ok {
				is.add("", "declaration: %s[%d]: observedBy must be a string or null", key, i)
			}
		}
		if er, present := m["evidenceRef"]; present && er != nil && !digestObject(er) {
			is.add("", "declaration: %s[%d]: evidenceRef must be a digest object or null", key, i)
		}
	}
}

var findingKeys = map[string]bool{"id": true, "severity": true, "title": true, "disposition": true,
	"fixCommit": true, "reason": true, "evidenceRef": true}

// Finding enums.
var (
	Severities   = []string{"critical", "high", "medium", "low", "info"}
	Dispositions = []string{"fixed", "dismissed", "deferred", "open"}
)

func validateFinding(is *issues, i int, f any, seen map[string]bool) {
	m, ok := asObj(f)
	if !ok {
		is.add(CodeFindingsEntryNotObject, "declaration: findings[%d] must be an object", i)
		return
	}
	for _, k := range unknownKeys(m, findingKeys) {
		is.add("", "declaration: findings[%d]: unknown field %q", i, k)
	}
	if id, ok := m["id"].(string); !ok || id == "" {
		is.add("", "declaration: findings[%d]: id must be a non-empty string", i)
	} else if seen[id] {
		is.add("", "declaration: findings[%d]: duplicate id %q", i, id)
	} else {
		seen[id] = true
	}
	if !oneOf(m["severity"], Severities...) {
		is.add("", "declaration: findings[%d]: severity must be one of %s", i, strings.Join(Severities, ", "))
	}
	if !nonEmptyString(m["title"]) {
		is.add("", "declaration: findings[%d]: title must be a non-empty string", i)
	}
	if !oneOf(m["disposition"], Dispositions...) {
		is.add("", "declaration: findings[%d]: disposition must be one of %s", i, strings.Join(Dispositions, ", "))
	}
	if m["disposition"] == "fixed" && !nonEmptyString(m["fixCommit"]) {
		is.add("", "declaration: findings[%d]: fixed needs fixCommit", i)
	}
	if m["disposition"] == "dismissed" && !nonEmptyString(m["reason"]) {
		is.add("", "declaration: findings[%d]: dismissed needs reason", i)
	}
	if er, present := m["evidenceRef"]; present && er != nil && !digestObject(er) {
		is.add("", "declaration: findings[%d]: evidenceRef must be a digest object or null", i)
	}
}

var timeClaimKeys = map[string]bool{"kind": true, "value": true, "assertedBy": true, "assurance": true, "evidenceRef": true}

// TimeClaimKinds are the kinds a time claim may have.
var TimeClaimKinds = []string{"reviewCompleted", "receiptCreated", "reviewStarted", "evidenceCollected"}

func validateTimeClaims(is *issues, v any) {
	list, ok := asArr(v)
	if !ok {
		is.add("", "declaration: timeClaims must be an array")
		return
	}
	for i, e := range list {
		m, ok := asObj(e)
		if !ok {
			is.add("", "declaration: timeClaims[%d] must be an object", i)
			continue
		}
		for _, k := range unknownKeys(m, timeClaimKeys) {
			is.add("", "declaration: timeClaims[%d]: unknown field %q", i, k)
		}
		if !oneOf(m["kind"], TimeClaimKinds...) {
			is.add("", "declaration: timeClaims[%d]: unknown kind", i)
		}
		if !nonEmptyString(m["value"]) {
			is.add("", "declaration: timeClaims[%d]: value must be a non-empty string", i)
		}
		if !nonEmptyString(m["assertedBy"]) {
			is.add("", "declaration: timeClaims[%d]: assertedBy must be a non-empty string", i)
		}
		switch a := m["assurance"]; {
		case !oneOf(a, rungs...):
			is.add("", "declaration: timeClaims[%d]: unknown assurance rung", i)
		case a != SelfDeclared:
			is.add("", "declaration: timeClaims[%d]: assurance not emittable", i)
		}
		if er, present := m["evidenceRef"]; present && er != nil && !digestObject(er) {
			is.add("", "declaration: timeClaims[%d]: evidenceRef must be a digest object or null", i)
		}
	}
}

var (
	legacyCoverageKeys = []string{"status", "window", "sources", "observedRuns", "expectedRuns", "knownGaps", "collectionMethod"}
	cap1CoverageKeys   = []string{"strata", "integrity", "absenceAssertions"}
)

// Coverage statuses.
const (
	CoverageComplete = "COMPLETE"
	CoveragePartial  = "PARTIAL"
	CoverageUnknown  = "UNKNOWN"
)

func hasCap1(c map[string]any) bool {
	for _, k := range cap1CoverageKeys {
		if has(c, k) {
			return true
		}
	}
	return false
}

func validateCoverage(is *issues, v any, v2 bool) {
	allowed := coverageKeysV01
	if v2 {
		allowed = coverageKeysV02
	}
	c, ok := section(is, v, "coverage", CodeCoverageNotObject, allowed)
	if !ok {
		return
	}
	status, _ := c["status"].(string)
	validStatus := oneOf(status, CoverageComplete, CoveragePartial, CoverageUnknown)
	if !validStatus {
		is.add("", "coverage: status must be COMPLETE, PARTIAL or UNKNOWN")
	}
	for _, k := range []string{"sources", "knownGaps"} {
		if has(c, k) && !stringList(c[k]) {
			is.add("", "coverage: %s must be an array of strings", k)
		}
	}
	for _, k := range []string{"observedRuns", "expectedRuns"} {
		if x, present := c[k]; present && x != nil {
			if n, ok := intValue(x); !ok || n < 0 {
				is.add("", "coverage: %s must be an integer >= 0 or null", k)
			}
		}
	}
	obs, obsInt := intValue(c["observedRuns"])
	exp, expInt := intValue(c["expectedRuns"])
	// knownGaps is read by truthiness, as the reference does: any non-empty value (even one of
	// the wrong type, which is reported above) is a gap.
	gaps := truthy(c["knownGaps"])
	cap1 := v2 && hasCap1(c)

	if status == CoverageComplete {
		if !cap1 && (!obsInt || !expInt) {
			is.add("", "coverage: COMPLETE needs counters")
		}
		if obsInt && expInt && obs < exp {
			is.add(CodeCoverageUnderExpectation, "coverage: COMPLETE with observedRuns below expectedRuns")
		}
		if expInt && exp == 0 {
			is.add(CodeCoverageOverNothing, "coverage: COMPLETE over zero expected runs")
		}
		if gaps {
			is.add(CodeCoverageWithGaps, "coverage: COMPLETE with known gaps")
		}
		if !cap1 && (!truthy(c["sources"]) || !truthy(c["window"]) || !truthy(c["collectionMethod"])) {
			is.add("", "coverage: COMPLETE needs universe")
		}
	}
	if status == CoveragePartial && !cap1 && !gaps {
		is.add("", "coverage: PARTIAL needs knownGaps")
	}
	if !cap1 {
		return
	}
	for _, f := range cap1Check(c["strata"], c["integrity"], c["absenceAssertions"]) {
		is.add(f.code, "coverage: CAP-1 %s: %s", f.rule, f.text)
	}
	if strata, ok := asArr(c["strata"]); ok && len(strata) > 0 && validStatus {
		integ, _ := asObj(c["integrity"])
		derived := CoveragePartial
		if integ["complete"] == true {
			derived = CoverageComplete
		}
		if status != derived {
			is.add(CodeCap1StatusContradicts, "coverage: status %s contradicts the strata (%s)", status, derived)
		}
	}
}

func validateTimes(is *issues, v any, v2 bool) {
	t, ok := section(is, v, "times", CodeTimesNotObject, timesKeys)
	if !ok {
		return
	}
	if !has(t, "declaredAt") {
		is.add("", "times: missing declaredAt")
	}
	for _, k := range []string{"declaredAt", "observedAt", "signedAt", "anchoredAt"} {
		if x, present := t[k]; present && x != nil && !isTimestamp(x) {
			is.add("", "times: %s must be a timestamp or null", k)
		}
	}
	if t["anchoredAt"] != nil {
		is.add("", "times: anchoredAt must be null")
	}
	if v2 && t["observedAt"] != nil {
		is.add("", "times: observedAt needs observations, which cannot exist")
	}
}

func validateLimitationCodes(is *issues, v any) {
	list, ok := asArr(v)
	if !ok {
		is.add("", "limitationCodes must be an array")
		return
	}
	seen := map[string]bool{}
	for i, e := range list {
		s, ok := e.(string)
		switch {
		case !ok || !limitationCodeSet[s]:
			is.add("", "limitationCodes[%d] is not a known limitation code", i)
		case seen[s]:
			is.add("", "limitationCodes[%d] is a duplicate", i)
		}
		seen[s] = true
	}
}

func validateSupersession(is *issues, v any) {
	s, ok := asObj(v)
	if !ok {
		is.add(CodeSupersessionNotObject, "supersession must be an object")
		return
	}
	for _, k := range sortedKeys(s) {
		if k != "supersedes" && k != "corrects" && k != "withdraws" {
			is.add("", "supersession: unknown field %q", k)
			continue
		}
		list, ok := asArr(s[k])
		if !ok {
			is.add("", "supersession: %s must be an array", k)
			continue
		}
		for i, e := range list {
			m, ok := asObj(e)
			if !ok {
				is.add("", "supersession: %s[%d] must be an object", k, i)
				continue
			}
			// The format closes the supersession object's own keys, not its items': an item
			// may carry more than priorDigest and reason.
			if !digestObject(m["priorDigest"]) {
				is.add("", "supersession: %s[%d]: priorDigest must be a digest object", k, i)
			}
			if !nonEmptyString(m["reason"]) {
				is.add("", "supersession: %s[%d]: reason must be a non-empty string", k, i)
			}
		}
	}
}

func validateProducer(is *issues, v any, ver Version) {
	p, ok := asObj(v)
	if !ok {
		is.add("", "producer must be an object")
		return
	}
	for _, k := range sortedKeys(p) {
		switch k {
		case "id", "keyId":
			if _, ok := p[k].(string); !ok {
				is.add("", "producer: %s must be a string", k)
			}
		case "verifier":
			if ver != V03 {
				is.add("", "producer.verifier is not an allowed field")
				continue
			}
			for _, e := range verifierBlockErrors(p[k]) {
				is.add(CodeVerifierBlockInvalid, "producer.verifier: %s", e)
			}
		default:
			is.add("", "producer: unknown field %q", k)
		}
	}
}
