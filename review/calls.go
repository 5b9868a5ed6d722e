package review

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/lensgate/lensgate/review/runtime"
)

// DefaultMaxConcurrentCalls is the model calls one review makes at once when
// Options.MaxConcurrentCalls is unset (the server's runtimes.max_concurrent_calls).
const DefaultMaxConcurrentCalls = 4

// CallLimits bounds the model calls in flight across the reviews of one process: in all and
// per installation. The server makes one from runtimes.max_concurrent_calls_total and
// runtimes.max_concurrent_calls_per_installation and hands it to its pipeline; every replica
// bounds its own calls. It is safe for concurrent use.
type CallLimits struct {
	total           *semaphore.Weighted // nil: no bound in all
	perInstallation int64               // 0: no bound per installation

	mu   sync.Mutex
	inst map[int64]*instSlots
}

// instSlots is the bound of one installation, kept while a call of it holds or waits for a slot.
type instSlots struct {
	sem  *semaphore.Weighted
	refs int
}

// NewCallLimits returns the bounds: at most total calls in flight in all and perInstallation
// per installation; 0 or less leaves a bound off.
func NewCallLimits(total, perInstallation int) *CallLimits {
	l := &CallLimits{inst: map[int64]*instSlots{}}
	if total > 0 {
		l.total = semaphore.NewWeighted(int64(total))
	}
	if perInstallation > 0 {
		l.perInstallation = int64(perInstallation)
	}
	return l
}

// forInstallation returns the installation's semaphore and counts one more user of it (nil
// when there is no bound per installation).
func (l *CallLimits) forInstallation(id int64) *instSlots {
	if l == nil || l.perInstallation == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.inst[id]
	if s == nil {
		s = &instSlots{sem: semaphore.NewWeighted(l.perInstallation)}
		l.inst[id] = s
	}
	s.refs++
	return s
}

// done forgets an installation's semaphore once nothing holds or waits for it.
func (l *CallLimits) done(id int64, s *instSlots) {
	if s == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.refs--; s.refs == 0 {
		delete(l.inst, id)
	}
}

// reviewSlots is the runtime.Slots of one review: a slot is the review's own, then its
// installation's, then the process's. Every call takes them in this order, so no two calls
// wait on each other in a cycle.
type reviewSlots struct {
	review       *semaphore.Weighted
	limits       *CallLimits
	installation int64
}

func newReviewSlots(n int, limits *CallLimits, installation int64) *reviewSlots {
	if n <= 0 {
		n = DefaultMaxConcurrentCalls
	}
	return &reviewSlots{review: semaphore.NewWeighted(int64(n)), limits: limits, installation: installation}
}

// Acquire implements runtime.Slots.
func (s *reviewSlots) Acquire(ctx context.Context) (func(), error) {
	if err := s.review.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	inst := s.limits.forInstallation(s.installation)
	if inst != nil {
		if err := inst.sem.Acquire(ctx, 1); err != nil {
			s.limits.done(s.installation, inst)
			s.review.Release(1)
			return nil, err
		}
	}
	var total *semaphore.Weighted
	if s.limits != nil {
		total = s.limits.total
	}
	if total != nil {
		if err := total.Acquire(ctx, 1); err != nil {
			s.releaseInstallation(inst)
			s.review.Release(1)
			return nil, err
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if total != nil {
				total.Release(1)
			}
			s.releaseInstallation(inst)
			s.review.Release(1)
		})
	}, nil
}

func (s *reviewSlots) releaseInstallation(inst *instSlots) {
	if inst == nil {
		return
	}
	inst.sem.Release(1)
	s.limits.done(s.installation, inst)
}

var _ runtime.Slots = (*reviewSlots)(nil)
