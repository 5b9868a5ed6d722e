package queue

// Fairness between installations. A review waits for its installation's content-write slot
// (GitHub asks for a second between content writes) while it holds a worker, so a burst of one
// installation could hold every worker and start other installations' jobs late. A bound on the
// running jobs of one installation keeps workers for the others.

// DefaultMaxRunningPerInstallation is the bound on one installation's running jobs for a
// queue of workers: all but one, at least one, so a job of another installation always finds a
// worker that no single installation can take.
func DefaultMaxRunningPerInstallation(workers int) int {
	return max(workers-1, 1)
}

// installationFull reports whether installation has as many running jobs as it may; q.mu is
// held. Jobs of no installation (0) are not bounded.
func (q *Memory) installationFull(installation int64) bool {
	limit := q.opts.MaxRunningPerInstallation
	return installation != 0 && limit > 0 && q.perInst[installation] >= limit
}
