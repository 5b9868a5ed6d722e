package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"
)

// pushHandler watches pushes to the owners' organisation configuration repositories. The App's
// manifest does not subscribe to push (it would bring every push of every repository); an
// operator who subscribes gets an organisation .asdd.yml applied at once instead of within
// OrgConfigAbsentTTL.
type pushHandler struct{ *hooks }

var _ githubapp.EventHandler = pushHandler{}

func (pushHandler) Handles() []string { return []string{"push"} }

func (h pushHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev struct {
		Ref        string `json:"ref"`
		Repository *struct {
			Name          string `json:"name"`
			DefaultBranch string `json:"default_branch"`
			Owner         struct {
				Login string `json:"login"`
				Name  string `json:"name"`
			} `json:"owner"`
		} `json:"repository"`
		Installation *struct {
			ID int64 `json:"id"`
		} `json:"installation"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		return badPayload(err)
	}
	if ev.Repository == nil {
		return badPayload(errors.New("push event without repository"))
	}
	// A push payload names the owner by login, or (in its older form) by name only.
	owner := ev.Repository.Owner.Login
	if owner == "" {
		owner = ev.Repository.Owner.Name
	}
	if h.configs == nil || owner == "" || !h.configs.IsOrgConfigRepo(ev.Repository.Name) ||
		ev.Repository.DefaultBranch == "" || ev.Ref != "refs/heads/"+ev.Repository.DefaultBranch {
		h.events.outcome(eventType, "ignored")
		return nil
	}
	var inst int64
	if ev.Installation != nil {
		inst = ev.Installation.ID
	}
	if err := h.configs.OrgConfigChanged(ctx, inst, owner); err != nil {
		// GitHub redelivers a failed delivery; within the TTL the file applies anyway.
		return err
	}
	zerolog.Ctx(ctx).Info().Str(githubapp.LogKeyRepositoryOwner, owner).Str(githubapp.LogKeyRepositoryName, ev.Repository.Name).
		Msg("organisation configuration repository pushed; its configuration is read again")
	h.events.outcome(eventType, "logged")
	return nil
}

// orgRepoAdded tells the loader of organisation configuration repositories an installation
// was given access to: a configuration it could not read before may now apply.
func (h *hooks) orgRepoAdded(ctx context.Context, inst int64, account string, repos []*github.Repository) {
	if h.configs == nil {
		return
	}
	for _, r := range repos {
		if !h.configs.IsOrgConfigRepo(r.GetName()) {
			continue
		}
		owner := account
		if o, _, ok := strings.Cut(r.GetFullName(), "/"); ok {
			owner = o
		}
		if err := h.configs.OrgConfigChanged(ctx, inst, owner); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("organisation configuration repository added; its configuration applies within the TTL")
		}
	}
}
