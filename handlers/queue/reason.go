package queue

import "strings"

// Reason is what caused a job: "<event>.<action>" for a webhook ("pull_request.opened"), or one
// of the App's own reasons below. Durable queues store the string, so a value, once used, never
// changes.
type Reason string

// EventReason is the reason of a job a webhook caused.
func EventReason(event, action string) Reason { return Reason(event + "." + action) }

// The App's own reasons, and the webhook reasons that change what a job does.
const (
	// ReasonHeadShown re-reviews a pull request once GitHub shows the head its event named.
	ReasonHeadShown Reason = "pull_request.head_shown"
	// ReasonBackfill reviews the open pull requests of a newly installed repository.
	ReasonBackfill Reason = "installation.backfill"
	// ReasonDetailsRerun is a re-run asked for on the details page.
	ReasonDetailsRerun Reason = "details.rerun"
	// ReasonApproveDelegate is a maintainer's approve-delegate command.
	ReasonApproveDelegate Reason = "issue_comment.approve-delegate"
	// ReasonCommentCommand is a review command in a new comment.
	ReasonCommentCommand Reason = "issue_comment.created"
	// ReasonCheckRunRerun and ReasonCheckSuiteRerun are re-runs asked for on GitHub.
	ReasonCheckRunRerun   Reason = "check_run.rerequested"
	ReasonCheckSuiteRerun Reason = "check_suite.rerequested"
	// ReasonDelegateRecheck is a scheduled look for another review bot's answer.
	ReasonDelegateRecheck Reason = "delegate.recheck"
	// ReasonDelegateAnswered and ReasonDelegateTimeout review a head again once another review
	// bot answered, or its deadline passed.
	ReasonDelegateAnswered Reason = "delegate.answered"
	ReasonDelegateTimeout  Reason = "delegate.timeout"
)

// delegatePrefix starts every reason that follows another review bot's work.
const delegatePrefix = "delegate."

// DelegateReason is the reason of the review that follows a bot's answer seen in an event.
func DelegateReason(event Reason) Reason { return Reason(delegatePrefix + string(event)) }

// Event is the part before the first dot: the webhook event, or "delegate" or "details".
func (r Reason) Event() string {
	e, _, _ := strings.Cut(string(r), ".")
	return e
}

// IsDelegate reports whether the job follows another review bot's work (an answer, a timeout
// or a scheduled look): a review of such a job settles the delegated lenses of its head.
func (r Reason) IsDelegate() bool { return strings.HasPrefix(string(r), delegatePrefix) }

// ForcesRerun reports whether an event asks for a new review of a head that was already
// reviewed: a re-run request (check run or suite), a review command in a comment, an edit of
// the title, body or base (the receipt binds the body), news of a delegated lens (its bot
// answered, its wait ended, or it is time to look again), or a pull request review that may
// change code-owner approval. Other events for a reviewed head coalesce.
func (r Reason) ForcesRerun() bool {
	s := string(r)
	return strings.HasSuffix(s, ".rerequested") || strings.HasSuffix(s, ".edited") ||
		r.Event() == "issue_comment" || r.IsDelegate() || r.ReevaluatesApproval()
}

// ReevaluatesApproval reports whether the job follows a person's pull request review
// (submitted, edited or dismissed): it re-judges code-owner approval of protected paths for the
// same head, reusing the paid lenses' results, and does nothing when the policy does not
// require that approval.
func (r Reason) ReevaluatesApproval() bool { return r.Event() == "pull_request_review" }

// OpensCheckRun reports whether the job's gate check is a new check run rather than an update of
// the head's existing one: someone asked for the review again.
func (r Reason) OpensCheckRun() bool {
	switch r {
	case ReasonCheckRunRerun, ReasonCheckSuiteRerun, ReasonCommentCommand:
		return true
	}
	return false
}
