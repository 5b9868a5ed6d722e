package webhook

import (
	"context"
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

// pushFields is the part of a push payload the handler reads.
var pushFields = newFieldSet(
	"ref",
	"repository", "repository.name", "repository.default_branch",
	"repository.owner", "repository.owner.login", "repository.owner.name",
	"installation", "installation.id",
)

func (h pushHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	f, err := pushFields.read(payload)
	if err != nil {
		return err
	}
	hasRepo := f.object("repository")
	f.objects("repository.owner", "installation")
	ref, name, defaultBranch := f.str("ref"), f.str("repository.name"), f.str("repository.default_branch")
	// A push payload names the owner by login, or (in its older form) by name only.
	owner, ownerName := f.str("repository.owner.login"), f.str("repository.owner.name")
	inst := f.int64("installation.id")
	if f.err != nil {
		return badPayload(f.err)
	}
	if !hasRepo {
		return badPayload(errors.New("push event without repository"))
	}
	if owner == "" {
		owner = ownerName
	}
	if h.configs == nil || owner == "" || !h.configs.IsOrgConfigRepo(name) ||
		defaultBranch == "" || ref != "refs/heads/"+defaultBranch {
		h.events.outcome(eventType, "ignored")
		return nil
	}
	if err := h.configs.OrgConfigChanged(ctx, inst, owner); err != nil {
		// GitHub redelivers a failed delivery; within the TTL the file applies anyway.
		return err
	}
	zerolog.Ctx(ctx).Info().Str(githubapp.LogKeyRepositoryOwner, owner).Str(githubapp.LogKeyRepositoryName, name).
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
