package publish

import (
	"fmt"
	"strings"

	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
)

// walkthroughOpenBytes is the longest walkthrough shown open; a longer one is collapsed.
const walkthroughOpenBytes = 1500

// walkthroughSection is the walkthrough at the top of the advisory comment ("" when turned
// off). Everything the author or a model wrote is escaped (clean) and the model's summary is
// quoted and named as model output, so none of it can pass for lensgate's own words.
func walkthroughSection(w *review.Walkthrough) string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	if w.Title != "" || w.Purpose != "" {
		b.WriteString("**What and why** (from the description): " + oneLine(w.Title, 300))
		if w.Purpose != "" {
			b.WriteString(" — " + oneLine(w.Purpose, 700))
		}
		b.WriteString("\n")
	}
	if len(w.LinkedIssues) > 0 {
		var refs []string
		for _, n := range w.LinkedIssues {
			refs = append(refs, fmt.Sprintf("#%d", n))
		}
		b.WriteString("Linked issues: " + strings.Join(refs, ", ") + "\n")
	}
	b.WriteString("\n")
	if w.Summary != "" {
		fmt.Fprintf(&b, "**Summary** by the model %s at `%s` (model output, not a review outcome):\n\n", code(w.SummaryModel, 80), short(w.SummaryHead))
		b.WriteString(quoted(w.Summary, review.MaxWalkthroughSummaryBytes+500) + "\n")
	}
	if w.SummaryNote != "" {
		b.WriteString("_No model summary of this head: " + oneLine(w.SummaryNote, 300) + "._\n\n")
	}
	if s := w.Since; s != nil {
		paths := make([]string, 0, len(s.Paths))
		for _, p := range s.Paths {
			paths = append(paths, code(p, 120))
		}
		more := ""
		if n := s.Files - len(s.Paths); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		fmt.Fprintf(&b, "**Since the last reviewed head** `%s`: %d file(s), +%d −%d: %s%s.\n\n", short(s.From), s.Files, s.Added, s.Removed,
			strings.Join(paths, ", "), more)
	}
	b.WriteString(areaTable(w))
	if len(w.Risks) > 0 {
		b.WriteString("**Read first**\n\n")
		for _, r := range w.Risks {
			b.WriteString("- " + code(r.Path, 200) + ": " + oneLine(r.Why, 300) + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString(testsLine(w))
	if len(w.Protected) > 0 {
		var ps []string
		for i, p := range w.Protected {
			if i == 10 {
				ps = append(ps, fmt.Sprintf("and %d more", len(w.Protected)-i))
				break
			}
			ps = append(ps, code(p, 200))
		}
		b.WriteString("Protected paths changed: " + strings.Join(ps, ", ") + ".\n")
	}
	body := b.String()
	open := " open"
	if len(body) > walkthroughOpenBytes {
		open = ""
	}
	areas := len(w.Areas) + w.MoreAreas
	return fmt.Sprintf("<details%s><summary><b>Walkthrough</b>: %d file(s) in %d area(s), +%d −%d</summary>\n\n%s\n</details>\n\n",
		open, w.Files, areas, w.Added, w.Removed, body)
}

// areaTable lists the changed areas with their size and the lenses that looked at them.
func areaTable(w *review.Walkthrough) string {
	if len(w.Areas) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| area | files | + | − | lenses that looked |\n|---|---:|---:|---:|---|\n")
	for _, a := range w.Areas {
		lenses := "none"
		if len(a.Lenses) > 0 {
			lenses = oneLine(strings.Join(a.Lenses, ", "), 300)
		}
		fmt.Fprintf(&b, "| %s | %d | +%d | −%d | %s |\n", code(a.Name, 120), a.Files, a.Added, a.Removed, lenses)
	}
	if w.MoreAreas > 0 {
		fmt.Fprintf(&b, "| … %d more area(s) | | | | |\n", w.MoreAreas)
	}
	return b.String() + "\n"
}

// testsLine says whether tests changed beside the code.
func testsLine(w *review.Walkthrough) string {
	switch {
	case w.TestFiles > 0:
		return fmt.Sprintf("Tests: %d test file(s) changed beside %d source file(s).\n", w.TestFiles, w.CodeFiles)
	case w.CodeFiles > 0:
		return fmt.Sprintf("Tests: no test file changed; %d source file(s) did.\n", w.CodeFiles)
	}
	return ""
}

// quoted is untrusted Markdown as a block quote: escaped, bounded, every line quoted so the
// text cannot end the quote and pass for lensgate's own words.
func quoted(s string, limit int) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(clean(truncate(s, limit))), "\n") {
		b.WriteString("> " + strings.TrimRight(line, " \t\r") + "\n")
	}
	return b.String()
}

// answerBody is the reply to a command: lensgate's own sentence on one line, or a model's
// answer to a question, quoted and named as model output. It ends with the hidden marker of
// the command it answers, so the command is never answered twice.
func answerBody(a publication.Answer) string {
	end := "\n\n" + pull.MarkerAnswer + fmt.Sprint(a.CommentID) + pull.MarkerEnd
	if a.Model == "" {
		return oneLine(a.Text, 1500) + end
	}
	return "Answer to " + code(a.Asker, 80) + "'s question, written by the model " + code(a.Model, 80) +
		" (model output: it is not a review outcome and changes no lens and no gate):\n\n" + quoted(a.Text, review.MaxAnswerBytes+500) + end
}

// recordProse is what the details record says of the walkthrough and the answers.
func recordProse(d *review.Decision) []details.Prose {
	var out []details.Prose
	if w := d.Walkthrough; w != nil && (w.Summary != "" || w.SummaryTokens != nil) {
		out = append(out, details.Prose{Kind: runtime.ProseWalkthrough, Model: w.SummaryModel, Text: w.Summary, Tokens: recordTokens(w.SummaryTokens)})
	}
	for _, a := range d.Answers {
		out = append(out, details.Prose{Kind: runtime.ProseAnswer, Asker: a.User, Question: a.Question, Model: a.Model, Text: a.Text,
			Tokens: recordTokens(a.Tokens)})
	}
	return out
}
