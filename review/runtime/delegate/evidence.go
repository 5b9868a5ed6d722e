package delegate

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lensgate/lensgate/review/runtime"
)

// MaxAnswerBodyBytes bounds a comment or review body that can count as an answer.
const MaxAnswerBodyBytes = 256 << 10

const reviewedCommitLabel = "**Reviewed commit:**"

var reviewedCommitRE = regexp.MustCompile("\\*\\*Reviewed commit:\\*\\* `([0-9a-f]{10,40})`")

// codexFooterSummary identifies the connector's "About Codex in GitHub" footer.
const codexFooterSummary = "<summary>ℹ️ About Codex in GitHub</summary>"

// normalize turns CRLF and lone CR into LF.
func normalize(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// is reports whether an actor is the bot: login and numeric id both match.
func (b Bot) is(a runtime.Actor) bool {
	return a.ID == b.UserID && a.ID > 0 && a.Login == b.Login
}

// commentFrom reports whether a conversation comment was made by the bot, through its App when
// the preset names one.
func (b Bot) commentFrom(c runtime.BotComment) bool {
	if !b.is(c.User) {
		return false
	}
	if b.AppID != 0 && c.AppID != b.AppID {
		return false
	}
	return b.AppSlug == "" || b.AppID == 0 || c.AppSlug == b.AppSlug
}

// resolves reports whether a reviewed-commit value names the head: a full SHA equal to it, or a
// prefix of it of at least 10 characters.
func resolves(value, head string) bool {
	return len(value) >= 10 && len(value) <= 40 && len(head) == 40 && strings.HasPrefix(head, value)
}

// oneReviewedCommit returns the single reviewed-commit value of a body, or false when the body
// names none or more than one.
func oneReviewedCommit(body string) (string, bool) {
	if strings.Count(body, reviewedCommitLabel) != 1 {
		return "", false
	}
	m := reviewedCommitRE.FindAllStringSubmatch(body, -1)
	if len(m) != 1 {
		return "", false
	}
	return m[0][1], true
}

// cleanComment reports whether body is a clean answer for head under the preset's grammar.
func (p Preset) cleanComment(body, head string) bool {
	if len(body) > MaxAnswerBodyBytes || !utf8.ValidString(body) {
		return false
	}
	body = normalize(body)
	if p.Strict {
		return p.strictClean(body, head)
	}
	if len(p.CleanHeadlines) > 0 {
		first, _, _ := strings.Cut(body, "\n")
		ok := false
		for _, h := range p.CleanHeadlines {
			if strings.HasPrefix(first, h) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	if p.ReviewedCommit {
		v, ok := oneReviewedCommit(body)
		return ok && resolves(v, head)
	}
	return len(p.CleanHeadlines) > 0
}

// strictClean is the connector's grammar: headline, optional " flourish" of 1-80 characters,
// a blank line, the reviewed-commit line, then nothing but an optional newline or the known
// footer.
func (p Preset) strictClean(body, head string) bool {
	rest := ""
	found := false
	for _, h := range p.CleanHeadlines {
		if strings.HasPrefix(body, h) {
			rest, found = body[len(h):], true
			break
		}
	}
	if !found {
		return false
	}
	flourish, rest, ok := strings.Cut(rest, "\n")
	if !ok || !validFlourish(flourish) {
		return false
	}
	if !strings.HasPrefix(rest, "\n"+reviewedCommitLabel+" `") {
		return false
	}
	v, ok := oneReviewedCommit(body)
	if !ok || !resolves(v, head) {
		return false
	}
	rest = strings.TrimPrefix(rest, "\n"+reviewedCommitLabel+" `"+v+"`")
	switch {
	case rest == "" || rest == "\n":
		return true
	case !strings.HasPrefix(rest, "\n"):
		return false
	}
	footer := strings.TrimSuffix(strings.TrimLeft(rest, "\n"), "\n")
	return strings.HasPrefix(footer, "<details>") && strings.HasSuffix(footer, "</details>") &&
		strings.Count(footer, "<details>") == 1 && strings.Contains(footer, codexFooterSummary)
}

// validFlourish accepts "" or a space and 1-80 characters (at most 80 bytes) without outer
// whitespace and without control, format, line or paragraph separator characters.
func validFlourish(s string) bool {
	if s == "" {
		return true
	}
	if s[0] != ' ' {
		return false
	}
	f := s[1:]
	if f == "" || len(f) > 80 || strings.TrimSpace(f) != f {
		return false
	}
	for _, r := range f {
		if unicode.In(r, unicode.C, unicode.Zl, unicode.Zp) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// reviewAnswer reports whether a review answers for head under the preset.
func (p Preset) reviewAnswer(r runtime.BotReview, head string) bool {
	if r.State != "COMMENTED" || r.CommitID != head || len(r.Body) > MaxAnswerBodyBytes || !utf8.ValidString(r.Body) {
		return false
	}
	body := strings.TrimLeft(normalize(r.Body), "\n")
	if p.ReviewHeading != "" && !strings.HasPrefix(body, p.ReviewHeading) {
		return false
	}
	if p.ReviewedCommit {
		v, ok := oneReviewedCommit(body)
		return ok && resolves(v, head)
	}
	return true
}

// CommentAnswers reports whether a comment body of the bot can be its answer for head (the
// caller still needs the request and the times for Evaluate); other comments of the bot, such
// as notices, are no reason to review again.
func (p Preset) CommentAnswers(body, head string) bool {
	return p.Accepts(EvidenceComment) && p.cleanComment(body, head)
}

// ReviewAnswers is CommentAnswers for a submitted review.
func (p Preset) ReviewAnswers(r runtime.BotReview, head string) bool {
	return p.Accepts(EvidenceReview) && p.reviewAnswer(r, head)
}
