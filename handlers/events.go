package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

// errBadPayload marks a webhook body that is not the JSON its event type promises; the
// dispatcher answers 400.
var errBadPayload = errors.New("malformed webhook payload")

func badPayload(err error) error { return fmt.Errorf("%w: %v", errBadPayload, err) }

// JobExtra is what a job carries in queue.Job.Extra (JSON), for the worker and the publisher.
type JobExtra struct {
	// DefaultBranch is where an issue's configuration is read.
	DefaultBranch string `json:"default_branch,omitempty"`
	// RepositoryNodeID binds an issue subject (the issue API does not return its repository).
	RepositoryNodeID string `json:"repository_node_id,omitempty"`
	// RequestedBy is the user whose comment command asked for the review.
	RequestedBy string `json:"requested_by,omitempty"`
	// ApprovedBy is the user whose approve-delegate command, from someone with write access,
	// approves asking another review bot for the head. Nothing else approves.
	ApprovedBy string `json:"approved_by,omitempty"`
	// CommentID is the comment carrying the command, for a reaction.
	CommentID int64 `json:"comment_id,omitempty"`
	// CheckRunID is the check run whose re-run was requested.
	CheckRunID int64 `json:"check_run_id,omitempty"`
	// Recheck counts the scheduled looks for a delegated answer.
	Recheck int `json:"recheck,omitempty"`
	// UpdatedAt and BodyDigest are the pull request's updated_at and body digest as the event
	// showed them: the worker does not act on a read that is older (GitHub's replicas lag).
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	BodyDigest string    `json:"body_digest,omitempty"`
}

func (x JobExtra) raw() json.RawMessage {
	b, _ := json.Marshal(x)
	if string(b) == "{}" {
		return nil
	}
	return b
}

// ParseJobExtra decodes a job's Extra (unknown or malformed fields are ignored).
func ParseJobExtra(raw json.RawMessage) JobExtra {
	var x JobExtra
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &x)
	}
	return x
}

// JobKey is the coalescing key of a pull request or issue.
func JobKey(owner, repo string, number int) string {
	return fmt.Sprintf("%s/%s#%d", owner, repo, number)
}

// hooks holds what the event handlers share.
type hooks struct {
	queue        queue.Queue
	clients      githubapp.ClientCreator
	fetch        Fetcher
	reviewDrafts bool
	backfill     bool
	command      string
	now          func() time.Time
	events       *eventMetrics
	// appID is this App's id: check re-runs of other apps are not lensgate's.
	appID int64
	// delegates knows the bots lenses are delegated to (nil: none).
	delegates *delegate.Runtime
	// configs is told when an owner's organisation configuration may have appeared.
	configs *ConfigLoader
}

// enqueue offers a job and maps the queue's answers to the webhook's: a duplicate delivery is a
// success that does nothing, a full queue is an error the dispatcher turns into 503.
func (h *hooks) enqueue(ctx context.Context, job queue.Job) error {
	// The request's arrival, not this moment: concurrent deliveries reach this line in any order,
	// and the queue lets a delivery received later supersede one received earlier.
	if t, ok := receivedAt(ctx); ok {
		job.EnqueuedAt = t
	} else {
		job.EnqueuedAt = h.now()
	}
	wb := webhookBodyOf(ctx)
	if wb != nil {
		job.Body = wb.body
	}
	err := h.queue.Enqueue(ctx, job)
	log := zerolog.Ctx(ctx)
	var replay *queue.ReplayError
	switch {
	case err == nil:
		log.Debug().Str("job_key", job.Key).Str("head_sha", job.HeadSHA).Msg("review job queued")
		respond(ctx, http.StatusAccepted, "queued "+job.Key)
		h.events.outcome(job.Reason, "queued")
		return nil
	case errors.Is(err, queue.ErrDuplicate):
		log.Info().Str("job_key", job.Key).Msg("delivery already accepted; nothing to do")
		respond(ctx, http.StatusOK, "duplicate delivery")
		h.events.outcome(job.Reason, "duplicate")
		return nil
	case errors.As(err, &replay) && wb != nil:
		// Answered as this process's replay store answers (see hookScheduler.Schedule).
		first := replay.First
		wb.replayOf.Store(&first)
		replayIgnored(ctx, h.events, wb.event, first)
		return nil
	default:
		h.events.outcome(job.Reason, "refused")
		return fmt.Errorf("enqueue %s: %w", job.Key, err)
	}
}

// skip answers 200 with the reason, so GitHub's delivery log shows why nothing happened.
func (h *hooks) skip(ctx context.Context, reason, why string) error {
	zerolog.Ctx(ctx).Debug().Str("reason", why).Msg("event ignored")
	respond(ctx, http.StatusOK, "ignored: "+why)
	h.events.outcome(reason, "ignored")
	return nil
}

// respond sets the webhook's answer when the handler runs inside the request (events handled
// asynchronously have no one to answer).
func respond(ctx context.Context, status int, msg string) {
	defer func() { _ = recover() }() // no responder in async contexts
	githubapp.SetResponder(ctx, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(msg + "\n"))
	})
}
