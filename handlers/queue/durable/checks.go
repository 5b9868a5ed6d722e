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
)

// CheckRecordsKept is how long a gate check record is kept and trusted. GitHub marks a check
// run that stays incomplete for 14 days as stale, so an older record may no longer say what
// the run is; a head reviewed again after that lists its check runs (or gets a new one).
const CheckRecordsKept = queue.CheckRecordsKept

const (
	// sqlPutCheck records a write unless the row holds a newer run, or the same run completed
	// and this is an in-progress write arriving late; a record of unknown status replaces any
	// (queue.Supersedes, in one statement, so two replicas writing at once keep the newer).
	sqlPutCheck = `INSERT INTO lensgate_check (app_id, repo, head_sha, name, check_id, status, title, annotations, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (app_id, repo, head_sha, name) DO UPDATE
			SET check_id = excluded.check_id, status = excluded.status, title = excluded.title,
				annotations = excluded.annotations, updated_at = excluded.updated_at
			WHERE excluded.status = '` + queue.CheckStatusUnknown + `'
				OR excluded.check_id > lensgate_check.check_id
				OR (excluded.check_id = lensgate_check.check_id
					AND (lensgate_check.status <> 'completed' OR excluded.status = 'completed'))`
	sqlGetCheck = `SELECT check_id, status, title, annotations, updated_at FROM lensgate_check
		WHERE app_id = $1 AND repo = $2 AND head_sha = $3 AND name = $4 AND updated_at >= $5`
	sqlForgetCheck = `DELETE FROM lensgate_check WHERE app_id = $1 AND repo = $2 AND head_sha = $3 AND name = $4`
	sqlPruneChecks = `DELETE FROM lensgate_check WHERE updated_at < $1`
)

// CheckRecords is queue.CheckRecords kept in the durable queue's database: a replica finds
// the gate check run another replica wrote, and a restart keeps them. Records older than
// CheckRecordsKept are not returned and are deleted once a day by each process.
type CheckRecords struct {
	now   func() time.Time
	store sideStore

	mu       sync.Mutex
	prunedOn string // the UTC day this process last pruned
}

var _ queue.CheckRecords = (*CheckRecords)(nil)

// sideStore runs the SQL of a table kept beside the queue's (schema.go holds its definition;
// Open created it) on one backend.
type sideStore struct {
	exec     func(ctx context.Context, query string, args ...any) error
	queryOne func(ctx context.Context, query string, args []any, dest ...any) error
	// queryRows calls each with a scan function for every row of a query, in a transaction.
	queryRows func(ctx context.Context, query string, args []any, each func(scan func(...any) error) error) error
}

// NewCheckRecords returns the gate check records kept in the database of q, a queue returned
// by Open. now is the clock (time.Now when nil). The records
// use q's connections: they work until q is stopped.
func NewCheckRecords(ctx context.Context, q queue.Queue, now func() time.Time) (*CheckRecords, error) {
	if now == nil {
		now = time.Now
	}
	store, err := openSideStore(q)
	if err != nil {
		return nil, fmt.Errorf("durable queue: gate check records: %w", err)
	}
	return &CheckRecords{now: now, store: store}, nil
}

// openSideStore runs a side table's SQL over the database of q, a queue returned by Open.
func openSideStore(q queue.Queue) (sideStore, error) {
	switch rq := q.(type) {
	case *riverQueue[pgx.Tx]:
		return newSideStore[pgx.Tx](rq.db), nil
	case *riverQueue[*sql.Tx]:
		return newSideStore[*sql.Tx](rq.db), nil
	}
	return sideStore{}, errors.New("needs a queue opened by durable.Open")
}

func newSideStore[TTx any](db database[TTx]) sideStore {
	return sideStore{
		exec: func(ctx context.Context, query string, args ...any) error {
			return withTx(ctx, db, func(tx TTx) error {
				_, err := db.exec(ctx, tx, query, args...)
				return err
			})
		},
		queryOne: db.queryOne,
		queryRows: func(ctx context.Context, query string, args []any, each func(scan func(...any) error) error) error {
			return withTx(ctx, db, func(tx TTx) error { return db.queryRows(ctx, tx, query, args, each) })
		},
	}
}

// Check implements queue.CheckRecords.
func (c *CheckRecords) Check(ctx context.Context, key queue.CheckKey) (queue.CheckRecord, bool, error) {
	var rec queue.CheckRecord
	var annotations, at int64
	oldest := c.now().Add(-CheckRecordsKept).UnixMilli()
	err := c.store.queryOne(ctx, sqlGetCheck, []any{key.App, key.Repo, key.Head, key.Name, oldest},
		&rec.ID, &rec.Status, &rec.Title, &annotations, &at)
	switch {
	case errors.Is(err, errNoRows):
		return queue.CheckRecord{}, false, nil
	case err != nil:
		return queue.CheckRecord{}, false, fmt.Errorf("durable queue: read gate check record: %w", err)
	}
	rec.Annotations, rec.At = int(annotations), time.UnixMilli(at)
	return rec, true, nil
}

// PutCheck implements queue.CheckRecords.
func (c *CheckRecords) PutCheck(ctx context.Context, key queue.CheckKey, rec queue.CheckRecord) error {
	c.pruneOnce(ctx)
	at := rec.At
	if at.IsZero() {
		at = c.now()
	}
	err := c.store.exec(ctx, sqlPutCheck, key.App, key.Repo, key.Head, key.Name, rec.ID, rec.Status, rec.Title, int64(rec.Annotations), at.UnixMilli())
	if err != nil {
		return fmt.Errorf("durable queue: write gate check record: %w", err)
	}
	return nil
}

// ForgetCheck implements queue.CheckRecords.
func (c *CheckRecords) ForgetCheck(ctx context.Context, key queue.CheckKey) error {
	if err := c.store.exec(ctx, sqlForgetCheck, key.App, key.Repo, key.Head, key.Name); err != nil {
		return fmt.Errorf("durable queue: forget gate check record: %w", err)
	}
	return nil
}

// pruneOnce deletes the records older than CheckRecordsKept on this process's first write of
// each UTC day. A failure is retried on the next write; it never fails one.
func (c *CheckRecords) pruneOnce(ctx context.Context) {
	now := c.now()
	day := now.UTC().Format(time.DateOnly)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prunedOn == day {
		return
	}
	if err := c.store.exec(ctx, sqlPruneChecks, now.Add(-CheckRecordsKept).UnixMilli()); err == nil {
		c.prunedOn = day
	}
}
