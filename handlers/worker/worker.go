// Package worker takes a job from the queue to a publication: it reads the pull request or issue
// (handlers/pull), loads the trusted configuration (handlers/repoconfig), reads the conversation
// and its dismiss commands, runs the review pipeline, re-checks delegated lenses, and hands the
// outcome to the Publisher (handlers/publication).
package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/repoconfig"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review"
)

// Reviewer runs the review pipeline on a pull request subject. *review.Pipeline implements it.
type Reviewer interface {
	Review(ctx context.Context, subj *review.Subject, cfg *config.Repo) (*review.Decision, error)
}

// Triager runs the triage pipeline on an issue subject.
type Triager interface {
	Triage(ctx context.Context, subj *review.Subject, cfg *config.Repo) (*review.TriageDecision, error)
}

// Worker runs review jobs: it reads the trusted configuration and a fresh snapshot from GitHub,
// runs the pipeline and hands the outcome to the publisher.
type Worker struct {
	Clients   githubapp.ClientCreator
	Configs   *repoconfig.ConfigLoader
	Fetch     pull.Fetcher
	Reviewer  Reviewer
	Triager   Triager
	Publisher publication.Publisher
	// App is lensgate's own App, filled in at start-up.
	App publication.AppIdentity
	// JobTimeout bounds one job; zero means no bound beyond the queue's.
	JobTimeout time.Duration
	// Delegates configures lenses answered by another review bot.
	Delegates Delegation
	// Queue takes the follow-up jobs of delegated lenses (scheduled looks, settled answers).
	Queue queue.Queue
	// Command is the review command, named when a maintainer's approval is needed; its first
	// word also starts the dismiss command.
	Command string
	// Now is the clock (time.Now when nil).
	Now     func() time.Time
	Logger  zerolog.Logger
	Metrics *Metrics
}

// Metrics count review outcomes and what the model calls of reviews cost.
type Metrics struct {
	Reviews *prometheus.CounterVec // by kind and result
	// Tokens counts model tokens by kind (prompt, completion) and whether they are lensgate's
	// estimate ("true") or the server's count ("false").
	Tokens *prometheus.CounterVec
	// Calls counts model calls by runtime and result: answered (the answer was used),
	// rejected (made, but the answer or the endpoint failed), not-sent (a token cap or the
	// prompt budget stopped it).
	Calls *prometheus.CounterVec
	// CallSeconds is the latency of the model calls that were sent, by runtime.
	CallSeconds *prometheus.HistogramVec
	// ReviewTokens is the model tokens of each review that called a model.
	ReviewTokens prometheus.Histogram
	// ReviewCalls is the number of model calls each such review made.
	ReviewCalls prometheus.Histogram
}

// NewMetrics creates the worker's collectors and registers them when reg is not nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lensgate_reviews_total",
			Help: "Review and triage runs by kind and result (passed, failed, pending, invalid-config, stale, operational-failure, error).",
		}, []string{"kind", "result"}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lensgate_model_tokens_total",
			Help: "Model tokens spent by reviews, by kind (prompt, completion) and estimated (true when the server sent no count).",
		}, []string{"kind", "estimated"}),
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lensgate_model_calls_total",
			Help: "Model calls of reviews by runtime and result (answered, rejected, not-sent).",
		}, []string{"runtime", "result"}),
		CallSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lensgate_model_call_duration_seconds",
			Help:    "Latency of the model calls that were sent, retries and response-format fallbacks included.",
			Buckets: []float64{0.5, 1, 2, 5, 10, 20, 30, 45, 60, 120, 300},
		}, []string{"runtime"}),
		ReviewTokens: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lensgate_model_review_tokens",
			Help:    "Model tokens of each review that called a model.",
			Buckets: prometheus.ExponentialBuckets(1000, 2, 10),
		}),
		ReviewCalls: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lensgate_model_review_calls",
			Help:    "Model calls of each review that called a model (sent or stopped by a cap).",
			Buckets: []float64{1, 2, 3, 4, 6, 8},
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Reviews, m.Tokens, m.Calls, m.CallSeconds, m.ReviewTokens, m.ReviewCalls)
	}
	return m
}

// observeModel records the model calls of a review.
func (w *Worker) observeModel(t review.Tokens) {
	m := w.Metrics
	if m == nil || m.Tokens == nil || len(t.Calls) == 0 {
		return
	}
	for _, c := range t.Calls {
		est := strconv.FormatBool(c.Usage.Estimated)
		m.Tokens.WithLabelValues("prompt", est).Add(float64(c.Usage.PromptTokens))
		m.Tokens.WithLabelValues("completion", est).Add(float64(c.Usage.CompletionTokens))
		result := "answered"
		switch {
		case c.Attempts == 0:
			result = "not-sent"
		case c.Cause != "":
			result = "rejected"
		}
		m.Calls.WithLabelValues(c.Runtime, result).Inc()
		if c.Attempts > 0 {
			m.CallSeconds.WithLabelValues(c.Runtime).Observe(c.Duration.Seconds())
		}
	}
	m.ReviewTokens.Observe(float64(t.Total))
	m.ReviewCalls.Observe(float64(len(t.Calls)))
}

func (w *Worker) count(kind, result string) {
	if w.Metrics != nil {
		w.Metrics.Reviews.WithLabelValues(kind, result).Inc()
	}
}

// Handle is the queue.Handler.
func (w *Worker) Handle(ctx context.Context, job queue.Job) error {
	if w.JobTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.JobTimeout)
		defer cancel()
	}
	log := w.Logger.With().Str(githubapp.LogKeyDeliveryID, job.DeliveryID).
		Int64(githubapp.LogKeyInstallationID, job.InstallationID).
		Str(githubapp.LogKeyRepositoryOwner, job.Owner).Str(githubapp.LogKeyRepositoryName, job.Repo).
		Int(githubapp.LogKeyPRNum, job.Number).Str("job_reason", string(job.Reason)).Logger()
	ctx = log.WithContext(ctx)
	client, err := w.Clients.NewInstallationClient(job.InstallationID)
	if err != nil {
		return fmt.Errorf("installation client for %d: %w", job.InstallationID, err)
	}
	switch job.Kind {
	case queue.KindPullRequest:
		return w.reviewPull(ctx, client, job)
	case queue.KindIssue:
		return w.triageIssue(ctx, client, job)
	case queue.KindDelegate:
		return w.recheckDelegate(ctx, client, job)
	}
	return queue.Permanent(fmt.Errorf("unknown job kind %q", job.Kind))
}

func (w *Worker) reviewPull(ctx context.Context, client *github.Client, job queue.Job) error {
	log := zerolog.Ctx(ctx)
	pr, err := w.currentPull(ctx, client, job)
	if err != nil {
		return w.readFailed(ctx, client, job, nil, err)
	}
	switch {
	case pr.GetState() == "closed":
		log.Info().Msg("pull request closed before its review started")
		w.count("pull_request", "stale")
		w.unqueue(ctx, client, job, pr, "the pull request was closed first")
		return nil
	case job.HeadSHA != "" && pr.GetHead().GetSHA() != job.HeadSHA:
		// Another push exists, so this job's head is never reviewed.
		log.Info().Str("job_head", job.HeadSHA).Str("current_head", pr.GetHead().GetSHA()).Msg("head moved on; stale job skipped")
		w.count("pull_request", "stale")
		w.unqueue(ctx, client, job, pr, "the pull request's head moved on to "+digest.Short(pr.GetHead().GetSHA()))
		w.queueShownHead(ctx, job, pr.GetHead().GetSHA())
		return nil
	}

	trusted, err := w.loadConfig(ctx, client, job.InstallationID, job.Owner, job.Repo, pr.GetBase().GetRef())
	if err != nil {
		return w.readFailed(ctx, client, job, bindPartial(pr), err)
	}
	if nothingToReevaluate(ctx, job, trusted.Repo, nil) {
		return nil
	}
	// The gate check shows the review in progress as soon as the job is taken and its lenses
	// are known, before the pull request's files, diff and conversation are read.
	pub := &publication.Publication{Job: job, App: w.App, Subject: bindPartial(pr), Config: trusted.Source, Repo: trusted.Repo, ConfigProblems: trusted.Problems}
	if err := w.Publisher.Begin(ctx, client, pub); err != nil {
		log.Warn().Err(err).Msg("publisher could not mark the review as started")
	}
	defer w.concludeUnfinished(ctx, client, pub)
	countOpen := trusted.Repo != nil && trusted.Repo.MaxOpenPRsPerAuthor > 0
	snap, err := w.Fetch.PullSnapshot(ctx, client, pr, countOpen)
	if err != nil {
		return w.readFailed(ctx, client, job, pub.Subject, err)
	}
	subj := pull.BindPull(snap)
	subj.InstallationID = job.InstallationID
	subj.ContextSources = w.Configs.ContextSources(w.Fetch, client, subj.Owner, subj.Repo, subj.BaseSHA, subj.HeadSHA)
	// A review queued because a delegated lens settled reuses what the paid lenses concluded
	// at this very head, instead of billing them again.
	subj.Settled = job.FollowUp && job.Kind == queue.KindPullRequest && (job.Reason.IsDelegate() || job.Reason.ReevaluatesApproval()) && job.HeadSHA == subj.HeadSHA
	if nothingToReevaluate(ctx, job, trusted.Repo, subj) {
		return nil
	}
	if snap.FilesTruncated {
		log.Warn().Int("files", len(subj.Files)).Msg("file list cut at GitHub's 3000-file limit; files beyond it are not in the snapshot")
	}
	pub.Subject = subj
	if pr.Comments != nil && pr.ReviewComments != nil {
		pub.Counts = &pull.PullCounts{IssueComments: pr.GetComments(), ReviewComments: pr.GetReviewComments()}
	}
	w.readConversation(ctx, client, subj, pub)
	pub.Proposed = w.proposedConfig(ctx, client, subj, trusted)
	if pub.Proposed != nil {
		ev := log.Info().Str("path", pub.Proposed.Path).Int("problems", len(pub.Proposed.Problems))
		if pub.Proposed.Err != nil {
			ev = ev.AnErr("read_error", pub.Proposed.Err)
		}
		ev.Msg("pull request changes the configuration: validated, not applied")
	}

	w.concludeOlderHeads(ctx, client, pub)
	if len(trusted.Problems) > 0 {
		pub.Decision = invalidConfigDecision(subj, trusted)
		log.Warn().Str("config_source", trusted.Source.Source).Str("problems", trusted.Problems.Error()).Msg("invalid configuration: failing gate")
		w.count("pull_request", "invalid-config")
		return w.publish(ctx, client, pub)
	}
	subj.Delegation = w.prepareDelegation(ctx, client, job, pr, subj, trusted.Repo)
	subj.OwnerApproval = w.ownerApproval(ctx, client, pr, subj, trusted.Repo)
	rctx, stopProgress := w.trackProgress(ctx, client, pub)
	defer stopProgress() // before the deferred conclusion of a run that panicked
	d, err := w.Reviewer.Review(rctx, subj, trusted.Repo)
	stopProgress()
	if err != nil {
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// Out of time, not superseded: no newer run will conclude this head's check.
				w.count("pull_request", "error")
				w.concludeAbandoned(ctx, client, pub, fmt.Errorf("review did not finish within the job timeout: %w", err))
			}
			return err
		}
		pub.Failure = err
		pub.Decision = pendingDecision(subj, "review pipeline failed: "+err.Error())
		w.count("pull_request", "error")
		if perr := w.publish(ctx, client, pub); perr != nil {
			return errors.Join(err, perr)
		}
		err = fmt.Errorf("review %s: %w", job.Key, err)
		if errors.Is(err, review.ErrUnusableInput) {
			// The same subject and configuration fail the same way: retrying cannot help.
			return queue.Permanent(err)
		}
		return err
	}
	if d.Subject.HeadSHA == "" {
		d.Subject = subj.Context()
	}
	pub.Decision = d
	pub.Answers = append(pub.Answers, answersOf(d)...)
	w.count("pull_request", string(d.Gate.State))
	w.observeModel(d.Tokens)
	if err := w.publish(ctx, client, pub); err != nil {
		return err
	}
	w.afterDelegation(ctx, job, subj, trusted.Repo, subj.Delegation, 0)
	return nil
}

func (w *Worker) triageIssue(ctx context.Context, client *github.Client, job queue.Job) error {
	x := queue.ParseExtra(job.Extra)
	is, err := w.Fetch.GetIssue(ctx, client, job.Owner, job.Repo, job.Number)
	if err != nil {
		w.count("issue", "operational-failure")
		if pull.InstallationGone(err) {
			return queue.Permanent(err)
		}
		return err
	}
	if is.GetState() == "closed" || is.IsPullRequest() {
		w.count("issue", "stale")
		return nil
	}
	trusted, err := w.loadConfig(ctx, client, job.InstallationID, job.Owner, job.Repo, x.DefaultBranch)
	if err != nil {
		w.count("issue", "operational-failure")
		return err
	}
	subj := pull.BindIssue(job.Owner, job.Repo, x.RepositoryNodeID, is)
	pub := &publication.Publication{Job: job, App: w.App, Subject: subj, Config: trusted.Source, Repo: trusted.Repo, ConfigProblems: trusted.Problems}
	if len(trusted.Problems) > 0 || w.Triager == nil {
		if len(trusted.Problems) > 0 {
			w.count("issue", "invalid-config")
		}
		pub.Triage = &review.TriageDecision{Cause: "triage not run: invalid or missing configuration"}
		return w.publish(ctx, client, pub)
	}
	t, err := w.Triager.Triage(ctx, subj, trusted.Repo)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		t = &review.TriageDecision{Cause: err.Error()}
		pub.Failure = err
	}
	pub.Triage = t
	w.count("issue", "triaged")
	return w.publish(ctx, client, pub)
}

// readConversation reads what the last review left (its state, its inline comments) and the
// dismiss commands since, and the changes since the last reviewed head when that head is an
// ancestor of this one. A failed read only costs the increment: the review is then a full one.
func (w *Worker) readConversation(ctx context.Context, client *github.Client, subj *review.Subject, pub *publication.Publication) {
	log := zerolog.Ctx(ctx)
	conv, err := w.Fetch.ReadConversation(ctx, client, subj.Owner, subj.Repo, subj.Number, w.App.BotLogin(), pull.DismissCommand(w.Command), pub.Counts)
	if err != nil {
		log.Warn().Err(err).Msg("conversation unreadable; reviewing the whole pull request")
		return
	}
	pub.Conversation = conv
	subj.Prior = conv.Prior
	if p := conv.Prior; p != nil && p.Head() != "" && p.Head() != subj.HeadSHA && p.BaseSHA == subj.BaseSHA {
		inc, err := w.Fetch.Compare(ctx, client, subj.Owner, subj.Repo, p.Head(), subj.HeadSHA)
		switch {
		case err != nil:
			log.Warn().Err(err).Msg("compare with the last reviewed head failed; reviewing the whole pull request")
		case inc == nil:
			log.Info().Str("last_reviewed", digest.Short(p.Head())).Msg("last reviewed head is not an ancestor (force-push); reviewing the whole pull request")
		default:
			subj.Since = inc
		}
	}
	subj.Dismissals, pub.Answers = w.dismissals(ctx, client, subj, pub.Repo, conv)
	var limited []publication.Answer
	subj.Questions, limited = w.questions(ctx, client, subj, pub.Repo, conv)
	pub.Answers = append(pub.Answers, limited...)
}

// queueShownHead queues a review of the head GitHub shows when the stale job is still its
// subject's newest: then no job of that head is queued, because its webhook was received before
// this job's (GitHub does not promise to deliver in order), was lost, or is still to come (it then
// coalesces with this one). A job that a newer one superseded leaves the head to that job.
func (w *Worker) queueShownHead(ctx context.Context, job queue.Job, head string) {
	if w.Queue == nil || head == "" || queue.CheckCurrent(ctx) != nil {
		return
	}
	next := job
	next.DeliveryID, next.HeadSHA, next.Reason, next.Extra = "", head, queue.ReasonHeadShown, nil
	next.EnqueuedAt, next.Resumed, next.NotBefore, next.FollowUp = w.now(), 0, time.Time{}, false
	if err := w.Queue.Enqueue(context.WithoutCancel(ctx), next); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("head_sha", head).Msg("review of the head GitHub shows not queued; its own event reviews it")
	}
}

// How long the worker waits for GitHub's API to catch up with a webhook: replicas can show the
// pull request as it was before the push or edit the event announced for a moment after the
// event. The re-reads are conditional, so those answered 304 cost no rate limit.
const (
	headLagWait     = 20 * time.Second
	headLagMaxPause = 2 * time.Second
	// firstReadSettle is how long after its webhook a job first reads the pull request. A read
	// sooner often shows the state before the event, and it is rarely free: lensgate's own
	// comments and the push change the pull request, so that read is answered 200 and counts
	// against the rate limit, only to be read again. A job that waited in the queue this long
	// reads at once; the reads after the first still wait out any longer lag.
	firstReadSettle = 500 * time.Millisecond
)

// currentPull reads the pull request, reading again while the read is older than the job's
// event: its head differs from the job's, or its updated_at (and, within the same second, its
// body) is from before the event. The API then lags the webhook, and a later read shows the
// event's state. A read changed after the event with another head shows a newer push, whose own
// job reviews it: that read is returned at once. Without timestamps to compare, a different
// head is waited out like a lag, and returned when it stays. A read that still shows an older
// state than the event after headLagWait is an outage: the job is retried rather than acting
// on it.
func (w *Worker) currentPull(ctx context.Context, client *github.Client, job queue.Job) (*github.PullRequest, error) {
	seen := queue.ParseExtra(job.Extra)
	if err := settle(ctx, job.EnqueuedAt, lagWait(ctx)/2); err != nil {
		return nil, fmt.Errorf("get pull request: %w", err)
	}
	pause := max(w.Fetch.InitialBackoff, 50*time.Millisecond)
	// The wait is measured on the wall clock: it waits for GitHub, not for the job's schedule.
	deadline := time.Now().Add(lagWait(ctx))
	for reads := 1; ; reads++ {
		pr, err := w.Fetch.GetPull(ctx, client, job.Owner, job.Repo, job.Number)
		if err != nil || pr.GetState() == "closed" {
			return pr, err
		}
		age := ageOf(pr, job.HeadSHA, seen)
		if age == readCurrent || age == readNewer || queue.CheckCurrent(ctx) != nil {
			// A superseded job stops waiting: the newer job reads for itself.
			return pr, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			if age == readOlder {
				return nil, &pull.OperationalError{Op: "read the pull request as of its event", Attempts: reads,
					Err: fmt.Errorf("GitHub still shows head %s updated %s, older than the event's head %s updated %s",
						digest.Short(pr.GetHead().GetSHA()), pr.GetUpdatedAt().Format(time.RFC3339), digest.Short(job.HeadSHA), seen.UpdatedAt.Format(time.RFC3339))}
			}
			return pr, nil
		}
		select {
		case <-time.After(min(pause, left)):
		case <-ctx.Done():
			return nil, fmt.Errorf("get pull request: %w", context.Cause(ctx))
		}
		pause = min(2*pause, headLagMaxPause)
	}
}

// settle waits until firstReadSettle after enqueued, on the wall clock like the lag it waits
// for; never longer than firstReadSettle (whatever clock stamped enqueued) or limit (a share of
// the job's time, so the review still fits), and not at all for a job without the stamp.
func settle(ctx context.Context, enqueued time.Time, limit time.Duration) error {
	if enqueued.IsZero() {
		return nil
	}
	wait := min(firstReadSettle-time.Since(enqueued), firstReadSettle, limit)
	if wait <= 0 {
		return nil
	}
	select {
	case <-time.After(wait):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// lagWait is how long currentPull may wait for GitHub to catch up: headLagWait, or half of what
// is left of the job's time when that is less, so the review still fits.
func lagWait(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return min(headLagWait, time.Until(dl)/2)
	}
	return headLagWait
}

// readAge is how a pull request read compares with the event a job came from.
type readAge int

const (
	// readCurrent shows the event's head (and, when known, its state or a later one).
	readCurrent readAge = iota
	// readOlder is from before the event: GitHub's replicas lag.
	readOlder
	// readNewer was changed after the event and shows another head: a newer push.
	readNewer
	// readUnknown shows another head, and which is newer cannot be told.
	readUnknown
)

func ageOf(pr *github.PullRequest, head string, seen queue.Extra) readAge {
	sameHead := head == "" || pr.GetHead().GetSHA() == head
	read := pr.GetUpdatedAt().Time
	switch {
	case seen.UpdatedAt.IsZero() || read.IsZero():
		if sameHead {
			return readCurrent
		}
		return readUnknown
	case read.Before(seen.UpdatedAt):
		return readOlder
	case read.After(seen.UpdatedAt):
		if sameHead {
			return readCurrent
		}
		return readNewer
	}
	// The same second: the event's own state, one just before it, or one just after it.
	if sameHead && (seen.BodyDigest == "" || digest.SHA256Hex([]byte(pr.GetBody())) == seen.BodyDigest) {
		return readCurrent
	}
	return readUnknown
}

// loadConfig reads the trusted configuration with retries on GitHub failures.
func (w *Worker) loadConfig(ctx context.Context, client *github.Client, installation int64, owner, repo, ref string) (repoconfig.TrustedConfig, error) {
	var tc repoconfig.TrustedConfig
	err := w.Fetch.Do(ctx, "load the configuration of "+owner+"/"+repo+"@"+ref, func(ctx context.Context) error {
		var err error
		tc, err = w.Configs.Load(ctx, client, installation, owner, repo, ref)
		return err
	})
	return tc, err
}

// proposedConfig validates the configuration file as the pull request's head has it, when the
// pull request changes it: the first changed one of .asdd.yml, .yaga.toml and a pyproject.toml
// that holds (or held) the YAGA policy.
func (w *Worker) proposedConfig(ctx context.Context, client *github.Client, subj *review.Subject, trusted repoconfig.TrustedConfig) *repoconfig.ProposedConfig {
	for _, path := range []string{repoconfig.ConfigPath, repoconfig.YAGAPath, repoconfig.PyprojectPath} {
		if p := w.proposedFile(ctx, client, subj, trusted, path); p != nil {
			return p
		}
	}
	return nil
}

// proposedFile validates one configuration file at the head, or returns nil when the pull
// request does not change it (or it is a pyproject.toml without a YAGA policy on either side).
func (w *Worker) proposedFile(ctx context.Context, client *github.Client, subj *review.Subject, trusted repoconfig.TrustedConfig, path string) *repoconfig.ProposedConfig {
	for _, f := range subj.Files {
		if f.Path != path && f.PreviousPath != path {
			continue
		}
		// Only the base's own pyproject policy makes losing it a configuration change.
		wasPolicy := path != repoconfig.PyprojectPath || trusted.RepoFile == repoconfig.PyprojectPath
		p := &repoconfig.ProposedConfig{Path: path, HeadSHA: subj.HeadSHA}
		if f.Path != path || f.Status == review.FileRemoved {
			if !wasPolicy {
				return nil
			}
			p.Problems = config.Problems{{File: path, Message: "the pull request removes " + path + "; after merge the next configuration in order (.asdd.yml, .yaga.toml, pyproject.toml, organisation, server default) applies"}}
			return p
		}
		// GitHub serves a pull request's head commit through the base repository, forks included.
		data, found, err := w.Fetch.FileAt(ctx, client, subj.Owner, subj.Repo, path, subj.HeadSHA)
		switch {
		case err != nil:
			p.Err = err
		case !found:
			p.Err = errors.New(path + " not found at the head commit")
		case path == repoconfig.PyprojectPath && !repoconfig.IsYAGAPyproject(data):
			if !wasPolicy {
				return nil // an ordinary pyproject.toml edit
			}
			p.Problems = config.Problems{{File: path, Message: "the pull request removes the [tool.yaga] table from " + path + "; after merge the organisation or server default applies"}}
		default:
			p.Problems = repoconfig.ValidateProposed(path, data)
		}
		return p
	}
	return nil
}

// publish hands the publication to the publisher unless the job was superseded meanwhile.
func (w *Worker) publish(ctx context.Context, client *github.Client, pub *publication.Publication) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("not published: %w", context.Cause(ctx))
	}
	if err := w.Publisher.Publish(ctx, client, pub); err != nil {
		return fmt.Errorf("publish %s: %w", pub.Job.Key, err)
	}
	return nil
}

// concludeUnfinished is deferred once the gate check reads in_progress: a run that panics or
// runs out of time must still conclude it (pending), and one that is superseded or interrupted
// must conclude it or say it resumes, or it would stay in progress for good.
func (w *Worker) concludeUnfinished(ctx context.Context, client *github.Client, pub *publication.Publication) {
	if v := recover(); v != nil {
		if pub.Decision == nil {
			w.concludeAbandoned(ctx, client, pub, fmt.Errorf("review panicked: %v", v))
		}
		panic(v)
	}
	if ctx.Err() != nil {
		w.interrupted(ctx, client, pub)
	}
}

// concludeAbandoned publishes a pending decision for a run that cannot finish (its context is
// spent or it panicked), on a context of its own so the write still happens.
func (w *Worker) concludeAbandoned(ctx context.Context, client *github.Client, pub *publication.Publication, cause error) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abandonedPublishTimeout)
	defer cancel()
	pub.Failure = cause
	pub.Decision = pendingDecision(pub.Subject, cause.Error())
	zerolog.Ctx(ctx).Error().Err(cause).Msg("review abandoned; reported as pending")
	if err := w.Publisher.Publish(pctx, client, pub); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("could not report the abandoned review")
	}
}

// interrupted hands a run whose context ended before it published to the publisher's Abandon,
// saying whether a newer job superseded it (and by which head) or the queue resumes it.
func (w *Worker) interrupted(ctx context.Context, client *github.Client, pub *publication.Publication) {
	why := publication.Interruption{Cause: context.Cause(ctx)}
	why.SupersededBy, why.Superseded = queue.Superseded(why.Cause)
	if !why.Superseded {
		// A durable queue learns of a newer job from its database, not through the cause.
		why.SupersededBy, why.Superseded = queue.Superseded(queue.CheckCurrent(context.WithoutCancel(ctx)))
	}
	why.Resuming = !why.Superseded && queue.Resumable(ctx)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abandonedPublishTimeout)
	defer cancel()
	if err := w.Publisher.Abandon(pctx, client, pub, why); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("could not conclude the interrupted review's check run")
	}
}

// concludeOlderHeads concludes, as superseded by this head, the gate checks of older heads whose
// reviews the queue saw begin but never complete: their worker died, or they stopped resuming
// when this head arrived.
func (w *Worker) concludeOlderHeads(ctx context.Context, client *github.Client, pub *publication.Publication) {
	for _, h := range queue.OpenHeads(ctx) {
		if h == pub.Subject.HeadSHA {
			continue
		}
		old := *pub
		subj := *pub.Subject
		subj.HeadSHA = h
		old.Subject = &subj
		why := publication.Interruption{Superseded: true, SupersededBy: pub.Subject.HeadSHA}
		if err := w.Publisher.Abandon(ctx, client, &old, why); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Str("older_head", h).Msg("could not conclude an older head's check run")
		}
	}
}

// abandonedPublishTimeout bounds the report of an abandoned run.
const abandonedPublishTimeout = 60 * time.Second

// operational reports a GitHub outage as a pending review (never a pass, never silence) and
// returns the error so the queue records the failure.
func (w *Worker) operational(ctx context.Context, client *github.Client, job queue.Job, subj *review.Subject, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if pull.InstallationGone(err) {
		// Nothing can be published either: the App has no access to the repository any more.
		w.count("pull_request", "error")
		zerolog.Ctx(ctx).Warn().Err(err).Msg("the installation no longer exists; job dropped")
		return queue.Permanent(err)
	}
	var oe *pull.OperationalError
	outage := errors.As(err, &oe)
	if outage {
		w.count("pull_request", "operational-failure")
	} else {
		w.count("pull_request", "error")
	}
	zerolog.Ctx(ctx).Error().Err(err).Msg("review not possible: GitHub read failed")
	if subj == nil {
		subj = &review.Subject{Kind: review.KindPullRequest, Owner: job.Owner, Repo: job.Repo, Number: job.Number, HeadSHA: job.HeadSHA}
	}
	pub := &publication.Publication{Job: job, App: w.App, Subject: subj, Failure: err,
		Decision: pendingDecision(subj, "review not possible: "+err.Error())}
	if perr := w.Publisher.Publish(ctx, client, pub); perr != nil {
		zerolog.Ctx(ctx).Warn().Err(perr).Msg("could not report the failure either")
	}
	if !outage {
		// A 404 or 403 stays one on retry; only outages are worth another attempt.
		return queue.Permanent(err)
	}
	return err
}

// bindPartial is the subject as far as the pull request alone tells (no diff yet).
func bindPartial(pr *github.PullRequest) *review.Subject {
	return pull.BindPull(&pull.PullSnapshot{PR: pr, OpenPRsByAuthor: -1})
}

// invalidConfigDecision is a failing gate that carries every configuration problem with its
// file, line and message, instead of a review with defaults.
func invalidConfigDecision(subj *review.Subject, tc repoconfig.TrustedConfig) *review.Decision {
	lines := make([]string, 0, len(tc.Problems))
	d := &review.Decision{
		Recommendation: review.RecommendRequestChanges,
		Subject:        subj.Context(),
		Coverage:       review.Coverage{Status: review.CoverageUnknown},
	}
	for _, p := range tc.Problems {
		lines = append(lines, p.String())
		d.Findings = append(d.Findings, review.Finding{
			ID:       "config:" + p.Key + ":" + p.Message,
			Lens:     "configuration",
			Rule:     "invalid-config",
			Severity: review.SeverityHigh,
			Path:     p.File,
			Line:     p.Line,
			Title:    p.Message,
			Body:     p.Hint,
		})
	}
	where := tc.Source.Source
	if tc.Source.Path != "" {
		where += ":" + tc.Source.Path
	}
	d.Gate = review.Gate{
		State:            review.OutcomeFailed,
		Reason:           "invalid configuration in " + where + ":\n" + strings.Join(lines, "\n"),
		BlockingFailures: []string{"configuration"},
	}
	d.Comment = "lensgate could not read its configuration, so no lens ran.\n\n" + d.Gate.Reason
	return d
}

// pendingDecision is the fail-closed outcome of a run that could not decide.
func pendingDecision(subj *review.Subject, reason string) *review.Decision {
	return &review.Decision{
		Gate: review.Gate{
			State:           review.OutcomePending,
			Reason:          reason,
			BlockingPending: []string{"review"},
		},
		Recommendation: review.RecommendComment,
		Subject:        subj.Context(),
		Coverage:       review.Coverage{Status: review.CoverageUnknown},
		Comment:        "lensgate could not complete this review: " + reason,
	}
}
