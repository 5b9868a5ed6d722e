package publish

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/rs/zerolog"
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

// retryWait decides whether a failure is worth another try and how long to wait first.
func (r Retry) retryWait(resp *github.Response, err error, attempt int) (time.Duration, bool) {
	var abuse *github.AbuseRateLimitError
	if errors.As(err, &abuse) {
		if abuse.RetryAfter != nil {
			return *abuse.RetryAfter, true
		}
		return r.backoff(attempt) * 4, true
	}
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		return time.Until(rl.Rate.Reset.Time) + time.Second, true
	}
	if pull.InstallationGone(err) {
		return 0, false
	}
	status := statusOf(resp, err)
	switch {
	case status == http.StatusTooManyRequests:
		if resp != nil {
			if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s >= 0 {
				return time.Duration(s) * time.Second, true
			}
		}
		return r.backoff(attempt) * 4, true
	case status >= 500:
		return r.backoff(attempt), true
	case status == 0:
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
			return r.backoff(attempt), true
		}
	}
	return 0, false
}

func (r Retry) backoff(attempt int) time.Duration {
	d := r.Backoff
	for i := 1; i < attempt && d < r.MaxWait; i++ {
		d *= 2
	}
	return min(d, r.MaxWait)
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
	attempts := max(p.retry.Attempts, 1)
	var lastErr error
	var lastStatus int
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 && recheck != nil {
			done, err := recheck(ctx)
			if err != nil {
				// Not knowing whether the write landed, repeating it could duplicate it.
				return &CallError{Op: op, Status: lastStatus, Err: errors.Join(lastErr, fmt.Errorf("re-check before retrying: %w", err))}
			}
			if done {
				zerolog.Ctx(ctx).Info().Str("op", op).Msg("write landed despite the failed answer; not repeated")
				return nil
			}
		}
		release := func() {}
		if take != nil {
			r, err := take(ctx)
			if err != nil {
				return &CallError{Op: op, Status: lastStatus, Err: errors.Join(lastErr, err)}
			}
			release = r
		}
		// A per-call deadline keeps a hung connection from eating the whole job.
		cctx, cancel := context.WithTimeout(ctx, p.callTimeout)
		resp, err := fn(cctx)
		cancel()
		release()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return &CallError{Op: op, Err: ctx.Err()}
		}
		lastErr, lastStatus = err, statusOf(resp, err)
		wait, retry := p.retry.retryWait(resp, err, attempt)
		if !retry || attempt == attempts {
			break
		}
		if wait > p.retry.MaxWait {
			zerolog.Ctx(ctx).Warn().Str("op", op).Dur("retry_after", wait).Msg("GitHub asks to wait longer than allowed; giving up")
			break
		}
		zerolog.Ctx(ctx).Warn().Str("op", op).Int("status", lastStatus).Int("attempt", attempt).Dur("wait", wait).Msg("GitHub call failed; retrying")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return &CallError{Op: op, Status: lastStatus, Err: ctx.Err()}
		case <-t.C:
		}
	}
	return &CallError{Op: op, Status: lastStatus, Err: lastErr}
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
