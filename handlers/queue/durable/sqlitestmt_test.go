package durable

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"modernc.org/sqlite"
)

// TestSQLiteStatementCache: a cached statement runs again with new arguments, a query used again
// while its rows are still open gets a statement of its own, and errors reach the caller.
func TestSQLiteStatementCache(t *testing.T) {
	ctx := context.Background()
	db := sql.OpenDB(cachingConnector{dsn: "file:" + filepath.Join(t.TempDir(), "c.db"), drv: &sqlite.Driver{}})
	db.SetMaxOpenConns(1)
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{"a", "b", "c"} {
		if _, err := db.ExecContext(ctx, `INSERT INTO t (k, v) VALUES (?, ?)`, i, v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO t (k, v) VALUES (?, ?)`, 0, "dup"); err == nil {
		t.Fatal("duplicate key accepted")
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	const q = `SELECT v FROM t WHERE k >= ? ORDER BY k`
	rows, err := tx.QueryContext(ctx, q, 0)
	if err != nil {
		t.Fatal(err)
	}
	var outer, inner []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		outer = append(outer, v)
		var w string
		if err := tx.QueryRowContext(ctx, q, len(outer)-1).Scan(&w); err != nil {
			t.Fatal(err)
		}
		inner = append(inner, w)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(outer, ","), "a,b,c"; got != want {
		t.Fatalf("outer rows %s, want %s", got, want)
	}
	if got, want := strings.Join(inner, ","), "a,b,c"; got != want {
		t.Fatalf("inner rows %s, want %s", got, want)
	}
	// The cached statement is free again and sees the transaction's own writes.
	if _, err := tx.ExecContext(ctx, `INSERT INTO t (k, v) VALUES (?, ?)`, 9, "z"); err != nil {
		t.Fatal(err)
	}
	var last string
	if err := tx.QueryRowContext(ctx, q, 9).Scan(&last); err != nil || last != "z" {
		t.Fatalf("after insert: %q, %v", last, err)
	}
}
