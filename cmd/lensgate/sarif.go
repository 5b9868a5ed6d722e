package main

import (
	"fmt"
	"io"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/lensgate/lensgate/review"
)

// sarifLevel maps a severity onto SARIF's levels: what fails a lens is an error, a concern a
// warning, the rest notes.
func sarifLevel(s review.Severity) string {
	switch s {
	case review.SeverityCritical, review.SeverityHigh:
		return "error"
	case review.SeverityMedium:
		return "warning"
	}
	return "note"
}

// writeSARIF writes the review as a SARIF 2.1.0 log: one run of the tool "lensgate", one rule
// per finding rule (a finding without one, from a model, gets "lens/<lens>"), one result per
// finding with its lens and severity as properties and its id as a partial fingerprint, so that
// code scanning tracks it across pushes. The gate, recommendation and every lens outcome are run
// properties; a receipt and an observation, when signed, are too.
func writeSARIF(w io.Writer, d *review.Decision, receipt, observation []byte) error {
	log := sarif.NewReport()
	run := sarif.NewRun()
	run.Tool = sarif.NewTool()
	run.Tool.Driver = sarif.NewToolComponent().WithName("lensgate").WithVersion(version)
	for _, f := range d.Findings {
		id := f.Rule
		if id == "" {
			id = "lens/" + f.Lens
		}
		if run.GetRuleIndex(id) < 0 {
			run.AddRule(id).WithShortDescription(sarif.NewMultiformatMessageString().WithText(f.Title))
		}
		res := run.CreateResultForRule(id).
			WithLevel(sarifLevel(f.Severity)).
			WithMessage(sarif.NewTextMessage(f.Title + ": " + f.Body)).
			WithPartialFingerprints(map[string]string{"lensgate/v1": f.ID}).
			WithProperties(sarif.NewPropertyBag().Add("lens", f.Lens).Add("severity", string(f.Severity)))
		if f.Path != "" {
			loc := sarif.NewPhysicalLocation().WithArtifactLocation(sarif.NewSimpleArtifactLocation(f.Path).WithURIBaseID("%SRCROOT%"))
			if f.Line > 0 {
				loc = loc.WithRegion(sarif.NewRegion().WithStartLine(f.Line))
			}
			res.AddLocation(sarif.NewLocationWithPhysicalLocation(loc))
		}
	}
	lenses := make([]map[string]any, 0, len(d.Lenses))
	for _, l := range d.Lenses {
		lenses = append(lenses, map[string]any{"name": l.Name, "required": l.Required, "outcome": string(l.Outcome),
			"runtime": l.Runtime, "summary": l.Summary, "cause": l.Cause})
	}
	props := sarif.NewPropertyBag().Add("gate", string(d.Gate.State)).Add("gateReason", d.Gate.Reason).
		Add("recommendation", string(d.Recommendation)).Add("planDigest", d.PlanDigest).Add("lenses", lenses).
		Add("headSha", d.Subject.HeadSHA).Add("baseSha", d.Subject.BaseSHA)
	if receipt != nil {
		props.Add("receipt", string(receipt))
	}
	if observation != nil {
		props.Add("observation", string(observation))
	}
	run.WithProperties(props)
	log.AddRun(run)
	if err := log.PrettyWrite(w); err != nil {
		return fmt.Errorf("write SARIF: %w", err)
	}
	_, err := fmt.Fprintln(w)
	return err
}
