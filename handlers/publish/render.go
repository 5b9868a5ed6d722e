package publish

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/review"
)

// Hidden markers. Untrusted text is sanitised so it can never contain them.
const (
	markerAdvisory = pull.MarkerAdvisory
	markerReceipt  = "<!-- lensgate:receipt -->"
	markerObserved = "<!-- lensgate:observation -->"
	markerReview   = "<!-- lensgate:review "
	markerFP       = pull.MarkerFingerprint
	markerState    = "<!-- lensgate:state "
	markerHeads    = "<!-- lensgate:heads "
	markerEnd      = pull.MarkerEnd
)

// GitHub limits.
const (
	maxCheckText   = 65535
	maxCommentBody = 65536
	// maxReceiptEnvelope keeps a signed receipt within half of the check text and of a comment,
	// with room for the section around it.
	maxReceiptEnvelope = maxCheckText/2 - 2048
	// maxObservationEnvelope bounds the runner's observation beside the receipt, so both fit
	// the check text and the comment with room for the review itself.
	maxObservationEnvelope = 16 << 10
	annotationBatch        = 50
	maxInlinePerRun        = 30
	maxFindingDetail       = 600
)

var (
	reFence = regexp.MustCompile("`{3,}")
	// reMention finds an @ that could start a mention (a user or team GitHub would notify) or
	// end the local part of an e-mail autolink.
	reMention = regexp.MustCompile(`@([^\x{200b}])`)
	// reIssueRef finds what GitHub turns into a link to an issue or pull request: #123,
	// owner/repo#123 and GH-123.
	reIssueRef = regexp.MustCompile(`(#|(?i:\bgh-))([0-9])`)
	// reWWW finds the start of a www. autolink.
	reWWW = regexp.MustCompile(`(?i)\b(www)\.`)
)

// clean makes untrusted text (titles, bodies, paths from a runtime, configuration problems)
// inert in Markdown: no HTML (so no fake markers, no <details> that swallows the rest, no
// images, no <url> autolinks), no links, images or reference definitions ([ and ] are
// escaped), no bare URL, www. or e-mail autolinks, no #123 or owner/repo#5 references, no
// disclosure markers, no code fences that could close ours, and no @mentions that would make
// the App notify whoever a pull request names. Applying it twice changes nothing, so text a
// runtime already escaped is not escaped again.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, block.Begin, "")
	s = strings.ReplaceAll(s, block.End, "")
	s = strings.ReplaceAll(s, "<", "&lt;")
	s = strings.ReplaceAll(s, "-->", "--&gt;")
	s = escapeBrackets(s)
	s = strings.ReplaceAll(s, "://", ":\u200b//")
	s = reWWW.ReplaceAllString(s, "$1\u200b.")
	s = reIssueRef.ReplaceAllString(s, "$1\u200b$2")
	s = reMention.ReplaceAllString(s, "@\u200b$1")
	return reFence.ReplaceAllString(s, "``")
}

// plain is untrusted text for a field GitHub shows as plain text (annotation titles and
// messages): Markdown escapes would show literally, so only invalid UTF-8 is replaced.
func plain(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// plainLine is plain text on one line.
func plainLine(s string) string { return strings.Join(strings.Fields(plain(s)), " ") }

// escapeBrackets puts a backslash before every [ and ] that is not escaped yet, so no link,
// image or reference definition can start. A bracket after an odd number of backslashes is
// already literal.
func escapeBrackets(s string) string {
	if !strings.ContainsAny(s, "[]") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	backslashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c == '[' || c == ']') && backslashes%2 == 0 {
			b.WriteByte('\\')
		}
		if c == '\\' {
			backslashes++
		} else {
			backslashes = 0
		}
		b.WriteByte(c)
	}
	return b.String()
}

// code is untrusted text for inside a code span: on one line and without a backtick that
// would end the span early. A code span shows HTML as text and GitHub notifies no one for an @
// inside one, so < and a ref like owner/repo@main stay as written (an entity would show
// literally). Only comment delimiters are broken, invisibly, so no hidden marker can be faked.
func code(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, block.Begin, "")
	s = strings.ReplaceAll(s, block.End, "")
	s = strings.ReplaceAll(s, "<!--", "<\u200b!--")
	s = strings.ReplaceAll(s, "-->", "--\u200b>")
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "`", "'")
	s = strings.ReplaceAll(s, "|", `\|`)
	return "`" + truncate(s, limit) + "`"
}

// oneLine is clean text on a single line, safe inside a table cell.
func oneLine(s string, limit int) string {
	s = clean(s)
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	return truncate(s, limit)
}

// truncate cuts s to at most limit bytes on a rune boundary, marking the cut.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const mark = "…"
	if limit <= len(mark) {
		return "" // no room even for the mark
	}
	cut := limit - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func outcomeIcon(o review.Outcome) string {
	switch o {
	case review.OutcomePassed:
		return "✅ passed"
	case review.OutcomeFailed:
		return "❌ failed"
	}
	return "⏳ pending"
}

// gateTitle is the one-line headline of a decision.
func gateTitle(d *review.Decision) string {
	switch d.Gate.State {
	case review.OutcomePassed:
		return "lensgate: gate passed"
	case review.OutcomeFailed:
		return fmt.Sprintf("lensgate: gate failed (%d blocking)", len(d.Gate.BlockingFailures))
	}
	if len(d.Gate.BlockingPending) == 1 && d.Gate.BlockingPending[0] == review.OwnerApprovalName {
		return "lensgate: waiting for code-owner approval"
	}
	if len(d.Gate.BlockingPending) > 0 {
		return fmt.Sprintf("lensgate: required lens pending (%s)", oneLine(strings.Join(d.Gate.BlockingPending, ", "), 200))
	}
	return "lensgate: review pending"
}

// lensTable renders the per-lens table.
func lensTable(d *review.Decision) string {
	var b strings.Builder
	b.WriteString("| Lens | Required | Publication | Outcome | Findings | Note |\n|---|---|---|---|---|---|\n")
	for _, l := range d.Lenses {
		req := "advisory"
		if l.Required {
			req = "required"
		}
		note := l.Summary
		if l.Cause != "" {
			note = "pending: " + l.Cause
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s |\n", oneLine(l.Name, 64), req, oneLine(l.Publication, 16),
			outcomeIcon(l.Outcome), len(l.Findings), oneLine(note, 200))
	}
	if len(d.Lenses) == 0 {
		b.WriteString("| — | — | — | " + outcomeIcon(d.Gate.State) + " | 0 | no lens ran |\n")
	}
	return b.String()
}

// findingLine renders one finding as a list item.
func findingLine(f review.Finding) string {
	loc := ""
	if f.Path != "" {
		where := f.Path
		if f.Line > 0 {
			where += fmt.Sprintf(":%d", f.Line)
		}
		loc = " " + code(where, 210)
	}
	s := fmt.Sprintf("- **%s** [%s]%s %s", oneLine(string(f.Severity), 16), oneLine(f.Lens, 64), loc, oneLine(f.Title, 300))
	switch f.Disposition {
	case review.DispositionFixed:
		s = "- ~~" + strings.TrimPrefix(s, "- ") + "~~ fixed in " + code(f.FixCommit, 40)
	case review.DispositionDismissed:
		s = "- ~~" + strings.TrimPrefix(s, "- ") + "~~ dismissed: " + oneLine(f.Reason, 300)
	default:
		if f.Body != "" {
			s += " — " + oneLine(f.Body, maxFindingDetail)
		}
	}
	if review.ValidFindingID(f.ID) {
		s += " · " + code(f.ID, 16)
	}
	return s + "\n"
}

// summary is the check-run summary: headline reason and the per-lens table.
func summary(d *review.Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**\n\n", gateTitle(d))
	if d.Gate.Reason != "" {
		b.WriteString(clean(truncate(d.Gate.Reason, 4000)) + "\n\n")
	}
	b.WriteString(lensTable(d))
	status, pending := d.ReportedCoverage()
	fmt.Fprintf(&b, "\nCoverage: %s (%d of %d files reviewed", oneLine(status, 16), d.Coverage.FilesReviewed, d.Coverage.FilesTotal)
	if pending > 0 {
		fmt.Fprintf(&b, "; %d of %d lens(es) pending", pending, len(d.Lenses))
	}
	b.WriteString(").\n")
	b.WriteString(modelSection(d))
	if s := scopeLine(d); s != "" {
		b.WriteString(s + "\n")
	}
	b.WriteString("\nlensgate recommends; it never approves or merges. A human decides.\n")
	return truncate(b.String(), maxCheckText)
}

// receiptSection renders the signed receipt collapsed, for comments and check text.
func receiptSection(envelope []byte, receiptDigest, subjectDigest string) string {
	if len(envelope) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(markerReceipt + "\n<details><summary>Signed receipt <code>sha256:" + receiptDigest + "</code></summary>\n\n")
	b.WriteString("Subject digest: `" + subjectDigest + "`. Verify with `lensgate receipt verify --envelope receipt.json --public-key KEY --subject-digest " + subjectDigest + " --body body.md` (see docs/publishing.md).\n\n")
	b.WriteString("```json\n")
	b.WriteString(strings.TrimSuffix(string(envelope), "\n"))
	b.WriteString("\n```\n</details>\n")
	return b.String()
}

// observationSection publishes the runner's observation beside the receipt: one line that
// says the review was also observed, with the observation's digest, and the envelope itself.
func observationSection(envelope []byte, digest string) string {
	if len(envelope) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nThis review was also observed by the runner: observation `sha256:" + digest + "`, signed with the witness key.\n")
	b.WriteString(markerObserved + "\n<details><summary>Runner observation <code>sha256:" + digest + "</code></summary>\n\n")
	b.WriteString("What the runner saw while it ran each lens (runtime identity, its own clock, digests of the exact bytes). " +
		"Verify with `lensgate receipt verify --envelope receipt.json --public-key KEY --observation observation.json --witness-key WITNESS_KEY` (see docs/review-run.md).\n\n")
	b.WriteString("```json\n")
	b.WriteString(strings.TrimSuffix(string(envelope), "\n"))
	b.WriteString("\n```\n</details>\n")
	return b.String()
}

// extractEnvelope reads the receipt back from a comment lensgate wrote.
func extractEnvelope(body string) []byte { return details.ExtractEnvelope(body) }

// extractObservation reads the runner's observation back from a comment lensgate wrote.
func extractObservation(body string) []byte { return details.ExtractObservation(body) }

// checkText is the check-run text: every finding and the receipt, within GitHub's limit. The
// receipt is kept whole; findings are cut first.
func checkText(d *review.Decision, moved []string, notes, receipt, record string) string {
	var b strings.Builder
	if len(d.Findings) > 0 {
		b.WriteString("### Findings\n\n")
		for _, f := range sortedFindings(d.Findings) {
			b.WriteString(findingLine(f))
		}
		b.WriteString("\n")
	}
	if len(moved) > 0 {
		b.WriteString("### Not placed inline\n\n")
		for _, m := range moved {
			b.WriteString(m)
		}
		b.WriteString("\n")
	}
	for _, g := range d.Coverage.Gaps {
		fmt.Fprintf(&b, "- gap: %s — %s\n", code(g.Path, 200), oneLine(g.Reason, 200))
	}
	const cut = "\n\n(truncated; the advisory comment lists the rest)\n"
	receipt += record
	fixed := len(notes) + len(receipt)
	if fixed+len(cut) > maxCheckText {
		// Only by a pathological number of notes: the notes give way, the receipt stays.
		notes = truncate(notes, max(maxCheckText-len(receipt)-len(cut), 0))
		fixed = len(notes) + len(receipt)
	}
	body := b.String()
	if fixed+len(body) > maxCheckText {
		body = truncate(body, maxCheckText-fixed-len(cut)) + cut
	}
	return notes + body + receipt
}

// sortedFindings orders findings worst first, then by place, so a re-run that reports the
// same findings in another order renders the same text (and writes nothing).
func sortedFindings(fs []review.Finding) []review.Finding {
	out := append([]review.Finding(nil), fs...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Open() != b.Open() {
			return a.Open()
		}
		if a.Severity.Rank() != b.Severity.Rank() {
			return a.Severity.Rank() > b.Severity.Rank()
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.ID < b.ID
	})
	return out
}

// scopeLine says what the model lenses were sent and at which head each file was reviewed,
// so a reader of an incremental review sees that nothing was skipped.
func scopeLine(d *review.Decision) string {
	c := d.Coverage
	var s string
	switch c.Scope {
	case review.ScopeIncremental:
		s = "Model lenses reviewed the changes since " + code(short(c.Since), 16) + "; built-in lenses the whole pull request."
	case review.ScopeFull:
		s = "Model lenses reviewed the whole pull request"
		if c.ScopeReason != "" {
			s += " (" + oneLine(c.ScopeReason, 300) + ")"
		}
		s += "."
	default:
		return ""
	}
	if c.Chunks > 1 {
		s += fmt.Sprintf(" The change was reviewed in %d parts.", c.Chunks)
	}
	for i, h := range c.Heads {
		if i == 0 && len(c.Heads) == 1 {
			break
		}
		if len(h.Paths) == 0 {
			s += fmt.Sprintf(" %d file(s) reviewed at %s.", h.Files, code(short(h.Head), 16))
			continue
		}
		s += fmt.Sprintf(" %d file(s) unchanged since %s, reviewed there:", h.Files, code(short(h.Head), 16))
		for j, p := range h.Paths {
			if j == 20 {
				s += fmt.Sprintf(" and %d more", len(h.Paths)-j)
				break
			}
			s += " " + code(p, 200)
		}
		s += "."
	}
	return s
}
