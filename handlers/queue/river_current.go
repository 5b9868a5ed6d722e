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

// SupersededError is why a job stopped because a newer job for its subject was accepted. Head
// is the newer job's head ("" when not known); it equals the job's own head when the newer job
// reviews the same head again (a re-run request or an edit), and that job then owns the head's
// check run.
type SupersededError struct{ Head string }

func (e *SupersededError) Error() string {
	if e.Head == "" {
		return ErrSuperseded.Error()
	}
	return ErrSuperseded.Error() + " " + e.Head
}

// Is makes errors.Is(err, ErrSuperseded) and errors.Is(err, ErrNotCurrent) hold.
func (e *SupersededError) Is(target error) bool {
	return target == ErrSuperseded || target == ErrNotCurrent
}

// Superseded reports whether err says a newer job replaced this one, and the newer job's head
// when the queue knows it.
func Superseded(err error) (head string, ok bool) {
	var se *SupersededError
	if errors.As(err, &se) {
		return se.Head, true
	}
	return "", errors.Is(err, ErrSuperseded) || errors.Is(err, ErrNotCurrent)
}

type resumableKey struct{}

// WithResumable marks ctx as the context of a job its queue keeps when the job is interrupted
// (by a shutdown or a dead worker) and runs again later.
func WithResumable(ctx context.Context) context.Context {
	return context.WithValue(ctx, resumableKey{}, true)
}

// Resumable reports whether the job running with ctx runs again when it is interrupted.
func Resumable(ctx context.Context) bool {
	v, _ := ctx.Value(resumableKey{}).(bool)
	return v
}

type openHeadsKey struct{}

// WithOpenHeads tells the job running with ctx about older heads of its subject whose reviews
// began but are not known to have concluded their check runs (their worker died, or the newer
// job superseded them before they could): the job concludes them as superseded.
func WithOpenHeads(ctx context.Context, heads []string) context.Context {
	if len(heads) == 0 {
		return ctx
	}
	return context.WithValue(ctx, openHeadsKey{}, heads)
}

// OpenHeads returns the heads WithOpenHeads recorded in ctx.
func OpenHeads(ctx context.Context) []string {
	h, _ := ctx.Value(openHeadsKey{}).([]string)
	return h
}
