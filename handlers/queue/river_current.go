package queue

import (
	"context"
	"errors"
)

// ErrNotCurrent means a newer job for the same subject was accepted after this one: the worker
// must not publish its result. Durable queues treat it as a cancellation, not a failure.
var ErrNotCurrent = errors.New("queue: job superseded by a newer one")

type currentCheckKey struct{}

// WithCurrentCheck returns a context whose CheckCurrent calls check. Queues that can learn about
// supersession after a job started (for example from another replica) install it for each job.
func WithCurrentCheck(ctx context.Context, check func(context.Context) error) context.Context {
	return context.WithValue(ctx, currentCheckKey{}, check)
}

// CheckCurrent reports whether the job running with ctx is still the newest for its subject.
// Call it right before publishing. It returns nil when it is, an error wrapping ErrNotCurrent when
// a newer job replaced it, ctx's error when the job was cancelled, and nil when the queue installed
// no check (a queue without one cancels stale jobs through ctx alone).
func CheckCurrent(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	check, ok := ctx.Value(currentCheckKey{}).(func(context.Context) error)
	if !ok || check == nil {
		return nil
	}
	return check(ctx)
}
