package publish

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/internal/retry"
)

// Retry bounds how GitHub failures are retried.
type Retry struct {
	// Attempts is the number of tries per call (at least 1).
	Attempts int
	// Backoff is the first wait after a 5xx or a network error; it doubles per attempt.
	Backoff time.Duration
	// MaxWait is the longest single wait, Retry-After included; a longer Retry-After gives up.
	MaxWait time.Duration
}

// DefaultRetry suits a worker with a job timeout of minutes: 4 tries, 500 ms first backoff,
// waits of at most 90 s.
func DefaultRetry() Retry {
	return Retry{Attempts: 4, Backoff: 500 * time.Millisecond, MaxWait: 90 * time.Second}
}

// CallError is a GitHub call that failed after retries.
type CallError struct {
	Op     string
	Status int
	Err    error
}

func (e *CallError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: status %d: %v", e.Op, e.Status, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Op, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

func statusOf(resp *github.Response, err error) int {
	if resp != nil && resp.Response != nil {
		return resp.StatusCode
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// classify judges a failed GitHub call by lensgate's one retry classification
// (retry.GitHub); a removed installation is final, and an error that carries no GitHub answer
// is judged by the status of the response that came with it, when one did.
func classify(resp *github.Response, err error) retry.Verdict {
	if pull.InstallationGone(err) {
		return retry.Final()
	}
	var (
		er    *github.ErrorResponse
		abuse *github.AbuseRateLimitError
		rl    *github.RateLimitError
	)
	answered := errors.As(err, &er) || errors.As(err, &abuse) || errors.As(err, &rl)
	if !answered && resp != nil && resp.Response != nil && resp.StatusCode >= 300 {
		return retry.HTTPStatus(resp.StatusCode, resp.Header)
	}
	return retry.GitHub(err)
}

// call runs fn with retries. Before a retry, recheck (when set) reports whether the write
// already landed although its answer was lost; the call then ends without writing again.
func (p *Publisher) call(ctx context.Context, op string, fn func(context.Context) (*github.Response, error), recheck func(context.Context) (bool, error)) error {
	return p.callIn(ctx, op, fn, recheck, nil)
}

// callIn is call with each attempt made inside a slot: take (when set) waits for the slot
// before the attempt's own deadline starts, and the release it returns runs once the attempt
// is answered.
func (p *Publisher) callIn(ctx context.Context, op string, fn func(context.Context) (*github.Response, error), recheck func(context.Context) (bool, error), take func(context.Context) (func(), error)) error {
	var lastResp *github.Response
	var lastStatus int
	attempt := func(ctx context.Context, _ int) error {
		release := func() {}
		if take != nil {
			r, err := take(ctx)
			if err != nil {
				return fmt.Errorf("wait for a write slot: %w", err)
			}
			release = r
		}
		// A per-call deadline keeps a hung connection from eating the whole job.
		cctx, cancel := context.WithTimeout(ctx, p.callTimeout)
		defer cancel()
		resp, err := fn(cctx)
		release()
		if err != nil {
			lastResp, lastStatus = resp, statusOf(resp, err)
		}
		return err
	}
	opts := []retry.Option{retry.WithNotify(func(err error, n int, wait time.Duration) {
		zerolog.Ctx(ctx).Warn().Err(err).Str("op", op).Int("status", lastStatus).Int("attempt", n).Dur("wait", wait).Msg("GitHub call failed; retrying")
	})}
	if recheck != nil {
		opts = append(opts, retry.WithRecheck(func(ctx context.Context) (bool, error) {
			landed, err := recheck(ctx)
			if landed {
				zerolog.Ctx(ctx).Info().Str("op", op).Msg("write landed despite the failed answer; not repeated")
			}
			return landed, err
		}))
	}
	policy := retry.Policy{Attempts: p.retry.Attempts, Initial: p.retry.Backoff, MaxWait: p.retry.MaxWait}
	err := retry.Do(ctx, policy, func(err error) retry.Verdict { return classify(lastResp, err) }, attempt, opts...)
	if err == nil {
		return nil
	}
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		err = ex.Err
	}
	return &CallError{Op: op, Status: lastStatus, Err: err}
}

// DefaultContentSpacing is GitHub's guidance for content-creating requests: one a second.
const DefaultContentSpacing = time.Second

// content is call for a content-creating write: it waits its turn among the installation's
// content writes first.
func (r *run) content(ctx context.Context, op string, fn func(context.Context) (*github.Response, error), recheck func(context.Context) (bool, error)) error {
	if r.p.slots != nil && r.p.pace.spacing > 0 {
		// Shared slots: every attempt, a retry included, waits for the installation's slot.
		return r.p.callIn(ctx, op, fn, recheck, func(ctx context.Context) (func(), error) {
			return r.p.takeSlot(ctx, r.info.installation)
		})
	}
	if err := r.p.pace.wait(ctx, r.info.installation); err != nil {
		return &CallError{Op: op, Err: err}
	}
	return r.p.call(ctx, op, fn, recheck)
}

// pacer spaces the content-creating writes of each installation. Each write reserves the next
// free slot under the lock and sleeps outside it, so concurrent runs queue up in order.
type pacer struct {
	spacing time.Duration
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error

	mu   sync.Mutex
	next map[int64]time.Time // installation -> earliest time of its next content write
}

// maxPacedInstallations bounds the installations the pacer remembers.
const maxPacedInstallations = 10000

func newPacer(spacing time.Duration, now func() time.Time, sleep func(context.Context, time.Duration) error) *pacer {
	if spacing == 0 {
		spacing = DefaultContentSpacing
	}
	if sleep == nil {
		sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
	}
	return &pacer{spacing: spacing, now: now, sleep: sleep, next: map[int64]time.Time{}}
}

func (p *pacer) wait(ctx context.Context, installation int64) error {
	if p.spacing < 0 {
		return nil
	}
	p.mu.Lock()
	now := p.now()
	at := p.next[installation]
	if at.Before(now) {
		at = now
	}
	if len(p.next) >= maxPacedInstallations {
		for id, t := range p.next {
			if t.Before(now) {
				delete(p.next, id) // its spacing has passed; nothing to remember
			}
		}
	}
	p.next[installation] = at.Add(p.spacing)
	p.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		return p.sleep(ctx, d)
	}
	return nil
}
