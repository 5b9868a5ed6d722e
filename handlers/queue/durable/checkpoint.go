package durable

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// SQLite's WAL is copied back into the database file by a checkpoint. Left to SQLite, the
// committing connection runs it after the commit that fills the log past 1,000 pages, and the
// queue's one connection is the one every webhook's enqueue waits for: at 1,000 deliveries a second
// that was a stall of 8-11 ms a few times a second. The queue instead checkpoints from a
// connection of its own, which does not hold the writer's lock, and leaves SQLite's own
// checkpoint as a fallback for a log that grows past walFallbackPages anyway.
const (
	checkpointInterval = 200 * time.Millisecond
	walFallbackPages   = 16384    // 64 MiB of 4 KiB pages
	walSizeLimit       = 64 << 20 // the log file is truncated to this after a checkpoint resets it
)

// checkpointer runs passive checkpoints of one SQLite database on its own connection.
type checkpointer struct {
	db     *sql.DB
	log    zerolog.Logger
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	passes atomic.Int64 // checkpoints that copied every frame
}

func startCheckpointer(db *sql.DB, log zerolog.Logger, every time.Duration) *checkpointer {
	c := &checkpointer{db: db, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run(every)
	return c
}

func (c *checkpointer) run(every time.Duration) {
	defer close(c.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.checkpoint()
		}
	}
}

// checkpoint copies what it can of the log without waiting for readers or the writer; a busy
// answer (another process's checkpoint runs) is tried again at the next tick.
func (c *checkpointer) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var busy, frames, copied int64
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		c.log.Debug().Err(err).Msg("sqlite checkpoint not run")
		return
	}
	if busy == 0 && frames >= 0 && frames == copied {
		c.passes.Add(1)
	}
}

// close stops the checkpoints and closes their connection.
func (c *checkpointer) close() {
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		_ = c.db.Close()
	})
}
