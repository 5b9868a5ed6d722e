package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review"
)

// writeWalkthrough prints the walkthrough for a terminal. The title, the description and a
// model's summary are untrusted: they go through review.PlainText, paths through
// review.DisplayPath.
func writeWalkthrough(w io.Writer, wt *review.Walkthrough) {
	if wt == nil {
		return
	}
	fmt.Fprintf(w, "Walkthrough: %d file(s) in %d area(s), +%d -%d\n", wt.Files, len(wt.Areas)+wt.MoreAreas, wt.Added, wt.Removed)
	if wt.Title != "" {
		fmt.Fprintf(w, "  What and why: %s\n", review.PlainText(wt.Title))
	}
	if wt.Purpose != "" {
		fmt.Fprintf(w, "    %s\n", review.PlainText(wt.Purpose))
	}
	if wt.Summary != "" {
		fmt.Fprintf(w, "  Summary by the model %s at %s (model output):\n", review.PlainText(wt.SummaryModel), digest.Short(wt.SummaryHead))
		for _, line := range strings.Split(wt.Summary, "\n") {
			fmt.Fprintf(w, "    %s\n", review.PlainText(line))
		}
	}
	if wt.SummaryNote != "" {
		fmt.Fprintf(w, "  No model summary: %s\n", review.PlainText(wt.SummaryNote))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  AREA\tFILES\t+\t-\tLENSES THAT LOOKED")
	for _, a := range wt.Areas {
		lenses := strings.Join(a.Lenses, ", ")
		if lenses == "" {
			lenses = "none"
		}
		fmt.Fprintf(tw, "  %s\t%d\t+%d\t-%d\t%s\n", review.DisplayPath(a.Name), a.Files, a.Added, a.Removed, lenses)
	}
	if wt.MoreAreas > 0 {
		fmt.Fprintf(tw, "  ... %d more area(s)\t\t\t\t\n", wt.MoreAreas)
	}
	tw.Flush()
	if len(wt.Risks) > 0 {
		fmt.Fprintln(w, "  Read first:")
		for _, r := range wt.Risks {
			fmt.Fprintf(w, "    %s: %s\n", review.DisplayPath(r.Path), review.PlainText(r.Why))
		}
	}
	switch {
	case wt.TestFiles > 0:
		fmt.Fprintf(w, "  Tests: %d test file(s) changed beside %d source file(s).\n", wt.TestFiles, wt.CodeFiles)
	case wt.CodeFiles > 0:
		fmt.Fprintf(w, "  Tests: no test file changed; %d source file(s) did.\n", wt.CodeFiles)
	}
	if len(wt.Protected) > 0 {
		var ps []string
		for _, p := range wt.Protected {
			ps = append(ps, review.DisplayPath(p))
		}
		fmt.Fprintf(w, "  Protected paths changed: %s\n", strings.Join(ps, ", "))
	}
	fmt.Fprintln(w)
}
