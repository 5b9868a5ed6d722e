package handlers

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

// pullRequestReviewHandler settles a delegated lens at once when the bot it was delegated to
// submits a review. Reviews by anyone else are no reason to review again.
type pullRequestReviewHandler struct{ *hooks }

var _ githubapp.EventHandler = pullRequestReviewHandler{}

func (pullRequestReviewHandler) Handles() []string { return []string{"pull_request_review"} }

func (h pullRequestReviewHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev github.PullRequestReviewEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return badPayload(err)
	}
	pr, repo, rv := ev.GetPullRequest(), ev.GetRepo(), ev.GetReview()
	if pr == nil || repo == nil || rv == nil {
		return badPayload(errors.New("pull_request_review event without pull_request, repository or review"))
	}
	inst := githubapp.GetInstallationIDFromEvent(&ev)
	ctx, _ = githubapp.PreparePRContext(ctx, inst, repo, pr.GetNumber())
	reason := eventType + "." + ev.GetAction()
	switch {
	case ev.GetAction() != "submitted":
		return h.skip(ctx, reason, "only submitted reviews can answer a delegated lens")
	case botOfPresets(h.delegates, rv.GetUser()) == "":
		return h.skip(ctx, reason, "review is not from a bot a lens is delegated to")
	case !answers(h.delegates, rv, pr.GetHead().GetSHA()):
		return h.skip(ctx, reason, "review is no answer for the head")
	case pr.GetState() == "closed":
		return h.skip(ctx, reason, "pull request is closed")
	case inst == 0:
		return h.skip(ctx, reason, "no installation in payload")
	}
	owner, name := repo.GetOwner().GetLogin(), repo.GetName()
	return h.enqueue(ctx, answerJob(inst, owner, name, pr, delegate.EvidenceReview, rv.GetID(), reason))
}

// answers reports whether a bot's review can answer a delegated lens for head.
func answers(rt *delegate.Runtime, rv *github.PullRequestReview, head string) bool {
	p, ok := rt.Preset(botOfPresets(rt, rv.GetUser()))
	return ok && p.ReviewAnswers(runtime.BotReview{ID: rv.GetID(), User: runtime.Actor{Login: rv.GetUser().GetLogin(), ID: rv.GetUser().GetID()},
		State: rv.GetState(), CommitID: rv.GetCommitID(), Body: rv.GetBody(), SubmittedAt: rv.GetSubmittedAt().Time}, head)
}
