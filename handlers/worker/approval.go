package worker

import (
	"context"
	"errors"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
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

// readFailed handles a GitHub read that failed before the review began. A review is reported
// pending (operational); a re-evaluation of code-owner approval only returns the error, for the
// queue to retry: it may be for a repository that requires no approval, and the gate stands as
// the last review left it.
func (w *Worker) readFailed(ctx context.Context, client *github.Client, job queue.Job, subj *review.Subject, err error) error {
	if !job.Reason.ReevaluatesApproval() {
		return w.operational(ctx, client, job, subj, err)
	}
	zerolog.Ctx(ctx).Warn().Err(err).Msg("pull request review not re-evaluated: GitHub read failed")
	var outage *pull.OperationalError
	if pull.InstallationGone(err) || !errors.As(err, &outage) {
		return queue.Permanent(err) // a 404 or 403 stays one on retry
	}
	return err
}

// nothingToReevaluate reports, and logs, whether a job that follows a pull request review has
// nothing to do: the policy requires no code-owner approval, or (once the subject is read) no
// changed file is protected. Other jobs always have work.
func nothingToReevaluate(ctx context.Context, job queue.Job, cfg *config.Repo, subj *review.Subject) bool {
	if !job.Reason.ReevaluatesApproval() {
		return false
	}
	why := ""
	switch {
	case !cfg.CodeOwnerApproval():
		why = "the policy requires no code-owner approval"
	case subj != nil && len(review.ProtectedChanged(cfg, subj.Files)) == 0:
		why = "no changed file is protected"
	default:
		return false
	}
	zerolog.Ctx(ctx).Info().Str("reason", why).Msg("pull request review: nothing to re-evaluate")
	return true
}
