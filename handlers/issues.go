package handlers

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/handlers/queue"
)

// issuesHandler turns issues events into triage jobs.
type issuesHandler struct{ *hooks }

var _ githubapp.EventHandler = issuesHandler{}

func (issuesHandler) Handles() []string { return []string{"issues"} }

func (h issuesHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev github.IssuesEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return badPayload(err)
	}
	is, repo := ev.GetIssue(), ev.GetRepo()
	if is == nil || repo == nil {
		return badPayload(errors.New("issues event without issue or repository"))
	}
	inst := githubapp.GetInstallationIDFromEvent(&ev)
	ctx, _ = githubapp.PrepareRepoContext(ctx, inst, repo)
	reason := eventType + "." + ev.GetAction()
	switch ev.GetAction() {
	case "opened":
	case "edited":
		if isBot(ev.GetSender()) {
			return h.skip(ctx, reason, "edited by a bot")
		}
	default:
		return h.skip(ctx, reason, "action "+ev.GetAction()+" is not triaged")
	}
	if is.IsPullRequest() {
		return h.skip(ctx, reason, "issue is a pull request")
	}
	if inst == 0 {
		return h.skip(ctx, reason, "no installation in payload")
	}
	return h.enqueue(ctx, queue.Job{
		Key:            JobKey(repo.GetOwner().GetLogin(), repo.GetName(), is.GetNumber()),
		DeliveryID:     deliveryID,
		Kind:           queue.KindIssue,
		InstallationID: inst,
		Owner:          repo.GetOwner().GetLogin(),
		Repo:           repo.GetName(),
		Number:         is.GetNumber(),
		Reason:         reason,
		Extra:          JobExtra{DefaultBranch: repo.GetDefaultBranch(), RepositoryNodeID: repo.GetNodeID()}.raw(),
	})
}
