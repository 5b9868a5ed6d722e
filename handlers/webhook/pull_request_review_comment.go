package webhook

import (
	"context"
	"errors"

	"github.com/google/go-github/v62/github"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/palantir/go-githubapp/githubapp"
)

// reviewCommentHandler takes dismiss commands written as replies to lensgate's inline
// comments, and ask commands in any review thread. The worker checks and answers them.
type reviewCommentHandler struct{ *hooks }

var _ githubapp.EventHandler = reviewCommentHandler{}

func (reviewCommentHandler) Handles() []string { return []string{"pull_request_review_comment"} }

// reviewCommentFields is the part of a pull_request_review_comment payload the handler reads.
var reviewCommentFields = newFieldSet(
	"action",
	"pull_request", "pull_request.number",
	"repository", "repository.name", "repository.owner", "repository.owner.login",
	"comment", "comment.body", "comment.user", "comment.user.login", "comment.user.type",
	"installation", "installation.id",
)

func (h reviewCommentHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	f, err := reviewCommentFields.read(payload)
	if err != nil {
		return err
	}
	hasPR, repo, hasComment := f.object("pull_request"), f.repository(), f.object("comment")
	f.objects("comment.user")
	action := f.str("action")
	number := int(f.int64("pull_request.number"))
	body, login, userType := f.str("comment.body"), f.str("comment.user.login"), f.str("comment.user.type")
	inst := f.installationID()
	if f.err != nil {
		return badPayload(f.err)
	}
	if !hasPR || repo == nil || !hasComment {
		return badPayload(errors.New("pull_request_review_comment event without pull request, repository or comment"))
	}
	ctx, _ = githubapp.PreparePRContext(ctx, inst, repo, number)
	reason := queue.EventReason(eventType, action)
	switch {
	case action != "created":
		return h.skip(ctx, reason, "only new comments are commands")
	case inst == 0:
		return h.skip(ctx, reason, "no installation in payload")
	}
	if _, ok := pull.ParseAsk(body, pull.AskCommand(h.command)); ok {
		return askFromReader(ctx, h.hooks, inst, repo, number, deliveryID, eventType, login, pull.IsBot(&github.User{Login: &login, Type: &userType}))
	}
	if _, ok := pull.ParseDismiss(body, pull.DismissCommand(h.command)); !ok {
		return h.skip(ctx, reason, "not a command")
	}
	if pull.IsBot(&github.User{Login: &login, Type: &userType}) {
		return h.skip(ctx, queue.EventReason(eventType, "dismiss"), "dismiss command from a bot")
	}
	return dismissFromWriter(ctx, h.hooks, inst, repo, number, deliveryID, queue.EventReason(eventType, "dismiss"), login)
}
