// Package retry is the one retry policy of lensgate's outbound calls, to GitHub and to model
// servers: exponential backoff with jitter, server-given waits (Retry-After, GitHub's rate-limit
// reset) honoured, one overall deadline, and one classification of what is worth repeating.
//
// The loop itself is cenkalti/backoff's; this package adds what every caller needs around it:
// the classification, the bound on a server-given wait, the "did my write land?" re-check
// before a repeat, and an error that says how many attempts were made.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Policy bounds how a failing call is retried.
type Policy struct {
	// Attempts is the number of tries in all, the first included (at least 1).
	Attempts int
	// Initial is the first backoff; it doubles per attempt, with ±50 % jitter. Zero takes 500 ms.
	Initial time.Duration
	// MaxWait is the longest single wait, server-given waits included: a Retry-After longer than
	// this ends the call rather than hold a worker. Zero takes 30 s.
	MaxWait time.Duration
	// Deadline, when positive, bounds the whole call: every attempt and every wait. An attempt
	// still running when it passes is cancelled.
	Deadline time.Duration
}

func (p Policy) initial() time.Duration {
	if p.Initial > 0 {
		return p.Initial
	}
	return 500 * time.Millisecond
}

func (p Policy) maxWait() time.Duration {
	if p.MaxWait > 0 {
		return p.MaxWait
	}
	return 30 * time.Second
}

// Verdict is what a classifier says of one failed attempt.
type Verdict struct {
	// Retry reports whether a repeat may succeed.
	Retry bool
	// After is the wait the server asked for; zero means the policy's backoff.
	After time.Duration
}

// Final is the verdict on a failure no repeat can mend.
func Final() Verdict { return Verdict{} }

// Backoff is the verdict on a transient failure: repeat after the policy's backoff.
func Backoff() Verdict { return Verdict{Retry: true} }

// After is the verdict on a failure the server asked to repeat after d.
func After(d time.Duration) Verdict { return Verdict{Retry: true, After: max(d, 0)} }

// Classifier judges a failed attempt.
type Classifier func(error) Verdict

// ExhaustedError is a call whose every attempt failed with a transient error, or whose server
// asked for a longer wait than the policy allows: an outage, not an answer.
type ExhaustedError struct {
	Attempts int
	Err      error
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("failed after %d attempt(s): %v", e.Attempts, e.Err)
}

func (e *ExhaustedError) Unwrap() error { return e.Err }

// Option adjusts one call.
type Option func(*call)

type call struct {
	recheck func(context.Context) (bool, error)
	notify  func(err error, attempt int, wait time.Duration)
}

// WithRecheck runs check before every repeat of a write: when it reports that the write landed
// although its answer was lost, the call ends successfully without writing again. An error from
// check ends the call, since repeating a write that may have landed could duplicate it.
func WithRecheck(check func(context.Context) (bool, error)) Option {
	return func(c *call) { c.recheck = check }
}

// WithNotify calls fn before each wait, with the failure, the attempt that failed (from 1) and
// the wait.
func WithNotify(fn func(err error, attempt int, wait time.Duration)) Option {
	return func(c *call) { c.notify = fn }
}

// Do runs op until it succeeds, fails with an error classify calls final, or the policy's
// attempts or deadline run out. op receives the attempt number, from 1.
//
// It returns nil; op's final error as it is; an *ExhaustedError wrapping the last transient
// error; or, when ctx ends, the context's cause joined with the last error.
func Do(ctx context.Context, p Policy, classify Classifier, op func(ctx context.Context, attempt int) error, opts ...Option) error {
	var c call
	for _, o := range opts {
		o(&c)
	}
	if p.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, p.Deadline, fmt.Errorf("call deadline of %s passed", p.Deadline))
		defer cancel()
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = p.initial()
	b.MaxInterval = p.maxWait()
	b.Multiplier = 2
	b.RandomizationFactor = 0.5

	var (
		attempt   int
		last      error
		exhausted bool // the last failure was transient
	)
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		attempt++
		if attempt > 1 && c.recheck != nil {
			landed, err := c.recheck(ctx)
			if err != nil {
				last, exhausted = errors.Join(last, fmt.Errorf("re-check before retrying: %w", err)), false
				return struct{}{}, backoff.Permanent(last)
			}
			if landed {
				last = nil
				return struct{}{}, nil
			}
		}
		err := op(ctx, attempt)
		if err == nil {
			last = nil
			return struct{}{}, nil
		}
		last = err
		if ctx.Err() != nil {
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, judge(p, classify(err), err, &exhausted)
	}, backoff.WithBackOff(b), backoff.WithMaxTries(uint(max(p.Attempts, 1))), backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(_ error, d time.Duration) {
			if c.notify != nil {
				c.notify(last, attempt, d)
			}
		}))
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return errors.Join(context.Cause(ctx), last)
	case exhausted:
		return &ExhaustedError{Attempts: attempt, Err: last}
	}
	return last
}

// judge turns a verdict into what the backoff loop understands, recording whether the failure
// was transient.
func judge(p Policy, v Verdict, err error, exhausted *bool) error {
	*exhausted = v.Retry
	switch {
	case !v.Retry:
		return backoff.Permanent(err)
	case v.After > p.maxWait():
		// Holding a worker longer than the policy allows helps no one: report the outage now.
		return backoff.Permanent(err)
	case v.After > 0:
		// A server-given wait is a floor: a little jitter above it keeps callers that were told
		// the same moment from arriving together.
		jitter := time.Duration(rand.Int64N(int64(v.After)/10 + 1))
		return &backoff.RetryAfterError{Duration: min(v.After+jitter, p.maxWait())}
	}
	return err
}
