package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

// issueCommentHandler runs the review command from people with write access to the repository.
// It needs GitHub calls (permission, head SHA), so it runs in the asynchronous event stage.
type issueCommentHandler struct{ *hooks }

var _ githubapp.EventHandler = issueCommentHandler{}

func (issueCommentHandler) Handles() []string { return []string{"issue_comment"} }

func (h issueCommentHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev github.IssueCommentEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return badPayload(err)
	}
	is, repo, c := ev.GetIssue(), ev.GetRepo(), ev.GetComment()
	if is == nil || repo == nil || c == nil {
		return badPayload(errors.New("issue_comment event without issue, repository or comment"))
	}
	inst := githubapp.GetInstallationIDFromEvent(&ev)
	ctx, _ = githubapp.PreparePRContext(ctx, inst, repo, is.GetNumber())
	reason := queue.EventReason(eventType, ev.GetAction())
	if ev.GetAction() == "created" && is.IsPullRequest() && inst != 0 && h.delegates.PresetOfBot(c.GetUser().GetLogin(), c.GetUser().GetID()) != "" {
		return h.delegateAnswer(ctx, ev, deliveryID, reason)
	}
	if _, ok := pull.ParseAsk(c.GetBody(), pull.AskCommand(h.command)); ok && ev.GetAction() == "created" && is.IsPullRequest() && inst != 0 {
		return askFromReader(ctx, h.hooks, inst, repo, is.GetNumber(), deliveryID, eventType, c.GetUser().GetLogin(),
			pull.IsBot(ev.GetSender()) || pull.IsBot(c.GetUser()))
	}
	if _, ok := pull.ParseDismiss(c.GetBody(), pull.DismissCommand(h.command)); ok && ev.GetAction() == "created" && is.IsPullRequest() && inst != 0 {
		// The worker checks the command (finding, reason, separation of duties) and answers
		// it; a review of the same head costs no model call. Commands from bots and from
		// people without write access are dropped here, unanswered.
		if pull.IsBot(ev.GetSender()) || pull.IsBot(c.GetUser()) {
			return h.skip(ctx, queue.EventReason(eventType, "dismiss"), "dismiss command from a bot")
		}
		return dismissFromWriter(ctx, h.hooks, inst, repo, is.GetNumber(), deliveryID, queue.EventReason(eventType, "dismiss"), c.GetUser().GetLogin())
	}
	approve := pull.IsCommand(c.GetBody(), pull.ApproveDelegateCommand(h.command))
	switch {
	case ev.GetAction() != "created":
		return h.skip(ctx, reason, "only new comments are commands")
	case !approve && !pull.IsCommand(c.GetBody(), h.command):
		return h.skip(ctx, reason, "not a command")
	case pull.IsBot(ev.GetSender()) || pull.IsBot(c.GetUser()):
		return h.skip(ctx, reason, "command from a bot")
	case !is.IsPullRequest():
		return h.skip(ctx, reason, "command on an issue, not a pull request")
	case inst == 0:
		return h.skip(ctx, reason, "no installation in payload")
	}
	if approve {
		reason = queue.ReasonApproveDelegate
	}
	return h.reviewCommand(ctx, ev, deliveryID, reason, approve)
}

// reviewCommand queues a review of the head for a review or approve-delegate command from
// someone with write access. Only the approve-delegate command approves asking another review
// bot, and never from the pull request's author: approval is another person's.
func (h issueCommentHandler) reviewCommand(ctx context.Context, ev github.IssueCommentEvent, deliveryID string, reason queue.Reason, approve bool) error {
	repo, c := ev.GetRepo(), ev.GetComment()
	inst := githubapp.GetInstallationIDFromEvent(&ev)
	owner, name, login := repo.GetOwner().GetLogin(), repo.GetName(), c.GetUser().GetLogin()
	client, err := h.clients.NewInstallationClient(inst)
	if err != nil {
		return fmt.Errorf("installation client: %w", err)
	}
	perm, err := h.fetch.Permission(ctx, client, owner, name, login)
	if err != nil {
		return err
	}
	if !pull.CanWrite(perm) {
		zerolog.Ctx(ctx).Info().Str("user", login).Str("permission", perm.GetPermission()).Str("command", string(reason)).Msg("command from a user without write access ignored")
		h.events.outcome(string(reason), "ignored")
		return nil
	}
	pr, err := h.fetch.GetPull(ctx, client, owner, name, ev.GetIssue().GetNumber())
	if err != nil {
		return err
	}
	if pr.GetState() == "closed" {
		return h.skip(ctx, reason, "pull request is closed")
	}
	x := queue.Extra{RequestedBy: login, CommentID: c.GetID()}
	if approve {
		if strings.EqualFold(pr.GetUser().GetLogin(), login) {
			zerolog.Ctx(ctx).Info().Str("user", login).Msg("approve-delegate command from the pull request's author ignored")
			h.events.outcome(string(reason), "ignored")
			return nil
		}
		x.ApprovedBy = login
		zerolog.Ctx(ctx).Info().Str("user", login).Str("head", pr.GetHead().GetSHA()).Msg("asking another review bot approved")
	}
	return h.enqueue(ctx, queue.Job{
		Key:            queue.Key(owner, name, pr.GetNumber()),
		DeliveryID:     deliveryID,
		Kind:           queue.KindPullRequest,
		InstallationID: inst,
		Owner:          owner,
		Repo:           name,
		Number:         pr.GetNumber(),
		HeadSHA:        pr.GetHead().GetSHA(),
		Reason:         reason,
		Extra:          x.Raw(),
	})
}

// dismissFromWriter queues the review that answers a dismiss command when its author has write
// access.
func dismissFromWriter(ctx context.Context, h *hooks, inst int64, repo *github.Repository, number int, deliveryID string, reason queue.Reason, login string) error {
	return commandWithAccess(ctx, h, inst, repo, number, deliveryID, reason, login, pull.CanWrite,
		"dismiss command from a user without write access")
}

// commandWithAccess queues the review that answers a command when its author has the access
// the command needs (can). A command from anyone else is dropped with a debug line (denied) and
// no reply, so comment spam costs one permission read per comment, never an App comment or a
// review run.
func commandWithAccess(ctx context.Context, h *hooks, inst int64, repo *github.Repository, number int, deliveryID string,
	reason queue.Reason, login string, can func(*github.RepositoryPermissionLevel) bool, denied string) error {
	client, err := h.clients.NewInstallationClient(inst)
	if err != nil {
		return fmt.Errorf("installation client: %w", err)
	}
	perm, err := h.fetch.Permission(ctx, client, repo.GetOwner().GetLogin(), repo.GetName(), login)
	if err != nil {
		return err
	}
	if !can(perm) {
		return h.skip(ctx, reason, denied)
	}
	return enqueueCommand(ctx, h, client, inst, repo, number, deliveryID, reason, login)
}

// delegateAnswer reviews the head again when a bot a lens is delegated to comments: the comment
// may be its answer. The delivery id names the comment, so a redelivery and a later scheduled
// look that finds the same answer do not review twice.
func (h issueCommentHandler) delegateAnswer(ctx context.Context, ev github.IssueCommentEvent, deliveryID string, reason queue.Reason) error {
	repo, is, c := ev.GetRepo(), ev.GetIssue(), ev.GetComment()
	owner, name := repo.GetOwner().GetLogin(), repo.GetName()
	inst := githubapp.GetInstallationIDFromEvent(&ev)
	client, err := h.clients.NewInstallationClient(inst)
	if err != nil {
		return fmt.Errorf("installation client: %w", err)
	}
	pr, err := h.fetch.GetPull(ctx, client, owner, name, is.GetNumber())
	if err != nil {
		return err
	}
	if pr.GetState() == "closed" {
		return h.skip(ctx, reason, "pull request is closed")
	}
	if p, _ := h.delegates.Preset(h.delegates.PresetOfBot(c.GetUser().GetLogin(), c.GetUser().GetID())); !p.CommentAnswers(c.GetBody(), pr.GetHead().GetSHA()) {
		return h.skip(ctx, reason, "comment of "+p.Bot.Login+" is no answer for the head")
	}
	return h.enqueue(ctx, queue.AnswerJob(inst, owner, name, pr.GetNumber(), pr.GetHead().GetSHA(), delegate.EvidenceComment, c.GetID(), reason))
}

// enqueueCommand queues a review of the pull request's current head for a dismiss command.
func enqueueCommand(ctx context.Context, h *hooks, client *github.Client, inst int64, repo *github.Repository, number int, deliveryID string, reason queue.Reason, login string) error {
	owner, name := repo.GetOwner().GetLogin(), repo.GetName()
	pr, err := h.fetch.GetPull(ctx, client, owner, name, number)
	if err != nil {
		return err
	}
	if pr.GetState() == "closed" {
		return h.skip(ctx, reason, "pull request is closed")
	}
	return h.enqueue(ctx, queue.Job{
		Key: queue.Key(owner, name, number), DeliveryID: deliveryID, Kind: queue.KindPullRequest,
		InstallationID: inst, Owner: owner, Repo: name, Number: number, HeadSHA: pr.GetHead().GetSHA(),
		Reason: reason, Extra: queue.Extra{RequestedBy: login}.Raw(),
	})
}
