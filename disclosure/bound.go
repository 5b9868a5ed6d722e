package disclosure

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/disclosure/severity"
)

// envelopeOverhead covers what a signed envelope adds around the base64 payload: the member
// names, the payload type, one keyid and one signature, with room to spare.
const envelopeOverhead = 512

// EnvelopeSize is the size the signed envelope of p will have, within envelopeOverhead.
func (p *Predicate) EnvelopeSize() (int, error) {
	tree, err := p.Tree()
	if err != nil {
		return 0, err
	}
	st, _, err := buildStatement(tree, V02)
	if err != nil {
		return 0, err
	}
	payload, err := jcs.Canonical(st)
	if err != nil {
		return 0, err
	}
	return base64.StdEncoding.EncodedLen(len(payload)) + envelopeOverhead, nil
}

// BoundFindings keeps the signed envelope of p within maxEnvelope bytes by listing only the
// most severe findings (in their original order). It never hides that it did: FindingsTotal
// keeps the full count, a coverage gap names how many findings are not listed, and a COMPLETE
// legacy coverage becomes PARTIAL, since a receipt that does not list everything cannot claim
// completeness. It returns how many findings were left out; an error means even the receipt
// without findings does not fit.
func (p *Predicate) BoundFindings(maxEnvelope int) (int, error) {
	size, err := p.EnvelopeSize()
	if err != nil || size <= maxEnvelope {
		return 0, err
	}
	all := p.Findings
	total := max(p.FindingsTotal, len(all))
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return severity.Rank(all[b].Severity) - severity.Rank(all[a].Severity)
	})
	origCoverage, origTotal := p.Coverage, p.FindingsTotal
	try := func(k int) (bool, error) {
		keep := slices.Clone(order[:k])
		slices.Sort(keep)
		p.Findings = make([]Finding, 0, k)
		for _, i := range keep {
			p.Findings = append(p.Findings, all[i])
		}
		p.FindingsTotal = total
		p.Coverage = origCoverage
		p.Coverage.KnownGaps = append(slices.Clone(origCoverage.KnownGaps),
			fmt.Sprintf("%d of %d findings are not listed: the receipt is bounded to %d bytes", total-k, total, maxEnvelope))
		if p.Coverage.Status == CoverageComplete && len(p.Coverage.Strata) == 0 {
			p.Coverage.Status = CoveragePartial
		}
		size, err := p.EnvelopeSize()
		return size <= maxEnvelope, err
	}
	// Binary search for the largest number of findings that fits.
	lo, hi := 0, len(all)-1
	if ok, err := try(0); err != nil || !ok {
		p.Findings, p.FindingsTotal, p.Coverage = all, origTotal, origCoverage
		return 0, errors.Join(errors.New("bound findings: the receipt does not fit even without findings"), err)
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		ok, err := try(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if _, err := try(lo); err != nil {
		return 0, err
	}
	return total - lo, nil
}
