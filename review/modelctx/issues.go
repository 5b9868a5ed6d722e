package modelctx

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/lensgate/lensgate/internal/digest"
)

// Limits of linked issues.
const (
	// MaxIssues is how many linked issues are read.
	MaxIssues = 3
	// MaxIssueBytes bounds the title and body of one issue given to the model.
	MaxIssueBytes = 4 << 10
)

// Issue is an issue the pull request says it closes, as read from the forge. Its title and body
// are untrusted data.
type Issue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	// SHA256 is of the title, a line feed and the body, exactly as read.
	SHA256 string `json:"sha256"`
	// Truncated marks a body cut to MaxIssueBytes.
	Truncated bool `json:"truncated,omitempty"`
}

// NewIssue builds an Issue from what the forge returned: the digest covers the text as read,
// the body given to the model is bounded.
func NewIssue(number int, title, body string) Issue {
	is := Issue{Number: number, Title: bounded(title, 300), SHA256: digest.SHA256Hex([]byte(title + "\n" + body))}
	is.Body, is.Truncated = boundText(body, MaxIssueBytes)
	return is
}

// closingRE matches GitHub's closing keywords followed by an issue reference: "#12",
// "owner/repo#12" or an issue URL. GitHub accepts close, closes, closed, fix, fixes, fixed,
// resolve, resolves and resolved, any case, with an optional colon.
var closingRE = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+` +
	`(?:https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)/issues/(\d+)|(?:([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+))?#(\d+))\b`)

// LinkedIssues returns the numbers of the same repository's issues that texts (the title and
// the body) name with a closing keyword, in order of first mention, at most MaxIssues. An
// issue of another repository is not read: the review of one repository never reads another's.
func LinkedIssues(owner, repo string, texts ...string) []int {
	var out []int
	seen := map[int]bool{}
	for _, t := range texts {
		for _, m := range closingRE.FindAllStringSubmatch(stripCode(t), -1) {
			o, r, num := m[1], m[2], m[3]
			if num == "" {
				o, r, num = m[4], m[5], m[6]
			}
			if o != "" && (!strings.EqualFold(o, owner) || !strings.EqualFold(r, repo)) {
				continue
			}
			n, err := strconv.Atoi(num)
			if err != nil || n <= 0 || seen[n] {
				continue
			}
			seen[n] = true
			out = append(out, n)
			if len(out) == MaxIssues {
				return out
			}
		}
	}
	return out
}

var codeRE = regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")

// stripCode drops Markdown code spans and blocks: GitHub does not link a keyword written as
// code.
func stripCode(s string) string { return codeRE.ReplaceAllString(s, " ") }
