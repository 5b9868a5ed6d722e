package publish

import (
	"fmt"
	"strings"

	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/review"
)

// maxSuggestionLines bounds the range one suggested change may replace.
const maxSuggestionLines = 100

// suggestion is how a finding's replacement text is published in its inline comment.
type suggestion struct {
	// applicable is set when every line of the range lies on the diff's new side: the text is
	// then a suggestion block and the comment spans start..end.
	applicable bool
	start, end int
	text       string
}

// renderSuggestion decides how to publish c's suggestion. GitHub refuses a whole review when
// one comment's range leaves the diff, so a suggestion block is offered only when the range
// lies wholly on the head side of one file's diff; otherwise the replacement is shown as plain
// text, which cannot be applied by mistake.
func renderSuggestion(lines diffLines, c review.InlineComment) suggestion {
	sg := c.Suggestion
	if sg == nil || sg.StartLine < 1 || sg.EndLine < sg.StartLine {
		return suggestion{}
	}
	repl := strings.ToValidUTF8(sg.Replacement, "\uFFFD")
	if !strings.HasSuffix(repl, "\n") && repl != "" {
		repl += "\n"
	}
	fence := strings.Repeat("`", max(3, longestRun(repl, '`')+1))
	safe := !strings.Contains(repl, "<!--") && !strings.Contains(repl, "-->") &&
		!strings.Contains(repl, block.Begin) && !strings.Contains(repl, block.End)
	inDiff := c.Side != "LEFT" && sg.EndLine-sg.StartLine < maxSuggestionLines
	for l := sg.StartLine; inDiff && l <= sg.EndLine; l++ {
		inDiff = lines.has(c.Path, l, "RIGHT")
	}
	if inDiff && safe {
		return suggestion{applicable: true, start: sg.StartLine, end: sg.EndLine,
			text: "\n\n" + fence + "suggestion\n" + repl + fence}
	}
	// Plain text: comment delimiters are broken invisibly so no hidden marker can be faked.
	repl = strings.ReplaceAll(repl, "<!--", "<\u200b!--")
	repl = strings.ReplaceAll(repl, "-->", "--\u200b>")
	repl = strings.ReplaceAll(repl, block.Begin, "")
	repl = strings.ReplaceAll(repl, block.End, "")
	why := "part of the range is not in this diff"
	if !safe && inDiff {
		why = "the text contains comment markers"
	}
	return suggestion{text: fmt.Sprintf("\n\nSuggested replacement for lines %d–%d (not offered as a change to apply: %s):\n%s\n%s%s",
		sg.StartLine, sg.EndLine, why, fence, repl, fence)}
}

func longestRun(s string, r byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == r {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
