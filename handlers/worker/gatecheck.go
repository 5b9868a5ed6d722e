package worker

import (
	"context"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/review"
)

// trackProgress has the publisher follow the review about to run, when it can: the returned
// context carries the tracker's Report to the pipeline, and stop must be called before the
// review is published or abandoned.
func (w *Worker) trackProgress(ctx context.Context, client *github.Client, pub *publication.Publication) (context.Context, func()) {
	pt, ok := w.Publisher.(publication.ProgressTracking)
	if !ok {
		return ctx, func() {}
	}
	t := pt.TrackProgress(ctx, client, pub)
	if t == nil {
		return ctx, func() {}
	}
	return review.WithProgress(ctx, t.Report), t.Stop
}

// unqueue concludes the gate check of the job's head when it still shows the job queued and the
// job ends without a review: why says what happened instead. Only a job the queue says may
// have been shown queued looks.
func (w *Worker) unqueue(ctx context.Context, client *github.Client, job queue.Job, pr *github.PullRequest, why string) {
	qm, ok := w.Publisher.(publication.QueueMarking)
	if !ok || job.HeadSHA == "" || !queue.ShownQueued(ctx) {
		return
	}
	subj := bindPartial(pr)
	subj.HeadSHA = job.HeadSHA
	pub := &publication.Publication{Job: job, App: w.App, Subject: subj}
	if err := qm.Unqueue(ctx, client, pub, why); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("could not conclude the queued gate check")
	}
}
