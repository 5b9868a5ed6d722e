package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"
	metrics "github.com/rcrowley/go-metrics"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/repoconfig"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

// Options configure a Receiver.
type Options struct {
	// Queue takes the review jobs events become.
	Queue queue.Queue
	// Clients make the installation clients of events that need GitHub calls.
	Clients githubapp.ClientCreator
	// Fetch is how those calls are retried.
	Fetch pull.Fetcher
	// Configs is told when an organisation's configuration repository changes.
	Configs *repoconfig.ConfigLoader
	// Delegates names the other review bots whose answers are news of a delegated lens.
	Delegates *delegate.Runtime
	// AppID is the App's own id, to tell its check runs from others'.
	AppID int64
	// Command is the review command people write in comments.
	Command string
	// ReviewDrafts reviews draft pull requests; Backfill reviews open pull requests of a newly
	// installed repository.
	ReviewDrafts, Backfill bool
	// Secret checks every delivery's signature.
	Secret string
	// MaxUnverifiedBytes bounds the body bytes of requests whose signature is not checked yet
	// (DefaultMaxUnverifiedBytes when zero).
	MaxUnverifiedBytes int64
	// EventQueueSize and EventWorkers size the scheduler of events that need GitHub calls.
	EventQueueSize, EventWorkers int
	// Registry receives the event metrics; GoMetrics the scheduler's and the dispatcher's
	// (go-githubapp records into go-metrics).
	Registry  prometheus.Registerer
	GoMetrics metrics.Registry
	// Now is the clock (time.Now when nil).
	Now    func() time.Time
	Logger zerolog.Logger
}

// Receiver is the webhook endpoint: it checks each delivery's signature and body, drops
// replays, and turns events into review jobs on the queue.
type Receiver struct {
	hooks   *hooks
	handler *hookHandler
}

// New assembles the receiver; it makes no GitHub call.
func New(opts Options) *Receiver {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	em := newEventMetrics(opts.Registry)
	h := &hooks{queue: opts.Queue, clients: opts.Clients, fetch: opts.Fetch, reviewDrafts: opts.ReviewDrafts, backfill: opts.Backfill,
		command: opts.Command, now: now, events: em, appID: opts.AppID, delegates: opts.Delegates, configs: opts.Configs}
	dispatcher := githubapp.NewEventDispatcher(
		[]githubapp.EventHandler{pullRequestHandler{h}, pullRequestReviewHandler{h}, issuesHandler{h}, issueCommentHandler{h}, reviewCommentHandler{h}, checkHandler{h}, installationHandler{h}, pushHandler{h}},
		// hookHandler checks every signature before the dispatcher sees the request, and removes
		// it; an empty secret keeps the dispatcher from hashing the body a second time.
		"",
		githubapp.WithScheduler(hookScheduler{async: asyncScheduler(opts, em), replays: newReplayGuard(maxRememberedBodies), events: em}),
		githubapp.WithErrorCallback(hookErrorCallback(em, githubapp.MetricsErrorCallback(opts.GoMetrics))),
	)
	hh := newHookHandler(dispatcher, em, opts.Logger, opts.Secret, opts.MaxUnverifiedBytes)
	hh.now = now
	return &Receiver{hooks: h, handler: hh}
}

// asyncScheduler runs the events that need GitHub calls after the request is answered.
func asyncScheduler(opts Options, em *eventMetrics) githubapp.Scheduler {
	return githubapp.QueueAsyncScheduler(opts.EventQueueSize, opts.EventWorkers,
		githubapp.WithSchedulingMetrics(opts.GoMetrics),
		githubapp.WithContextDeriver(asyncContext),
		githubapp.WithAsyncErrorCallback(func(ctx context.Context, d githubapp.Dispatch, err error) {
			var pe githubapp.HandlerPanicError
			if errors.As(err, &pe) {
				zerolog.Ctx(ctx).Error().Str("panic", fmt.Sprint(pe.Value())).Msgf("event handler panicked: %+v", pe)
			}
			em.outcome(d.EventType, "error")
			githubapp.MetricsAsyncErrorCallback(opts.GoMetrics)(ctx, d, err)
		}))
}

// ServeHTTP takes one delivery.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) { r.handler.ServeHTTP(w, req) }

// Enqueue queues a job that comes from no webhook (a re-run asked for on the details page)
// as a delivery's job is queued.
func (r *Receiver) Enqueue(ctx context.Context, job queue.Job) error {
	return r.hooks.enqueue(ctx, job)
}

// SubscribedEvents are the webhook events the App must subscribe to (app.yml default_events).
// installation and installation_repositories are handled too but always delivered.
func SubscribedEvents() []string {
	return []string{"check_run", "check_suite", "issue_comment", "issues", "pull_request", "pull_request_review", "pull_request_review_comment"}
}
