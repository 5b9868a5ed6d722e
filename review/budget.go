package review

import (
	"fmt"
	"sync"
	"time"
)

// TokenLedger counts the model tokens of each installation per UTC day, for the server's
// runtimes.max_tokens_per_installation_per_day. It lives as long as the process: each replica
// counts its own reviews, and a restart starts the day again.
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
	if d := l.now().UTC().Format(time.DateOnly); d != l.day {
		l.day, l.used = d, map[int64]int{}
	}
}

func (l *TokenLedger) reserve(installation int64, n int) (bool, string) {
	if l == nil || l.limit <= 0 {
		return true, ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	if l.used[installation]+n > l.limit {
		return false, fmt.Sprintf("runtimes.max_tokens_per_installation_per_day (%d) would be exceeded: %d used today, the next call may use up to %d",
			l.limit, l.used[installation], n)
	}
	l.used[installation] += n
	return true, ""
}

func (l *TokenLedger) settle(installation int64, reserved, used int) {
	if l == nil || l.limit <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	l.used[installation] = max(l.used[installation]-reserved+used, 0)
}

// reviewBudget is the token budget of one review: models.max_tokens_per_review and the
// installation's daily allowance. It implements runtime.Budget.
type reviewBudget struct {
	max          int // 0: no per-review cap
	ledger       *TokenLedger
	installation int64

	mu       sync.Mutex
	used     int // settled and reserved tokens of this review
	refusals int
}

func (b *reviewBudget) Reserve(n int) (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max > 0 && b.used+n > b.max {
		b.refusals++
		return false, fmt.Sprintf("models.max_tokens_per_review (%d) would be exceeded: %d used by this review, the next call may use up to %d",
			b.max, b.used, n)
	}
	if ok, cause := b.ledger.reserve(b.installation, n); !ok {
		b.refusals++
		return false, cause
	}
	b.used += n
	return true, ""
}

func (b *reviewBudget) Settle(reserved, used int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used = max(b.used-reserved+used, 0)
	b.ledger.settle(b.installation, reserved, used)
}
