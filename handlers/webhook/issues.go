package webhook

import (
	"context"
	"errors"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
)

// issuesHandler turns issues events into triage jobs.
type issuesHandler struct{ *hooks }

var _ githubapp.EventHandler = issuesHandler{}

func (issuesHandler) Handles() []string { return []string{"issues"} }

// issuesFields is the part of an issues payload the handler reads.
var issuesFields = newFieldSet(
	"action",
	"issue", "issue.number", "issue.pull_request",
	"repository", "repository.name", "repository.owner", "repository.owner.login",
	"repository.default_branch", "repository.node_id",
	"installation", "installation.id",
	"sender", "sender.login", "sender.type",
)

func (h issuesHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	f, err := issuesFields.read(payload)
	if err != nil {
		return err
	}
	hasIssue, repo := f.object("issue"), f.repository()
	action := f.str("action")
	number := int(f.int64("issue.number"))
	// An issue that is a pull request carries pull_request links.
	isPR := f.object("issue.pull_request")
	defaultBranch, nodeID := f.str("repository.default_branch"), f.str("repository.node_id")
	inst := f.installationID()
	sender := f.user("sender")
	if f.err != nil {
		return badPayload(f.err)
	}
	if !hasIssue || repo == nil {
		return badPayload(errors.New("issues event without issue or repository"))
	}
	ctx, _ = githubapp.PrepareRepoContext(ctx, inst, repo)
	reason := queue.EventReason(eventType, action)
	switch action {
	case "opened":
	case "edited":
		if pull.IsBot(sender) {
			return h.skip(ctx, reason, "edited by a bot")
		}
	default:
		return h.skip(ctx, reason, "action "+action+" is not triaged")
	}
	if isPR {
		return h.skip(ctx, reason, "issue is a pull request")
	}
	if inst == 0 {
		return h.skip(ctx, reason, "no installation in payload")
	}
	return h.enqueue(ctx, queue.Job{
		Key:            queue.Key(repo.GetOwner().GetLogin(), repo.GetName(), number),
		DeliveryID:     deliveryID,
		Kind:           queue.KindIssue,
		InstallationID: inst,
		Owner:          repo.GetOwner().GetLogin(),
		Repo:           repo.GetName(),
		Number:         number,
		Reason:         reason,
		Extra:          queue.Extra{DefaultBranch: defaultBranch, RepositoryNodeID: nodeID}.Raw(),
	})
}
