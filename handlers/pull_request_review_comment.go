package handlers

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// reviewCommentHandler takes dismiss commands written as replies to lensgate's inline
// comments. The worker checks and answers them.
type reviewCommentHandler struct{ *hooks }

var _ githubapp.EventHandler = reviewCommentHandler{}

func (reviewCommentHandler) Handles() []string { return []string{"pull_request_review_comment"} }

func (h reviewCommentHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev github.PullRequestReviewCommentEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return badPayload(err)
	}
	pr, repo, c := ev.GetPullRequest(), ev.GetRepo(), ev.GetComment()
	if pr == nil || repo == nil || c == nil {
		return badPayload(errors.New("pull_request_review_comment event without pull request, repository or comment"))
	}
	inst := githubapp.GetInstallationIDFromEvent(&ev)
	ctx, _ = githubapp.PreparePRContext(ctx, inst, repo, pr.GetNumber())
	reason := eventType + "." + ev.GetAction()
	switch {
	case ev.GetAction() != "created":
		return h.skip(ctx, reason, "only new comments are commands")
	case inst == 0:
		return h.skip(ctx, reason, "no installation in payload")
	}
	if _, ok := ParseDismiss(c.GetBody(), DismissCommand(h.command)); !ok {
		return h.skip(ctx, reason, "not a command")
	}
	return enqueueCommand(ctx, h.hooks, inst, repo, pr.GetNumber(), deliveryID, eventType+".dismiss", c.GetUser().GetLogin(), 0)
}
