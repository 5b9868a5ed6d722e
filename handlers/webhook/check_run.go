package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
)

// checkHandler re-runs a review when someone presses Re-run on lensgate's check
// (check_run.rerequested) or Re-run all (check_suite.rerequested). It runs asynchronously
// because an event without pull_requests needs a lookup by head SHA.
type checkHandler struct{ *hooks }

var _ githubapp.EventHandler = checkHandler{}

func (checkHandler) Handles() []string { return []string{"check_run", "check_suite"} }

func (h checkHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var (
		action, headSHA string
		prs             []*github.PullRequest
		repo            *github.Repository
		inst            int64
		checkRunID      int64
		appID           int64
	)
	switch eventType {
	case "check_run":
		var ev github.CheckRunEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return badPayload(err)
		}
		action, repo, inst = ev.GetAction(), ev.GetRepo(), githubapp.GetInstallationIDFromEvent(&ev)
		headSHA, prs, checkRunID = ev.GetCheckRun().GetHeadSHA(), ev.GetCheckRun().PullRequests, ev.GetCheckRun().GetID()
		appID = ev.GetCheckRun().GetApp().GetID()
	case "check_suite":
		var ev github.CheckSuiteEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return badPayload(err)
		}
		action, repo, inst = ev.GetAction(), ev.GetRepo(), githubapp.GetInstallationIDFromEvent(&ev)
		headSHA, prs = ev.GetCheckSuite().GetHeadSHA(), ev.GetCheckSuite().PullRequests
		appID = ev.GetCheckSuite().GetApp().GetID()
	}
	if repo == nil {
		return badPayload(errors.New(eventType + " event without repository"))
	}
	ctx, log := githubapp.PrepareRepoContext(ctx, inst, repo)
	reason := queue.EventReason(eventType, action)
	if action != "rerequested" {
		return h.skip(ctx, reason, "action "+action+" is not a re-run")
	}
	if inst == 0 {
		return h.skip(ctx, reason, "no installation in payload")
	}
	if appID != h.appID {
		// GitHub sends every app's re-runs to every subscribed app; only lensgate's own check
		// runs and suites are lensgate's to re-run.
		return h.skip(ctx, reason, fmt.Sprintf("re-run of app %d's check, not this app's", appID))
	}
	owner, name := repo.GetOwner().GetLogin(), repo.GetName()
	client, err := h.clients.NewInstallationClient(inst)
	if err != nil {
		return fmt.Errorf("installation client: %w", err)
	}
	if len(prs) == 0 && headSHA != "" {
		// GitHub leaves pull_requests empty for forks and sometimes for plain branches.
		err := h.fetch.Do(ctx, "list pull requests for "+headSHA, func(ctx context.Context) error {
			var err error
			prs, _, err = client.PullRequests.ListPullRequestsWithCommit(ctx, owner, name, headSHA, &github.ListOptions{PerPage: pull.PerPage})
			return err
		})
		if err != nil {
			return err
		}
	}
	var errs []error
	queued := 0
	for _, pr := range prs {
		// Check events can name pull requests of other repositories (fork to upstream).
		if b := pr.GetBase().GetRepo(); b != nil && b.GetID() != 0 && repo.GetID() != 0 && b.GetID() != repo.GetID() {
			continue
		}
		if pr.GetState() == "closed" {
			continue
		}
		head := pr.GetHead().GetSHA()
		if head == "" {
			head = headSHA
		}
		// Several pull requests can share a head; each gets its own job, one delivery each.
		did := deliveryID
		if queued > 0 {
			did = fmt.Sprintf("%s/%d", deliveryID, pr.GetNumber())
		}
		err := h.enqueue(ctx, queue.Job{
			Key:            queue.Key(owner, name, pr.GetNumber()),
			DeliveryID:     did,
			Kind:           queue.KindPullRequest,
			InstallationID: inst,
			Owner:          owner,
			Repo:           name,
			Number:         pr.GetNumber(),
			HeadSHA:        head,
			Reason:         reason,
			Extra:          queue.Extra{CheckRunID: checkRunID}.Raw(),
		})
		if err != nil {
			errs = append(errs, err)
		}
		queued++
	}
	if queued == 0 {
		log.Info().Str("head_sha", headSHA).Msg("re-run requested for a head without an open pull request")
		h.events.outcome(string(reason), "ignored")
	}
	return errors.Join(errs...)
}
