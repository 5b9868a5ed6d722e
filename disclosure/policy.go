package disclosure

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/lensgate/lensgate/disclosure/jcs"
)

// defaultPolicyJSON is the relying-party default policy, kept byte for byte because its digest
// is the hash of the raw file (see policies/LICENSE for its origin).
//
//go:embed policies/agent-review-default-v1.json
var defaultPolicyJSON []byte

// Policy is a relying party's receipt policy. A policy that failed to load is still a Policy:
// its Err is set and every decision under it is insufficient_evidence (POLICY_NOT_EVALUABLE).
type Policy struct {
	Name            string
	Digest          string // "sha256:" + hex of the raw bytes
	Blocking        []string
	NeverBlocking   []string
	RequireCoverage []string // nil when the policy sets no coverage requirement
	TimeKind        string   // empty when the policy has no time block
	Err             error
}

// TimeKinds are the kinds a policy's time block may name.
var TimeKinds = []string{"freshness", "ttl", "certificate_validity", "currentness", "existence"}

// DefaultPolicy returns the embedded default policy (agent-review/default). The file is
// parsed once; each caller gets its own copy, so changing one cannot change another's.
func DefaultPolicy() *Policy {
	p := *parsedDefaultPolicy()
	p.Blocking = slices.Clone(p.Blocking)
	p.NeverBlocking = slices.Clone(p.NeverBlocking)
	p.RequireCoverage = slices.Clone(p.RequireCoverage)
	return &p
}

var parsedDefaultPolicy = sync.OnceValue(func() *Policy { return ParsePolicy(defaultPolicyJSON) })

// DefaultPolicyJSON returns a copy of the embedded default policy file.
func DefaultPolicyJSON() []byte { return slices.Clone(defaultPolicyJSON) }

// ParsePolicy reads a policy file. Unknown members are ignored; a form error is kept in Err.
func ParsePolicy(raw []byte) *Policy {
	sum := sha256.Sum256(raw)
	p := &Policy{Digest: "sha256:" + hex.EncodeToString(sum[:])}
	v, err := jcs.Parse(raw)
	if err != nil {
		p.Err = fmt.Errorf("policy is not JSON: %w", err)
		return p
	}
	m, ok := asObj(v)
	if !ok {
		p.Err = errors.New("policy is not a JSON object")
		return p
	}
	if n, present := m["name"]; present {
		s, ok := n.(string)
		if !ok {
			p.Err = errors.New("policy name must be a string")
			return p
		}
		p.Name = s
	}
	codes := func(key string) ([]string, error) {
		x, present := m[key]
		if !present || x == nil {
			return nil, nil
		}
		list, ok := asArr(x)
		if !ok {
			return nil, fmt.Errorf("policy %s must be a list", key)
		}
		out := []string{}
		for _, e := range list {
			s, ok := e.(string)
			if !ok || !limitationCodeSet[s] || slices.Contains(out, s) {
				return nil, fmt.Errorf("policy %s must list distinct limitation codes", key)
			}
			out = append(out, s)
		}
		return out, nil
	}
	if p.Blocking, err = codes("blocking"); err != nil {
		p.Err = err
		return p
	}
	if p.NeverBlocking, err = codes("never_blocking"); err != nil {
		p.Err = err
		return p
	}
	if x, present := m["require_coverage_status"]; present && x != nil {
		list, ok := asArr(x)
		if !ok {
			p.Err = errors.New("policy require_coverage_status must be a list")
			return p
		}
		p.RequireCoverage = []string{}
		for _, e := range list {
			if !oneOf(e, CoverageComplete, CoveragePartial, CoverageUnknown) {
				p.Err = errors.New("policy require_coverage_status must list coverage statuses")
				return p
			}
			p.RequireCoverage = append(p.RequireCoverage, e.(string))
		}
	}
	if x, present := m["time"]; present && x != nil {
		t, ok := asObj(x)
		if !ok || !oneOf(t["kind"], TimeKinds...) {
			p.Err = errors.New("policy time must be an object with a known kind")
			return p
		}
		p.TimeKind = t["kind"].(string)
	}
	return p
}

// PolicyReason records what a decision was based on.
type PolicyReason struct {
	LimitationCodes []string    `json:"limitation_codes"`
	BlockingHit     []string    `json:"blocking_hit"`
	CoverageStatus  any         `json:"coverage_status"`
	PolicyName      string      `json:"policy_name"`
	PolicyDigest    string      `json:"policy_digest"`
	Time            *TimeReason `json:"time,omitempty"`
}

// TimeReason records the time-policy part of a decision.
type TimeReason struct {
	Kind     string `json:"kind"`
	Axis     string `json:"axis"`
	State    string `json:"state"`
	Decision string `json:"decision"`
}

var decisionRank = map[string]int{DecisionAccept: 0, DecisionInsufficientEvidence: 1, DecisionReject: 2}

// decide applies the policy to a predicate (derived limitation codes, never the signed list).
func (p *Policy) decide(pred map[string]any, axes TimeAxes) (string, *PolicyReason, error) {
	cov, _ := asObj(pred["coverage"])
	return p.decideOn(LimitationCodes(pred), cov["status"], axes)
}

// decideOn is decide over a predicate's derived limitation codes and its coverage status.
func (p *Policy) decideOn(codes []string, status any, axes TimeAxes) (string, *PolicyReason, error) {
	if p.Err != nil {
		return DecisionInsufficientEvidence, nil, p.Err
	}
	hit := []string{}
	for _, c := range codes {
		if slices.Contains(p.Blocking, c) && !slices.Contains(p.NeverBlocking, c) {
			hit = append(hit, c)
		}
	}
	reason := &PolicyReason{LimitationCodes: codes, BlockingHit: hit, CoverageStatus: status,
		PolicyName: p.Name, PolicyDigest: p.Digest}
	decision := DecisionAccept
	switch {
	case len(hit) > 0:
		decision = DecisionReject
	case p.RequireCoverage != nil && !oneOf(status, p.RequireCoverage...):
		decision = DecisionInsufficientEvidence
	}
	if p.TimeKind != "" {
		tr := timeDecision(p.TimeKind, axes)
		reason.Time = &tr
		if decisionRank[tr.Decision] > decisionRank[decision] {
			decision = tr.Decision
		}
	}
	return decision, reason, nil
}

func timeDecision(kind string, ax TimeAxes) TimeReason {
	tr := TimeReason{Kind: kind, Decision: DecisionInsufficientEvidence}
	switch kind {
	case "freshness":
		tr.Axis, tr.State = "event", ax.Event
	case "ttl", "certificate_validity":
		tr.Axis, tr.State = "signature", ax.Signature
	case "currentness":
		tr.Axis, tr.State = "observation", ax.Observation
	case "existence":
		tr.Axis, tr.State = "external", ax.External
	default:
		return tr
	}
	switch tr.State {
	case TimeConflict:
		tr.Decision = DecisionReject
	case TimeRunnerObserved, TimePlatformAttested, TimeExternallyAnchored:
		tr.Decision = DecisionAccept
	}
	return tr
}
