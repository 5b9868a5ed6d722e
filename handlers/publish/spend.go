package publish

import (
	"fmt"
	"strings"

	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/review"
)

// modelSection says what the model runtimes were given and what they cost: the secret values
// replaced, the files withheld, and the tokens per review and per lens. The check summary and
// the advisory comment both carry it, so a surprise bill or a leak is visible where the result
// is. It is empty when no model was involved.
func modelSection(d *review.Decision) string {
	var lines []string
	if s := review.RedactedLine(d.ModelInput); s != "" {
		lines = append(lines, s)
	}
	if w := d.ModelInput.WithheldFiles; len(w) > 0 {
		names := make([]string, 0, min(len(w), 10))
		for i, p := range w {
			if i == 10 {
				break
			}
			names = append(names, code(p, 120))
		}
		more := ""
		if len(w) > 10 {
			more = fmt.Sprintf(" and %d more", len(w)-10)
		}
		lines = append(lines, fmt.Sprintf("%d file(s) withheld from the model (models.exclude_paths): %s%s.", len(w), strings.Join(names, ", "), more))
	}
	lines = append(lines, review.ContextLines(d)...)
	if s := review.TokensLine(d); s != "" {
		lines = append(lines, s)
	}
	if len(lines) == 0 {
		return ""
	}
	return "\n" + strings.Join(lines, "\n\n") + "\n"
}

// auditTokens is a decision's model spend for the audit ledger, or nil without model calls.
func auditTokens(d *review.Decision) *pdp.Tokens {
	t := d.Tokens
	if len(t.Calls) == 0 {
		return nil
	}
	at := &pdp.Tokens{Prompt: t.Prompt, Completion: t.Completion, Total: t.Total, Estimated: t.Estimated, Calls: len(t.Calls)}
	for _, l := range d.Lenses {
		if l.Tokens != nil {
			if at.Lenses == nil {
				at.Lenses = map[string]int{}
			}
			at.Lenses[l.Name] = l.Tokens.Total
		}
	}
	return at
}
