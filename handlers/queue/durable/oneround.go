package durable

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// noFlushQuerier is implemented by databases that can run one statement in a transaction whose
// commit does not wait for the disk (see database.beginNoFlush) in a single round trip. dest
// receives the statement's one row; without dest the statement's rows are not read.
type noFlushQuerier interface {
	queryNoFlush(ctx context.Context, query string, args []any, dest ...any) error
}

// queryNoFlush sends the transaction's begin, its setting, the statement and the commit as one
// pipeline. A failed statement aborts the transaction; the pool then discards the connection,
// which is left inside it.
func (d pgxDB) queryNoFlush(ctx context.Context, query string, args []any, dest ...any) error {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	qq := b.Queue(query, args...)
	if len(dest) > 0 {
		qq.QueryRow(func(row pgx.Row) error { return row.Scan(dest...) })
	}
	b.Queue("COMMIT")
	err := d.pool.SendBatch(ctx, b).Close()
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoRows
	}
	return err
}
