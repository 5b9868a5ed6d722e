package publish

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/review"
)

// heldReceiptFindings are the findings withdrawn on verification or suppressed by earlier
// feedback, as the receipt records them: dismissed by lensgate, with why. They stay in the
// receipt (a runner that derived them finds them there) but are never posted on the pull
// request.
func heldReceiptFindings(v review.Verification, seen map[string]bool) []disclosure.Finding {
	var out []disclosure.Finding
	add := func(f review.Finding, reason string) {
		if f.ID == "" || seen[f.ID] {
			return
		}
		seen[f.ID] = true
		sev := string(f.Severity)
		if f.Severity.Rank() < 0 {
			sev = string(review.SeverityInfo)
		}
		title := strings.TrimSpace(f.Title)
		if title == "" {
			title = "untitled finding"
		}
		out = append(out, disclosure.Finding{ID: f.ID, Severity: sev, Title: title, Disposition: review.DispositionDismissed,
			Reason: truncate(plainLine(reason), 300)})
	}
	for _, w := range v.Withdrawn {
		add(w.Finding, "withdrawn on verification ("+string(w.Check)+"): "+w.Reason)
	}
	for _, s := range v.Suppressed {
		add(s.Finding, "suppressed by earlier feedback: "+s.Reason)
	}
	return out
}

// verificationSources say in the receipt's coverage how the findings were verified and how
// many were held back, by check.
func verificationSources(v review.Verification) []string {
	if v.Mode == "" {
		return nil
	}
	line := fmt.Sprintf("verification %s: %d model finding(s) checked", v.Mode, v.Checked)
	if v.Mode == config.VerifyModel {
		line += fmt.Sprintf(", %d by a verifying model call", v.ModelChecked)
	}
	if n := len(v.Withdrawn); n > 0 {
		by := map[string]int{}
		for _, w := range v.Withdrawn {
			by[string(w.Check)]++
		}
		var parts []string
		for c, k := range by {
			parts = append(parts, fmt.Sprintf("%s %d", c, k))
		}
		sort.Strings(parts)
		line += fmt.Sprintf(", %d withdrawn (%s)", n, strings.Join(parts, ", "))
	}
	out := []string{line}
	if v.ModelCause != "" {
		out = append(out, "verifying model call incomplete: "+truncate(plainLine(v.ModelCause), 200))
	}
	if n := len(v.Suppressed); n > 0 {
		out = append(out, fmt.Sprintf("%d finding(s) suppressed by earlier feedback on the repository", n))
	}
	return out
}

// bySeverity orders inline comments most severe first, keeping the pipeline's order among
// equals, so review.max_inline_comments keeps what matters most.
func bySeverity(in []review.InlineComment) []review.InlineComment {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b review.InlineComment) int { return b.Severity.Rank() - a.Severity.Rank() })
	return out
}

// heldSection lists, collapsed, the comments review.min_inline_severity and
// review.max_inline_comments kept out of the review.
func heldSection(plan inlinePlan) string {
	if len(plan.held) == 0 {
		return ""
	}
	return fmt.Sprintf("<details><summary>%d more finding(s) not placed inline (below the inline severity floor or over the inline comment cap)</summary>\n\n", len(plan.held)) +
		strings.Join(plan.held, "") + "\n</details>\n\n"
}
