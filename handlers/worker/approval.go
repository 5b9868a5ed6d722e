package worker

import (
	"context"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/review"
)

// ownerApproval reads code-owner approval of the changed protected files when the policy
// requires it (protected_paths_require: code_owner_approval); nil otherwise. CODEOWNERS comes
// from the base branch, like the policy itself.
func (w *Worker) ownerApproval(ctx context.Context, client *github.Client, pr *github.PullRequest, subj *review.Subject, cfg *config.Repo) *review.OwnerApproval {
	if !cfg.CodeOwnerApproval() {
		return nil
	}
	files := review.ProtectedChanged(cfg, subj.Files)
	if len(files) == 0 {
		return nil
	}
	oa := w.Fetch.OwnerApproval(ctx, client, pull.ApprovalRequest{
		Owner: subj.Owner, Repo: subj.Repo, Number: subj.Number, BaseRef: pr.GetBase().GetRef(),
		Head: subj.HeadSHA, Author: subj.Author, Files: files,
	})
	approved := 0
	for _, f := range oa.Files {
		if f.ApprovedBy != "" {
			approved++
		}
	}
	ev := zerolog.Ctx(ctx).Info().Str("codeowners", oa.Source).Int("protected_files", len(files)).Int("approved_files", approved)
	if oa.Cause != "" {
		ev = ev.Str("cause", oa.Cause)
	}
	ev.Msg("code-owner approval of protected paths read")
	return oa
}
