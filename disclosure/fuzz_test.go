package disclosure

import (
	"os"
	"slices"
	"testing"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// FuzzVerify feeds arbitrary envelopes to the dispatcher. The verifier recovers from panics into
// internal_error, so the target fails on that code: no input may reach it.
func FuzzVerify(f *testing.F) {
	d, opts := disclosed(f)
	f.Add(d.Receipt.Envelope, *opts.Body)
	for _, p := range []string{
		corpusDir + "/published-receipts/proofbundle_185.r2.receipt.json",
		corpusDir + "/published-receipts/inspect_ai_5141.r3.receipt.json",
		corpusDir + "/agent_review/agent-review-v02-counter-proof-unknown-predicate-type-is-refused/envelope.json",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "")
	}
	f.Fuzz(func(t *testing.T, env []byte, body string) {
		o := opts
		o.Body = &body
		for _, r := range []*Report{Verify(env, o), VerifyVersion(V03, env, o)} {
			if slices.Contains(r.ReasonCodes, CodeInternalError) {
				t.Fatalf("internal error: %v", r.Errors)
			}
			if r.OK && r.Automation == nil {
				t.Fatal("ok without automation summary")
			}
		}
	})
}

// FuzzEmitVerify: whatever predicate the emitter agrees to sign must re-verify with every
// internal axis intact; a receipt the emitter signs and the verifier rejects would be a lie.
// Signed payloads also reach the validator past the signature, which random envelopes do not.
func FuzzEmitVerify(f *testing.F) {
	for _, p := range []string{
		corpusDir + "/agent_review/agent-review-v02-positive-control-default-policy-decides-accept/predicate.json",
		corpusDir + "/agent_review/agent-review-v03-positive-control-verifier-block-is-accepted/predicate.json",
		corpusDir + "/agent_review/agent-review-positive-control-emit-verify-roundtrip/predicate.json",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	tree, err := typicalPredicate().Tree()
	if err != nil {
		f.Fatal(err)
	}
	typical, err := jcs.Canonical(tree)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(typical)
	s := testSigner()
	f.Fuzz(func(t *testing.T, pred []byte) {
		rc, err := EmitJSON(pred, "", s)
		if err != nil {
			return
		}
		r := Verify(rc.Envelope, Options{PublicKey: testPub(), ExpectedSubjectDigest: rc.SubjectDigest, Policy: DefaultPolicy()})
		if !isTrue(r.InternalConsistencyOK) || isFalse(r.TimeConsistencyOK) || len(r.ReasonCodes) != 0 {
			t.Fatalf("emitted receipt does not re-verify: codes %v errors %v", r.ReasonCodes, r.Errors)
		}
		payload, err := dsse.DecodeStdBase64(jcsPayload(t, rc.Envelope))
		if err != nil {
			t.Fatal(err)
		}
		env, err := dsse.Sign(dsse.PayloadType, append(payload[:len(payload):len(payload)], ' '), s.Key, "")
		if err != nil {
			t.Fatal(err)
		}
		if r := Verify(env, Options{PublicKey: testPub()}); slices.Contains(r.ReasonCodes, CodeInternalError) || isTrue(r.StructureOK) {
			t.Fatalf("non-canonical payload: structure %v codes %v", r.StructureOK, r.ReasonCodes)
		}
	})
}

func jcsPayload(t *testing.T, env []byte) string {
	tree, err := jcs.Parse(env)
	if err != nil {
		t.Fatal(err)
	}
	return tree.(map[string]any)["payload"].(string)
}
