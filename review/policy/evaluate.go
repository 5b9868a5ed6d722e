package policy

import (
	"slices"
	"strings"

	"github.com/lensgate/lensgate/config"
)

// Evaluation is the gate decision for one receipt against one plan.
type Evaluation struct {
	Version    int
	PlanDigest string
	State      Outcome
	// BlockingFailures and BlockingPending are required lenses, in the policy's required order.
	BlockingFailures []string
	BlockingPending  []string
	// AdvisoryFailures and AdvisoryPending are the other lenses, in plan order. They never
	// change State.
	AdvisoryFailures []string
	AdvisoryPending  []string
	Results          []Result // in receipt order
}

// Passed reports whether the gate passed (exit code 0).
func (e Evaluation) Passed() bool { return e.State == Passed }

// Evaluate matches a receipt against the plan and aggregates the outcomes. A receipt for another
// plan, or one that names an unknown lens or leaves a lens out, is an error: a missing lens is
// never read as pending or passing.
func Evaluate(p Plan, r Receipt) (Evaluation, error) {
	if p.digest == "" {
		return Evaluation{}, configErr("Agent review plan was not built with NewPlan")
	}
	if r.Version != p.Version {
		return Evaluation{}, configErr("Agent review results version does not match the current policy")
	}
	if r.PlanDigest != p.digest {
		return Evaluation{}, configErr("Agent review results do not match the current policy plan")
	}
	got := make(map[string]Result, len(r.Results))
	for _, res := range r.Results {
		if !config.ValidName(res.Lens) {
			return Evaluation{}, configErr("Agent review results contain an invalid lens name")
		}
		if _, dup := got[res.Lens]; dup {
			return Evaluation{}, configErr("Agent review results repeat lens " + res.Lens)
		}
		if !res.Outcome.Valid() {
			return Evaluation{}, configErr("Agent review outcome for " + res.Lens + " is invalid")
		}
		if res.Summary != nil && (config.IsBlank(*res.Summary) || len(*res.Summary) > MaxSummaryBytes || strings.ContainsRune(*res.Summary, 0)) {
			return Evaluation{}, configErr("Agent review result summary for " + res.Lens + " is invalid")
		}
		got[res.Lens] = res
	}
	inPlan := make(map[string]bool, len(p.Items))
	for _, it := range p.Items {
		inPlan[it.Name] = true
	}
	var unknown []string
	for name := range got {
		if !inPlan[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Evaluation{}, configErr("Agent review results name unknown lens " + unknown[0])
	}
	var missing []string
	for _, it := range p.Items {
		if _, ok := got[it.Name]; !ok {
			missing = append(missing, it.Name)
		}
	}
	if len(missing) > 0 {
		return Evaluation{}, configErr("Agent review results are missing lens(es): " + strings.Join(missing, ", "))
	}

	ev := Evaluation{
		Version: r.Version, PlanDigest: r.PlanDigest, Results: slices.Clone(r.Results),
		BlockingFailures: []string{}, BlockingPending: []string{},
		AdvisoryFailures: []string{}, AdvisoryPending: []string{},
	}
	anyPassed := false
	for _, name := range p.Required {
		switch got[name].Outcome {
		case Passed:
			anyPassed = true
		case Failed:
			ev.BlockingFailures = append(ev.BlockingFailures, name)
		case Pending:
			ev.BlockingPending = append(ev.BlockingPending, name)
		}
	}
	for _, it := range p.Items {
		if it.Required {
			continue
		}
		switch got[it.Name].Outcome {
		case Failed:
			ev.AdvisoryFailures = append(ev.AdvisoryFailures, it.Name)
		case Pending:
			ev.AdvisoryPending = append(ev.AdvisoryPending, it.Name)
		}
	}
	ev.State = aggregate(p.Aggregation, anyPassed, len(p.Required), len(ev.BlockingFailures), len(ev.BlockingPending))
	return ev, nil
}

func aggregate(mode string, anyPassed bool, required, failed, pending int) Outcome {
	if mode == config.AggregationAnyRequired {
		switch {
		case anyPassed:
			return Passed
		case pending == 0 && failed == required:
			return Failed
		default:
			return Pending
		}
	}
	switch {
	case failed > 0:
		return Failed
	case pending > 0:
		return Pending
	default:
		return Passed
	}
}
