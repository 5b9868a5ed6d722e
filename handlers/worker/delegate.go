package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

// Delegation configures the lenses answered by another review bot.
type Delegation struct {
	// Runtime holds the delegate presets; nil turns delegation off (such lenses stay pending).
	Runtime *delegate.Runtime
	// Recheck are the waits between looks for an answer that has no webhook (reactions); the
	// last wait repeats, and no look is later than the lens's deadline. Default 30s, 1m, 2m, 4m.
	Recheck []time.Duration
	// MaxRechecks bounds the looks per request (default 12).
	MaxRechecks int
}

// Bounds of what one look at a pull request reads.
const (
	maxDelegateCommentPages  = 10 // 1000 comments
	maxDelegateReviewPages   = 3
	maxDelegateReactionPages = 3
	maxDelegateReviewReads   = 5 // reviews of delegate bots whose inline comments are read
)

// delegatedLenses lists the presets the policy delegates, in plan order, with their lenses.
func (w *Worker) delegatedLenses(cfg *config.Repo) ([]delegate.Preset, map[string][]string) {
	rt := w.Delegates.Runtime
	if rt == nil || cfg == nil {
		return nil, nil
	}
	var out []delegate.Preset
	lenses := map[string][]string{}
	for _, l := range cfg.Policy.Lenses {
		p, ok := rt.Preset(l.Preset)
		if !ok {
			continue
		}
		if _, seen := lenses[p.Name]; !seen {
			out = append(out, p)
		}
		lenses[p.Name] = append(lenses[p.Name], l.Name)
	}
	return out, lenses
}

// ghActor, ghComment and ghReaction decode the fields go-github does not model
// (performed_via_github_app, reaction times).
type ghActor struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
}

type ghComment struct {
	ID        int64     `json:"id"`
	User      *ghActor  `json:"user"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
	App       *struct {
		ID   int64  `json:"id"`
		Slug string `json:"slug"`
	} `json:"performed_via_github_app"`
}

type ghReaction struct {
	ID        int64     `json:"id"`
	User      *ghActor  `json:"user"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"created_at"`
}

func actor(a *ghActor) runtime.Actor {
	if a == nil {
		return runtime.Actor{}
	}
	return runtime.Actor{Login: a.Login, ID: a.ID}
}

// errTooMuchActivity means a list was longer than one look reads: the request cannot be found
// for sure, so none is posted.
var errTooMuchActivity = errors.New("the pull request has more activity than one look reads")

// listPages reads up to max pages of a list endpoint into out.
func listPages[T any](ctx context.Context, f pull.Fetcher, c *github.Client, what, path string, max int) ([]T, error) {
	var out []T
	for page := 1; ; page++ {
		var items []T
		var next int
		err := f.Do(ctx, what, func(ctx context.Context) error {
			req, err := c.NewRequest("GET", fmt.Sprintf("%s?per_page=%d&page=%d", path, pull.PerPage, page), nil)
			if err != nil {
				return err
			}
			items = nil
			resp, err := c.Do(ctx, req, &items)
			if err != nil {
				return err
			}
			next = resp.NextPage
			return nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == 0 {
			return out, nil
		}
		if page >= max {
			return out, errTooMuchActivity
		}
	}
}

// observe reads what the pull request shows of lensgate's requests and the bots' answers.
func (w *Worker) observe(ctx context.Context, client *github.Client, owner, repo string, number int, presets []delegate.Preset) (*runtime.Delegation, error) {
	obs := &runtime.Delegation{Now: w.now(), Blocked: map[string]string{}}
	base := fmt.Sprintf("repos/%s/%s/issues/%d", owner, repo, number)
	comments, err := listPages[ghComment](ctx, w.Fetch, client, "list comments", base+"/comments", maxDelegateCommentPages)
	if err != nil {
		return nil, err
	}
	full := owner + "/" + repo
	for _, c := range comments {
		bc := runtime.BotComment{ID: c.ID, User: actor(c.User), Body: c.Body, CreatedAt: c.CreatedAt}
		if c.App != nil {
			bc.AppID, bc.AppSlug = c.App.ID, c.App.Slug
		}
		if r, ok := w.ownRequest(bc, full, number); ok {
			obs.Requests = append(obs.Requests, r)
			continue
		}
		obs.Comments = append(obs.Comments, bc)
	}
	reactions, err := listPages[ghReaction](ctx, w.Fetch, client, "list reactions", base+"/reactions", maxDelegateReactionPages)
	if err != nil && !errors.Is(err, errTooMuchActivity) {
		return nil, err
	}
	for _, r := range reactions {
		obs.Reactions = append(obs.Reactions, runtime.BotReaction{ID: r.ID, User: actor(r.User), Content: r.Content, CreatedAt: r.CreatedAt})
	}
	var reviews []*github.PullRequestReview
	for page := 1; page <= maxDelegateReviewPages; page++ {
		var batch []*github.PullRequestReview
		var next int
		err := w.Fetch.Do(ctx, "list reviews", func(ctx context.Context) error {
			var resp *github.Response
			var err error
			batch, resp, err = client.PullRequests.ListReviews(ctx, owner, repo, number, &github.ListOptions{PerPage: pull.PerPage, Page: page})
			if err == nil {
				next = resp.NextPage
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		reviews = append(reviews, batch...)
		if next == 0 {
			break
		}
	}
	reads := 0
	for i := len(reviews) - 1; i >= 0; i-- { // newest first: the newest answers matter
		r := reviews[i]
		br := runtime.BotReview{ID: r.GetID(), User: runtime.Actor{Login: r.GetUser().GetLogin(), ID: r.GetUser().GetID()},
			State: r.GetState(), CommitID: r.GetCommitID(), Body: r.GetBody(), SubmittedAt: r.GetSubmittedAt().Time}
		if isDelegateBot(presets, br.User) && br.State == "COMMENTED" && reads < maxDelegateReviewReads {
			reads++
			var cs []*github.PullRequestComment
			err := w.Fetch.Do(ctx, "list review comments", func(ctx context.Context) error {
				var err error
				cs, _, err = client.PullRequests.ListReviewComments(ctx, owner, repo, number, br.ID, &github.ListOptions{PerPage: pull.PerPage})
				return err
			})
			if err != nil {
				return nil, err
			}
			for _, c := range cs {
				line := c.GetLine()
				if line == 0 {
					line = c.GetOriginalLine()
				}
				br.Comments = append(br.Comments, runtime.BotReviewComment{ID: c.GetID(), Path: c.GetPath(), Line: line, Body: c.GetBody()})
			}
		}
		obs.Reviews = append(obs.Reviews, br)
	}
	return obs, nil
}

func isDelegateBot(presets []delegate.Preset, a runtime.Actor) bool {
	return slices.ContainsFunc(presets, func(p delegate.Preset) bool { return p.Bot.Login == a.Login && p.Bot.UserID == a.ID })
}

// ownRequest reads a request record from one of lensgate's own comments.
func (w *Worker) ownRequest(c runtime.BotComment, repo string, number int) (runtime.DelegateRequest, bool) {
	if login := w.App.BotLogin(); login == "" || c.User.Login != login || (c.AppID != 0 && c.AppID != w.App.ID) {
		return runtime.DelegateRequest{}, false
	}
	b, err := delegate.ParseRequest(c.Body)
	if err != nil || b.Repo != repo || b.Number != number {
		return runtime.DelegateRequest{}, false
	}
	return runtime.DelegateRequest{Preset: b.Preset, Repo: b.Repo, Number: b.Number, Head: b.Head, Base: b.Base,
		ID: b.ID(), CommentID: c.ID, At: c.CreatedAt}, true
}

// verdicts judges every delegated preset of the subject.
func verdicts(presets []delegate.Preset, subj *review.Subject, cfg *config.Repo, obs *runtime.Delegation) map[string]delegate.Verdict {
	out := map[string]delegate.Verdict{}
	for _, p := range presets {
		out[p.Name] = delegate.Evaluate(delegate.Input{Preset: p, Repo: subj.Owner + "/" + subj.Repo, Number: subj.Number,
			Head: subj.HeadSHA, Base: subj.BaseSHA, Timeout: cfg.Delegate.Timeout, Observed: obs})
	}
	return out
}

// prepareDelegation observes the pull request and posts the requests still missing for this
// head. It returns nil when the policy delegates nothing.
func (w *Worker) prepareDelegation(ctx context.Context, client *github.Client, job queue.Job, pr *github.PullRequest, subj *review.Subject, cfg *config.Repo) *runtime.Delegation {
	presets, lenses := w.delegatedLenses(cfg)
	if len(presets) == 0 {
		return nil
	}
	log := zerolog.Ctx(ctx)
	obs, err := w.observe(ctx, client, subj.Owner, subj.Repo, subj.Number, presets)
	if err != nil {
		log.Warn().Err(err).Msg("could not read the pull request's review activity; delegated lenses stay pending")
		obs = &runtime.Delegation{Now: w.now(), Blocked: map[string]string{}}
		for _, p := range presets {
			obs.Blocked[p.Name] = "the pull request's activity could not be read: " + err.Error()
		}
		return obs
	}
	current := verdicts(presets, subj, cfg, obs)
	// Asking a bot spends its quota: like a model review, it waits for intake to pass.
	intake := review.IntakeOf(subj, cfg)
	var needApproval string
	for _, p := range presets {
		if current[p.Name].Request != nil || obs.Blocked[p.Name] != "" {
			continue
		}
		if !intake.Passed {
			obs.Blocked[p.Name] = "intake did not pass (" + intake.Problems() + ")"
			continue
		}
		if needApproval == "" {
			needApproval = w.approvalNeeded(ctx, client, job, pr, cfg)
		}
		if needApproval != "-" {
			obs.Blocked[p.Name] = needApproval
			continue
		}
		req, ok := w.Publisher.(publication.DelegateRequester)
		if !ok {
			obs.Blocked[p.Name] = "this server does not write to GitHub"
			continue
		}
		b := delegate.Binding{Preset: p.Name, Repo: subj.Owner + "/" + subj.Repo, Number: subj.Number, Head: subj.HeadSHA, Base: subj.BaseSHA}
		id, at, err := req.RequestDelegate(ctx, client, &publication.DelegateRequest{Job: job, App: w.App, Subject: subj, Repo: cfg, Preset: p, Binding: b, Lenses: lenses[p.Name]})
		if err != nil {
			log.Warn().Err(err).Str("preset", p.Name).Msg("delegate request not posted")
			obs.Blocked[p.Name] = "the request could not be posted: " + err.Error()
			continue
		}
		log.Info().Str("preset", p.Name).Str("bot", p.Bot.Login).Str("request_id", b.ID()).Msg("review requested from another bot")
		obs.Requests = append(obs.Requests, runtime.DelegateRequest{Preset: b.Preset, Repo: b.Repo, Number: b.Number,
			Head: b.Head, Base: b.Base, ID: b.ID(), CommentID: id, At: at})
	}
	obs.Now = w.now()
	return obs
}

// approvalNeeded returns "-" when the bot may be asked for this pull request now, or the cause
// shown while a maintainer's approval is missing. A pull request from a fork, or by an author
// without write access, needs the approve-delegate command for the head: the job then carries
// who approved (the issue_comment handler checked their write access). Neither a review
// command nor a dismissal approves, and neither a bot nor the pull request's author can.
func (w *Worker) approvalNeeded(ctx context.Context, client *github.Client, job queue.Job, pr *github.PullRequest, cfg *config.Repo) string {
	if cfg.Delegate.Approval == config.DelegateApprovalNever || validApprover(queue.ParseExtra(job.Extra).ApprovedBy, pr) {
		return "-"
	}
	why := "a maintainer's approval is needed first: someone with write access other than the author comments " +
		pull.ApproveDelegateCommand(w.Command) + " on this head"
	headRepo, baseRepo := pr.GetHead().GetRepo(), pr.GetBase().GetRepo()
	if headRepo == nil || baseRepo == nil || headRepo.GetID() != baseRepo.GetID() || headRepo.GetFullName() != baseRepo.GetFullName() {
		return why + " (the pull request comes from a fork)"
	}
	login := pr.GetUser().GetLogin()
	perm, err := w.Fetch.Permission(ctx, client, job.Owner, job.Repo, login)
	if err != nil {
		return "the author's permission could not be read: " + err.Error()
	}
	if !pull.CanWrite(perm) {
		return why + " (the author has no write access)"
	}
	return "-"
}

// validApprover reports whether login may approve asking another review bot for pr: a person,
// not the pull request's author. Write access was checked when the command was received.
func validApprover(login string, pr *github.PullRequest) bool {
	return login != "" && !strings.HasSuffix(login, "[bot]") && !strings.EqualFold(login, pr.GetUser().GetLogin())
}

// afterDelegation schedules the next look for an answer while a delegated lens waits, so that
// reactions (which have no webhook) are seen and the timeout is enforced.
func (w *Worker) afterDelegation(ctx context.Context, job queue.Job, subj *review.Subject, cfg *config.Repo, obs *runtime.Delegation, attempt int) {
	presets, _ := w.delegatedLenses(cfg)
	if obs == nil || len(presets) == 0 || w.Queue == nil {
		return
	}
	var deadline time.Time
	for _, v := range verdicts(presets, subj, cfg, obs) {
		if v.Outcome != delegate.Pending || v.Request == nil || v.TimedOut {
			continue
		}
		if deadline.IsZero() || v.Deadline.Before(deadline) {
			deadline = v.Deadline
		}
	}
	if deadline.IsZero() {
		return
	}
	maxN := w.Delegates.MaxRechecks
	if maxN <= 0 {
		maxN = 12
	}
	if attempt >= maxN {
		zerolog.Ctx(ctx).Warn().Int("rechecks", attempt).Msg("no more looks for the delegated answer; a webhook or the next push settles it")
		return
	}
	waits := w.Delegates.Recheck
	if len(waits) == 0 {
		waits = []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute}
	}
	now := w.now()
	at := now.Add(waits[min(attempt, len(waits)-1)])
	if attempt+1 >= maxN || at.After(deadline) {
		at = deadline // the last look is at the deadline, which it enforces
	}
	next := queue.Job{
		Key:            job.Key + "/delegate",
		DeliveryID:     fmt.Sprintf("delegate-recheck/%s/%s/%d", job.Key, subj.HeadSHA, attempt+1),
		Kind:           queue.KindDelegate,
		InstallationID: job.InstallationID,
		Owner:          job.Owner,
		Repo:           job.Repo,
		Number:         job.Number,
		HeadSHA:        subj.HeadSHA,
		Reason:         queue.ReasonDelegateRecheck,
		EnqueuedAt:     now,
		NotBefore:      at,
		Extra:          queue.Extra{Recheck: attempt + 1}.Raw(),
		// A look scheduled by a look continues its head; the first look of a head is news.
		FollowUp: job.Kind == queue.KindDelegate,
	}
	if err := w.Queue.Enqueue(ctx, next); err != nil && !errors.Is(err, queue.ErrDuplicate) {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("could not schedule the next look for the delegated answer")
	}
}

// recheckDelegate is the scheduled look: it reads the bots' activity and, when an answer came
// or the wait is over, queues a review of the head, which publishes the settled lens.
func (w *Worker) recheckDelegate(ctx context.Context, client *github.Client, job queue.Job) error {
	log := zerolog.Ctx(ctx)
	pr, err := w.Fetch.GetPull(ctx, client, job.Owner, job.Repo, job.Number)
	if err != nil {
		return err
	}
	if pr.GetState() != "open" || pr.GetHead().GetSHA() != job.HeadSHA {
		log.Info().Msg("pull request moved on; no further look for the delegated answer of this head")
		return nil
	}
	trusted, err := w.loadConfig(ctx, client, job.InstallationID, job.Owner, job.Repo, pr.GetBase().GetRef())
	if err != nil {
		return err
	}
	if len(trusted.Problems) > 0 {
		return nil
	}
	presets, lenses := w.delegatedLenses(trusted.Repo)
	if len(presets) == 0 {
		return nil
	}
	obs, err := w.observe(ctx, client, job.Owner, job.Repo, job.Number, presets)
	if err != nil {
		return err
	}
	subj := bindPartial(pr)
	attempt := queue.ParseExtra(job.Extra).Recheck
	for _, p := range presets {
		v := verdicts([]delegate.Preset{p}, subj, trusted.Repo, obs)[p.Name]
		if v.Request == nil {
			continue
		}
		var reason queue.Reason
		key := ""
		switch {
		case v.Outcome != delegate.Pending:
			reason, key = queue.ReasonDelegateAnswered, queue.EvidenceDelivery(job.Owner, job.Repo, job.Number, v.Evidence.Kind, v.Evidence.ID)
		case v.TimedOut:
			reason, key = queue.ReasonDelegateTimeout, "delegate-timeout/"+v.Request.ID
		default:
			if v.InProgress {
				w.noteInProgress(ctx, client, job, subj, trusted.Repo, p, lenses[p.Name])
			}
			continue
		}
		log.Info().Str("preset", p.Name).Str("reason", string(reason)).Msg("delegated lens settled; reviewing the head again")
		return w.enqueueSettled(ctx, job, pr, reason, key)
	}
	w.afterDelegation(ctx, job, subj, trusted.Repo, obs, attempt)
	return nil
}

// noteInProgress tells the gate check that the bot is reviewing the head. The lens stays
// pending; a failure only costs the note.
func (w *Worker) noteInProgress(ctx context.Context, client *github.Client, job queue.Job, subj *review.Subject, cfg *config.Repo, p delegate.Preset, lenses []string) {
	np, ok := w.Publisher.(publication.DelegateProgress)
	if !ok {
		return
	}
	err := np.NoteDelegateInProgress(ctx, client, &publication.DelegateNote{Job: job, App: w.App, Subject: subj, Repo: cfg, Preset: p, Lenses: lenses})
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("preset", p.Name).Msg("could not note on the gate check that the bot is reviewing")
	}
}

func (w *Worker) enqueueSettled(ctx context.Context, job queue.Job, pr *github.PullRequest, reason queue.Reason, delivery string) error {
	err := w.Queue.Enqueue(ctx, queue.Job{
		Key: queue.Key(job.Owner, job.Repo, job.Number), DeliveryID: delivery, Kind: queue.KindPullRequest,
		InstallationID: job.InstallationID, Owner: job.Owner, Repo: job.Repo, Number: job.Number,
		HeadSHA: job.HeadSHA, Reason: reason, EnqueuedAt: w.now(), FollowUp: true,
	})
	if errors.Is(err, queue.ErrDuplicate) {
		return nil
	}
	return err
}

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}
