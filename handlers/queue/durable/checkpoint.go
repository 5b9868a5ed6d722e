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
//
// Small checkpoints often stall the file system less than large ones seldom: at 1,000 deliveries
// a second on a VM's ext4 disk the acknowledgement p99 was 5–7 ms checkpointing every 25–50 ms,
// 8.3–8.6 ms every 200 ms and 20–36 ms every second. An idle queue is looked at less and less
// often, up to once a second.
const (
	checkpointEvery   = 25 * time.Millisecond
	checkpointIdleMax = time.Second
	walFallbackPages  = 16384    // 64 MiB of 4 KiB pages
	walSizeLimit      = 64 << 20 // the log file is truncated to this after a checkpoint resets it
)

// checkpointer runs passive checkpoints of one SQLite database on its own connection.
type checkpointer struct {
	db     *sql.DB
	log    zerolog.Logger
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	passes atomic.Int64 // checkpoints that copied every frame
	copied atomic.Int64 // frames of the log copied back as of the last checkpoint
}

// startCheckpointer checkpoints every `every` while the log has frames to copy, and backs off to
// idleMax while it has none.
func startCheckpointer(db *sql.DB, log zerolog.Logger, every, idleMax time.Duration) *checkpointer {
	c := &checkpointer{db: db, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run(every, idleMax)
	return c
}

func (c *checkpointer) run(every, idleMax time.Duration) {
	defer close(c.done)
	wait := every
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if c.checkpoint() {
			wait = every
		} else {
			wait = min(2*wait, idleMax)
		}
		t.Reset(wait)
	}
}

// checkpoint copies what it can of the log without waiting for readers or the writer, and reports
// whether there was anything to copy; a busy answer (another process's checkpoint runs) is tried
// again soon.
func (c *checkpointer) checkpoint() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var busy, frames, copied int64
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		c.log.Debug().Err(err).Msg("sqlite checkpoint not run")
		return true
	}
	if busy == 0 && frames >= 0 && frames == copied {
		c.passes.Add(1)
	}
	// frames is the log's length and copied how much of it is in the database file; both stay
	// until a writer starts the log again from its beginning, so the queue was idle when copied is
	// what it was last time and nothing is left to copy.
	return busy != 0 || copied != c.copied.Swap(copied) || frames != copied
}

// close stops the checkpoints and closes their connection.
func (c *checkpointer) close() {
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		_ = c.db.Close()
	})
}
