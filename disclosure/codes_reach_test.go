package disclosure

import (
	"slices"
	"testing"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// Codes that no other test names: each is driven through the verifier by one signed defect.
func TestRemainingCodesAreReachable(t *testing.T) {
	d, base := disclosed(t)
	env := d.Receipt.Envelope
	pred := func(st map[string]any) map[string]any { return st["predicate"].(map[string]any) }
	decl := func(st map[string]any) map[string]any { return pred(st)["declaration"].(map[string]any) }
	signRaw := func(payload string) []byte {
		out, err := dsse.Sign(dsse.PayloadType, []byte(payload), testSigner().Key, "")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var v01Subject string
	tests := []struct {
		name     string
		env      []byte
		direct   Version // "" runs the dispatcher
		reason   string
		advisory string
		blocker  string
	}{
		{name: "authoring entry not an object", env: resign(t, env, func(st map[string]any) {
			decl(st)["authoring"] = []any{"someone"}
		}), reason: CodeAuthoringEntryNotObject},
		{name: "review run not an object", env: resign(t, env, func(st map[string]any) {
			decl(st)["reviewRuns"] = []any{jcs.Number("1")}
		}), reason: CodeReviewRunsEntryNotObject},
		{name: "complete over nothing", env: resign(t, env, func(st map[string]any) {
			pred(st)["coverage"] = map[string]any{"status": CoverageComplete, "observedRuns": jcs.Number("0"),
				"expectedRuns": jcs.Number("0"), "sources": []any{"diff"}, "window": "head", "collectionMethod": "api"}
		}), reason: CodeCoverageOverNothing},
		{name: "integer beyond 2^53 in the signed statement",
			env:    signRaw(`{"_type":"https://in-toto.io/Statement/v1","predicate":{"n":9007199254740993},"predicateType":"https://b7n0de.com/proofbundle/predicates/agent-review/v0.2","subject":[]}`),
			reason: CodeStatementNotCanonicalizable},
		{name: "statement not an object, direct verifier", env: signRaw(`[]`), direct: V02, reason: CodeStatementNotObject},
		{name: "policy rejects", env: env, blocker: BlockerPolicyFailed},
		{name: "v0.1 with observedAt", env: resign(t, env, func(st map[string]any) {
			st["predicateType"] = V01.PredicateType()
			p := pred(st)
			delete(p, "limitationCodes")
			delete(p["subjectContext"].(map[string]any), "disclosureCoreDigest")
			delete(decl(st), "timeClaims")
			p["times"].(map[string]any)["observedAt"] = "2026-11-29T18:00:00Z"
			v01Subject, _ = SubjectDigest(p["subjectContext"])
			st["subject"].([]any)[0].(map[string]any)["digest"] = map[string]any{"sha256": v01Subject}
		}), advisory: AdvisoryLegacyObservedAt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := base
			opts.Body = nil
			if tt.advisory == AdvisoryLegacyObservedAt {
				opts.ExpectedSubjectDigest = v01Subject
			}
			if tt.blocker == BlockerPolicyFailed {
				opts.Policy = ParsePolicy([]byte(`{"name":"strict","blocking":["IDENTITY_UNBOUND"]}`))
			}
			var r *Report
			if tt.direct != "" {
				r = VerifyVersion(tt.direct, tt.env, opts)
			} else {
				r = Verify(tt.env, opts)
			}
			if r.OK && tt.advisory == "" {
				t.Fatalf("ok for a defective receipt: %+v", r)
			}
			if tt.reason != "" && !slices.Contains(r.ReasonCodes, tt.reason) {
				t.Errorf("reason codes %v lack %s (errors %v)", r.ReasonCodes, tt.reason, r.Errors)
			}
			if tt.advisory != "" && (!slices.Contains(r.AdvisoryCodes, tt.advisory) || !r.OK) {
				t.Errorf("ok=%v advisory codes %v lack %s (errors %v)", r.OK, r.AdvisoryCodes, tt.advisory, r.Errors)
			}
			if tt.blocker != "" && (r.Automation == nil || !slices.Contains(r.Automation.AutomationBlockers, tt.blocker)) {
				t.Errorf("automation %+v lacks %s", r.Automation, tt.blocker)
			}
		})
	}
}
