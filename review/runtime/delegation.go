package runtime

import "time"

// Delegation is what the App saw on a pull request for the lenses it delegates to another
// review bot: its own request comments, the activity of other accounts (comments, reviews,
// reactions) and the clock. It is plain data; the delegate runtime decides what of it counts as
// an answer, so that decision needs no GitHub access and is tested with tables.
type Delegation struct {
	// Now is the time of the observation.
	Now time.Time
	// HeadPushedAt is when the head commit became the pull request's head, as far as the App
	// knows (zero when unknown). Evidence must be later than both it and the request.
	HeadPushedAt time.Time
	// Requests are lensgate's own request records found on the pull request, for every head.
	Requests []DelegateRequest
	// Comments, Reviews and Reactions are the pull request's conversation comments, reviews and
	// reactions, from any account; the runtime checks who wrote them.
	Comments  []BotComment
	Reviews   []BotReview
	Reactions []BotReaction
	// Blocked gives, by preset, why no request was posted for this head (a maintainer's
	// approval is needed, or the write was denied).
	Blocked map[string]string
}

// Actor is an account as GitHub identifies it: the login can be imitated by a look-alike name,
// the numeric id cannot.
type Actor struct {
	Login string
	ID    int64
}

// DelegateRequest is one request lensgate posted: which preset, for exactly which pull request,
// head and base, and when.
type DelegateRequest struct {
	Preset    string
	Repo      string // owner/name
	Number    int
	Head      string
	Base      string
	ID        string
	CommentID int64
	At        time.Time
}

// BotComment is a conversation comment. AppID and AppSlug come from performed_via_github_app
// (zero when the comment was not made through an App).
type BotComment struct {
	ID        int64
	User      Actor
	AppID     int64
	AppSlug   string
	Body      string
	CreatedAt time.Time
}

// BotReview is a submitted pull request review with its inline comments.
type BotReview struct {
	ID          int64
	User        Actor
	State       string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED or PENDING
	CommitID    string
	Body        string
	SubmittedAt time.Time
	Comments    []BotReviewComment
}

// BotReviewComment is one inline comment of a review.
type BotReviewComment struct {
	ID   int64
	Path string
	Line int
	Body string
}

// BotReaction is a reaction on the pull request itself.
type BotReaction struct {
	ID        int64
	User      Actor
	Content   string
	CreatedAt time.Time
}
