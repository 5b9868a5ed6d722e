package eval

import (
	"context"

	"github.com/lensgate/lensgate/review"
)

// DefaultWindow is how many lines a finding may be away from a golden finding's lines and
// still match it.
const DefaultWindow = 5

// near reports whether a finding is where a golden finding is: the same file and, when the
// golden finding has lines, a line within window lines of them. A finding without a line
// matches only a golden finding without lines (a whole-file defect).
func near(g Golden, f review.Finding, window int) bool {
	if !g.Located() || cleanPath(f.Path) != g.Path {
		return false
	}
	if g.StartLine == 0 {
		return true
	}
	return f.Line > 0 && f.Line >= g.StartLine-window && f.Line <= g.EndLine+window
}

// confirmer decides whether a finding that is a candidate for a golden finding describes the
// same defect (the model judge); nil accepts every located candidate.
type confirmer func(ctx context.Context, g Golden, f review.Finding) (bool, error)

// candidates lists, for each golden finding, the findings that may match it: those near it,
// confirmed when a confirmer is given. A golden finding without a path can only be matched by
// the confirmer, against every finding.
func candidates(ctx context.Context, golden []Golden, findings []review.Finding, window int, confirm confirmer) ([][]int, error) {
	edges := make([][]int, len(golden))
	for gi, g := range golden {
		for fi, f := range findings {
			if g.Located() && !near(g, f, window) {
				continue
			}
			if !g.Located() && confirm == nil {
				continue
			}
			if confirm != nil {
				ok, err := confirm(ctx, g, f)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
			}
			edges[gi] = append(edges[gi], fi)
		}
	}
	return edges, nil
}

// maxMatching pairs golden findings with findings, each used at most once, as many pairs as
// possible (a maximum bipartite matching, by augmenting paths). One finding cannot stand for two
// defects, and a second finding on a defect already matched is a duplicate, not a hit. It
// returns, for each golden finding, the index of its finding or -1. The graphs here are a few
// dozen nodes, for which this short exact algorithm is enough.
func maxMatching(edges [][]int, findings int) []int {
	byFinding := make([]int, findings)
	for i := range byFinding {
		byFinding[i] = -1
	}
	var augment func(g int, seen []bool) bool
	augment = func(g int, seen []bool) bool {
		for _, f := range edges[g] {
			if seen[f] {
				continue
			}
			seen[f] = true
			if byFinding[f] < 0 || augment(byFinding[f], seen) {
				byFinding[f] = g
				return true
			}
		}
		return false
	}
	for g := range edges {
		augment(g, make([]bool, findings))
	}
	byGolden := make([]int, len(edges))
	for i := range byGolden {
		byGolden[i] = -1
	}
	for f, g := range byFinding {
		if g >= 0 {
			byGolden[g] = f
		}
	}
	return byGolden
}

// Counts are the raw numbers behind the rates.
type Counts struct {
	// Golden is the number of known defects in scope; Findings the number reported.
	Golden   int `json:"golden"`
	Findings int `json:"findings"`
	// Matched is the number of defects found (true positives): each matched by one finding.
	Matched int `json:"matched"`
	// Unmatched findings are false positives: on no known defect, or a duplicate of a finding
	// that already matched one.
	Unmatched int `json:"unmatched"`
	// Missed defects are false negatives.
	Missed int `json:"missed"`
}

func (c *Counts) add(o Counts) {
	c.Golden += o.Golden
	c.Findings += o.Findings
	c.Matched += o.Matched
	c.Unmatched += o.Unmatched
	c.Missed += o.Missed
}

// Rates are recall, precision and F1; nil where undefined (no defect to find, no finding
// reported).
type Rates struct {
	Recall    *float64 `json:"recall"`
	Precision *float64 `json:"precision"`
	F1        *float64 `json:"f1"`
}

// rates computes the rates of counts.
func (c Counts) rates() Rates {
	var r Rates
	if c.Golden > 0 {
		r.Recall = ratio(c.Matched, c.Golden)
	}
	if c.Findings > 0 {
		r.Precision = ratio(c.Matched, c.Findings)
	}
	if r.Recall != nil && r.Precision != nil {
		f1 := 0.0
		if *r.Recall+*r.Precision > 0 {
			f1 = 2 * *r.Recall * *r.Precision / (*r.Recall + *r.Precision)
		}
		r.F1 = &f1
	}
	return r
}

func ratio(a, b int) *float64 {
	v := float64(a) / float64(b)
	return &v
}

// score matches findings against golden findings and counts the result. matched[i] is the
// finding index matched to golden[i], or -1.
func score(ctx context.Context, golden []Golden, findings []review.Finding, window int, confirm confirmer) (Counts, []int, error) {
	edges, err := candidates(ctx, golden, findings, window, confirm)
	if err != nil {
		return Counts{}, nil, err
	}
	m := maxMatching(edges, len(findings))
	c := Counts{Golden: len(golden), Findings: len(findings)}
	for _, f := range m {
		if f >= 0 {
			c.Matched++
		}
	}
	c.Unmatched = c.Findings - c.Matched
	c.Missed = c.Golden - c.Matched
	return c, m, nil
}
