package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
)

// policy32 is a 32-lens policy (the maximum) with realistic instructions; every third lens is
// advisory and the rest are required.
func policy32() config.Policy {
	p := config.Policy{Version: 1, Aggregation: config.AggregationAllRequired}
	for i := range config.MaxLenses {
		l := config.Lens{
			Name:        fmt.Sprintf("lens-%02d", i),
			Preset:      "builtin",
			Instruction: strings.Repeat(fmt.Sprintf("Check aspect %d of the change, including <edge> & \"quoted\" cases. ", i), 6),
			Outcome:     config.OutcomeReview,
			Publication: config.PublicationInline,
		}
		if i%3 == 2 {
			l.Outcome = config.OutcomeAdvisory
		} else {
			l.Required = true
			p.Required = append(p.Required, l.Name)
		}
		p.Lenses = append(p.Lenses, l)
	}
	return p
}

func BenchmarkPlanDigest32(b *testing.B) {
	p := policy32()
	b.ReportAllocs()
	for b.Loop() {
		pl, err := NewPlan(p)
		if err != nil || len(pl.Digest()) != 64 {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvaluate32(b *testing.B) {
	pl, err := NewPlan(policy32())
	if err != nil {
		b.Fatal(err)
	}
	r := pl.Template()
	for i := range r.Results {
		s := "Looked at the change."
		r.Results[i].Outcome, r.Results[i].Summary = Passed, &s
	}
	r.Results[4].Outcome = Failed // lens-04 is required
	b.ReportAllocs()
	for b.Loop() {
		ev, err := Evaluate(pl, r)
		if err != nil || ev.State != Failed {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadAndEvaluate32(b *testing.B) {
	pl, err := NewPlan(policy32())
	if err != nil {
		b.Fatal(err)
	}
	r := pl.Template()
	for i := range r.Results {
		s := "Looked at the change."
		r.Results[i].Outcome, r.Results[i].Summary = Passed, &s
	}
	doc := []byte(r.Doc())
	b.ReportAllocs()
	for b.Loop() {
		rec, err := LoadReceipt("r.json", doc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Evaluate(pl, rec); err != nil {
			b.Fatal(err)
		}
	}
}
