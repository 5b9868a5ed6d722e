package durable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/review"
)

// TokenDaysKept is how many days of token counts the ledger keeps before the current one: a
// call running over midnight still settles on its day, and an operator can read the recent
// spend of each installation from the table.
const TokenDaysKept = 7

const (
	// sqlReserveTokens takes $3 tokens of installation $1's day $2 when the day's count stays
	// within $4, in one statement: the row is created or, locked, raised only if the sum fits,
	// so two replicas can never both take the last tokens. No row comes back when it does not.
	sqlReserveTokens = `INSERT INTO lensgate_token_day (installation_id, day, used, updated_at)
		SELECT $1, $2, $3, $5 WHERE CAST($3 AS BIGINT) <= CAST($4 AS BIGINT)
		ON CONFLICT (installation_id, day) DO UPDATE
			SET used = lensgate_token_day.used + excluded.used, updated_at = excluded.updated_at
			WHERE lensgate_token_day.used + excluded.used <= CAST($4 AS BIGINT)
		RETURNING used`
	// sqlSettleTokens adds $3 (used minus reserved, often negative) to a day's count, never
	// below zero.
	sqlSettleTokens = `UPDATE lensgate_token_day
		SET used = CASE WHEN used + CAST($3 AS BIGINT) < 0 THEN 0 ELSE used + CAST($3 AS BIGINT) END, updated_at = $4
		WHERE installation_id = $1 AND day = $2
		RETURNING used`
	sqlTokensUsed     = `SELECT used FROM lensgate_token_day WHERE installation_id = $1 AND day = $2`
	sqlPruneTokenDays = `DELETE FROM lensgate_token_day WHERE day < $1`
)

// TokenLedger is review.DailyTokens kept in the durable queue's database: every replica on the
// database takes from the same count, and a restart keeps it. Days are UTC dates by the
// replica's clock.
type TokenLedger struct {
	limit int
	now   func() time.Time
	store tokenStore

	mu       sync.Mutex
	prunedOn string // the day this process last pruned old days
}

var _ review.DailyTokens = (*TokenLedger)(nil)

// tokenStore is the ledger's SQL on one backend.
type tokenStore interface {
	reserve(ctx context.Context, installation int64, day string, n, limit int, at int64) (used int64, granted bool, err error)
	settle(ctx context.Context, installation int64, day string, delta int, at int64) error
	used(ctx context.Context, installation int64, day string) (int64, error)
	prune(ctx context.Context, before string) error
}

// NewTokenLedger returns the daily token ledger kept in the database of q, a queue returned
// by Open, allowing limit tokens per installation per UTC day (0 or less allows everything and
// touches no table). now is the clock (time.Now when
// nil). The ledger uses q's connections: it works until q is stopped.
func NewTokenLedger(ctx context.Context, q queue.Queue, limit int, now func() time.Time) (*TokenLedger, error) {
	if now == nil {
		now = time.Now
	}
	var store tokenStore
	switch rq := q.(type) {
	case *riverQueue[pgx.Tx]:
		store = sqlTokens[pgx.Tx]{db: rq.db}
	case *riverQueue[*sql.Tx]:
		store = sqlTokens[*sql.Tx]{db: rq.db}
	default:
		return nil, errors.New("durable queue: the token ledger needs a queue opened by durable.Open")
	}
	return &TokenLedger{limit: limit, now: now, store: store}, nil
}

// Reserve implements review.DailyTokens with one conditional upsert.
func (l *TokenLedger) Reserve(ctx context.Context, installation int64, n int) (review.Reservation, error) {
	n = max(n, 0)
	if l.limit <= 0 {
		return review.Reservation{Installation: installation, Tokens: n, Granted: true}, nil
	}
	now := l.now()
	day := review.TokenDay(now)
	l.pruneOnce(ctx, now, day)
	r := review.Reservation{Installation: installation, Day: day}
	used, granted, err := l.store.reserve(ctx, installation, day, n, l.limit, now.Unix())
	if err != nil {
		return r, fmt.Errorf("durable queue: reserve %d tokens: %w", n, err)
	}
	if !granted {
		r.Cause = review.DailyCapCause(l.limit, used, n)
		return r, nil
	}
	r.Tokens, r.Granted = n, true
	return r, nil
}

// Settle implements review.DailyTokens: the reservation's day gains used minus reserved. A day
// already pruned is left alone.
func (l *TokenLedger) Settle(ctx context.Context, r review.Reservation, used int) error {
	if l.limit <= 0 || !r.Granted || r.Day == "" {
		return nil
	}
	delta := max(used, 0) - r.Tokens
	if delta == 0 {
		return nil
	}
	if err := l.store.settle(ctx, r.Installation, r.Day, delta, l.now().Unix()); err != nil {
		return fmt.Errorf("durable queue: settle tokens: %w", err)
	}
	return nil
}

// Used returns the tokens an installation has used or reserved today, by every replica.
func (l *TokenLedger) Used(ctx context.Context, installation int64) (int64, error) {
	if l.limit <= 0 {
		return 0, nil
	}
	n, err := l.store.used(ctx, installation, review.TokenDay(l.now()))
	if err != nil {
		return 0, fmt.Errorf("durable queue: read token count: %w", err)
	}
	return n, nil
}

// pruneOnce deletes the days older than TokenDaysKept on this process's first reservation of
// each day. A failure is retried on the next reservation; it never refuses one.
func (l *TokenLedger) pruneOnce(ctx context.Context, now time.Time, day string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prunedOn == day {
		return
	}
	if err := l.store.prune(ctx, review.TokenDay(now.AddDate(0, 0, -TokenDaysKept))); err == nil {
		l.prunedOn = day
	}
}

// sqlTokens is tokenStore over the queue's database.
type sqlTokens[TTx any] struct {
	db database[TTx]
}

func (s sqlTokens[TTx]) reserve(ctx context.Context, installation int64, day string, n, limit int, at int64) (int64, bool, error) {
	var used int64
	err := s.db.queryOne(ctx, sqlReserveTokens, []any{installation, day, int64(n), int64(limit), at}, &used)
	switch {
	case err == nil:
		return used, true, nil
	case !errors.Is(err, errNoRows):
		return 0, false, err
	}
	// Refused: read the count the cause names.
	used, err = s.used(ctx, installation, day)
	return used, false, err
}

func (s sqlTokens[TTx]) settle(ctx context.Context, installation int64, day string, delta int, at int64) error {
	var used int64
	err := s.db.queryOne(ctx, sqlSettleTokens, []any{installation, day, int64(delta), at}, &used)
	if errors.Is(err, errNoRows) {
		return nil
	}
	return err
}

func (s sqlTokens[TTx]) used(ctx context.Context, installation int64, day string) (int64, error) {
	var used int64
	err := s.db.queryOne(ctx, sqlTokensUsed, []any{installation, day}, &used)
	if errors.Is(err, errNoRows) {
		return 0, nil
	}
	return used, err
}

func (s sqlTokens[TTx]) prune(ctx context.Context, before string) error {
	return withTx(ctx, s.db, func(tx TTx) error {
		_, err := s.db.exec(ctx, tx, sqlPruneTokenDays, before)
		return err
	})
}
