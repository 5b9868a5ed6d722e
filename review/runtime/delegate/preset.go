// Package delegate is the runtime of lenses answered by another review bot (the Codex
// connector, Copilot code review, CodeRabbit…). The App posts a request on the pull request and
// observes what happens; this package decides, from that observation alone, whether the bot
// answered the exact request for the exact head: passed, failed (findings, when the lens says
// so) or pending with the cause. It never talks to GitHub.
package delegate

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Evidence kinds: the ways a bot can answer.
const (
	// EvidenceComment is a clean conversation comment (no findings).
	EvidenceComment = "comment"
	// EvidenceReview is a COMMENTED review on the head; its inline comments are findings.
	EvidenceReview = "review"
	// EvidenceReaction is a +1 reaction on the pull request (no findings).
	EvidenceReaction = "reaction"
)

// Ways a review is requested.
const (
	// RequestComment posts the request text as a conversation comment.
	RequestComment = "comment"
	// RequestReviewers asks through the requested-reviewers API; the request comment then only
	// records the request (its text does not mention the bot).
	RequestReviewers = "reviewers"
)

// Outcomes on findings.
const (
	OnFindingsFail = "fail"
	OnFindingsPass = "pass"
)

// CodexPreset is the built-in preset's name.
const CodexPreset = "codex"

// Bot is the account whose answers count. Every id is checked, not only the login.
type Bot struct {
	Login  string
	UserID int64
	// AppID and AppSlug are the GitHub App the bot's conversation comments are made through
	// (performed_via_github_app); zero means comments are not checked for an App.
	AppID   int64
	AppSlug string
}

// Preset describes one review bot and how it answers.
type Preset struct {
	Name string
	Bot  Bot
	// RequestText is the first line of the request comment, e.g. "@codex review".
	RequestText string
	// RequestVia is RequestComment or RequestReviewers.
	RequestVia string
	// Reviewer is the account named in the requested-reviewers call (RequestReviewers only).
	Reviewer string
	// Evidence lists the kinds of answer that count.
	Evidence []string
	// CleanHeadlines are the accepted first lines of a clean comment ("" when comments carry no
	// fixed headline; then any comment of the bot's that names the reviewed commit counts).
	CleanHeadlines []string
	// ReviewHeading is how the body of a review answer starts ("" for any body).
	ReviewHeading string
	// ReviewedCommit requires comment and review answers to name the reviewed commit on one
	// "**Reviewed commit:** `sha`" line resolving to the head.
	ReviewedCommit bool
	// ReviewIsFindings treats every review answer as a findings review, even without inline
	// comments (Codex reviews only when it has suggestions).
	ReviewIsFindings bool
	// Strict applies the built-in connector's exact comment grammar: headline, an optional short
	// flourish, the reviewed-commit line, and nothing else but the connector's known footer.
	Strict bool
}

// Accepts reports whether the preset counts an evidence kind.
func (p Preset) Accepts(kind string) bool { return slices.Contains(p.Evidence, kind) }

// Codex is the built-in preset for the Codex connector, with the identities, headlines and
// heading of its public protocol.
func Codex() Preset {
	return Preset{
		Name: CodexPreset,
		Bot: Bot{
			Login:   "chatgpt-codex-connector[bot]",
			UserID:  199175422,
			AppID:   1144995,
			AppSlug: "chatgpt-codex-connector",
		},
		RequestText: "@codex review",
		RequestVia:  RequestComment,
		Evidence:    []string{EvidenceComment, EvidenceReview, EvidenceReaction},
		// The connector's own wording, and the renamed one a compatible adapter expects.
		CleanHeadlines:   []string{"Codex Review: Didn't find any major issues.", "Agent Review: Didn't find any major issues."},
		ReviewHeading:    "### 💡 Codex Review\n\nHere are some automated review suggestions for this pull request.",
		ReviewedCommit:   true,
		ReviewIsFindings: true,
		Strict:           true,
	}
}

var loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$`)

// Validate reports what is wrong with an operator-defined preset.
func (p Preset) Validate() error {
	var probs []string
	if p.Name == "" {
		probs = append(probs, "no name")
	}
	if !loginRE.MatchString(p.Bot.Login) {
		probs = append(probs, fmt.Sprintf("bot login %q is not a GitHub login", p.Bot.Login))
	}
	if p.Bot.UserID <= 0 {
		probs = append(probs, "bot user id must be a positive number (GET /users/LOGIN shows it)")
	}
	if p.Bot.AppID < 0 {
		probs = append(probs, "bot app id must not be negative")
	}
	switch p.RequestVia {
	case RequestComment:
		if strings.TrimSpace(p.RequestText) == "" {
			probs = append(probs, "a comment request needs request text (for example \"@codex review\")")
		}
	case RequestReviewers:
		if p.Reviewer == "" {
			probs = append(probs, "a reviewers request needs the reviewer to request")
		}
	default:
		probs = append(probs, fmt.Sprintf("request via %q: want comment or reviewers", p.RequestVia))
	}
	if strings.ContainsAny(p.RequestText, "\r\n") || len(p.RequestText) > 200 {
		probs = append(probs, "request text must be one line of at most 200 bytes")
	}
	if len(p.Evidence) == 0 {
		probs = append(probs, "no evidence kinds (comment, review, reaction)")
	}
	for _, k := range p.Evidence {
		if k != EvidenceComment && k != EvidenceReview && k != EvidenceReaction {
			probs = append(probs, fmt.Sprintf("evidence kind %q: want comment, review or reaction", k))
		}
	}
	if p.Accepts(EvidenceComment) && len(p.CleanHeadlines) == 0 && !p.ReviewedCommit {
		probs = append(probs, "comment evidence needs a clean headline or the reviewed-commit line, or any comment of the bot would count")
	}
	if len(probs) > 0 {
		return fmt.Errorf("delegate preset %q: %s", p.Name, strings.Join(probs, "; "))
	}
	return nil
}
