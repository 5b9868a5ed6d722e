package disclosure

import (
	"os"
	"slices"
	"testing"
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
