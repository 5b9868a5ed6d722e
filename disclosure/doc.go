// Package disclosure builds, signs and verifies agent-review disclosure receipts: an in-toto
// Statement v1 carrying the agent-review predicate (v0.1, v0.2, v0.3), canonicalized with
// RFC 8785 and signed in a DSSE envelope with Ed25519.
//
// The verifier never collapses its findings into one verdict: it reports the signature,
// structure, subject binding, findings root, assurance, visible-block, time and policy axes
// separately, because a strong signature must not make a weak self-report look strong. The
// emitter refuses any predicate that claims more than lensgate can honestly claim (assurance
// above selfDeclared, observations, anchored time).
//
// Sub-packages: jcs (strict JSON and canonical form), dsse (envelopes and keys) and block (the
// disclosure block in a body and its digests).
package disclosure
