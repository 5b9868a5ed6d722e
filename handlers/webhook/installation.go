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

	"github.com/lensgate/lensgate/handlers/queue"
)

// installationHandler logs installation changes.
type installationHandler struct{ *hooks }

var _ githubapp.EventHandler = installationHandler{}

func (installationHandler) Handles() []string {
	return []string{"installation", "installation_repositories"}
}

func (h installationHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	log := zerolog.Ctx(ctx)
	var (
		inst    int64
		account string
		added   []*github.Repository
	)
	switch eventType {
	case "installation":
		var ev github.InstallationEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return badPayload(err)
		}
		names := make([]string, 0, len(ev.Repositories))
		for _, r := range ev.Repositories {
			names = append(names, r.GetFullName())
		}
		inst, account = ev.GetInstallation().GetID(), ev.GetInstallation().GetAccount().GetLogin()
		log.Info().Int64(githubapp.LogKeyInstallationID, inst).Str("account", account).
			Str("action", ev.GetAction()).Strs("repositories", names).Msg("installation changed")
		if ev.GetAction() == "created" {
			added = ev.Repositories
		}
	case "installation_repositories":
		var ev github.InstallationRepositoriesEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return badPayload(err)
		}
		var addedNames, removed []string
		for _, r := range ev.RepositoriesAdded {
			addedNames = append(addedNames, r.GetFullName())
		}
		for _, r := range ev.RepositoriesRemoved {
			removed = append(removed, r.GetFullName())
		}
		inst, account = ev.GetInstallation().GetID(), ev.GetInstallation().GetAccount().GetLogin()
		log.Info().Int64(githubapp.LogKeyInstallationID, inst).Str("action", ev.GetAction()).
			Strs("added", addedNames).Strs("removed", removed).Msg("installation repositories changed")
		added = ev.RepositoriesAdded
	}
	h.orgRepoAdded(ctx, inst, account, added)
	h.events.outcome(eventType, "logged")
	if !h.backfill || inst == 0 || len(added) == 0 {
		return nil
	}
	return h.backfillRepos(ctx, inst, account, deliveryID, added)
}

// backfillRepos queues a review of every open, non-draft pull request of newly installed
// repositories, bounded per repository.
func (h installationHandler) backfillRepos(ctx context.Context, inst int64, account, deliveryID string, repos []*github.Repository) error {
	client, err := h.clients.NewInstallationClient(inst)
	if err != nil {
		return fmt.Errorf("installation client: %w", err)
	}
	var errs []error
	for _, r := range repos {
		owner, name, ok := strings.Cut(r.GetFullName(), "/")
		if !ok {
			owner, name = account, r.GetName()
		}
		var prs []*github.PullRequest
		err := h.fetch.Do(ctx, "list open pull requests of "+owner+"/"+name, func(ctx context.Context) error {
			var err error
			prs, _, err = client.PullRequests.List(ctx, owner, name, &github.PullRequestListOptions{State: "open", ListOptions: github.ListOptions{PerPage: maxBackfillPerRepo}})
			return err
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, pr := range prs {
			if pr.GetDraft() && !h.reviewDrafts {
				continue
			}
			if err := h.enqueue(ctx, queue.Job{
				Key:            queue.Key(owner, name, pr.GetNumber()),
				DeliveryID:     fmt.Sprintf("%s/%s/%s#%d", deliveryID, owner, name, pr.GetNumber()),
				Kind:           queue.KindPullRequest,
				InstallationID: inst,
				Owner:          owner,
				Repo:           name,
				Number:         pr.GetNumber(),
				HeadSHA:        pr.GetHead().GetSHA(),
				Reason:         queue.ReasonBackfill,
			}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// maxBackfillPerRepo bounds the open pull requests one installation event reviews per repository.
const maxBackfillPerRepo = 50
