package review

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// DailyTokens keeps each installation's model tokens of the UTC day against the server's
// runtimes.max_tokens_per_installation_per_day. TokenLedger keeps the count in the process's
// memory; the durable queue keeps it in its database, shared by every replica and kept across
// restarts.
type DailyTokens interface {
	// Reserve takes tokens from the installation's allowance of today before a model call. When
	// they do not fit it takes nothing and returns a reservation that is not Granted, whose
	// Cause names the cap and the figures. An error means the count could not be kept.
	Reserve(ctx context.Context, installation int64, tokens int) (Reservation, error)
	// Settle replaces a granted reservation by the tokens the call used, on the day the
	// reservation was taken from. The day's count never goes below zero.
	Settle(ctx context.Context, r Reservation, used int) error
}

// Reservation is what DailyTokens.Reserve took.
type Reservation struct {
	Installation int64
	// Day is the UTC date the tokens were taken from (2006-01-02), so that a call running over
	// midnight is settled on the day it was counted in.
	Day     string
	Tokens  int
	Granted bool
	// Cause says why a reservation was not granted.
	Cause string
}

// TokenDay is the UTC date of t as DailyTokens count it.
func TokenDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// DailyCapCause is the cause of a call the daily allowance does not allow: the cap, the tokens
// counted today and the most the next call may use.
func DailyCapCause(limit int, used int64, next int) string {
	return fmt.Sprintf("runtimes.max_tokens_per_installation_per_day (%d) would be exceeded: %d used today, the next call may use up to %d",
		limit, used, next)
}

// TokenLedger is DailyTokens in the process's memory, for the memory queue: each replica counts
// its own reviews, and a restart starts the day again.
type TokenLedger struct {
	limit int
	now   func() time.Time

	mu   sync.Mutex
	day  string
	used map[int64]int
}

// NewTokenLedger returns a ledger that allows limit tokens per installation per UTC day; a
// limit of 0 or less allows everything. now is the clock (time.Now when nil).
func NewTokenLedger(limit int, now func() time.Time) *TokenLedger {
	if now == nil {
		now = time.Now
	}
	return &TokenLedger{limit: limit, now: now, used: map[int64]int{}}
}

// Used returns the tokens an installation has used (or reserved) today.
func (l *TokenLedger) Used(installation int64) int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	return l.used[installation]
}

// roll starts a new day when the date changed. Callers hold mu.
func (l *TokenLedger) roll() {
	if d := TokenDay(l.now()); d != l.day {
		l.day, l.used = d, map[int64]int{}
	}
}

// Reserve implements DailyTokens.
func (l *TokenLedger) Reserve(_ context.Context, installation int64, n int) (Reservation, error) {
	if l == nil || l.limit <= 0 {
		return Reservation{Installation: installation, Tokens: n, Granted: true}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	r := Reservation{Installation: installation, Day: l.day}
	if l.used[installation]+n > l.limit {
		r.Cause = DailyCapCause(l.limit, int64(l.used[installation]), n)
		return r, nil
	}
	l.used[installation] += n
	r.Tokens, r.Granted = n, true
	return r, nil
}

// Settle implements DailyTokens. A reservation of a day that has passed changes nothing: that
// day's count is gone.
func (l *TokenLedger) Settle(_ context.Context, r Reservation, used int) error {
	if l == nil || l.limit <= 0 || !r.Granted {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	if r.Day != l.day {
		return nil
	}
	l.used[r.Installation] = max(l.used[r.Installation]-r.Tokens+used, 0)
	return nil
}

// settleTimeout bounds the settling of a call's tokens, which goes on after the review's
// context ended: an unsettled reservation stays counted at its full size.
const settleTimeout = 10 * time.Second

// reviewBudget is the token budget of one review: models.max_tokens_per_review and the
// installation's daily allowance. It implements runtime.Budget.
type reviewBudget struct {
	max          int // 0: no per-review cap
	ledger       DailyTokens
	installation int64
	log          zerolog.Logger // names the installation

	mu       sync.Mutex
	used     int           // settled and reserved tokens of this review
	open     []Reservation // granted daily reservations not settled yet, oldest first
	refusals int
}

func (b *reviewBudget) Reserve(ctx context.Context, n int) (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max > 0 && b.used+n > b.max {
		b.refusals++
		return false, fmt.Sprintf("models.max_tokens_per_review (%d) would be exceeded: %d used by this review, the next call may use up to %d",
			b.max, b.used, n)
	}
	if b.ledger != nil {
		r, err := b.ledger.Reserve(ctx, b.installation, n)
		if err != nil {
			// The cap holds when its count cannot be kept: no call is made.
			b.log.Error().Err(err).Msg("daily token count not reserved")
			b.refusals++
			return false, "runtimes.max_tokens_per_installation_per_day could not be checked (the daily token count is unavailable), so no model call was made"
		}
		if !r.Granted {
			b.refusals++
			return false, r.Cause
		}
		b.open = append(b.open, r)
	}
	b.used += n
	return true, ""
}

func (b *reviewBudget) Settle(ctx context.Context, reserved, used int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used = max(b.used-reserved+used, 0)
	if b.ledger == nil {
		return
	}
	// The reservation of this call: the oldest open one of its size (calls of one size are
	// interchangeable but for their day, and the oldest is the one of the earlier day).
	for i, r := range b.open {
		if r.Tokens != reserved {
			continue
		}
		b.open = append(b.open[:i], b.open[i+1:]...)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
		if err := b.ledger.Settle(sctx, r, used); err != nil {
			b.log.Warn().Err(err).Msg("daily token count not settled; the call stays counted at its reservation")
		}
		return
	}
}

// Remaining is how many tokens the review may still spend under models.max_tokens_per_review
// (-1: no per-review cap).
func (b *reviewBudget) Remaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max <= 0 {
		return -1
	}
	return max(b.max-b.used, 0)
}
