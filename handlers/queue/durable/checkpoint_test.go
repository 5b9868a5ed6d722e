package durable

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/queue"
)

// TestSQLiteCheckpointsOffTheWritersConnection: the queue's own connection only checkpoints a log
// grown past the fallback size; the checkpointer's connection keeps the log copied back.
func TestSQLiteCheckpointsOffTheWritersConnection(t *testing.T) {
	q := open(t, sqliteDSN(t), testOptions()).(*riverQueue[*sql.Tx])
	db := q.db.(sqliteDB)
	var pages int64
	if err := db.queryOne(context.Background(), "PRAGMA wal_autocheckpoint", nil, &pages); err != nil {
		t.Fatal(err)
	}
	if pages != walFallbackPages {
		t.Fatalf("queue connection checkpoints every %d pages, want the fallback %d", pages, walFallbackPages)
	}
	before := db.ck.passes.Load()
	for i := range 200 {
		job := queue.Job{Key: fmt.Sprintf("o/r#%d", i%20), DeliveryID: fmt.Sprintf("d-%d", i), HeadSHA: fmt.Sprintf("%040x", i),
			Kind: queue.KindPullRequest, EnqueuedAt: time.Now()}
		if err := q.Enqueue(context.Background(), job); err != nil {
			t.Fatal(err)
		}
	}
	// 200 commits write far fewer pages than the fallback, so only the checkpointer copies them.
	deadline := time.Now().Add(30 * time.Second)
	for db.ck.passes.Load() <= before {
		if time.Now().After(deadline) {
			t.Fatal("no complete checkpoint after the enqueues")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var busy, frames, copied int64
	if err := db.ck.db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		t.Fatal(err)
	}
	if frames != copied {
		t.Errorf("log has %d frames, %d copied back", frames, copied)
	}
}

// TestSQLiteCheckpointerStops: Stop ends the checkpoints and closes their connection.
func TestSQLiteCheckpointerStops(t *testing.T) {
	q, err := Open(context.Background(), sqliteDSN(t), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	ck := q.(*riverQueue[*sql.Tx]).db.(sqliteDB).ck
	if err := q.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ck.done:
	default:
		t.Fatal("checkpointer still running after Stop")
	}
	if err := ck.db.Ping(); err == nil {
		t.Error("checkpointer's connection still open after Stop")
	}
}

// TestCheckpointerBacksOffWhenIdle: a checkpoint reports work while the log has new frames and
// none once nothing was written since the last one, which is what lets an idle queue's
// checkpointer wait longer.
func TestCheckpointerBacksOffWhenIdle(t *testing.T) {
	uri := "file:" + filepath.Join(t.TempDir(), "idle.db") + "?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)"
	writer, err := sql.Open("sqlite", uri)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	reader, err := sql.Open("sqlite", uri)
	if err != nil {
		t.Fatal(err)
	}
	c := &checkpointer{db: reader, log: zerolog.Nop()}
	write := func(n int) {
		t.Helper()
		for i := range n {
			if _, err := writer.Exec(`INSERT INTO t (v) VALUES (?)`, i); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := writer.Exec(`CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	write(10)
	steps := []struct {
		name   string
		writes int
		want   bool
	}{
		{"new frames", 0, true},
		{"nothing written since", 0, false},
		{"still nothing", 0, false},
		{"written again", 5, true},
		{"idle again", 0, false},
	}
	for _, s := range steps {
		write(s.writes)
		if got := c.checkpoint(); got != s.want {
			t.Errorf("%s: checkpoint reported work %v, want %v", s.name, got, s.want)
		}
	}
	if c.passes.Load() == 0 {
		t.Error("no checkpoint copied the whole log")
	}
}
