package webhook

import (
	"context"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
)

// askFromReader queues the review run that answers an ask command when its author can read the
// repository. The worker finds the question in the conversation, checks it again (access, the
// rate limit, an answer already given) and answers it; a review of the same head costs no lens
// call. A command from anyone else, or from a bot, is dropped here unanswered, so comment spam
// costs one permission read per comment and never an App comment or a model call.
func askFromReader(ctx context.Context, h *hooks, inst int64, repo *github.Repository, number int, deliveryID, event, login string, bot bool) error {
	reason := queue.EventReason(event, "ask")
	if bot {
		return h.skip(ctx, reason, "ask command from a bot")
	}
	return commandWithAccess(ctx, h, inst, repo, number, deliveryID, reason, login, pull.CanRead,
		"ask command from a user without read access")
}
