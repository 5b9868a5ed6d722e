package review

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestTokenLedgerInMemory: the memory ledger grants within the cap from many goroutines, fills
// it exactly, settles a call on the day it was counted in and never below zero.
func TestTokenLedgerInMemory(t *testing.T) {
	ctx := context.Background()
	t.Run("concurrent", func(t *testing.T) {
		const limit, workers = 20_000, 12
		l := NewTokenLedger(limit, nil)
		granted := make([]int, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 150 + 37*w; n > 0; {
					r, _ := l.Reserve(ctx, 1, n)
					if r.Granted {
						granted[w] += n
					} else {
						n /= 2
					}
				}
			}()
		}
		wg.Wait()
		sum := 0
		for _, g := range granted {
			sum += g
		}
		if sum != limit || l.Used(1) != limit {
			t.Fatalf("granted %d, counted %d, want the cap %d exactly", sum, l.Used(1), limit)
		}
	})

	t.Run("days and settling", func(t *testing.T) {
		now := time.Date(2026, 12, 1, 23, 59, 0, 0, time.UTC)
		l := NewTokenLedger(5000, func() time.Time { return now })
		late, _ := l.Reserve(ctx, 1, 4000)
		if !late.Granted || late.Day != "2026-12-01" {
			t.Fatalf("%+v", late)
		}
		refused, _ := l.Reserve(ctx, 1, 2000)
		if refused.Granted || refused.Cause != DailyCapCause(5000, 4000, 2000) {
			t.Fatalf("%+v", refused)
		}
		_ = l.Settle(ctx, refused, 2000) // a refusal settles nothing
		if l.Used(1) != 4000 {
			t.Fatalf("count %d after settling a refusal", l.Used(1))
		}
		now = now.Add(2 * time.Minute)
		early, _ := l.Reserve(ctx, 1, 3000)
		// The call of the day before ends now: today's count stays its own.
		_ = l.Settle(ctx, late, 0)
		if l.Used(1) != 3000 {
			t.Fatalf("today counts %d, want 3000", l.Used(1))
		}
		_ = l.Settle(ctx, early, 0)
		_ = l.Settle(ctx, early, 0)
		if l.Used(1) != 0 {
			t.Fatalf("count %d after settling twice, want 0", l.Used(1))
		}
	})
}

// TestReviewBudgetSettlesEachCallOnItsDay: the review's budget hands each settle to the daily
// reservation of that call, so a call reserved before midnight settles on its own day.
func TestReviewBudgetSettlesEachCallOnItsDay(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 23, 59, 0, 0, time.UTC)
	l := NewTokenLedger(10_000, func() time.Time { return now })
	b := &reviewBudget{ledger: l, installation: 3, log: zerolog.Nop()}
	if ok, cause := b.Reserve(ctx, 4000); !ok {
		t.Fatal(cause)
	}
	now = now.Add(2 * time.Minute)
	if ok, cause := b.Reserve(ctx, 2500); !ok {
		t.Fatal(cause)
	}
	b.Settle(ctx, 4000, 1000) // yesterday's call
	if got := l.Used(3); got != 2500 {
		t.Fatalf("today counts %d, want the 2500 reserved today", got)
	}
	b.Settle(ctx, 2500, 1200)
	if got := l.Used(3); got != 1200 {
		t.Fatalf("today counts %d, want the 1200 used", got)
	}
	if ok, cause := b.Reserve(ctx, 9000); ok || !strings.Contains(cause, "(10000) would be exceeded: 1200 used today") {
		t.Fatalf("over the cap: %v %q", ok, cause)
	}
	if b.used != 2200 || len(b.open) != 0 {
		t.Fatalf("review holds %d tokens and %d open reservations", b.used, len(b.open))
	}
}
