// Package policy is the YAGA agent-review model of a named-lens policy: the plan and its
// plan_digest, the receipt scaffold, strict receipt loading, aggregation of lens outcomes into a
// gate state, and the text, JSON and GitHub renderings of the policy commands. Digests, documents
// and error messages are byte-compatible with YAGA, so adapters written for it work unchanged.
//
// Typical use: NewPlan(cfg.Policy), run each Plan.Items lens, fill Plan.Template() with one
// closed Outcome per lens, then Evaluate(plan, receipt).
package policy
