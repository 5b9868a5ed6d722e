package durable

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lensgate/lensgate/handlers/queue"
)

var uniqueOpts = &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeStates}}

// reviewArgsCases are arguments whose encoding differs in the ways that matter to the unique key:
// an empty and a set Rerun, and characters encoding/json escapes.
func reviewArgsCases() []reviewArgs {
	return []reviewArgs{
		{Key: "o/r#1", Head: strings.Repeat("a", 40)},
		{Key: "o/r#1", Head: strings.Repeat("a", 40), Rerun: "d-1"},
		{Key: `ö/<r>&"x"\#2`, Head: "h\u2028\x01", Rerun: "after-7"},
		{Key: "o/r#3", Head: "", Job: queue.Job{Key: "o/r#3", Kind: queue.KindIssue}},
	}
}

// TestReviewUniqueKeyIsRivers: the unique key and states the SQLite insert writes are those River
// computes for the same arguments, on both databases.
func TestReviewUniqueKeyIsRivers(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			switch q := open(t, be.dsn(t), testOptions()).(type) {
			case *riverQueue[*sql.Tx]:
				checkUniqueKeys(t, q)
			default:
				checkUniqueKeys(t, q.(*riverQueue[pgx.Tx]))
			}
		})
	}
}

func checkUniqueKeys[TTx any](t *testing.T, q *riverQueue[TTx]) {
	ctx := context.Background()
	for _, a := range reviewArgsCases() {
		var ins *rivertype.JobInsertResult
		if err := withTx(ctx, q.db, func(tx TTx) error {
			var err error
			ins, err = q.client.InsertTx(ctx, tx, a, uniqueOpts)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		want, err := reviewUniqueKey(a)
		if err != nil {
			t.Fatal(err)
		}
		if string(ins.Job.UniqueKey) != string(want) {
			t.Errorf("%+v: River's unique key %x, ours %x", a, ins.Job.UniqueKey, want)
		}
		var states []rivertype.JobState
		for _, s := range ins.Job.UniqueStates {
			states = append(states, s)
		}
		if len(states) != len(activeStates) {
			t.Errorf("River's unique states %v, want %v", states, activeStates)
		}
	}
}

// TestDirectInsertIsRiversRow: on SQLite, a review job written by the queue's own insert has the
// columns River writes, each finds an active job the other inserted with the same arguments, and
// River runs it.
func TestDirectInsertIsRiversRow(t *testing.T) {
	ctx := context.Background()
	q := open(t, sqliteDSN(t), testOptions()).(*riverQueue[*sql.Tx])
	db := q.db.(sqliteDB)
	cases := reviewArgsCases()
	river1, direct1 := cases[0], cases[1] // different unique keys
	insert := func(direct bool, a reviewArgs) *rivertype.JobInsertResult {
		t.Helper()
		var ins *rivertype.JobInsertResult
		err := withTx(ctx, q.db, func(tx *sql.Tx) error {
			var err error
			if direct {
				ins, err = q.insertReview(ctx, tx, a, uniqueOpts)
			} else {
				ins, err = q.client.InsertTx(ctx, tx, a, uniqueOpts)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ins
	}
	byRiver, byQueue := insert(false, river1), insert(true, direct1)
	if byRiver.UniqueSkippedAsDuplicate || byQueue.UniqueSkippedAsDuplicate {
		t.Fatal("fresh inserts reported as duplicates")
	}
	type row struct {
		Kind, Queue, State, Tags, Metadata, Args string
		MaxAttempts, Priority, UniqueStates      int64
		Attempt                                  int64
		UniqueKey                                string
		Scheduled, Created                       bool
	}
	read := func(id int64) row {
		t.Helper()
		var r row
		if err := db.queryOne(ctx, `SELECT kind, queue, state, json(tags), json(metadata), json(args), max_attempts, priority,
				unique_states, attempt, unique_key, scheduled_at IS NOT NULL, created_at IS NOT NULL FROM river_job WHERE id = $1`,
			[]any{id}, &r.Kind, &r.Queue, &r.State, &r.Tags, &r.Metadata, &r.Args, &r.MaxAttempts, &r.Priority,
			&r.UniqueStates, &r.Attempt, &r.UniqueKey, &r.Scheduled, &r.Created); err != nil {
			t.Fatal(err)
		}
		return r
	}
	rr, qr := read(byRiver.Job.ID), read(byQueue.Job.ID)
	// River's SQLite insert marks its rows with a nonce in the metadata to tell an insert from a
	// duplicate; the queue's insert tells them by the rows it returns.
	var meta map[string]any
	if err := json.Unmarshal([]byte(rr.Metadata), &meta); err != nil {
		t.Fatal(err)
	}
	for k := range meta {
		if !strings.Contains(k, "nonce") {
			t.Errorf("River's metadata holds %q, which the queue's insert does not write", k)
		}
	}
	var args reviewArgs
	if err := json.Unmarshal([]byte(qr.Args), &args); err != nil || args.Key != direct1.Key || args.Head != direct1.Head || args.Rerun != direct1.Rerun {
		t.Errorf("args %s (%v), want %+v", qr.Args, err, direct1)
	}
	wantKey, _ := reviewUniqueKey(direct1)
	if qr.UniqueKey != string(wantKey) {
		t.Errorf("unique key %x, want %x", qr.UniqueKey, wantKey)
	}
	rr.Metadata, rr.Args, rr.UniqueKey = "", "", ""
	qr.Metadata, qr.Args, qr.UniqueKey = "", "", ""
	if rr != qr {
		t.Errorf("columns differ:\nRiver %+v\nqueue %+v", rr, qr)
	}
	// Each insert finds the other's active job of the same arguments.
	if dup := insert(true, river1); !dup.UniqueSkippedAsDuplicate || dup.Job.ID != byRiver.Job.ID {
		t.Errorf("the queue's insert of River's job's arguments: %+v, want a duplicate of %d", dup, byRiver.Job.ID)
	}
	if dup := insert(false, direct1); !dup.UniqueSkippedAsDuplicate || dup.Job.ID != byQueue.Job.ID {
		t.Errorf("River's insert of the queue's job's arguments: %+v, want a duplicate of %d", dup, byQueue.Job.ID)
	}
	// Once the job is no longer active its arguments can be queued again.
	if _, err := db.db.ExecContext(ctx, `UPDATE river_job SET state = 'completed', finalized_at = datetime('now', 'subsec') WHERE id = ?`, byQueue.Job.ID); err != nil {
		t.Fatal(err)
	}
	if again := insert(true, direct1); again.UniqueSkippedAsDuplicate || again.Job.ID == byQueue.Job.ID {
		t.Errorf("arguments of a completed job: %+v, want a new job", again)
	}
}
