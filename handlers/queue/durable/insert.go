package durable

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivershared/uniquestates"
	"github.com/riverqueue/river/rivertype"
)

// River's insert was a third of the SQLite writer's CPU per webhook: it encodes the job's
// parameters as a JSON array that SQLite then takes apart again field by field, and reads the
// whole row back. On SQLite a review job that runs now is therefore written with one prepared
// statement of the queue's own, with the row River would write: the same columns, the same unique
// key and states (so River's own inserts of the same arguments, such as a re-queued stale head,
// still find it), and state available. Jobs scheduled for later, and PostgreSQL, keep River's
// insert.

// reviewUniqueStates is River's bitmask of activeStates, the states in which a review job is
// unique by its arguments.
var reviewUniqueStates = int64(uniquestates.UniqueStatesToBitmask(activeStates))

// reviewUniqueKey is the unique key River computes for reviewArgs with UniqueOpts{ByArgs: true}:
// the SHA-256 of the kind and of a JSON object of the fields tagged river:"unique", sorted by
// name and encoded as encoding/json encodes them, leaving out an empty Rerun (omitempty).
func reviewUniqueKey(a reviewArgs) ([]byte, error) {
	head, err1 := json.Marshal(a.Head)
	key, err2 := json.Marshal(a.Key)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	s := make([]byte, 0, 64+len(head)+len(key)+len(a.Rerun))
	s = append(s, `&kind=lensgate_review&args={"head":`...)
	s = append(s, head...)
	s = append(s, `,"key":`...)
	s = append(s, key...)
	if a.Rerun != "" {
		rerun, err := json.Marshal(a.Rerun)
		if err != nil {
			return nil, err
		}
		s = append(s, `,"rerun":`...)
		s = append(s, rerun...)
	}
	s = append(s, '}')
	sum := sha256.Sum256(s)
	return sum[:], nil
}

const (
	// sqlInsertReviewSQLite is River's insert of one review job that runs now; a job of the same
	// unique key in an active state makes it insert nothing (then no row is returned).
	sqlInsertReviewSQLite = `INSERT INTO river_job (args, kind, max_attempts, metadata, priority, queue, scheduled_at,
			state, tags, unique_key, unique_states)
		VALUES (jsonb($1), 'lensgate_review', $2, jsonb('{}'), 1, 'default', datetime('now', 'subsec'),
			'available', jsonb('[]'), $3, $4)
		ON CONFLICT DO NOTHING
		RETURNING id`
	// sqlActiveReviewSQLite finds the active job holding a unique key.
	sqlActiveReviewSQLite = `SELECT id, state FROM river_job
		WHERE unique_key = $1 AND state IN ('available', 'pending', 'retryable', 'running', 'scheduled')`
)

// insertReview inserts a review job unique by its arguments in activeStates, as River's InsertTx
// with those options does, and says whether an active job with the same arguments was found
// instead.
func (q *riverQueue[TTx]) insertReview(ctx context.Context, tx TTx, args reviewArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	db, ok := any(q.db).(sqliteDB)
	stx, isSQL := any(tx).(*sql.Tx)
	if !ok || !isSQL || !opts.ScheduledAt.IsZero() {
		return q.client.InsertTx(ctx, tx, args, opts)
	}
	enc, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encode job: %w", err)
	}
	key, err := reviewUniqueKey(args)
	if err != nil {
		return nil, fmt.Errorf("unique key: %w", err)
	}
	var id int64
	err = db.queryRow(ctx, stx, sqlInsertReviewSQLite, []any{enc, q.opts.MaxAttempts, key, reviewUniqueStates}, &id)
	switch {
	case err == nil:
		return &rivertype.JobInsertResult{Job: &rivertype.JobRow{ID: id, Kind: args.Kind(), State: rivertype.JobStateAvailable, EncodedArgs: enc}}, nil
	case !errors.Is(err, errNoRows):
		return nil, err
	}
	var state string
	if err := db.queryRow(ctx, stx, sqlActiveReviewSQLite, []any{key}, &id, &state); err != nil {
		return nil, fmt.Errorf("find the active job of the same arguments: %w", err)
	}
	return &rivertype.JobInsertResult{Job: &rivertype.JobRow{ID: id, Kind: args.Kind(), State: rivertype.JobState(state)}, UniqueSkippedAsDuplicate: true}, nil
}
