package queue

// Fairness between installations. A review waits for its installation's content-write slot
// (GitHub asks for a second between content writes) while it holds a worker, so a burst of one
// installation could hold every worker and start other installations' jobs late. A bound on the
// running jobs of one installation keeps workers for the others while they have work waiting;
// it never leaves a worker idle: with no job of another installation waiting, a job of an
// installation at its bound starts anyway.

// DefaultMaxRunningPerInstallation is the bound on one installation's running jobs for a
// queue of workers: all but one, at least one, so a job of another installation finds a worker
// that no single installation takes from it while it waits.
func DefaultMaxRunningPerInstallation(workers int) int {
	return max(workers-1, 1)
}

// installationFull reports whether installation has as many running jobs as it may while
// others wait; q.mu is held. Jobs of no installation (0) are not bounded.
func (q *Memory) installationFull(installation int64) bool {
	limit := q.opts.MaxRunningPerInstallation
	return installation != 0 && limit > 0 && q.perInst[installation] >= limit
}

// pickLocked returns the index in q.order of the job to start next, or -1; q.mu is held. It is
// the oldest job whose key is not running and whose installation is below its bound; failing
// that, the oldest job whose key is not running: no job of an installation below its bound
// waits, so the worker would otherwise stay idle.
func (q *Memory) pickLocked() int {
	atBound := -1
	for i, key := range q.order {
		if _, busy := q.running[key]; busy {
			continue
		}
		if !q.installationFull(q.pending[key].InstallationID) {
			return i
		}
		if atBound < 0 {
			atBound = i
		}
	}
	return atBound
}
