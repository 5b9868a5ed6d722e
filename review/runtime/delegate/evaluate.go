package delegate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review/runtime"
)

// DefaultTimeout is how long a delegated lens waits for an answer by default.
const DefaultTimeout = 15 * time.Minute

// reactionMargin is how much later than the request a +1 reaction must be: a reaction carries
// no commit, so one in the same second as the request could answer something else.
const reactionMargin = time.Second

// Outcomes of a delegated lens.
const (
	Passed  = "passed"
	Failed  = "failed"
	Pending = "pending"
)

// Input is one delegated lens to judge.
type Input struct {
	Preset Preset
	// Repo, Number, Head and Base are the pull request as the App sees it now.
	Repo   string
	Number int
	Head   string
	Base   string
	// Timeout is how long to wait after the request (DefaultTimeout when zero).
	Timeout time.Duration
	// OnFindings is OnFindingsFail (default) or OnFindingsPass.
	OnFindings string
	Observed   *runtime.Delegation
}

// Evidence is the answer that settled a lens.
type Evidence struct {
	Kind string
	ID   int64
	At   time.Time
}

// Key identifies the answer to one request, for idempotent follow-up work.
func (e Evidence) Key(requestID string) string {
	return fmt.Sprintf("%s/%s/%d", requestID, e.Kind, e.ID)
}

// Verdict is the judgement of one delegated lens.
type Verdict struct {
	Outcome string // Passed, Failed or Pending
	// Cause says why a lens is pending; Summary describes the outcome.
	Cause   string
	Summary string
	// Request is the exact request for this head (nil when none was posted).
	Request *runtime.DelegateRequest
	// Evidence is the answer that counted (zero when pending).
	Evidence Evidence
	// InProgress is set when the bot marked the request as being worked on (eyes).
	InProgress bool
	// TimedOut is set when the wait is over without an answer.
	TimedOut bool
	// Deadline is when the wait ends (zero without a request).
	Deadline time.Time
	// Findings are the bot's inline comments of a review answer.
	Findings []runtime.Finding
}

// Binding is the boundary the input is judged for.
func (in Input) Binding() Binding {
	return Binding{Preset: in.Preset.Name, Repo: in.Repo, Number: in.Number, Head: in.Head, Base: in.Base}
}

// currentRequest is the newest request of the preset for exactly this repository, pull request,
// head and base. Requests for other heads or bases are older boundaries and never count.
func (in Input) currentRequest() *runtime.DelegateRequest {
	want := in.Binding()
	var cur *runtime.DelegateRequest
	for i := range in.Observed.Requests {
		r := &in.Observed.Requests[i]
		if r.Preset != want.Preset || r.Repo != want.Repo || r.Number != want.Number || r.Head != want.Head || r.Base != want.Base || r.ID != want.ID() {
			continue
		}
		if cur == nil || r.At.After(cur.At) || r.At.Equal(cur.At) && r.CommentID > cur.CommentID {
			cur = r
		}
	}
	return cur
}

type candidate struct {
	ev     Evidence
	rank   int // order of kinds when time and id tie
	review *runtime.BotReview
}

// Evaluate judges one delegated lens. It never passes a lens without an answer that is from
// the bot (login and ids), for this head, and strictly later than both the request and the
// head's push; everything else leaves the lens pending with the reason.
func Evaluate(in Input) Verdict {
	p := in.Preset
	bot := p.Bot.Login
	if in.Observed == nil {
		return Verdict{Outcome: Pending, Cause: "no observation of the pull request for " + bot}
	}
	timeout := in.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	req := in.currentRequest()
	if req == nil {
		if why := in.Observed.Blocked[p.Name]; why != "" {
			return Verdict{Outcome: Pending, Cause: "review not requested from " + bot + ": " + why}
		}
		return Verdict{Outcome: Pending, Cause: "no request to " + bot + " for head " + digest.Short(in.Head) + " yet"}
	}
	v := Verdict{Outcome: Pending, Request: req, Deadline: req.At.Add(timeout)}
	threshold := req.At
	if in.Observed.HeadPushedAt.After(threshold) {
		threshold = in.Observed.HeadPushedAt
	}

	var cands []candidate
	if p.Accepts(EvidenceComment) {
		for _, c := range in.Observed.Comments {
			if p.Bot.commentFrom(c) && c.CreatedAt.After(threshold) && p.cleanComment(c.Body, in.Head) {
				cands = append(cands, candidate{ev: Evidence{Kind: EvidenceComment, ID: c.ID, At: c.CreatedAt}, rank: 1})
			}
		}
	}
	if p.Accepts(EvidenceReview) {
		for i := range in.Observed.Reviews {
			r := &in.Observed.Reviews[i]
			if p.Bot.is(r.User) && r.SubmittedAt.After(threshold) && p.reviewAnswer(*r, in.Head) {
				cands = append(cands, candidate{ev: Evidence{Kind: EvidenceReview, ID: r.ID, At: r.SubmittedAt}, rank: 2, review: r})
			}
		}
	}
	for _, r := range in.Observed.Reactions {
		if !p.Bot.is(r.User) {
			continue
		}
		switch {
		case r.Content == "+1" && p.Accepts(EvidenceReaction) && !r.CreatedAt.Before(threshold.Add(reactionMargin)):
			cands = append(cands, candidate{ev: Evidence{Kind: EvidenceReaction, ID: r.ID, At: r.CreatedAt}, rank: 0})
		case r.Content == "eyes" && !r.CreatedAt.Before(threshold):
			v.InProgress = true
		}
	}
	if len(cands) == 0 {
		switch {
		case !in.Observed.Now.Before(v.Deadline):
			v.TimedOut = true
			v.Cause = fmt.Sprintf("no answer from %s within %s of the request", bot, timeout)
		case v.InProgress:
			v.Cause = bot + " is reviewing (requested " + req.At.UTC().Format(time.RFC3339) + ")"
		default:
			v.Cause = "waiting for " + bot + " (requested " + req.At.UTC().Format(time.RFC3339) + ")"
		}
		return v
	}
	// The newest answer wins, ordered by time, then id, then kind.
	best := slices.MaxFunc(cands, func(a, b candidate) int {
		return cmp.Or(a.ev.At.Compare(b.ev.At), cmp.Compare(a.ev.ID, b.ev.ID), cmp.Compare(a.rank, b.rank))
	})
	v.Evidence = best.ev
	v.Outcome = Passed
	switch best.ev.Kind {
	case EvidenceComment:
		v.Summary = bot + " found no major issues (comment on " + digest.Short(in.Head) + ")."
	case EvidenceReaction:
		v.Summary = bot + " reacted 👍: no suggestions for " + digest.Short(in.Head) + "."
	case EvidenceReview:
		v.Findings = findingsOf(p, *best.review)
		if len(v.Findings) > 0 || p.ReviewIsFindings {
			v.Summary = fmt.Sprintf("%s reviewed %s with %d suggestion(s).", bot, digest.Short(in.Head), len(v.Findings))
			if in.OnFindings != OnFindingsPass {
				v.Outcome = Failed
			}
		} else {
			v.Summary = bot + " reviewed " + digest.Short(in.Head) + " without suggestions."
		}
	}
	return v
}

// maxBotFindings bounds the findings taken from one review.
const maxBotFindings = 100

// findingsOf turns a review's inline comments into findings attributed to the bot (its login is
// the rule and starts the title). Their
// severity is medium: the bot's own priority marks stay in the message, and whether findings
// block is the lens's outcome_on_findings, not a severity guess.
func findingsOf(p Preset, r runtime.BotReview) []runtime.Finding {
	out := []runtime.Finding{}
	for _, c := range r.Comments {
		if len(out) >= maxBotFindings {
			break
		}
		body := strings.TrimSpace(normalize(c.Body))
		// The title names the bot: the comment and the receipt show whose finding it is.
		title := p.Bot.Login + ": " + firstText(body)
		out = append(out, runtime.Finding{
			Rule: p.Bot.Login, Severity: runtime.SeverityMedium, Path: c.Path, Line: c.Line,
			Title: title, Message: body, Key: fmt.Sprintf("%d", c.ID),
		})
	}
	return out
}

// firstText is the first line of a comment that is more than markup (badges and headings
// stripped), for a finding's title.
func firstText(body string) string {
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(strings.TrimLeft(line, "#*> "))
		for strings.HasPrefix(t, "![") {
			end := strings.Index(t, ")")
			if end < 0 {
				break
			}
			t = strings.TrimSpace(t[end+1:])
		}
		t = strings.Trim(t, "* ")
		if t != "" {
			return t
		}
	}
	return "Suggestion"
}
