package policy

import (
	"slices"
	"testing"

	"github.com/lensgate/lensgate/config"
)

// testPolicy has lenses in the order a, b, c, d; required = [b, a] (so blocking lists follow
// that order, not plan order); c is a review-outcome lens left out of required (advisory for
// evaluation) and d has the advisory outcome.
func testPolicy(agg string) config.Policy {
	lens := func(name, outcome string) config.Lens {
		return config.Lens{Name: name, Preset: "p", Instruction: "Check " + name + ".", Outcome: outcome, Publication: config.PublicationReview}
	}
	p := config.Policy{Version: 1, Aggregation: agg, Required: []string{"b", "a"}, Lenses: []config.Lens{
		lens("a", config.OutcomeReview), lens("b", config.OutcomeReview), lens("c", config.OutcomeReview), lens("d", config.OutcomeAdvisory),
	}}
	p.Lenses[0].Required, p.Lenses[1].Required = true, true
	return p
}

func mustPlan(t testing.TB, p config.Policy) Plan {
	t.Helper()
	pl, err := NewPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func outcomes(pl Plan, a, b, c, d Outcome) Receipt {
	// Receipt order differs from plan order on purpose.
	return Receipt{Version: 1, PlanDigest: pl.Digest(), Results: []Result{
		{Lens: "d", Outcome: d}, {Lens: "c", Outcome: c}, {Lens: "b", Outcome: b}, {Lens: "a", Outcome: a},
	}}
}

func TestAggregation(t *testing.T) {
	P, F, W := Passed, Failed, Pending
	tests := []struct {
		agg        string
		a, b, c, d Outcome
		state      Outcome
		bf, bp     []string
		af, ap     []string
	}{
		{config.AggregationAllRequired, P, P, P, P, P, nil, nil, nil, nil},
		{config.AggregationAllRequired, P, P, F, F, P, nil, nil, []string{"c", "d"}, nil},
		{config.AggregationAllRequired, P, P, W, W, P, nil, nil, nil, []string{"c", "d"}},
		{config.AggregationAllRequired, F, P, P, P, F, []string{"a"}, nil, nil, nil},
		{config.AggregationAllRequired, W, P, P, P, W, nil, []string{"a"}, nil, nil},
		{config.AggregationAllRequired, F, W, P, P, F, []string{"a"}, []string{"b"}, nil, nil},
		{config.AggregationAllRequired, F, F, P, P, F, []string{"b", "a"}, nil, nil, nil},
		{config.AggregationAnyRequired, F, P, P, P, P, []string{"a"}, nil, nil, nil},
		{config.AggregationAnyRequired, W, P, F, P, P, nil, []string{"a"}, []string{"c"}, nil},
		{config.AggregationAnyRequired, F, F, P, P, F, []string{"b", "a"}, nil, nil, nil},
		{config.AggregationAnyRequired, F, W, P, P, W, []string{"a"}, []string{"b"}, nil, nil},
		{config.AggregationAnyRequired, W, W, P, P, W, nil, []string{"b", "a"}, nil, nil},
	}
	for _, tt := range tests {
		name := tt.agg + "/" + string(tt.a) + "," + string(tt.b) + "," + string(tt.c) + "," + string(tt.d)
		t.Run(name, func(t *testing.T) {
			pl := mustPlan(t, testPolicy(tt.agg))
			ev, err := Evaluate(pl, outcomes(pl, tt.a, tt.b, tt.c, tt.d))
			if err != nil {
				t.Fatal(err)
			}
			if ev.State != tt.state {
				t.Errorf("state %s, want %s", ev.State, tt.state)
			}
			for _, l := range []struct {
				name      string
				got, want []string
			}{{"blocking failures", ev.BlockingFailures, tt.bf}, {"blocking pending", ev.BlockingPending, tt.bp},
				{"advisory failures", ev.AdvisoryFailures, tt.af}, {"advisory pending", ev.AdvisoryPending, tt.ap}} {
				if !slices.Equal(l.got, l.want) && !(len(l.got) == 0 && len(l.want) == 0) {
					t.Errorf("%s %v, want %v", l.name, l.got, l.want)
				}
			}
			if ev.Results[0].Lens != "d" {
				t.Error("results must keep receipt order")
			}
		})
	}
}

func TestEvaluateMismatches(t *testing.T) {
	pl := mustPlan(t, testPolicy(config.AggregationAllRequired))
	other := mustPlan(t, testPolicy(config.AggregationAnyRequired))
	full := outcomes(pl, Passed, Passed, Passed, Passed)
	tests := []struct {
		name   string
		mutate func(r *Receipt)
		msg    string
	}{
		{"other plan", func(r *Receipt) { r.PlanDigest = other.Digest() }, "Agent review results do not match the current policy plan"},
		{"other plan wins over unknown lens", func(r *Receipt) {
			r.PlanDigest = other.Digest()
			r.Results = append(r.Results, Result{Lens: "zz", Outcome: Passed})
		}, "Agent review results do not match the current policy plan"},
		{"version", func(r *Receipt) { r.Version = 2 }, "Agent review results version does not match the current policy"},
		{"unknown lenses, first sorted", func(r *Receipt) {
			r.Results = append(r.Results, Result{Lens: "zz", Outcome: Passed}, Result{Lens: "m", Outcome: Failed})
		}, "Agent review results name unknown lens m"},
		{"missing lenses in plan order", func(r *Receipt) { r.Results = r.Results[1:3] }, "Agent review results are missing lens(es): a, d"},
		{"nothing", func(r *Receipt) { r.Results = nil }, "Agent review results are missing lens(es): a, b, c, d"},
		{"invalid name", func(r *Receipt) { r.Results[0].Lens = "D" }, "Agent review results contain an invalid lens name"},
		{"repeat", func(r *Receipt) { r.Results[0].Lens = "c" }, "Agent review results repeat lens c"},
		{"bad outcome", func(r *Receipt) { r.Results[0].Outcome = "ok" }, "Agent review outcome for d is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := full
			r.Results = slices.Clone(full.Results)
			tt.mutate(&r)
			_, err := Evaluate(pl, r)
			if err == nil || err.Error() != tt.msg {
				t.Fatalf("got %v, want %q", err, tt.msg)
			}
		})
	}
	if _, err := Evaluate(Plan{}, full); err == nil {
		t.Error("a zero plan must not evaluate")
	}
}
