package durable

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lensgate/lensgate/handlers/queue"
)

// sqlOn runs statements on the database of q, a queue returned by Open, and reads one integer.
func sqlOn(t *testing.T, q queue.Queue, read string, statements ...string) int64 {
	t.Helper()
	ctx := context.Background()
	var n int64
	run := func(exec func(string) error, queryOne func(string, *int64) error) {
		for _, s := range statements {
			if err := exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		if read != "" {
			if err := queryOne(read, &n); err != nil {
				t.Fatalf("%s: %v", read, err)
			}
		}
	}
	switch rq := q.(type) {
	case *riverQueue[pgx.Tx]:
		run(func(s string) error {
			return withTx(ctx, rq.db, func(tx pgx.Tx) error { _, err := rq.db.exec(ctx, tx, s); return err })
		}, func(s string, n *int64) error { return rq.db.queryOne(ctx, s, nil, n) })
	case *riverQueue[*sql.Tx]:
		run(func(s string) error {
			return withTx(ctx, rq.db, func(tx *sql.Tx) error { _, err := rq.db.exec(ctx, tx, s); return err })
		}, func(s string, n *int64) error { return rq.db.queryOne(ctx, s, nil, n) })
	default:
		t.Fatalf("not a durable queue: %T", q)
	}
	return n
}

func TestSchemaMigratesOnceToItsVersion(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			q := open(t, dsn, testOptions())
			if v := sqlOn(t, q, "SELECT max(version) FROM lensgate_schema"); v != int64(schemaVersion) {
				t.Fatalf("schema version %d, want %d", v, schemaVersion)
			}
			// Every store's table is there after Open, before any store is made.
			for _, table := range []string{"lensgate_delivery", "lensgate_subject", "lensgate_check",
				"lensgate_org_config_absent", "lensgate_write_slot", "lensgate_token_day"} {
				sqlOn(t, q, "SELECT count(*) FROM "+table)
			}
			_ = q.Stop(context.Background())

			again := open(t, dsn, testOptions())
			if n := sqlOn(t, again, "SELECT count(*) FROM lensgate_schema"); n != int64(len(migrations)) {
				t.Fatalf("%d migration records after a second Open, want %d (each once)", n, len(migrations))
			}
		})
	}
}

// A database made before the version table existed, with the subject table of the first
// release, is brought to the current schema without losing its rows.
func TestSchemaMigratesADatabaseWithoutVersions(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			q := open(t, dsn, testOptions())
			sqlOn(t, q, "",
				"DROP TABLE lensgate_schema",
				"ALTER TABLE lensgate_subject DROP COLUMN head_received_ns",
				"INSERT INTO lensgate_subject (subject_key, head_sha, job_id, updated_at) VALUES ('o/r#1', 'abc', 7, 1)")
			_ = q.Stop(context.Background())

			again := open(t, dsn, testOptions())
			if v := sqlOn(t, again, "SELECT max(version) FROM lensgate_schema"); v != int64(schemaVersion) {
				t.Fatalf("schema version %d, want %d", v, schemaVersion)
			}
			if n := sqlOn(t, again, "SELECT head_received_ns + job_id FROM lensgate_subject WHERE subject_key = 'o/r#1'"); n != 7 {
				t.Fatalf("kept row reads %d, want job 7 with head_received_ns 0", n)
			}
		})
	}
}
