package handlers

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/handlers/queue"
)

// pullRequestHandler turns pull_request events into review jobs.
type pullRequestHandler struct{ *hooks }

var _ githubapp.EventHandler = pullRequestHandler{}

func (pullRequestHandler) Handles() []string { return []string{"pull_request"} }

// pullRequestEvent is the part of a pull_request payload the handler reads. Decoding only this
// (payloads are often 20-30 KB) keeps the webhook answer cheap; the worker reads the pull request
// fresh from GitHub anyway.
type pullRequestEvent struct {
	Action      string `json:"action"`
	PullRequest *struct {
		Number int    `json:"number"`
		Draft  bool   `json:"draft"`
		State  string `json:"state"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
	} `json:"pull_request"`
	Repository *struct {
		Name  string `json:"name"`
		Owner struct {
			Login string `json:"login"`
		} `json:"owner"`
	} `json:"repository"`
	Installation *struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Sender  *github.User `json:"sender"`
	Changes *struct {
		Title json.RawMessage `json:"title"`
		Body  json.RawMessage `json:"body"`
		Base  json.RawMessage `json:"base"`
	} `json:"changes"`
}

func (h pullRequestHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev pullRequestEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return badPayload(err)
	}
	pr := ev.PullRequest
	if pr == nil || ev.Repository == nil {
		return badPayload(errors.New("pull_request event without pull_request or repository"))
	}
	owner, name := ev.Repository.Owner.Login, ev.Repository.Name
	var inst int64
	if ev.Installation != nil {
		inst = ev.Installation.ID
	}
	repo := &github.Repository{Name: &name, Owner: &github.User{Login: &owner}}
	ctx, _ = githubapp.PreparePRContext(ctx, inst, repo, pr.Number)
	reason := eventType + "." + ev.Action
	switch ev.Action {
	case "opened", "reopened", "ready_for_review", "synchronize":
	case "edited":
		// Only a new title, body or base changes what is reviewed; lensgate's own body edits
		// (the disclosure block) must not trigger another review.
		if isBot(ev.Sender) {
			return h.skip(ctx, reason, "edited by a bot")
		}
		if ch := ev.Changes; ch == nil || (ch.Title == nil && ch.Body == nil && ch.Base == nil) {
			return h.skip(ctx, reason, "edit does not change title, body or base")
		}
	default:
		return h.skip(ctx, reason, "action "+ev.Action+" is not reviewed")
	}
	if pr.State == "closed" {
		return h.skip(ctx, reason, "pull request is closed")
	}
	if pr.Draft && !h.reviewDrafts {
		return h.skip(ctx, reason, "draft pull request")
	}
	if inst == 0 || owner == "" || name == "" || pr.Number <= 0 {
		return h.skip(ctx, reason, "no installation, repository or number in payload")
	}
	return h.enqueue(ctx, queue.Job{
		Key:            JobKey(owner, name, pr.Number),
		DeliveryID:     deliveryID,
		Kind:           queue.KindPullRequest,
		InstallationID: inst,
		Owner:          owner,
		Repo:           name,
		Number:         pr.Number,
		HeadSHA:        pr.Head.SHA,
		Reason:         reason,
	})
}
