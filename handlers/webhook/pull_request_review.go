package webhook

import (
	"context"
	"errors"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

// pullRequestReviewHandler settles a delegated lens at once when the bot it was delegated to
// submits a review. A person's review submitted, edited or dismissed may change code-owner
// approval of protected paths: it queues a re-evaluation of the gate for the head, which the
// worker drops when the policy does not require that approval.
type pullRequestReviewHandler struct{ *hooks }

var _ githubapp.EventHandler = pullRequestReviewHandler{}

func (pullRequestReviewHandler) Handles() []string { return []string{"pull_request_review"} }

// pullRequestReviewFields is the part of a pull_request_review payload the handler reads.
var pullRequestReviewFields = newFieldSet(
	"action",
	"pull_request", "pull_request.number", "pull_request.state", "pull_request.head", "pull_request.head.sha",
	"repository", "repository.name", "repository.owner", "repository.owner.login",
	"review", "review.id", "review.user", "review.user.login", "review.user.id",
	"review.state", "review.commit_id", "review.body", "review.submitted_at",
	"installation", "installation.id",
)

func (h pullRequestReviewHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	f, err := pullRequestReviewFields.read(payload)
	if err != nil {
		return err
	}
	hasPR, repo, hasReview := f.object("pull_request"), f.repository(), f.object("review")
	f.objects("pull_request.head")
	action := f.str("action")
	number, state, head := int(f.int64("pull_request.number")), f.str("pull_request.state"), f.str("pull_request.head.sha")
	pr := &github.PullRequest{Number: &number, State: &state, Head: &github.PullRequestBranch{SHA: &head}}
	rv := &github.PullRequestReview{
		ID:          github.Int64(f.int64("review.id")),
		State:       github.String(f.str("review.state")),
		CommitID:    github.String(f.str("review.commit_id")),
		Body:        github.String(f.str("review.body")),
		SubmittedAt: f.timestamp("review.submitted_at"),
	}
	if f.object("review.user") {
		rv.User = &github.User{Login: github.String(f.str("review.user.login")), ID: github.Int64(f.int64("review.user.id"))}
	}
	inst := f.installationID()
	if f.err != nil {
		return badPayload(f.err)
	}
	if !hasPR || repo == nil || !hasReview {
		return badPayload(errors.New("pull_request_review event without pull_request, repository or review"))
	}
	ctx, _ = githubapp.PreparePRContext(ctx, inst, repo, number)
	reason := queue.EventReason(eventType, action)
	if h.delegates.PresetOfBot(rv.GetUser().GetLogin(), rv.GetUser().GetID()) == "" {
		return h.approvalChanged(ctx, deliveryID, inst, repo, pr, rv, action, reason)
	}
	switch {
	case action != "submitted":
		return h.skip(ctx, reason, "only submitted reviews can answer a delegated lens")
	case !answers(h.delegates, rv, head):
		return h.skip(ctx, reason, "review is no answer for the head")
	case state == "closed":
		return h.skip(ctx, reason, "pull request is closed")
	case inst == 0:
		return h.skip(ctx, reason, "no installation in payload")
	}
	owner, name := repo.GetOwner().GetLogin(), repo.GetName()
	return h.enqueue(ctx, queue.AnswerJob(inst, owner, name, pr.GetNumber(), pr.GetHead().GetSHA(), delegate.EvidenceReview, rv.GetID(), reason))
}

// answers reports whether a bot's review can answer a delegated lens for head.
func answers(rt *delegate.Runtime, rv *github.PullRequestReview, head string) bool {
	p, ok := rt.Preset(rt.PresetOfBot(rv.GetUser().GetLogin(), rv.GetUser().GetID()))
	return ok && p.ReviewAnswers(runtime.BotReview{ID: rv.GetID(), User: runtime.Actor{Login: rv.GetUser().GetLogin(), ID: rv.GetUser().GetID()},
		State: rv.GetState(), CommitID: rv.GetCommitID(), Body: rv.GetBody(), SubmittedAt: rv.GetSubmittedAt().Time}, head)
}

// approvalChanged queues the re-evaluation of code-owner approval after a person's review of an
// open pull request. The job follows up on the head the event names: it is dropped when a newer
// head has its own review coming, and it reuses the paid lenses' results of that head.
func (h pullRequestReviewHandler) approvalChanged(ctx context.Context, deliveryID string, inst int64, repo *github.Repository,
	pr *github.PullRequest, rv *github.PullRequestReview, action string, reason queue.Reason) error {
	switch {
	case action != "submitted" && action != "edited" && action != "dismissed":
		return h.skip(ctx, reason, "review action "+action+" does not change approval")
	case strings.HasSuffix(rv.GetUser().GetLogin(), "[bot]"):
		return h.skip(ctx, reason, "a bot's review approves no protected path")
	case pr.GetState() == "closed":
		return h.skip(ctx, reason, "pull request is closed")
	case inst == 0:
		return h.skip(ctx, reason, "no installation in payload")
	case pr.GetHead().GetSHA() == "":
		return h.skip(ctx, reason, "no head in payload")
	}
	owner, name := repo.GetOwner().GetLogin(), repo.GetName()
	return h.enqueue(ctx, queue.Job{
		Key: queue.Key(owner, name, pr.GetNumber()), DeliveryID: deliveryID, Kind: queue.KindPullRequest,
		InstallationID: inst, Owner: owner, Repo: name, Number: pr.GetNumber(), HeadSHA: pr.GetHead().GetSHA(),
		Reason: reason, FollowUp: true,
	})
}
