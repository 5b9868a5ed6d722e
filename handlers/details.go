package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/webhook"
)

// newDetails builds the details page when the configuration turns it on (public_url set).
func (s *Server) newDetails(hooks *webhook.Receiver, opts Options) (*details.Handler, error) {
	cfg := s.cfg
	if cfg.PublicURL == "" {
		return nil, nil
	}
	key, err := cfg.SessionKeyBytes()
	if err != nil {
		return nil, err
	}
	audit := ""
	if !cfg.DryRun {
		audit = cfg.AuditFile
	}
	return details.New(details.Options{
		Clients: s.clients,
		App: func() (int64, string) {
			if a := s.app.Load(); a != nil {
				return a.ID, a.Slug
			}
			return 0, ""
		},
		WebURL: cfg.GitHub.WebURL, V3APIURL: cfg.GitHub.V3APIURL,
		ClientID: cfg.GitHub.OAuth.ClientID, ClientSecret: cfg.GitHub.OAuth.ClientSecret,
		SessionKey: key, PublicURL: cfg.PublicURL, PublicRepos: cfg.Details.PublicRepos, ViewsPerMinute: cfg.Details.ViewsPerMinute,
		Keys: opts.SigningKeys, WitnessKeys: opts.WitnessKeys, KeysPath: RouteKeys, AuditFile: audit, CheckName: opts.CheckName,
		Logger: opts.Logger, Quality: opts.Quality,
		Rerun: func(ctx context.Context, r details.Rerun) error {
			var b [8]byte
			_, _ = rand.Read(b[:])
			return hooks.Enqueue(ctx, queue.Job{
				Key:            queue.Key(r.Owner, r.Repo, r.Number),
				DeliveryID:     "details-" + hex.EncodeToString(b[:]),
				Kind:           queue.KindPullRequest,
				InstallationID: r.InstallationID,
				Owner:          r.Owner, Repo: r.Repo, Number: r.Number, HeadSHA: r.HeadSHA,
				Reason: queue.ReasonDetailsRerun,
			})
		},
	})
}
