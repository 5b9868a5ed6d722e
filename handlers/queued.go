package handlers

import (
	"context"
	"sync"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review"
)

// maxQueuedMarks bounds the jobs waiting to be looked at, and the heads shown queued, at once.
// Beyond it a job simply shows no queued check: its gate check appears when its review starts.
const maxQueuedMarks = 1000

// queuedMarks is the queue the App feeds, showing the pull request jobs that wait for a worker:
// a job that no worker has taken QueuedAfter after it was enqueued gets its head's gate check
// created queued, off the webhook's path. It only runs where this process runs every worker of
// its queue (role all, on the memory or SQLite queue), so that it knows which jobs were taken and
// the publisher's lock orders the queued check before the review's own.
type queuedMarks struct {
	queue.Queue
	marker  publication.QueueMarking
	clients githubapp.ClientCreator
	after   time.Duration
	app     func() publication.AppIdentity
	log     zerolog.Logger
	memory  bool // jobs are lost when the process stops

	mu      sync.Mutex
	pending []queuedTask
	latest  map[string]string // subject key -> newest head enqueued
	taken   map[string]bool   // subject key + head -> a worker took the job
	marking map[string]bool   // subject key + head -> its queued check is being written
	marked  map[string]queue.Job
	wake    chan struct{}
	stop    context.CancelFunc
	done    chan struct{}
}

// queuedTask is a job to mark once it has waited long enough (unqueue false), or the job of a
// head shown queued whose job will not run (unqueue true, why says so).
type queuedTask struct {
	job     queue.Job
	at      time.Time
	unqueue bool
	why     string
}

func newQueuedMarks(q queue.Queue, marker publication.QueueMarking, clients githubapp.ClientCreator, after time.Duration,
	app func() publication.AppIdentity, memory bool, log zerolog.Logger) *queuedMarks {
	return &queuedMarks{Queue: q, marker: marker, clients: clients, after: after, app: app, memory: memory, log: log,
		latest: map[string]string{}, taken: map[string]bool{}, marking: map[string]bool{}, marked: map[string]queue.Job{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// markable is a job that reviews a head now, as news of its pull request.
func markable(job queue.Job) bool {
	return job.Kind == queue.KindPullRequest && job.HeadSHA != "" && !job.FollowUp && job.NotBefore.IsZero()
}

// Enqueue implements queue.Queue: after the job is enqueued, it is remembered for a look later;
// nothing here waits for GitHub.
func (m *queuedMarks) Enqueue(ctx context.Context, job queue.Job) error {
	if err := m.Queue.Enqueue(ctx, job); err != nil || !markable(job) {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.latest) >= maxQueuedMarks*10 {
		clear(m.latest) // older keys' heads: at worst a superseded job is marked
	}
	m.latest[job.Key] = job.HeadSHA
	if old, ok := m.marked[job.Key]; ok && old.HeadSHA != job.HeadSHA {
		delete(m.marked, job.Key)
		m.push(queuedTask{job: old, unqueue: true,
			why: "head " + digest.Short(job.HeadSHA) + " arrived first; its own check reports its review"})
	}
	if len(m.pending) < maxQueuedMarks {
		m.push(queuedTask{job: job, at: time.Now()})
	}
	return nil
}

// push adds a task; the caller holds mu.
func (m *queuedMarks) push(t queuedTask) {
	m.pending = append(m.pending, t)
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Start implements queue.Queue: the workers' handler notes each job taken, and the marking runs.
func (m *queuedMarks) Start(ctx context.Context, h queue.Handler) error {
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.stop = cancel
	go m.run(mctx)
	return m.Queue.Start(ctx, func(ctx context.Context, job queue.Job) error {
		if markable(job) && m.take(job) {
			ctx = queue.WithShownQueued(ctx)
		}
		return h(ctx, job)
	})
}

// take notes that a worker took job, and reports whether its head's gate check may show it
// queued (the worker then concludes that check if the job ends before its review begins).
func (m *queuedMarks) take(job queue.Job) bool {
	id := job.Key + "@" + job.HeadSHA
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.taken) >= maxQueuedMarks*10 {
		clear(m.taken)
	}
	m.taken[id] = true
	old, ok := m.marked[job.Key]
	if ok && old.HeadSHA != job.HeadSHA {
		// The queue reviews this head instead (it held the marked one for older news).
		m.push(queuedTask{job: old, unqueue: true,
			why: "head " + digest.Short(job.HeadSHA) + " is reviewed instead; its own check reports its review"})
	}
	delete(m.marked, job.Key)
	return ok && old.HeadSHA == job.HeadSHA || m.marking[id]
}

// Stop implements queue.Queue: once the workers stopped, every head still shown queued is
// concluded, saying whether its review runs after a restart.
func (m *queuedMarks) Stop(ctx context.Context) error {
	err := m.Queue.Stop(ctx)
	if m.stop == nil {
		return err
	}
	m.stop()
	<-m.done
	why := "lensgate stopped before it started; it runs when lensgate is back, and its conclusion is published then"
	if m.memory {
		why = "lensgate stopped before it started, and its queue does not keep jobs: push again or re-run this check to review it"
	}
	m.mu.Lock()
	marked := m.marked
	m.marked = map[string]queue.Job{}
	m.mu.Unlock()
	for _, job := range marked {
		m.unqueue(ctx, job, why)
	}
	return err
}

func (m *queuedMarks) run(ctx context.Context) {
	defer close(m.done)
	for {
		m.mu.Lock()
		var t queuedTask
		ok := len(m.pending) > 0
		if ok {
			t = m.pending[0]
			m.pending = m.pending[1:]
		}
		m.mu.Unlock()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-m.wake:
				continue
			}
		}
		if t.unqueue {
			m.unqueue(ctx, t.job, t.why)
			continue
		}
		if d := time.Until(t.at.Add(m.after)); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		m.mark(ctx, t.job)
	}
}

// mark shows job queued when it is still its subject's newest and no worker took it.
func (m *queuedMarks) mark(ctx context.Context, job queue.Job) {
	id := job.Key + "@" + job.HeadSHA
	m.mu.Lock()
	waiting := m.latest[job.Key] == job.HeadSHA && !m.taken[id] && len(m.marked) < maxQueuedMarks
	if waiting {
		m.marking[id] = true // a worker that takes the job now treats it as shown queued
	}
	m.mu.Unlock()
	if !waiting {
		return
	}
	err := m.markQueued(ctx, job)
	m.mu.Lock()
	delete(m.marking, id)
	if err == nil && !m.taken[id] {
		m.marked[job.Key] = job
	}
	m.mu.Unlock()
	if err != nil {
		m.log.Warn().Err(err).Str("head_sha", job.HeadSHA).Msg("queued gate check not written")
	}
}

func (m *queuedMarks) markQueued(ctx context.Context, job queue.Job) error {
	client, err := m.clients.NewInstallationClient(job.InstallationID)
	if err != nil {
		return err
	}
	return m.marker.MarkQueued(ctx, client, m.publication(job))
}

func (m *queuedMarks) unqueue(ctx context.Context, job queue.Job, why string) {
	client, err := m.clients.NewInstallationClient(job.InstallationID)
	if err == nil {
		err = m.marker.Unqueue(ctx, client, m.publication(job), why)
	}
	if err != nil {
		m.log.Warn().Err(err).Str("head_sha", job.HeadSHA).Msg("queued gate check not concluded")
	}
}

// publication is what the publisher needs of a job to find or write its head's gate check.
func (m *queuedMarks) publication(job queue.Job) *publication.Publication {
	return &publication.Publication{Job: job, App: m.app(), Subject: &review.Subject{
		Kind: review.KindPullRequest, Owner: job.Owner, Repo: job.Repo, Number: job.Number, HeadSHA: job.HeadSHA}}
}
