// Package conformance runs agent-review conformance cases in the upstream case format: one
// directory per case with a case.json naming its input file and exactly one expected axis.
//
// Predicate-only cases are emitted with the public test key (Ed25519 seed 0x00..0x1f) and then
// verified with that key's own public half. They are emitted as the reference emitter emits
// (disclosure.EmitReference: only the version's rules refuse), so a predicate that is signed and
// then rejected is "invalid", not "refused", whatever lensgate's own publishing would refuse. Envelope and chain cases are verified with the
// corpus key: publickey.hex in the corpus directory when present, else the test key.
package conformance
