// Package queue holds review jobs between the webhook handler, which answers GitHub in
// milliseconds, and the workers that run the review pipeline.
//
// Every implementation keeps the same guarantees: one job per subject key, the newest head
// supersedes older queued or running jobs (a running stale job is cancelled through its context),
// a repeated delivery id does nothing, and a full queue refuses work with ErrFull instead of
// blocking the webhook.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Kind says which pipeline a job runs.
type Kind string

const (
	KindPullRequest Kind = "pull_request" // review a pull request
	KindIssue       Kind = "issue"        // triage an issue
	// KindDelegate looks again for the answer of a review bot a lens was delegated to.
	KindDelegate Kind = "delegate"
)

// Job is one unit of review work. It carries only what a worker needs to fetch a fresh snapshot;
// untrusted content (titles, bodies, diffs) is fetched by the worker, not stored in the queue.
type Job struct {
	// Key identifies the subject, "owner/repo#number". Jobs with the same key coalesce.
	Key string `json:"key"`
	// DeliveryID is GitHub's X-GitHub-Delivery of the webhook that caused the job.
	DeliveryID string `json:"delivery_id"`
	Kind       Kind   `json:"kind"`
	// InstallationID selects the installation client.
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner"`
	Repo           string `json:"repo"`
	Number         int    `json:"number"`
	// HeadSHA is the head the event saw; a job for a newer head supersedes this one.
	HeadSHA string `json:"head_sha,omitempty"`
	// Reason is the event that caused the job ("pull_request.opened", "check_run.rerequested", ...).
	Reason Reason `json:"reason,omitempty"`
	// Resumed counts how often the job was taken over from a worker that died while running it.
	Resumed    int             `json:"resumed,omitempty"`
	EnqueuedAt time.Time       `json:"enqueued_at"`
	Extra      json.RawMessage `json:"extra,omitempty"`
	// NotBefore schedules the job: it does not run before this time (zero: at once). A
	// scheduled job still coalesces with later jobs of its key.
	NotBefore time.Time `json:"not_before,omitzero"`
	// FollowUp marks a job that continues earlier work on HeadSHA (a scheduled look, a review
	// after a bot answered) rather than news of the subject: it never supersedes a job of
	// another head, and is dropped when the subject's newest job is for another head.
	FollowUp bool `json:"follow_up,omitempty"`
	// Body names the webhook body that caused the job, for the durable queues' shared replay
	// check; zero for jobs that come from no webhook. It is not stored with the job.
	Body Body `json:"-"`
}

// Body identifies a webhook body: its digest (hex SHA-256 of event and payload) and the delivery
// id GitHub sent it under. A durable queue refuses a job whose body was already accepted under
// another delivery id with a ReplayError; the jobs of one delivery share its Body.
type Body struct {
	Digest   string
	Delivery string
}

// ReplayError is ErrReplay naming the delivery id the body was first accepted under (empty when
// that is not known yet, as when both arrived at once).
type ReplayError struct{ First string }

func (e *ReplayError) Error() string {
	return "queue: body already accepted under delivery " + e.First
}

func (e *ReplayError) Is(target error) bool { return target == ErrReplay }

// Handler runs one job. It must honour ctx: cancellation means a newer job superseded this one or
// the process is shutting down. A returned error marked with Permanent is not retried.
type Handler func(ctx context.Context, job Job) error

// Queue is implemented by the in-memory queue (tests, `lensgate review`, single process) and by the
// durable queues.
type Queue interface {
	// Enqueue adds job, coalescing with queued or running jobs of the same Key. It returns
	// ErrDuplicate for a delivery id already seen and ErrFull when the queue cannot take more work.
	Enqueue(ctx context.Context, job Job) error
	// Start runs workers that call h until ctx is cancelled or Stop is called.
	Start(ctx context.Context, h Handler) error
	// Stop stops taking new jobs and waits (up to ctx's deadline) for running jobs to finish;
	// jobs still running at the deadline are cancelled and handed back (durable queues keep them).
	Stop(ctx context.Context) error
}

var (
	// ErrFull means the queue is at capacity; the webhook answers 503 so GitHub shows the failure.
	ErrFull = errors.New("queue: full")
	// ErrDuplicate means the delivery id was already accepted; the webhook answers 2xx and does nothing.
	ErrDuplicate = errors.New("queue: duplicate delivery")
	// ErrReplay means the job's body was already accepted under another delivery id (see Job.Body):
	// a captured delivery sent again; the webhook answers 2xx and does nothing.
	ErrReplay = errors.New("queue: replayed body")
)

// permanentError marks a failure that retrying cannot fix (invalid config, 404, validation).
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err: err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
