package durable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lensgate/lensgate/handlers/queue"
)

// errNoRows is the driver-neutral "no row" error of database.queryRow.
var errNoRows = errors.New("no rows")

// database is the little SQL access the queue needs beside River, for the pgx and the
// database/sql (SQLite) transaction types. Queries are written with $N placeholders, in order.
type database[TTx any] interface {
	begin(ctx context.Context) (TTx, error)
	// beginNoFlush begins a transaction whose commit returns before it reaches the disk (a crash
	// may undo it), for work that is safe to lose.
	beginNoFlush(ctx context.Context) (TTx, error)
	// cancelWaiting cancels a job that is waiting to run, without notifying anyone, and reports
	// whether it did; false leaves the job to River's cancellation.
	cancelWaiting(ctx context.Context, tx TTx, jobID int64) (bool, error)
	// supersede is cancelWaiting of the subject's former job followed by the subject's update
	// to its new job (sqlUpdateSubjectReceived).
	supersede(ctx context.Context, tx TTx, former int64, u subjectUpdate) (bool, error)
	// cancelAfterCommit reports whether Enqueue cancels a superseded job that cancelWaiting left
	// in a transaction of its own after committing (PostgreSQL, where the cancellation's
	// notification serialises commits) rather than inside the enqueue's transaction.
	cancelAfterCommit() bool
	commit(ctx context.Context, tx TTx) error
	rollback(ctx context.Context, tx TTx)
	// admit records a delivery id (unless empty) and the body's digest (unless empty) and locks
	// the subject's row; see admission.
	admit(ctx context.Context, tx TTx, deliveryID string, body queue.Body, key string, now int64, countWaiting bool) (admission, error)
	exec(ctx context.Context, tx TTx, query string, args ...any) (int64, error)
	// queryRow scans the first row into dest and returns errNoRows when there is none.
	queryRow(ctx context.Context, tx TTx, query string, args []any, dest ...any) error
	// queryOne is queryRow outside a transaction.
	queryOne(ctx context.Context, query string, args []any, dest ...any) error
	// queryRows calls each with a scan function for every row.
	queryRows(ctx context.Context, tx TTx, query string, args []any, each func(scan func(...any) error) error) error
	close()
}

// txMode selects how withTxOpts begins its transaction.
type txMode int

const (
	txDurable txMode = iota // commit returns once the transaction is on disk
	txNoFlush               // commit may return before; see database.beginNoFlush
)

// withTx runs fn in a durable transaction and commits it when fn returns nil.
func withTx[TTx any](ctx context.Context, db database[TTx], fn func(tx TTx) error) error {
	return withTxOpts(ctx, db, txDurable, fn)
}

// withTxOpts is withTx with a choice of durability.
func withTxOpts[TTx any](ctx context.Context, db database[TTx], mode txMode, fn func(tx TTx) error) error {
	begin := db.begin
	if mode == txNoFlush {
		begin = db.beginNoFlush
	}
	tx, err := begin(ctx)
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

// subjectUpdate names a subject's new newest job (sqlUpdateSubjectReceived's arguments).
type subjectUpdate struct {
	key      string
	head     string
	job      int64
	now      int64 // Unix seconds
	received int64 // UnixNano
}

// admission is what Enqueue learns before it inserts: whether the delivery id was seen before
// or the body was accepted under another delivery id (then nothing else is set, and the delivery
// id is not recorded), whether this job recorded the body's digest, the subject's newest head and job (its row now locked until the
// transaction ends), when the newest event naming that head was received (UnixNano) and, if
// asked, how many River jobs wait.
type admission struct {
	duplicate bool
	replay    bool
	first     string // a replay's first delivery id, when known
	claimed   bool   // the body's digest was recorded by this job, not an earlier one of its delivery
	head      string
	current   int64
	received  int64
	waiting   int64
}

// admitSteps is admit as one statement per step, for databases without data-modifying CTEs.
func admitSteps[TTx any](ctx context.Context, db database[TTx], tx TTx, deliveryID string, body queue.Body, key string, now int64, countWaiting bool) (admission, error) {
	var a admission
	if deliveryID != "" {
		n, err := db.exec(ctx, tx, sqlInsertDelivery, deliveryID, key, now)
		if err != nil {
			return a, fmt.Errorf("record delivery: %w", err)
		}
		if n == 0 {
			a.duplicate = true
			return a, nil
		}
	}
	if body.Digest != "" {
		n, err := db.exec(ctx, tx, sqlInsertBody, body.Digest, body.Delivery, now)
		if err != nil {
			return a, fmt.Errorf("record body: %w", err)
		}
		a.claimed = n > 0
		if !a.claimed {
			var first string
			if err := db.queryRow(ctx, tx, sqlBodyDelivery, []any{body.Digest}, &first); err != nil {
				return a, fmt.Errorf("read body: %w", err)
			}
			if first != body.Delivery {
				return replayed(ctx, db, tx, deliveryID, first)
			}
		}
	}
	if err := db.queryRow(ctx, tx, sqlAdmitSubject, []any{key, now}, &a.head, &a.current, &a.received); err != nil {
		return a, fmt.Errorf("lock subject: %w", err)
	}
	if countWaiting {
		if err := db.queryRow(ctx, tx, sqlCountWaiting, nil, &a.waiting); err != nil {
			return a, fmt.Errorf("count waiting jobs: %w", err)
		}
	}
	return a, nil
}

// replayed forgets the delivery id a replay recorded, so that its answer stays the same if it is
// sent again, and returns its admission.
func replayed[TTx any](ctx context.Context, db database[TTx], tx TTx, deliveryID, first string) (admission, error) {
	if deliveryID != "" {
		if _, err := db.exec(ctx, tx, sqlForgetDelivery, deliveryID); err != nil {
			return admission{}, fmt.Errorf("forget delivery: %w", err)
		}
	}
	return admission{replay: true, first: first}, nil
}

// pgxDB serves PostgreSQL through a pgx pool.
type pgxDB struct{ pool *pgxpool.Pool }

func (d pgxDB) begin(ctx context.Context) (pgx.Tx, error) { return d.pool.Begin(ctx) }
func (d pgxDB) beginNoFlush(ctx context.Context) (pgx.Tx, error) {
	// One round trip: without arguments pgx sends the query as a simple-protocol batch.
	return d.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL synchronous_commit = off"})
}
func (d pgxDB) admit(ctx context.Context, tx pgx.Tx, deliveryID string, body queue.Body, key string, now int64, countWaiting bool) (admission, error) {
	var a admission
	var admitted, newDelivery bool
	err := tx.QueryRow(ctx, sqlAdmitPostgres, deliveryID, key, now, countWaiting, body.Digest, body.Delivery).
		Scan(&admitted, &newDelivery, &a.claimed, &a.first, &a.head, &a.current, &a.received, &a.waiting)
	if err != nil {
		return a, fmt.Errorf("record delivery and lock subject: %w", err)
	}
	switch {
	case admitted:
		a.first = ""
		return a, nil
	case deliveryID != "" && !newDelivery:
		return admission{duplicate: true}, nil
	default:
		// The delivery id is new but the body was accepted under another one.
		if !newDelivery {
			deliveryID = ""
		}
		return replayed[pgx.Tx](ctx, d, tx, deliveryID, a.first)
	}
}
func (d pgxDB) cancelWaiting(ctx context.Context, tx pgx.Tx, jobID int64) (bool, error) {
	n, err := d.exec(ctx, tx, sqlCancelWaitingJob, jobID)
	return n > 0, err
}

// supersede runs both statements in one round trip.
func (d pgxDB) supersede(ctx context.Context, tx pgx.Tx, former int64, u subjectUpdate) (bool, error) {
	var cancelled bool
	err := tx.QueryRow(ctx, sqlSupersedePostgres, u.head, u.job, u.now, u.received, u.key, former).Scan(&cancelled)
	return cancelled, err
}
func (d pgxDB) cancelAfterCommit() bool                     { return true }
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
type sqliteDB struct {
	db    *sql.DB
	ck    *checkpointer // nil: SQLite checkpoints on its own
	texts *sync.Map     // query with $N placeholders -> SQLite's text; the queries are constants
}

func newSQLiteDB(db *sql.DB, ck *checkpointer) sqliteDB {
	return sqliteDB{db: db, ck: ck, texts: &sync.Map{}}
}

var dollarParam = regexp.MustCompile(`\$(\d+)`)

// sqliteQuery turns PostgreSQL's $N placeholders into SQLite's ?N, which also bind by number, so
// a query may use one argument twice.
func sqliteQuery(q string) string { return dollarParam.ReplaceAllString(q, "?$1") }

// text is sqliteQuery, rewritten once per query.
func (d sqliteDB) text(q string) string {
	if d.texts == nil {
		return sqliteQuery(q)
	}
	if t, ok := d.texts.Load(q); ok {
		return t.(string)
	}
	t := sqliteQuery(q)
	d.texts.Store(q, t)
	return t
}

func (d sqliteDB) begin(ctx context.Context) (*sql.Tx, error)        { return d.db.BeginTx(ctx, nil) }
func (d sqliteDB) beginNoFlush(ctx context.Context) (*sql.Tx, error) { return d.begin(ctx) }
func (d sqliteDB) admit(ctx context.Context, tx *sql.Tx, deliveryID string, body queue.Body, key string, now int64, countWaiting bool) (admission, error) {
	return admitSteps[*sql.Tx](ctx, d, tx, deliveryID, body, key, now, countWaiting)
}
func (d sqliteDB) cancelWaiting(ctx context.Context, tx *sql.Tx, jobID int64) (bool, error) {
	n, err := d.exec(ctx, tx, sqlCancelWaitingJobSQLite, time.Now().UTC().Format(time.RFC3339Nano), jobID)
	return n > 0, err
}
func (d sqliteDB) supersede(ctx context.Context, tx *sql.Tx, former int64, u subjectUpdate) (bool, error) {
	cancelled, err := d.cancelWaiting(ctx, tx, former)
	if err != nil {
		return false, fmt.Errorf("cancel: %w", err)
	}
	if _, err := d.exec(ctx, tx, sqlUpdateSubjectReceived, u.head, u.job, u.now, u.received, u.key); err != nil {
		return false, fmt.Errorf("update subject: %w", err)
	}
	return cancelled, nil
}
func (d sqliteDB) cancelAfterCommit() bool                    { return false }
func (d sqliteDB) commit(_ context.Context, tx *sql.Tx) error { return tx.Commit() }
func (d sqliteDB) rollback(_ context.Context, tx *sql.Tx)     { _ = tx.Rollback() }
func (d sqliteDB) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, d.text(query), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
func (d sqliteDB) queryRow(ctx context.Context, tx *sql.Tx, query string, args []any, dest ...any) error {
	err := tx.QueryRowContext(ctx, d.text(query), args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	}
	return err
}
func (d sqliteDB) queryOne(ctx context.Context, query string, args []any, dest ...any) error {
	err := d.db.QueryRowContext(ctx, d.text(query), args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	}
	return err
}
func (d sqliteDB) queryRows(ctx context.Context, tx *sql.Tx, query string, args []any, each func(scan func(...any) error) error) error {
	rows, err := tx.QueryContext(ctx, d.text(query), args...)
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
func (d sqliteDB) close() {
	if d.ck != nil {
		d.ck.close()
	}
	_ = d.db.Close()
}

// hasColumnQuery returns the query counting a table's columns of a name ($1 table, $2 column).
func hasColumnQuery(backend string) string {
	if backend == "sqlite" {
		return `SELECT count(*) FROM pragma_table_info($1) WHERE name = $2`
	}
	return `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2`
}

const (
	sqlInsertDelivery = `INSERT INTO lensgate_delivery (delivery_id, subject_key, received_at)
		VALUES ($1, $2, $3) ON CONFLICT (delivery_id) DO NOTHING`
	// sqlLockSubject creates the subject's row if needed and returns it locked (the no-op
	// update takes the row lock) until the transaction ends.
	sqlLockSubject = `INSERT INTO lensgate_subject (subject_key, head_sha, job_id, updated_at)
		VALUES ($1, '', 0, $2) ON CONFLICT (subject_key) DO UPDATE SET updated_at = lensgate_subject.updated_at
		RETURNING head_sha, job_id`
	// sqlAdmitSubject is sqlLockSubject for Enqueue, which also reads when the head's newest
	// event was received.
	sqlAdmitSubject = `INSERT INTO lensgate_subject (subject_key, head_sha, job_id, updated_at)
		VALUES ($1, '', 0, $2) ON CONFLICT (subject_key) DO UPDATE SET updated_at = lensgate_subject.updated_at
		RETURNING head_sha, job_id, head_received_ns`
	sqlInsertBody = `INSERT INTO lensgate_body (digest, delivery_id, received_at)
		VALUES ($1, $2, $3) ON CONFLICT (digest) DO NOTHING`
	sqlBodyDelivery = `SELECT delivery_id FROM lensgate_body WHERE digest = $1`
	sqlForgetBody   = `DELETE FROM lensgate_body WHERE digest = $1`
	// sqlAdmitPostgres is admitSteps (sqlInsertDelivery, sqlInsertBody, sqlBodyDelivery,
	// sqlLockSubject and sqlCountWaiting) in one round trip. Its one row says whether the job
	// is admitted (the subject's row is then locked), whether the delivery id ($1, unless empty)
	// was new, whether the body's digest ($5, unless empty) was recorded by this statement and
	// the delivery id the body was first accepted under ($6 for an earlier job of the same
	// delivery; a body committed by a concurrent transaction is not seen: empty).
	sqlAdmitPostgres = `WITH delivery AS (
			INSERT INTO lensgate_delivery (delivery_id, subject_key, received_at)
			SELECT $1, $2, $3 WHERE $1 <> ''
			ON CONFLICT (delivery_id) DO NOTHING
			RETURNING 1
		), body AS (
			INSERT INTO lensgate_body (digest, delivery_id, received_at)
			SELECT $5, $6, $3 WHERE $5 <> '' AND ($1 = '' OR EXISTS (SELECT 1 FROM delivery))
			ON CONFLICT (digest) DO NOTHING
			RETURNING 1
		), earlier AS (
			SELECT delivery_id FROM lensgate_body WHERE $5 <> '' AND digest = $5
		), subject AS (
			INSERT INTO lensgate_subject (subject_key, head_sha, job_id, updated_at)
			SELECT $2, '', 0, $3 WHERE ($1 = '' OR EXISTS (SELECT 1 FROM delivery))
				AND ($5 = '' OR EXISTS (SELECT 1 FROM body) OR EXISTS (SELECT 1 FROM earlier WHERE delivery_id = $6))
			ON CONFLICT (subject_key) DO UPDATE SET updated_at = lensgate_subject.updated_at
			RETURNING head_sha, job_id, head_received_ns
		)
		SELECT s.job_id IS NOT NULL, EXISTS (SELECT 1 FROM delivery), EXISTS (SELECT 1 FROM body),
			coalesce((SELECT delivery_id FROM earlier), ''),
			coalesce(s.head_sha, ''), coalesce(s.job_id, 0), coalesce(s.head_received_ns, 0),
			CASE WHEN $4::boolean AND s.job_id IS NOT NULL THEN (SELECT count(*) FROM river_job
				WHERE state IN ('available', 'pending', 'retryable', 'scheduled')) ELSE 0 END
		FROM (SELECT 1) AS one LEFT JOIN subject s ON true`
	// sqlCancelWaitingJob is River's cancellation of a job that is not running yet (final state,
	// finalized_at and the cancel_attempted_at mark) without its notification, which only
	// matters to a replica running the job.
	sqlCancelWaitingJob = `UPDATE river_job SET state = 'cancelled', finalized_at = now(),
			metadata = jsonb_set(metadata, '{cancel_attempted_at}', to_jsonb(now()), true)
		WHERE id = $1 AND state IN ('available', 'pending', 'retryable', 'scheduled')`
	// sqlCancelWaitingJobSQLite is sqlCancelWaitingJob for SQLite ($1: the time, RFC 3339, as
	// River's own cancellation writes it).
	sqlCancelWaitingJobSQLite = `UPDATE river_job SET state = 'cancelled', finalized_at = datetime('now', 'subsec'),
			metadata = jsonb_set(metadata, '$.cancel_attempted_at', $1)
		WHERE id = $2 AND state IN ('available', 'pending', 'retryable', 'scheduled')`
	// The subject's updated_at only decides when an idle subject is pruned (Retention, days), so it
	// moves in steps of an hour: a write of the same value leaves its index alone, which on SQLite
	// is a page less in every enqueue's commit and on PostgreSQL lets the update skip the indexes.
	sqlUpdateSubject = `UPDATE lensgate_subject SET head_sha = $1, job_id = $2,
			updated_at = CASE WHEN updated_at < $3 - 3600 THEN $3 ELSE updated_at END
		WHERE subject_key = $4`
	// sqlUpdateSubjectReceived is sqlUpdateSubject for Enqueue, which also records when the
	// head's newest event was received.
	sqlUpdateSubjectReceived = `UPDATE lensgate_subject SET head_sha = $1, job_id = $2,
			updated_at = CASE WHEN updated_at < $3 - 3600 THEN $3 ELSE updated_at END, head_received_ns = $4
		WHERE subject_key = $5`
	// sqlSupersedePostgres is sqlCancelWaitingJob of job $6 and sqlUpdateSubjectReceived in one
	// statement (PostgreSQL runs a data-modifying WITH whether or not it is read); its row says
	// whether the job was cancelled.
	sqlSupersedePostgres = `WITH cancelled AS (
			UPDATE river_job SET state = 'cancelled', finalized_at = now(),
				metadata = jsonb_set(metadata, '{cancel_attempted_at}', to_jsonb(now()), true)
			WHERE id = $6 AND state IN ('available', 'pending', 'retryable', 'scheduled')
			RETURNING 1
		), subject AS (
			UPDATE lensgate_subject SET head_sha = $1, job_id = $2,
				updated_at = CASE WHEN updated_at < $3 - 3600 THEN $3 ELSE updated_at END, head_received_ns = $4
			WHERE subject_key = $5
		)
		SELECT EXISTS (SELECT 1 FROM cancelled)`
	// sqlSubjectReceived records a later event for the subject's head that needed no new job.
	sqlSubjectReceived = `UPDATE lensgate_subject SET head_received_ns = $1 WHERE subject_key = $2 AND head_received_ns < $3`
	sqlForgetDelivery  = `DELETE FROM lensgate_delivery WHERE delivery_id = $1`
	sqlCurrentJob      = `SELECT job_id, head_sha FROM lensgate_subject WHERE subject_key = $1`
	sqlCountWaiting    = `SELECT count(*) FROM river_job WHERE state IN ('available', 'pending', 'retryable', 'scheduled')`
	sqlCountByState    = `SELECT state, count(*) FROM river_job GROUP BY state`
	sqlPruneDeliveries = `DELETE FROM lensgate_delivery WHERE received_at < $1`
	sqlPruneBodies     = `DELETE FROM lensgate_body WHERE received_at < $1`
	// sqlCapBodies keeps at most the newest $1 body digests (fewer when several share the
	// second of the first one beyond); older ones go before their retention ends.
	sqlCapBodies = `DELETE FROM lensgate_body WHERE received_at <= (
		SELECT received_at FROM lensgate_body ORDER BY received_at DESC LIMIT 1 OFFSET $1)`
	sqlPruneSubjects = `DELETE FROM lensgate_subject WHERE updated_at < $1`
	// Leases of finished attempts (empty client id) go after an hour, others after retention.
	sqlPruneLeases = `DELETE FROM lensgate_lease WHERE renewed_at < $1 OR (client_id = '' AND renewed_at < $2)`
	sqlPruneBegun  = `DELETE FROM lensgate_begun WHERE begun_at < $1`
	sqlBegin       = `INSERT INTO lensgate_begun (subject_key, head_sha, begun_at) VALUES ($1, $2, $3)
		ON CONFLICT (subject_key, head_sha) DO NOTHING`
	sqlOpenHeads = `SELECT head_sha FROM lensgate_begun WHERE subject_key = $1 AND head_sha <> $2
		ORDER BY begun_at DESC LIMIT 20`
	sqlConcluded        = `DELETE FROM lensgate_begun WHERE subject_key = $1 AND head_sha = $2`
	advisoryMigrationID = 7_146_839_221 // any constant; serialises concurrent migrations on PostgreSQL
)

// isPostgres reports whether dsn names PostgreSQL.
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}
