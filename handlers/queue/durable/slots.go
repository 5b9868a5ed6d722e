package durable

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lensgate/lensgate/handlers/queue"
)

// Write slots. GitHub asks that content-creating requests (comments, reviews, reactions) of one
// installation go out one at a time, a second apart. Every replica on the queue's database
// claims an installation's slot in one row before such a write and releases it when GitHub has
// answered; the slot frees the spacing after the release. Every time is the database's clock, so
// replicas whose clocks differ still space their writes: only durations leave the database.

// slotQueries are the slot statements with the backend's database clock (milliseconds) spliced in.
type slotQueries struct{ claim, peek, release, prune string }

func newSlotQueries(nowMS string) slotQueries {
	r := strings.NewReplacer("{now_ms}", nowMS)
	return slotQueries{
		// claim takes the slot for holder $3 until $2 ms from now when it is free, in one
		// statement: the row is created, or locked and taken only if its time has come, so two
		// replicas can never both hold it. No row comes back when it is not free.
		claim: r.Replace(`INSERT INTO lensgate_write_slot (installation_id, free_at, holder) VALUES ($1, {now_ms} + $2, $3)
			ON CONFLICT (installation_id) DO UPDATE SET free_at = excluded.free_at, holder = excluded.holder
			WHERE lensgate_write_slot.free_at <= {now_ms}
			RETURNING holder`),
		peek: r.Replace(`SELECT free_at - {now_ms}, holder FROM lensgate_write_slot WHERE installation_id = $1`),
		// release frees the slot $1 ms from now, unless its hold ran out and another claim took it.
		release: r.Replace(`UPDATE lensgate_write_slot SET free_at = {now_ms} + $1, holder = ''
			WHERE installation_id = $2 AND holder = $3`),
		prune: r.Replace(`DELETE FROM lensgate_write_slot WHERE free_at < {now_ms} - $1`),
	}
}

var (
	postgresSlots = newSlotQueries(`(extract(epoch FROM clock_timestamp()) * 1000)::bigint`)
	sqliteSlots   = newSlotQueries(`CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`)
)

// slotsKept is how long a slot row stays after it freed; an installation that wrote nothing
// for that long starts with a new row.
const slotsKept = 24 * time.Hour

// WriteSlots is publish.WriteSlots kept in the durable queue's database, shared by every
// replica on it.
type WriteSlots struct {
	claim   func(ctx context.Context, installation, holdMS int64, holder string) (bool, error)
	peek    func(ctx context.Context, installation int64) (freeInMS int64, holder string, err error)
	release func(ctx context.Context, spacingMS, installation int64, holder string) error
	prune   func(ctx context.Context) error

	mu       sync.Mutex
	prunedAt time.Time
}

// NewWriteSlots returns the write slots kept in the database of q, a queue returned by Open.
// They use q's connections: they work until q is stopped.
func NewWriteSlots(ctx context.Context, q queue.Queue) (*WriteSlots, error) {
	switch rq := q.(type) {
	case *riverQueue[pgx.Tx]:
		return newWriteSlots(rq.db, postgresSlots), nil
	case *riverQueue[*sql.Tx]:
		return newWriteSlots(rq.db, sqliteSlots), nil
	default:
		return nil, errors.New("durable queue: write slots need a queue opened by durable.Open")
	}
}

func newWriteSlots[TTx any](db database[TTx], sq slotQueries) *WriteSlots {
	return &WriteSlots{
		claim: func(ctx context.Context, installation, holdMS int64, holder string) (bool, error) {
			var got string
			err := db.queryOne(ctx, sq.claim, []any{installation, holdMS, holder}, &got)
			if errors.Is(err, errNoRows) {
				return false, nil
			}
			return err == nil, err
		},
		peek: func(ctx context.Context, installation int64) (int64, string, error) {
			var in int64
			var holder string
			err := db.queryOne(ctx, sq.peek, []any{installation}, &in, &holder)
			if errors.Is(err, errNoRows) {
				return 0, "", nil // pruned in between: free
			}
			return in, holder, err
		},
		release: func(ctx context.Context, spacingMS, installation int64, holder string) error {
			return withTxOpts(ctx, db, txNoFlush, func(tx TTx) error {
				_, err := db.exec(ctx, tx, sq.release, spacingMS, installation, holder)
				return err
			})
		},
		prune: func(ctx context.Context) error {
			return withTxOpts(ctx, db, txNoFlush, func(tx TTx) error {
				_, err := db.exec(ctx, tx, sq.prune, slotsKept.Milliseconds())
				return err
			})
		},
	}
}

// ceilMS is d in whole milliseconds, rounded up: the database clock counts milliseconds, and a
// slot must never free a fraction early.
func ceilMS(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// TakeWriteSlot implements publish.WriteSlots with one conditional upsert. While another
// claim holds the slot, the wait it returns is at most the spacing: the slot frees no sooner
// than that after the holder's write is answered, and checking again then costs one query.
func (s *WriteSlots) TakeWriteSlot(ctx context.Context, installation int64, spacing, hold time.Duration) (func(context.Context), time.Duration, error) {
	s.pruneHourly(ctx)
	var b [16]byte
	_, _ = rand.Read(b[:])
	holder := hex.EncodeToString(b[:])
	// One millisecond more than asked: two readings of a millisecond clock may each be up to a
	// millisecond short.
	spacingMS := ceilMS(spacing) + 1
	ok, err := s.claim(ctx, installation, ceilMS(hold)+1, holder)
	if err != nil {
		return nil, 0, fmt.Errorf("durable queue: claim write slot: %w", err)
	}
	if ok {
		return func(ctx context.Context) {
			// A release that fails leaves the slot to free when its hold ends.
			_ = s.release(ctx, spacingMS, installation, holder)
		}, 0, nil
	}
	in, by, err := s.peek(ctx, installation)
	if err != nil {
		return nil, 0, fmt.Errorf("durable queue: read write slot: %w", err)
	}
	wait := time.Duration(max(in, 0)) * time.Millisecond
	if by != "" {
		wait = min(wait, time.Duration(spacingMS)*time.Millisecond)
	}
	return nil, wait, nil
}

// pruneHourly forgets slots that freed long ago, once an hour per process. A failure is tried
// again on a later claim; it never refuses one.
func (s *WriteSlots) pruneHourly(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.prunedAt) < time.Hour {
		return
	}
	if err := s.prune(ctx); err == nil {
		s.prunedAt = time.Now()
	}
}
