package review

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/pathglob"
	"github.com/lensgate/lensgate/review/runtime"
)

// MaxInline bounds the inline comments of one review; the rest stay in the advisory comment.
const MaxInline = 30

// maxCommentBytes keeps the advisory comment well inside GitHub's 65,536-character limit.
const maxCommentBytes = 60000

// maxCellBytes bounds one summary cell of the lens table.
const maxCellBytes = 600

func coverage(changed []runtime.Changed, files []diff.File, lenses []lensPlan, reviewedBy map[string]bool,
	free map[string]bool, paid, freeB budget, withheld []Gap, cfg *config.Repo, unlisted int, unlistedPaths []string) Coverage {
	cov := Coverage{FilesTotal: len(changed), Gaps: []Gap{}}
	used := map[string]bool{}
	for _, l := range lenses {
		if l.cause == "" && reviewedBy[l.runtime] {
			used[l.runtime] = true
		}
	}
	if len(used) == 0 {
		cov.Status = CoverageUnknown
		return cov
	}
	reasons := map[string][]string{}
	var order []string
	add := func(path, reason string) {
		if _, ok := reasons[path]; !ok {
			order = append(order, path)
		}
		for _, r := range reasons[path] {
			if r == reason {
				return
			}
		}
		reasons[path] = append(reasons[path], reason)
	}
	ignore := pathglob.Compile(cfg.IgnorePaths)
	for name := range used {
		if free[name] {
			for _, g := range freeB.gaps {
				add(g.Path, g.Reason)
			}
			if name == "builtin" {
				for _, c := range changed {
					if c.Status != FileRemoved && ignore.Match(c.Path) {
						add(c.Path, "matches ignore_paths: not checked by the builtin runtime")
					}
				}
			}
		} else {
			for _, g := range paid.gaps {
				add(g.Path, g.Reason)
			}
			for _, g := range withheld {
				add(g.Path, g.Reason)
			}
		}
	}
	for _, c := range changed {
		if c.Binary && c.Status != FileRemoved {
			add(c.Path, "binary file: contents not reviewed")
		}
	}
	for _, p := range order {
		cov.Gaps = append(cov.Gaps, Gap{Path: p, Reason: strings.Join(reasons[p], "; ")})
	}
	if len(unlistedPaths) > 0 {
		cov.FilesTotal += len(unlistedPaths)
		for _, p := range unlistedPaths {
			cov.Gaps = append(cov.Gaps, Gap{Path: p,
				Reason: fmt.Sprintf("beyond the %d files GitHub lists of a pull request: not read, so not reviewed", len(changed))})
		}
		unlisted = 0
	}
	if unlisted > 0 {
		cov.FilesTotal += unlisted
		cov.Gaps = append(cov.Gaps, Gap{Path: fmt.Sprintf("(%d more files)", unlisted),
			Reason: fmt.Sprintf("GitHub lists at most %d files of a pull request: these %d were not read, so not reviewed", len(changed), unlisted)})
	}
	cov.FilesReviewed = cov.FilesTotal - len(cov.Gaps) - max(unlisted-1, 0)
	if cov.FilesReviewed < 0 {
		cov.FilesReviewed = 0
	}
	cov.Status = CoverageComplete
	if len(cov.Gaps) > 0 {
		cov.Status = CoveragePartial
	}
	return cov
}

// inlineComments places findings on lines the diff shows on the head side. A finding on any
// other line stays in the advisory comment (GitHub rejects the whole review otherwise).
func inlineComments(findings []Finding, files []diff.File) []InlineComment {
	byPath := map[string]int{}
	for i := range files {
		if p := files[i].NewPath; p != "" {
			byPath[p] = i
		}
	}
	visible := map[string]map[int]bool{}
	var out []InlineComment
	// Most severe first, so the bound keeps what matters most.
	findings = slices.Clone(findings)
	slices.SortStableFunc(findings, func(a, b Finding) int { return b.Severity.Rank() - a.Severity.Rank() })
	for _, f := range findings {
		if len(out) >= MaxInline {
			break
		}
		// Notes stay in the advisory comment: inline space is for what needs attention. The
		// publisher applies the repository's review.min_inline_severity on top.
		if f.Severity.Rank() < SeverityLow.Rank() {
			continue
		}
		idx, ok := byPath[f.Path]
		if !ok || f.Line <= 0 {
			continue
		}
		lines, ok := visible[f.Path]
		if !ok {
			lines = map[int]bool{}
			files[idx].Walk(func(l diff.Line) bool {
				if l.Kind != '-' {
					lines[l.New] = true
				}
				return true
			})
			visible[f.Path] = lines
		}
		if !lines[f.Line] {
			continue
		}
		out = append(out, InlineComment{
			Lens: f.Lens, Severity: f.Severity, Path: f.Path, Line: f.Line, Side: "RIGHT", Fingerprint: f.ID, Suggestion: f.Suggestion,
			// No HTML footer: a publisher treats the body as untrusted text and escapes HTML;
			// it adds its own footer naming the lens.
			Body: fmt.Sprintf("**%s** · %s: %s\n\n%s", f.Severity, mdText(f.Lens), mdText(f.Title), mdText(f.Body)),
		})
	}
	return out
}

var outcomeIcon = map[Outcome]string{OutcomePassed: "✅ passed", OutcomeFailed: "❌ failed", OutcomePending: "⏳ pending"}

// RenderComment renders the advisory comment in Markdown. Untrusted text (summaries, finding
// messages, paths) is escaped so it cannot add HTML, hidden markers or table cells.
func RenderComment(d *Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**lensgate review: advisory** (gate: `%s`, recommendation: `%s`)\n\n", d.Gate.State, d.Recommendation)
	b.WriteString("> Automated review. It recommends; a human approves and merges. Nothing here merges automatically.\n\n")
	b.WriteString(renderWalkthrough(d.Walkthrough))
	fmt.Fprintf(&b, "**Gate %s**: %s\n\n", d.Gate.State, mdText(d.Gate.Reason))
	b.WriteString("| Lens | Role | Outcome | Runtime | Summary |\n|---|---|---|---|---|\n")
	for _, l := range d.Lenses {
		role := "advisory"
		if l.Required {
			role = "required"
		}
		summary := l.Summary
		if l.Outcome == OutcomePending && l.Cause != "" {
			summary = "Pending: " + l.Cause
		}
		// A cell stays short: 32 lenses with 4 KiB summaries would pass GitHub's comment limit.
		// The whole summary is in the check run and the JSON decision.
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdCell(l.Name), role, outcomeIcon[l.Outcome], mdCell(l.Runtime),
			mdCell(boundText(summary, maxCellBytes)))
	}
	if len(d.Intake.Messages) > 0 {
		var problems []IntakeMessage
		for _, m := range d.Intake.Messages {
			if m.Message != "" {
				problems = append(problems, m)
			}
		}
		if len(problems) > 0 {
			b.WriteString("\n### Intake\n\n")
			for _, m := range problems {
				mark := "❌"
				if m.Passed {
					mark = "ℹ️"
				}
				fmt.Fprintf(&b, "- %s **%s**: %s\n", mark, m.Check, mdText(m.Message))
			}
		}
	}
	if len(d.Findings) > 0 {
		b.WriteString("\n### Findings\n\n")
		for _, f := range d.Findings {
			if b.Len() > maxCommentBytes {
				b.WriteString("- … more findings are in the check run.\n")
				break
			}
			loc := ""
			if f.Path != "" {
				loc = " `" + mdCode(DisplayPath(f.Path))
				if f.Line > 0 {
					loc += fmt.Sprintf(":%d", f.Line)
				}
				loc += "`"
			}
			fmt.Fprintf(&b, "- **%s** (%s)%s: %s. %s <sub>%s</sub>\n", f.Severity, mdText(f.Lens), loc,
				mdText(strings.TrimSuffix(f.Title, ".")), mdText(f.Body), f.ID)
		}
	}
	status, pending := d.ReportedCoverage()
	fmt.Fprintf(&b, "\n### Coverage: %s\n\n", status)
	fmt.Fprintf(&b, "%d of %d changed file(s) reviewed.\n", d.Coverage.FilesReviewed, d.Coverage.FilesTotal)
	if pending > 0 {
		fmt.Fprintf(&b, "- %d of %d lens(es) pending: see the lens table for why.\n", pending, len(d.Lenses))
	}
	for i, g := range d.Coverage.Gaps {
		if i == 50 || b.Len() > maxCommentBytes {
			fmt.Fprintf(&b, "- … and %d more\n", len(d.Coverage.Gaps)-i)
			break
		}
		fmt.Fprintf(&b, "- `%s`: %s\n", mdCode(DisplayPath(g.Path)), mdText(g.Reason))
	}
	if line := RedactedLine(d.ModelInput); line != "" {
		b.WriteString("\n" + line + "\n")
	}
	if w := d.ModelInput.WithheldFiles; len(w) > 0 {
		fmt.Fprintf(&b, "\n%d file(s) withheld from the model (models.exclude_paths); see the coverage gaps.\n", len(w))
	}
	for _, line := range ContextLines(d) {
		b.WriteString("\n" + line + "\n")
	}
	fmt.Fprintf(&b, "\n<sub>Head `%s`, plan `%s`, diff sha256 `%s`.", digest.Short(d.Subject.HeadSHA),
		digest.Short(d.PlanDigest), digest.Short(d.Subject.ReviewedDiffDigest))
	if line := TokensLine(d); line != "" {
		b.WriteString(" " + line)
	}
	b.WriteString("</sub>\n")
	return b.String()
}

// mdText escapes untrusted text for a Markdown paragraph: no HTML, no comment markers, no
// mentions, one line.
func mdText(s string) string {
	r := strings.NewReplacer("<", "&lt;", ">", "&gt;", "\r", " ", "\n", " ", "@", "@\u200b", "`", "'",
		"[", "\\[", "]", "\\]")
	return r.Replace(noControls(s))
}

// noControls replaces control and invisible formatting characters (terminal escapes, bidi
// overrides) and invalid UTF-8 with spaces or U+FFFD.
func noControls(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
}

func mdCell(s string) string { return strings.ReplaceAll(mdText(s), "|", "\\|") }

func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(s)
}

// DisplayPath shows a file name safely on one line: a name with control characters, invalid
// UTF-8 or invisible format characters is quoted with Go escapes, the way git quotes such names.
func DisplayPath(p string) string {
	for _, r := range p {
		if r == utf8.RuneError || r == '"' || r == '\\' || !unicode.IsPrint(r) && r != ' ' {
			return strconv.Quote(p)
		}
	}
	return p
}

// PlainText makes untrusted text safe for a terminal: one line, no control or bidirectional
// formatting characters (which could move the cursor or reorder what the reader sees), valid
// UTF-8.
func PlainText(s string) string {
	return strings.Join(strings.Fields(noControls(s)), " ")
}
