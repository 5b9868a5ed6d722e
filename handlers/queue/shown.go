package queue

import "context"

type shownQueuedKey struct{}

// WithShownQueued tells the job running with ctx that its head's gate check may show it queued
// (it was shown queued while the job waited, or was being shown when a worker took it): a job
// that ends before its review begins concludes that check.
func WithShownQueued(ctx context.Context) context.Context {
	return context.WithValue(ctx, shownQueuedKey{}, true)
}

// ShownQueued reports whether WithShownQueued marked ctx.
func ShownQueued(ctx context.Context) bool {
	v, _ := ctx.Value(shownQueuedKey{}).(bool)
	return v
}
