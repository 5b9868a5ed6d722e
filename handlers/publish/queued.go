package publish

import (
	"context"
	"sync"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/review"
)

var _ publication.QueueMarking = (*Publisher)(nil)

// headLocks order the gate check writes of one head within this process: Begin and MarkQueued
// hold a head's lock across their GitHub calls, which can wait minutes (a secondary rate limit,
// retries), so a head's lock is its own: the writes of other heads, above all of other
// installations, never wait behind it (a lock shared by several heads would let one slow or
// stuck write hold back reviews that have nothing to do with it).
type headLocks struct {
	mu    sync.Mutex
	locks map[string]*headLock
}

// headLock is one head's lock and how many hold it or wait for it.
type headLock struct {
	sync.Mutex
	refs int
}

// lock takes the lock of the head named by key and returns its release; a lock nobody holds or
// waits for is forgotten.
func (h *headLocks) lock(key string) func() {
	h.mu.Lock()
	if h.locks == nil {
		h.locks = map[string]*headLock{}
	}
	l := h.locks[key]
	if l == nil {
		l = &headLock{}
		h.locks[key] = l
	}
	l.refs++
	h.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		h.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(h.locks, key)
		}
		h.mu.Unlock()
	}
}

// lockGate takes the lock of the head named by key and returns its release.
func (p *Publisher) lockGate(key string) func() { return p.gateLocks.lock(key) }

// MarkQueued implements publication.QueueMarking: the head's gate check is created queued,
// unless the head has a gate check already (a review began, or an earlier review concluded
// one). Begin holds the same lock, so within a process a review that begins meanwhile is
// never given a second check run.
func (p *Publisher) MarkQueued(ctx context.Context, gh *github.Client, pub *publication.Publication) error {
	if pub == nil || pub.Subject == nil || pub.Subject.Kind == review.KindIssue || pub.Subject.HeadSHA == "" {
		return nil
	}
	r := p.newRun(ctx, gh, pub, "queued")
	defer p.lockGate(r.checkKey(p.checkName))()
	if _, found, err := r.gateRecord(ctx); err != nil || found {
		return err
	}
	// A job carries no repository node id, under which a review records its check: the
	// head's check runs say whether it has one.
	cr, err := r.findCheck(ctx, p.checkName)
	if err != nil || cr != nil {
		return err
	}
	out := &github.CheckRunOutput{
		Title: github.String("lensgate: review queued"),
		Summary: github.String("The review of head `" + r.info.headSHA + "` is queued: it waits for a worker. " +
			"This check shows the review in progress when it starts, and concludes with the gate."),
	}
	if err := r.putCheck(ctx, nil, p.checkName, nil, "queued", "", out); err != nil {
		return err
	}
	return r.finish(ctx)
}

// Unqueue implements publication.QueueMarking: a gate check still queued concludes cancelled
// with why. The record of the head's check says whether there is one to look at; the head's
// check runs say whether it is still queued, since a record kept under the name of the
// repository may be older than the review's own.
func (p *Publisher) Unqueue(ctx context.Context, gh *github.Client, pub *publication.Publication, why string) error {
	if pub == nil || pub.Subject == nil || pub.Subject.Kind == review.KindIssue || pub.Subject.HeadSHA == "" {
		return nil
	}
	r := p.newRun(ctx, gh, pub, "unqueue")
	defer p.lockGate(r.checkKey(p.checkName))()
	rec, found, err := r.gateRecord(ctx)
	if err != nil || !found || rec.Status != "queued" {
		return err
	}
	cr, err := r.findCheck(ctx, p.checkName)
	if err != nil || cr.GetStatus() != "queued" {
		return err
	}
	out := &github.CheckRunOutput{
		Title:   github.String("lensgate: not reviewed"),
		Summary: github.String("The review of head `" + r.info.headSHA + "` did not start: " + oneLine(why, 500) + "."),
	}
	if err := r.putCheck(ctx, cr, p.checkName, nil, "completed", "cancelled", out); err != nil {
		return err
	}
	return r.finish(ctx)
}
