package webhook

import (
	"context"
	"errors"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/internal/digest"
)

// pullRequestHandler turns pull_request events into review jobs.
type pullRequestHandler struct{ *hooks }

var _ githubapp.EventHandler = pullRequestHandler{}

func (pullRequestHandler) Handles() []string { return []string{"pull_request"} }

// pullRequestFields is the part of a pull_request payload the handler reads. Reading only this
// (payloads are often 20-30 KB) keeps the webhook answer cheap; the worker reads the pull request
// fresh from GitHub anyway.
var pullRequestFields = newFieldSet(
	"action",
	"pull_request", "pull_request.number", "pull_request.draft", "pull_request.state",
	"pull_request.head", "pull_request.head.sha", "pull_request.updated_at", "pull_request.body",
	"repository", "repository.name", "repository.owner", "repository.owner.login",
	"installation", "installation.id",
	"sender", "sender.login", "sender.type",
	"changes", "changes.title", "changes.body", "changes.base",
)

func (h pullRequestHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	f, err := pullRequestFields.read(payload)
	if err != nil {
		return err
	}
	hasPR, repo := f.object("pull_request"), f.repository()
	f.objects("pull_request.head", "changes")
	action := f.str("action")
	number := int(f.int64("pull_request.number"))
	draft := f.bool("pull_request.draft")
	state := f.str("pull_request.state")
	head := f.str("pull_request.head.sha")
	seen := eventState(f.str("pull_request.updated_at"), f.str("pull_request.body"))
	inst := f.installationID()
	sender := f.user("sender")
	// A new title, body or base, even null, is present as for a json.RawMessage.
	changed := f.present("changes.title") || f.present("changes.body") || f.present("changes.base")
	if f.err != nil {
		return badPayload(f.err)
	}
	if !hasPR || repo == nil {
		return badPayload(errors.New("pull_request event without pull_request or repository"))
	}
	owner, name := repo.GetOwner().GetLogin(), repo.GetName()
	ctx, _ = githubapp.PreparePRContext(ctx, inst, repo, number)
	reason := queue.EventReason(eventType, action)
	switch action {
	case "opened", "reopened", "ready_for_review", "synchronize":
	case "edited":
		// Only a new title, body or base changes what is reviewed; lensgate's own body edits
		// (the disclosure block) must not trigger another review.
		if pull.IsBot(sender) {
			return h.skip(ctx, reason, "edited by a bot")
		}
		if !changed {
			return h.skip(ctx, reason, "edit does not change title, body or base")
		}
	default:
		return h.skip(ctx, reason, "action "+action+" is not reviewed")
	}
	if state == "closed" {
		return h.skip(ctx, reason, "pull request is closed")
	}
	if draft && !h.reviewDrafts {
		return h.skip(ctx, reason, "draft pull request")
	}
	if inst == 0 || owner == "" || name == "" || number <= 0 {
		return h.skip(ctx, reason, "no installation, repository or number in payload")
	}
	return h.enqueue(ctx, queue.Job{
		Key:            queue.Key(owner, name, number),
		DeliveryID:     deliveryID,
		Kind:           queue.KindPullRequest,
		InstallationID: inst,
		Owner:          owner,
		Repo:           name,
		Number:         number,
		HeadSHA:        head,
		Reason:         reason,
		Extra:          seen.Raw(),
	})
}

// eventState is what the worker's first read must show at least: the pull request as of the
// event. A malformed timestamp leaves only the head to compare.
func eventState(updatedAt, body string) queue.Extra {
	t, err := time.Parse(time.RFC3339, updatedAt)
	if err != nil {
		return queue.Extra{}
	}
	return queue.Extra{UpdatedAt: t.UTC(), BodyDigest: digest.SHA256Hex([]byte(body))}
}
