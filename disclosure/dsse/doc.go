// Package dsse signs and opens DSSE envelopes with Ed25519 under the rules of the agent-review
// receipt format: PAE over the raw payload, canonical padded base64 only, at most 512
// signatures and an 8 MiB payload, and refusal of public keys that are malformed,
// non-canonically encoded or of low order.
package dsse
