package disclosure

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/disclosure/jcs"
)

// corpusPredicate reads the v0.2 positive-control predicate of the upstream corpus as a tree.
func corpusPredicate(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/proofbundle/agent_review/agent-review-v02-positive-control-emitter-default-is-v02/predicate.json")
	if err != nil {
		t.Fatal(err)
	}
	tree, err := jcs.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return tree.(map[string]any)
}

func issueCodes(is []Issue) []string {
	var out []string
	for _, i := range is {
		out = append(out, i.Code)
	}
	return out
}

// TestSupersessionItemsAcceptExtraKeys: the format closes the supersession object, not its
// items, so an item with a key beside priorDigest and reason is accepted and its receipt
// verifies, as upstream accepts it. The object's own keys stay closed.
func TestSupersessionItemsAcceptExtraKeys(t *testing.T) {
	item := func() map[string]any {
		return map[string]any{"priorDigest": map[string]any{"sha256": strings.Repeat("a", 64)},
			"reason": "new head", "note": "extra", "supersededAt": jcs.Number("3")}
	}
	for _, rel := range []string{"supersedes", "corrects", "withdraws"} {
		p := corpusPredicate(t)
		p["supersession"] = map[string]any{rel: []any{item()}}
		if is := ValidatePredicate(p, V02); len(is) != 0 {
			t.Fatalf("%s: extra item key refused: %v", rel, is)
		}
		rc, err := EmitTree(p, V02, testSigner())
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		r := VerifyVersion(V02, rc.Envelope, Options{PublicKey: testPub(), ExpectedSubjectDigest: rc.SubjectDigest, Policy: DefaultPolicy()})
		if !r.OK {
			t.Fatalf("%s: receipt with an extra item key does not verify: %v %v", rel, r.ReasonCodes, r.Errors)
		}
	}
	p := corpusPredicate(t)
	p["supersession"] = map[string]any{"supersedes": []any{item()}, "replaces": []any{}}
	if is := ValidatePredicate(p, V02); len(is) != 1 || !strings.Contains(is[0].Text, `unknown field "replaces"`) {
		t.Fatalf("unknown supersession key: %v", is)
	}
	// An item still needs its two members.
	p["supersession"] = map[string]any{"supersedes": []any{map[string]any{"note": "x"}}}
	if is := ValidatePredicate(p, V02); len(is) != 2 {
		t.Fatalf("item without priorDigest and reason: %v", is)
	}
}

// TestCompleteWithAnyNonEmptyKnownGaps: knownGaps is read by truthiness, so a COMPLETE
// coverage with any non-empty value, whatever its type, carries COVERAGE_COMPLETE_WITH_GAPS; a
// PARTIAL one with such a value only gets the type error.
func TestCompleteWithAnyNonEmptyKnownGaps(t *testing.T) {
	complete := func(gaps any, present bool) map[string]any {
		p := corpusPredicate(t)
		c := map[string]any{"status": "COMPLETE", "observedRuns": jcs.Number("1"), "expectedRuns": jcs.Number("1"),
			"sources": []any{"s"}, "window": "w", "collectionMethod": "m"}
		if present {
			c["knownGaps"] = gaps
		}
		p["coverage"] = c
		p["limitationCodes"] = []any{"CURRENTNESS_UNKNOWN", "IDENTITY_UNBOUND", "NOT_QUALITY_ATTESTATION", "TIME_SELF_DECLARED"}
		return p
	}
	tests := []struct {
		name     string
		gaps     any
		present  bool
		withGaps bool
		issues   int
	}{
		{"absent", nil, false, false, 0},
		{"null", nil, true, false, 1},
		{"empty array", []any{}, true, false, 0},
		{"array", []any{"generated files"}, true, true, 1},
		{"string", "generated files", true, true, 2},
		{"object", map[string]any{"a": "b"}, true, true, 2},
		{"number", jcs.Number("2"), true, true, 2},
		{"true", true, true, true, 2},
		{"empty string", "", true, false, 1},
		{"zero", jcs.Number("0"), true, false, 1},
	}
	for _, tt := range tests {
		is := ValidatePredicate(complete(tt.gaps, tt.present), V02)
		if got := slices.Contains(issueCodes(is), CodeCoverageWithGaps); got != tt.withGaps || len(is) != tt.issues {
			t.Errorf("%s: with-gaps %v (want %v), issues %v (want %d)", tt.name, got, tt.withGaps, is, tt.issues)
		}
	}
	p := corpusPredicate(t)
	p["coverage"] = map[string]any{"status": "PARTIAL", "knownGaps": "one file"}
	is := ValidatePredicate(p, V02)
	if len(is) != 1 || !strings.Contains(is[0].Text, "knownGaps must be an array of strings") {
		t.Fatalf("PARTIAL with a string gap: %v", is)
	}
}

// TestPolicyNotEvaluableForANonObjectPredicate: a policy given for a predicate that is not an
// object cannot be evaluated, and says so with POLICY_NOT_EVALUABLE.
func TestPolicyNotEvaluableForANonObjectPredicate(t *testing.T) {
	d, _ := disclosed(t)
	for _, pred := range []any{"x", []any{}, nil, jcs.Number("1")} {
		env := resign(t, d.Receipt.Envelope, func(st map[string]any) { st["predicate"] = pred })
		r := VerifyVersion(V02, env, Options{PublicKey: testPub(), ExpectedSubjectDigest: strings.Repeat("a", 64), Policy: DefaultPolicy()})
		if r.OK || !slices.Contains(r.ReasonCodes, CodePolicyNotEvaluable) || strOr(r.PolicyDecision) != DecisionInsufficientEvidence {
			t.Errorf("predicate %v: ok=%v codes=%v decision=%v", pred, r.OK, r.ReasonCodes, strOr(r.PolicyDecision))
		}
		r = VerifyVersion(V02, env, Options{PublicKey: testPub(), ExpectedSubjectDigest: strings.Repeat("a", 64)})
		if slices.Contains(r.ReasonCodes, CodePolicyNotEvaluable) || !slices.Contains(r.AdvisoryCodes, AdvisoryPolicyNotEvaluated) {
			t.Errorf("predicate %v without a policy: codes=%v advisories=%v", pred, r.ReasonCodes, r.AdvisoryCodes)
		}
	}
}

// TestReferenceEmitterSignsWhatTheVerifierRejects: two conflicting reviewCompleted claims are a
// rule of lensgate's publishing, not of the format. lensgate refuses to sign them; the
// reference emitter signs, and the verifier rejects with TIME_CLAIMS_CONFLICT.
func TestReferenceEmitterSignsWhatTheVerifierRejects(t *testing.T) {
	p := corpusPredicate(t)
	p["declaration"].(map[string]any)["timeClaims"] = []any{
		map[string]any{"kind": "reviewCompleted", "value": "2026-09-04T00:00:00Z", "assertedBy": "x", "assurance": "selfDeclared"},
		map[string]any{"kind": "reviewCompleted", "value": "2026-09-05T00:00:00Z", "assertedBy": "x", "assurance": "selfDeclared"},
	}
	_, err := EmitTree(p, V02, testSigner())
	refused, ok := err.(*RefusedError)
	if !ok || !slices.Contains(refused.Codes(), CodeTimeClaimsConflict) {
		t.Fatalf("lensgate's emitter: %v", err)
	}
	rc, err := EmitReference(p, V02, testSigner())
	if err != nil {
		t.Fatalf("reference emitter refused: %v", err)
	}
	r := VerifyVersion(V02, rc.Envelope, Options{PublicKey: testPub(), ExpectedSubjectDigest: rc.SubjectDigest, Policy: DefaultPolicy()})
	if r.OK || !slices.Contains(r.ReasonCodes, CodeTimeClaimsConflict) {
		t.Fatalf("verifier: ok=%v codes=%v", r.OK, r.ReasonCodes)
	}
	// A rule of the version still refuses in the reference emitter.
	p["times"].(map[string]any)["anchoredAt"] = "2026-09-04T00:00:00Z"
	if _, err := EmitReference(p, V02, testSigner()); err == nil {
		t.Fatal("reference emitter signed an anchoredAt")
	}
}
