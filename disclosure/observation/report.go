package observation

import (
	"fmt"
	"strings"
)

// Text renders the axis for a person: the verdict, why, what was observed, and in plain words
// what a MATCH does and does not establish.
func (r *Result) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "runner observation: %s\n", r.RunnerObservation)
	if r.RunnerObservation == Absent {
		b.WriteString("  no observation was given; only the self-declared receipt speaks for this review\n")
		return b.String()
	}
	if r.ObservationDigest != "" {
		fmt.Fprintf(&b, "  observation digest: sha256:%s\n", r.ObservationDigest)
	}
	if len(r.ReasonCodes) > 0 {
		fmt.Fprintf(&b, "  reason codes: %s\n", strings.Join(r.ReasonCodes, ", "))
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "  - %s\n", e)
		}
	}
	if r.WindowStarted != "" {
		fmt.Fprintf(&b, "  observed window: %s .. %s\n", r.WindowStarted, r.WindowFinished)
	}
	for _, c := range r.Calls {
		fmt.Fprintf(&b, "  call %s: %s (%s), %s .. %s", strings.Join(c.Lenses, ", "), c.Runtime, c.Identity, c.Started, c.Finished)
		if c.Error != "" {
			fmt.Fprintf(&b, ", failed: %s", c.Error)
		}
		b.WriteString("\n")
	}
	if r.RunnerObservation == Match {
		b.WriteString("  what this shows: the holder of the witness key ran these runtimes, with these identities,\n" +
			"    on exactly these request bytes and files, between these times on its own clock, received\n" +
			"    exactly these response bytes, and derived from them the findings the receipt lists\n")
	} else {
		b.WriteString("  what this means: the observation does not back this receipt; read the receipt as a\n" +
			"    self-declaration only\n")
	}
	b.WriteString("  what it does not show: that the review is correct or complete, that the model or adapter\n" +
		"    is independent of the change's author, or that the runner itself is honest; it is a second\n" +
		"    signed statement, by a key kept apart from the receipt key, not a proof of quality\n")
	return b.String()
}
