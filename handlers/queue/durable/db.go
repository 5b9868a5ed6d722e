package durable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// errNoRows is the driver-neutral "no row" error of database.queryRow.
var errNoRows = errors.New("no rows")

// database is the little SQL access the queue needs beside River, for the pgx and the
// database/sql (SQLite) transaction types. Queries are written with $N placeholders, in order.
type database[TTx any] interface {
	begin(ctx context.Context) (TTx, error)
	commit(ctx context.Context, tx TTx) error
	rollback(ctx context.Context, tx TTx)
	exec(ctx context.Context, tx TTx, query string, args ...any) (int64, error)
	// queryRow scans the first row into dest and returns errNoRows when there is none.
	queryRow(ctx context.Context, tx TTx, query string, args []any, dest ...any) error
	// queryOne is queryRow outside a transaction.
	queryOne(ctx context.Context, query string, args []any, dest ...any) error
	// queryRows calls each with a scan function for every row.
	queryRows(ctx context.Context, tx TTx, query string, args []any, each func(scan func(...any) error) error) error
	close()
}

// withTx runs fn in a transaction and commits it when fn returns nil.
func withTx[TTx any](ctx context.Context, db database[TTx], fn func(tx TTx) error) error {
	tx, err := db.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	if err := fn(tx); err != nil {
		db.rollback(ctx, tx)
		return err
	}
	if err := db.commit(ctx, tx); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	return nil
}

// pgxDB serves PostgreSQL through a pgx pool.
type pgxDB struct{ pool *pgxpool.Pool }

func (d pgxDB) begin(ctx context.Context) (pgx.Tx, error)   { return d.pool.Begin(ctx) }
func (d pgxDB) commit(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) }
func (d pgxDB) rollback(ctx context.Context, tx pgx.Tx) {
	_ = tx.Rollback(context.WithoutCancel(ctx))
}
func (d pgxDB) exec(ctx context.Context, tx pgx.Tx, query string, args ...any) (int64, error) {
	tag, err := tx.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
func (d pgxDB) queryRow(ctx context.Context, tx pgx.Tx, query string, args []any, dest ...any) error {
	err := tx.QueryRow(ctx, query, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoRows
	}
	return err
}
func (d pgxDB) queryOne(ctx context.Context, query string, args []any, dest ...any) error {
	err := d.pool.QueryRow(ctx, query, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoRows
	}
	return err
}
func (d pgxDB) queryRows(ctx context.Context, tx pgx.Tx, query string, args []any, each func(scan func(...any) error) error) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
func (d pgxDB) close() { d.pool.Close() }

// sqliteDB serves SQLite through database/sql with a single connection, so every transaction
// has the database to itself.
type sqliteDB struct{ db *sql.DB }

var dollarParam = regexp.MustCompile(`\$\d+`)

func sqliteQuery(q string) string { return dollarParam.ReplaceAllString(q, "?") }

func (d sqliteDB) begin(ctx context.Context) (*sql.Tx, error) { return d.db.BeginTx(ctx, nil) }
func (d sqliteDB) commit(_ context.Context, tx *sql.Tx) error { return tx.Commit() }
func (d sqliteDB) rollback(_ context.Context, tx *sql.Tx)     { _ = tx.Rollback() }
func (d sqliteDB) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, sqliteQuery(query), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
func (d sqliteDB) queryRow(ctx context.Context, tx *sql.Tx, query string, args []any, dest ...any) error {
	err := tx.QueryRowContext(ctx, sqliteQuery(query), args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	}
	return err
}
func (d sqliteDB) queryOne(ctx context.Context, query string, args []any, dest ...any) error {
	err := d.db.QueryRowContext(ctx, sqliteQuery(query), args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	}
	return err
}
func (d sqliteDB) queryRows(ctx context.Context, tx *sql.Tx, query string, args []any, each func(scan func(...any) error) error) error {
	rows, err := tx.QueryContext(ctx, sqliteQuery(query), args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		if err := each(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
func (d sqliteDB) close() { _ = d.db.Close() }

// schemaStatements create the tables the queue keeps beside River's: accepted delivery ids
// (redelivery detection) and the newest job per subject (supersession).
var schemaStatements = []string{
	`CREATE TABLE IF NOT EXISTS lensgate_delivery (
		delivery_id TEXT PRIMARY KEY,
		subject_key TEXT NOT NULL,
		received_at BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS lensgate_delivery_received_at ON lensgate_delivery (received_at)`,
	`CREATE TABLE IF NOT EXISTS lensgate_subject (
		subject_key TEXT PRIMARY KEY,
		head_sha TEXT NOT NULL,
		job_id BIGINT NOT NULL,
		updated_at BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS lensgate_subject_updated_at ON lensgate_subject (updated_at)`,
}

const (
	sqlInsertDelivery = `INSERT INTO lensgate_delivery (delivery_id, subject_key, received_at)
		VALUES ($1, $2, $3) ON CONFLICT (delivery_id) DO NOTHING`
	// sqlLockSubject creates the subject's row if needed and returns it locked (the no-op
	// update takes the row lock) until the transaction ends.
	sqlLockSubject = `INSERT INTO lensgate_subject (subject_key, head_sha, job_id, updated_at)
		VALUES ($1, '', 0, $2) ON CONFLICT (subject_key) DO UPDATE SET updated_at = lensgate_subject.updated_at
		RETURNING head_sha, job_id`
	sqlUpdateSubject = `UPDATE lensgate_subject SET head_sha = $1, job_id = $2, updated_at = $3
		WHERE subject_key = $4`
	sqlCurrentJob       = `SELECT job_id FROM lensgate_subject WHERE subject_key = $1`
	sqlCountWaiting     = `SELECT count(*) FROM river_job WHERE state IN ('available', 'pending', 'retryable', 'scheduled')`
	sqlCountByState     = `SELECT state, count(*) FROM river_job GROUP BY state`
	sqlPruneDeliveries  = `DELETE FROM lensgate_delivery WHERE received_at < $1`
	sqlPruneSubjects    = `DELETE FROM lensgate_subject WHERE updated_at < $1`
	advisoryMigrationID = 7_146_839_221 // any constant; serialises concurrent migrations on PostgreSQL
)

// isPostgres reports whether dsn names PostgreSQL.
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}
