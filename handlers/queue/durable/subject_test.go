package durable

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSubjectTouchedHourly: an enqueue moves its subject's updated_at (which only decides when an
// idle subject is pruned) when it is an hour old or more, and leaves it otherwise.
func TestSubjectTouchedHourly(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			switch q := open(t, b.dsn(t), testOptions()).(type) {
			case *riverQueue[*sql.Tx]:
				checkSubjectTouch(t, q)
			default:
				checkSubjectTouch(t, q.(*riverQueue[pgx.Tx]))
			}
		})
	}
}

func checkSubjectTouch[TTx any](t *testing.T, q *riverQueue[TTx]) {
	ctx := context.Background()
	updated := func() int64 {
		t.Helper()
		var u int64
		if err := q.db.queryOne(ctx, `SELECT updated_at FROM lensgate_subject WHERE subject_key = $1`, []any{"o/r#1"}, &u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	setUpdated := func(u int64) {
		t.Helper()
		if err := withTx(ctx, q.db, func(tx TTx) error {
			_, err := q.db.exec(ctx, tx, `UPDATE lensgate_subject SET updated_at = $1 WHERE subject_key = $2`, u, "o/r#1")
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue := func(head, delivery string) {
		t.Helper()
		if err := q.Enqueue(ctx, prJob("o/r#1", head, delivery)); err != nil {
			t.Fatal(err)
		}
	}
	enqueue("h1", "d1")
	now := time.Now().Unix()
	if u := updated(); u < now-5 || u > now+5 {
		t.Fatalf("new subject updated_at %d, want about %d", u, now)
	}
	recent := now - 1800
	setUpdated(recent)
	enqueue("h2", "d2")
	if u := updated(); u != recent {
		t.Errorf("half an hour old: updated_at moved to %d, want it left at %d", u, recent)
	}
	old := now - 3700
	setUpdated(old)
	enqueue("h3", "d3")
	if u := updated(); u < now-5 {
		t.Errorf("over an hour old: updated_at %d, want about %d", u, now)
	}
}
