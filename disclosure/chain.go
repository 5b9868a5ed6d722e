package disclosure

import (
	"slices"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/internal/digest"
)

// ChainResolution orders a set of receipts by their supersession claims. It verifies no
// signature: claims count only from receipts whose digest the caller verified.
type ChainResolution struct {
	Current                      *string             `json:"current"`
	CurrentCandidates            []string            `json:"current_candidates"`
	Ambiguous                    bool                `json:"ambiguous"`
	Corrected                    []string            `json:"corrected"`
	CorrectedBy                  map[string][]string `json:"corrected_by"`
	MissingPredecessors          []string            `json:"missing_predecessors"`
	Unaddressable                []string            `json:"unaddressable"`
	IntegrityOK                  bool                `json:"integrity_ok"`
	UnverifiedSupersessionClaims []string            `json:"unverified_supersession_claims"`
	Note                         string              `json:"note"`
}

// ReceiptDigest returns the chain key of an envelope: the hex SHA-256 of its decoded payload.
// The payload must be canonical standard base64; ok is false otherwise.
func ReceiptDigest(envelope any) (string, bool) {
	m, _ := asObj(envelope)
	p, isStr := m["payload"].(string)
	if !isStr {
		return "", false
	}
	b, err := dsse.DecodeStdBase64(p)
	if err != nil {
		return "", false
	}
	return digest.SHA256Hex(b), true
}

// ResolveChain resolves supersession among envelopes (parsed JSON trees). verified holds the
// receipt digests whose signatures the caller checked; nil means none.
func ResolveChain(envelopes []any, verified map[string]bool) ChainResolution {
	res := ChainResolution{CorrectedBy: map[string][]string{}, Note: "resolution orders receipts only; " +
		"it verified no signature, and claims count only from receipts the caller verified"}
	present := map[string][]byte{}
	var order []string
	unaddressable := map[string]bool{}
	for _, e := range envelopes {
		m, ok := asObj(e)
		if !ok {
			continue
		}
		p, ok := m["payload"].(string)
		if !ok {
			continue
		}
		if b, err := dsse.DecodeStdBase64(p); err == nil {
			d := digest.SHA256Hex(b)
			if _, dup := present[d]; !dup {
				order = append(order, d)
			}
			present[d] = b
		} else if b, alpha, err := dsse.DecodeBase64(p); err == nil && alpha == dsse.URLSafe {
			unaddressable[digest.SHA256Hex(b)] = true
		}
	}
	corrected := map[string]bool{}
	missing := map[string]bool{}
	var unverified []string
	for _, d := range order {
		st, err := jcs.Parse(present[d])
		stm, ok := asObj(st)
		if err != nil || !ok {
			unaddressable[d] = true
			continue
		}
		pred, _ := asObj(stm["predicate"])
		sup, _ := asObj(pred["supersession"])
		if len(sup) == 0 {
			continue
		}
		if !verified[d] {
			unverified = append(unverified, d)
			continue
		}
		for _, rel := range []string{"corrects", "supersedes", "withdraws"} {
			list, _ := asArr(sup[rel])
			for _, e := range list {
				em, _ := asObj(e)
				pd, _ := asObj(em["priorDigest"])
				prior, ok := pd["sha256"].(string)
				if !ok {
					continue
				}
				corrected[prior] = true
				if !slices.Contains(res.CorrectedBy[prior], d) {
					res.CorrectedBy[prior] = append(res.CorrectedBy[prior], d)
				}
				if _, ok := present[prior]; !ok {
					missing[prior] = true
				}
			}
		}
	}
	for _, l := range res.CorrectedBy {
		slices.Sort(l)
	}
	for _, d := range order {
		if !corrected[d] && !unaddressable[d] {
			res.CurrentCandidates = append(res.CurrentCandidates, d)
		}
	}
	res.CurrentCandidates = sortedOrEmpty(res.CurrentCandidates)
	if len(res.CurrentCandidates) == 1 {
		res.Current = ptr(res.CurrentCandidates[0])
	}
	res.Ambiguous = len(res.CurrentCandidates) != 1
	res.Corrected = sortedSet(corrected)
	res.MissingPredecessors = sortedSet(missing)
	res.Unaddressable = sortedSet(unaddressable)
	res.UnverifiedSupersessionClaims = sortedOrEmpty(unverified)
	res.IntegrityOK = len(res.MissingPredecessors) == 0 && len(res.Unaddressable) == 0
	return res
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedOrEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	slices.Sort(s)
	return s
}
