package worker

import (
	"context"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/handlers/publication"
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
