package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/queue"
)

// Fairness between installations (see queue.DefaultMaxRunningPerInstallation). River hands a
// replica its oldest available jobs whatever their installation, so the bound is kept as the
// job starts. A job whose installation already runs its bound of jobs on this replica asks the
// database whether a review of another installation below its bound is available to run now:
// if so it is snoozed at once, which gives its worker back and puts it behind that job; if not
// it runs, so a lone installation uses every worker. River does not count a snooze as an
// attempt. The bound is per replica.

// installationCap counts this replica's running jobs per installation.
type installationCap struct {
	limit int // 0 or less: no bound

	mu      sync.Mutex
	running map[int64]int
}

func newInstallationCap(limit, workers int) *installationCap {
	if limit == 0 {
		limit = queue.DefaultMaxRunningPerInstallation(workers)
	}
	return &installationCap{limit: limit, running: map[int64]int{}}
}

// atBound returns nil when a job of installation may start whatever else waits: its
// installation is below its bound, unbounded, or none (0). Otherwise it returns the
// installations of this replica at their bound, installation among them, sorted: the job waits
// only for a job of an installation not in that list.
func (c *installationCap) atBound(installation int64) []int64 {
	if installation == 0 || c.limit <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[installation] < c.limit {
		return nil
	}
	var full []int64
	for inst, n := range c.running {
		if n >= c.limit {
			full = append(full, inst)
		}
	}
	slices.Sort(full)
	return full
}

// enter counts a starting job of installation and returns its leave.
func (c *installationCap) enter(installation int64) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[installation]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.running[installation]--; c.running[installation] <= 0 {
			delete(c.running, installation)
		}
	}
}

// waitingIndex lets waitingElsewhereQuery find an available review of another installation in
// a few index probes, however many jobs of the busy installation wait: a partial index of
// River's available review jobs by installation.
func waitingIndex(backend string) string {
	return `CREATE INDEX IF NOT EXISTS lensgate_river_job_waiting ON river_job (` + installationExpr(backend) +
		`, scheduled_at) WHERE state = 'available' AND kind = '` + reviewArgs{}.Kind() + `'`
}

// installationExpr is a review job's installation id as River's args column holds it; the
// query and the index must spell it alike.
func installationExpr(backend string) string {
	if backend == "sqlite" {
		return `json_extract(args, '$.job.installation_id')`
	}
	return `((args->'job'->>'installation_id')::bigint)`
}

// waitingElsewhereQuery returns the query that tells whether a review job of an installation not
// in a sorted list of n is available to run now, and its arguments. Each gap between the listed
// installations is one range of waitingIndex, which the first due job ends.
func waitingElsewhereQuery(backend string, full []int64) (string, []any) {
	inst, now, from := installationExpr(backend), `now()`, `river_job`
	if backend == "sqlite" {
		now = `datetime('now', 'subsec')` // as River's fetch compares scheduled_at
		// Without statistics SQLite would rather read every review job by kind.
		from = `river_job INDEXED BY lensgate_river_job_waiting`
	}
	var b strings.Builder
	var args []any
	arg := func(v int64) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	b.WriteString("SELECT ")
	for i := 0; i <= len(full); i++ {
		var cond []string
		if i > 0 {
			cond = append(cond, inst+" > "+arg(full[i-1]))
		}
		if i < len(full) {
			cond = append(cond, inst+" < "+arg(full[i]))
		}
		if i > 0 {
			b.WriteString(" OR ")
		}
		// In installation order, so that PostgreSQL reads the index rather than scanning the
		// table in the hope of an early match.
		fmt.Fprintf(&b, "(SELECT 1 FROM %s WHERE state = 'available' AND kind = '%s' AND %s AND scheduled_at <= %s ORDER BY %s LIMIT 1) IS NOT NULL",
			from, reviewArgs{}.Kind(), strings.Join(cond, " AND "), now, inst)
	}
	return b.String(), args
}

// waitingElsewhere reports whether a review job of an installation not in full is available to
// run now.
func (q *riverQueue[TTx]) waitingElsewhere(ctx context.Context, full []int64) (bool, error) {
	query, args := waitingElsewhereQuery(q.backend, full)
	var waiting bool
	if err := q.db.queryOne(ctx, query, args, &waiting); err != nil {
		return false, fmt.Errorf("durable queue: look for jobs of other installations: %w", err)
	}
	return waiting, nil
}

// yieldToOthers reports whether a starting job of installation is to be snoozed: its
// installation is at its bound and a job of another installation below its bound waits. A
// failed look runs the job, as the attempt needs the database anyway.
func (q *riverQueue[TTx]) yieldToOthers(ctx context.Context, log zerolog.Logger, installation int64) bool {
	full := q.fair.atBound(installation)
	if full == nil {
		return false
	}
	waiting, err := q.waitingElsewhere(ctx, full)
	if err != nil {
		log.Warn().Err(err).Msg("installation at its running bound; job runs")
		return false
	}
	if waiting {
		log.Debug().Int64("installation_id", installation).Msg("installation at its running bound while others wait; job snoozed")
	}
	return waiting
}

// Snoozes of a job at its installation's bound start at snoozeBase and double per snooze up to
// snoozeMax: a job snoozed again and again (a long burst) costs the database little, and one
// snoozed once runs soon after the other installations' jobs started.
const (
	snoozeBase = time.Second
	snoozeMax  = 15 * time.Second
)

// snoozeFor is how long a job at its installation's bound is snoozed, ±20 % so that the
// snoozed jobs of a burst do not all come back at once.
func snoozeFor(row *rivertype.JobRow) time.Duration {
	var meta struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(row.Metadata, &meta)
	d := snoozeBase
	for i := 0; i < meta.Snoozes && d < snoozeMax; i++ {
		d *= 2
	}
	d = min(d, snoozeMax)
	return d + time.Duration((rand.Float64()*0.4-0.2)*float64(d))
}
