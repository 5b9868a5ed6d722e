package durable

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
)

// testClock is a settable clock shared by ledgers.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func ledgerOn(t testing.TB, q queue.Queue, limit int, clock func() time.Time) *TokenLedger {
	t.Helper()
	l, err := NewTokenLedger(context.Background(), q, limit, clock)
	if err != nil {
		t.Fatalf("NewTokenLedger: %v", err)
	}
	return l
}

func usedOn(t testing.TB, l *TokenLedger, inst int64) int64 {
	t.Helper()
	n, err := l.Used(context.Background(), inst)
	if err != nil {
		t.Fatalf("Used: %v", err)
	}
	return n
}

// TestTokenLedgerConcurrentReservations: many goroutines reserving at once, through one ledger
// or two ledgers on one database (two replicas), never take more than the cap together, lose no
// reservation, and fill the cap exactly (each goroutine goes on until even one token is refused).
func TestTokenLedgerConcurrentReservations(t *testing.T) {
	const limit, workers = 20_000, 12
	for _, be := range backends(t) {
		for _, replicas := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%d replicas", be.name, replicas), func(t *testing.T) {
				dsn := be.dsn(t)
				ledgers := make([]*TokenLedger, replicas)
				for i := range ledgers {
					opts := testOptions()
					opts.InsertOnly = true
					ledgers[i] = ledgerOn(t, open(t, dsn, opts), limit, nil)
				}
				ctx := context.Background()
				granted := make([]int64, workers)
				errs := make(chan error, workers)
				var wg sync.WaitGroup
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						l := ledgers[w%replicas]
						n := 150 + 37*w // sizes differ between goroutines
						for n > 0 {
							r, err := l.Reserve(ctx, 99, n)
							if err != nil {
								errs <- err
								return
							}
							if r.Granted {
								if r.Tokens != n || r.Cause != "" {
									errs <- fmt.Errorf("granted reservation %+v for %d tokens", r, n)
									return
								}
								granted[w] += int64(n)
								continue
							}
							if !strings.Contains(r.Cause, fmt.Sprintf("(%d)", limit)) || !strings.Contains(r.Cause, "used today") {
								errs <- fmt.Errorf("cause %q names neither the cap nor today's count", r.Cause)
								return
							}
							n /= 2
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				var sum int64
				for _, g := range granted {
					sum += g
				}
				if sum > limit {
					t.Fatalf("granted %d tokens in all, over the cap of %d", sum, limit)
				}
				for i, l := range ledgers {
					if got := usedOn(t, l, 99); got != sum {
						t.Fatalf("ledger %d counts %d, the goroutines were granted %d", i, got, sum)
					}
				}
				// Every goroutine ended on a refused single token, so the cap is full.
				if sum != limit {
					t.Fatalf("granted %d, want the cap %d filled", sum, limit)
				}
				if got := usedOn(t, ledgers[0], 100); got != 0 {
					t.Fatalf("another installation counts %d", got)
				}
			})
		}
	}
}

// TestTokenLedgerSurvivesRestart: a replica started again on the same database goes on with
// the day's count.
func TestTokenLedgerSurvivesRestart(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			dsn := be.dsn(t)
			ctx := context.Background()
			q := open(t, dsn, testOptions())
			l := ledgerOn(t, q, 5000, nil)
			r, err := l.Reserve(ctx, 7, 4000)
			if err != nil || !r.Granted {
				t.Fatalf("first reservation: %+v %v", r, err)
			}
			if err := l.Settle(ctx, r, 3000); err != nil {
				t.Fatal(err)
			}
			if err := q.Stop(ctx); err != nil {
				t.Fatal(err)
			}

			l = ledgerOn(t, open(t, dsn, testOptions()), 5000, nil)
			if got := usedOn(t, l, 7); got != 3000 {
				t.Fatalf("after the restart the day counts %d, want 3000", got)
			}
			r, err = l.Reserve(ctx, 7, 2500)
			if err != nil || r.Granted {
				t.Fatalf("over-cap reservation after the restart: %+v %v", r, err)
			}
			want := "runtimes.max_tokens_per_installation_per_day (5000) would be exceeded: 3000 used today, the next call may use up to 2500"
			if r.Cause != want {
				t.Fatalf("cause %q, want %q", r.Cause, want)
			}
			if r, err := l.Reserve(ctx, 7, 2000); err != nil || !r.Granted {
				t.Fatalf("a reservation that fits: %+v %v", r, err)
			}
		})
	}
}

// TestTokenLedgerDays: a new UTC day starts from zero, a call that ran over midnight settles on
// the day it was counted in, and days older than TokenDaysKept are pruned.
func TestTokenLedgerDays(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			clock := &testClock{t: time.Date(2026, 12, 1, 23, 59, 30, 0, time.UTC)}
			l := ledgerOn(t, open(t, be.dsn(t), testOptions()), 5000, clock.now)
			late, err := l.Reserve(ctx, 7, 4000)
			if err != nil || !late.Granted || late.Day != "2026-12-01" {
				t.Fatalf("reservation before midnight: %+v %v", late, err)
			}
			if r, _ := l.Reserve(ctx, 7, 4000); r.Granted {
				t.Fatal("a second 4000 fit in the same day")
			}

			// Midnight UTC, even for a clock in another zone.
			clock.set(time.Date(2026, 12, 2, 1, 0, 30, 0, time.FixedZone("CET", 3600)))
			if got := usedOn(t, l, 7); got != 0 {
				t.Fatalf("the new day starts at %d", got)
			}
			early, err := l.Reserve(ctx, 7, 4000)
			if err != nil || !early.Granted || early.Day != "2026-12-02" {
				t.Fatalf("reservation after midnight: %+v %v", early, err)
			}
			// The call reserved before midnight ends now: it settles on its own day.
			if err := l.Settle(ctx, late, 1000); err != nil {
				t.Fatal(err)
			}
			store := l.store
			if got, _ := store.used(ctx, 7, "2026-12-01"); got != 1000 {
				t.Fatalf("the earlier day holds %d, want the 1000 its call used", got)
			}
			if got := usedOn(t, l, 7); got != 4000 {
				t.Fatalf("today holds %d, want its own 4000 reserved", got)
			}

			// Eight days on, the first reservation of the day prunes both old days.
			clock.set(time.Date(2026, 12, 10, 8, 0, 0, 0, time.UTC))
			if r, err := l.Reserve(ctx, 8, 10); err != nil || !r.Granted {
				t.Fatalf("%+v %v", r, err)
			}
			for _, day := range []string{"2026-12-01", "2026-12-02"} {
				if got, err := store.used(ctx, 7, day); err != nil || got != 0 {
					t.Fatalf("day %s holds %d (%v) after the prune", day, got, err)
				}
			}
			// A settle of a pruned day changes nothing and creates no row.
			if err := l.Settle(ctx, early, 100); err != nil {
				t.Fatal(err)
			}
			if got, _ := store.used(ctx, 7, "2026-12-02"); got != 0 {
				t.Fatalf("a pruned day came back with %d", got)
			}
		})
	}
}

// TestTokenLedgerSettle: settling replaces the reservation by what was used, and the count never
// goes below zero whatever the settle says.
func TestTokenLedgerSettle(t *testing.T) {
	cases := []struct {
		name    string
		reserve int
		settles []int // used, settled one after the other against the same reservation
		want    int64
	}{
		{"used less", 4000, []int{1050}, 1050},
		{"used all", 4000, []int{4000}, 4000},
		{"used more than reserved", 1000, []int{1500}, 1500},
		{"nothing used", 4000, []int{0}, 0},
		{"settled twice", 4000, []int{0, 0}, 0},
		{"a negative use", 4000, []int{-500}, 0},
	}
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			q := open(t, be.dsn(t), testOptions())
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					ctx := context.Background()
					inst := int64(1000 + i)
					l := ledgerOn(t, q, 5000, nil)
					r, err := l.Reserve(ctx, inst, c.reserve)
					if err != nil || !r.Granted {
						t.Fatalf("%+v %v", r, err)
					}
					for _, used := range c.settles {
						if err := l.Settle(ctx, r, used); err != nil {
							t.Fatal(err)
						}
					}
					if got := usedOn(t, l, inst); got != c.want {
						t.Fatalf("count %d, want %d", got, c.want)
					}
					// A refused reservation settles nothing.
					refused, err := l.Reserve(ctx, inst, 6000)
					if err != nil || refused.Granted {
						t.Fatalf("%+v %v", refused, err)
					}
					if err := l.Settle(ctx, refused, 6000); err != nil {
						t.Fatal(err)
					}
					if got := usedOn(t, l, inst); got != c.want {
						t.Fatalf("count %d after settling a refusal, want %d", got, c.want)
					}
				})
			}
		})
	}
}

// TestTokenLedgerOff: without a cap the ledger grants everything and keeps no table.
func TestTokenLedgerOff(t *testing.T) {
	ctx := context.Background()
	l := ledgerOn(t, open(t, sqliteDSN(t), testOptions()), 0, nil)
	r, err := l.Reserve(ctx, 1, 1<<40)
	if err != nil || !r.Granted {
		t.Fatalf("%+v %v", r, err)
	}
	if err := l.Settle(ctx, r, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := NewTokenLedger(ctx, queue.NewMemory(queue.MemoryOptions{}), 10, nil); err == nil {
		t.Fatal("a ledger on the memory queue")
	}
}
