package durable

import (
	"encoding/json"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/lensgate/lensgate/handlers/queue"
)

// Fairness between installations (see queue.DefaultMaxRunningPerInstallation). River hands a
// replica its oldest available jobs whatever their installation, so the bound is kept as the
// job starts: a job whose installation already runs its bound of jobs on this replica is
// snoozed at once, which gives its worker back and puts the job behind the jobs that are waiting.
// River does not count a snooze as an attempt. The bound is per replica: every replica keeps
// workers that no single installation can take.

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

// enter counts a starting job of installation and returns its leave, or false when the
// installation is at its bound. Jobs of no installation (0) are not bounded.
func (c *installationCap) enter(installation int64) (func(), bool) {
	if installation == 0 || c.limit <= 0 {
		return func() {}, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[installation] >= c.limit {
		return nil, false
	}
	c.running[installation]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.running[installation]--; c.running[installation] <= 0 {
			delete(c.running, installation)
		}
	}, true
}

// Snoozes of a job at its installation's bound start at snoozeBase and double per snooze up to
// snoozeMax: a job snoozed again and again (a long burst) costs the database little, and one
// snoozed once runs soon after its installation's jobs finish.
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
