// Package publication holds what a review job hands to the publisher, and the Publisher
// interface the worker calls: the contract between handlers/worker and handlers/publish, so
// that neither imports the other.
package publication

import (
	"context"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/repoconfig"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

// Publisher is the only code that writes to GitHub. The worker calls Begin once the subject is
// bound (before the pipeline runs, so a gate check can show in_progress) and Publish with the
// outcome. Both get the installation client of the job's installation.
//
// Publish is always called for a pull request that got as far as a snapshot, including when the
// configuration is invalid or the pipeline failed: Decision is then a synthesised failing or
// pending decision, so a publisher never has to invent a gate state. A cancelled job (a newer
// head arrived) is not published.
//
// Abandon is called instead of Publish when a run that Begin started ends without a decision: a
// newer job superseded it, or it was interrupted. It concludes, or marks as resuming, what Begin
// opened, so that no check run stays in progress for good.
type Publisher interface {
	Begin(ctx context.Context, client *github.Client, p *Publication) error
	Publish(ctx context.Context, client *github.Client, p *Publication) error
	Abandon(ctx context.Context, client *github.Client, p *Publication, why Interruption) error
}

// Interruption says why a run ends without a decision.
type Interruption struct {
	// Superseded is set when a newer job for the subject replaced this one; SupersededBy is the
	// newer job's head when the queue knows it (equal to this head for a re-run of the same head,
	// whose job then owns the check run).
	Superseded   bool
	SupersededBy string
	// Resuming is set when the queue keeps the job and runs it again (a durable queue stopping).
	Resuming bool
	// Cause is what stopped the run.
	Cause error
}

// Publication is what one run has to say.
type Publication struct {
	Job queue.Job
	// App identifies lensgate's own GitHub App, for finding its own comments and check runs.
	App AppIdentity
	// Subject is the bound snapshot that was reviewed (for an issue, Kind is review.KindIssue).
	Subject *review.Subject
	// Config says where the policy came from.
	Config repoconfig.ConfigSource
	// Repo is the trusted configuration the run used; nil when it is invalid.
	Repo *config.Repo
	// ConfigProblems lists what is wrong with the trusted configuration; when non-empty the
	// Decision is a failing gate carrying these problems and no lens ran.
	ConfigProblems config.Problems
	// Proposed is set when the pull request changes the configuration file: the new file is
	// validated and reported, never applied.
	Proposed *repoconfig.ProposedConfig
	// Decision is the pull request outcome (nil for issues).
	Decision *review.Decision
	// Triage is the issue outcome (nil for pull requests).
	Triage *review.TriageDecision
	// Counts are the pull request's comment counts as the worker read them when the job
	// started; nil when unknown. A publisher may skip listing what is known to be empty.
	Counts *pull.PullCounts
	// Failure is the operational cause when the pipeline could not produce a real decision;
	// Decision is then pending with Gate.Reason describing it.
	Failure error
	// Conversation is what the worker read of the pull request's comments (nil if unread).
	Conversation *pull.Conversation
	// Answers are replies to command comments (a refused or accepted dismissal).
	Answers []Answer
}

// AppIdentity is the App as GET /app describes it.
type AppIdentity struct {
	ID   int64
	Slug string
}

// BotLogin is the login the App's comments and reviews are authored by.
func (a AppIdentity) BotLogin() string {
	if a.Slug == "" {
		return ""
	}
	return a.Slug + "[bot]"
}

// LogPublisher only logs what it would publish. It is the default until a GitHub publisher is
// configured, and never writes to GitHub.
type LogPublisher struct{}

// Begin implements Publisher.
func (LogPublisher) Begin(ctx context.Context, _ *github.Client, p *Publication) error {
	zerolog.Ctx(ctx).Info().Str("head_sha", p.Subject.HeadSHA).Msg("review started")
	return nil
}

// Abandon implements Publisher.
func (LogPublisher) Abandon(ctx context.Context, _ *github.Client, p *Publication, why Interruption) error {
	zerolog.Ctx(ctx).Info().Str("head_sha", p.Subject.HeadSHA).Bool("superseded", why.Superseded).
		Str("superseded_by", why.SupersededBy).Bool("resuming", why.Resuming).AnErr("cause", why.Cause).
		Msg("review abandoned")
	return nil
}

// Publish implements Publisher.
func (LogPublisher) Publish(ctx context.Context, _ *github.Client, p *Publication) error {
	ev := zerolog.Ctx(ctx).Info().Str("config_origin", p.Config.Origin).
		Str("config_source", p.Config.Source).Int("config_problems", len(p.ConfigProblems))
	if p.Subject != nil {
		ev = ev.Str("head_sha", p.Subject.HeadSHA)
	}
	if p.Proposed != nil {
		ev = ev.Int("proposed_config_problems", len(p.Proposed.Problems))
	}
	if p.Failure != nil {
		ev = ev.AnErr("failure", p.Failure)
	}
	switch {
	case p.Decision != nil:
		ev.Str("gate", string(p.Decision.Gate.State)).Str("gate_reason", p.Decision.Gate.Reason).
			Int("findings", len(p.Decision.Findings)).Msg("review decided")
	case p.Triage != nil:
		ev.Strs("labels", p.Triage.Labels).Msg("issue triaged")
	default:
		ev.Msg("nothing to publish")
	}
	return nil
}

// Answer is a reply the publisher posts to a command comment: in its review thread when the
// command was a reply to an inline comment, in the conversation otherwise.
type Answer struct {
	CommentID int64
	// InReplyTo is the inline comment whose thread the reply goes to (0: the conversation).
	InReplyTo int64
	Text      string
	// Model, when set, names the model that wrote Text in answer to Asker's question: Text is
	// then untrusted model output, shown as such.
	Model string
	Asker string
}

// DelegateRequester is a Publisher that can ask another review bot for a review: it posts the
// request (through the policy decision point, audited like every write) and returns the
// request comment's id and creation time, which is the request's time.
type DelegateRequester interface {
	RequestDelegate(ctx context.Context, client *github.Client, r *DelegateRequest) (commentID int64, at time.Time, err error)
}

// DelegateProgress is a Publisher that can say, in the gate check's text, that another review
// bot is working on the head (it reacted eyes), without settling the lens or commenting.
type DelegateProgress interface {
	NoteDelegateInProgress(ctx context.Context, client *github.Client, n *DelegateNote) error
}

// DelegateNote is one "the bot is reviewing" note.
type DelegateNote struct {
	Job     queue.Job
	App     AppIdentity
	Subject *review.Subject
	Repo    *config.Repo
	Preset  delegate.Preset
	// Lenses are the policy lenses waiting for the bot.
	Lenses []string
}

// ProgressTracking is a Publisher that can show, in the gate check Begin opened, how far a
// running review is. TrackProgress starts following one review; the worker hands the
// tracker's Report to the pipeline (review.WithProgress) and calls Stop before it publishes.
type ProgressTracking interface {
	TrackProgress(ctx context.Context, client *github.Client, p *Publication) ProgressTracker
}

// ProgressTracker follows one review. Report never waits for GitHub: the tracker decides
// which reports it writes, and when. Stop ends the tracking and returns once no write of the
// tracker is under way, so that none lands after the review's conclusion.
type ProgressTracker interface {
	Report(review.Progress)
	Stop()
}

// QueueMarking is a Publisher that can show a pull request's job waiting for a worker: MarkQueued
// creates the head's gate check as queued unless the head already has one (Begin later turns it
// in progress), and Unqueue concludes a check that is still queued when its job ends without a
// review (the pull request closed, a newer head, the server stopping), saying why.
type QueueMarking interface {
	MarkQueued(ctx context.Context, client *github.Client, p *Publication) error
	Unqueue(ctx context.Context, client *github.Client, p *Publication, why string) error
}

// DelegateRequest is one request to post.
type DelegateRequest struct {
	Job     queue.Job
	App     AppIdentity
	Subject *review.Subject
	Repo    *config.Repo
	Preset  delegate.Preset
	Binding delegate.Binding
	// Lenses are the policy lenses the answer settles.
	Lenses []string
}
