package handlers

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

// DelegateRequester is a Publisher that can ask another review bot for a review: it posts the
// request (through the policy decision point, audited like every write) and returns the
// request comment's id and creation time, which is the request's time.
type DelegateRequester interface {
	RequestDelegate(ctx context.Context, client *github.Client, r *DelegateRequest) (commentID int64, at time.Time, err error)
}

// DelegateProgress is a Publisher that can say, in the gate check's text, that another review
// bot is working on the head (it reacted eyes), without settling the lens or commenting.
type DelegateProgress interface {
	NoteDelegateInProgress(ctx context.Context, client *github.Client, n *DelegateNote) error
}

// DelegateNote is one "the bot is reviewing" note.
type DelegateNote struct {
	Job     queue.Job
	App     AppIdentity
	Subject *review.Subject
	Repo    *config.Repo
	Preset  delegate.Preset
	// Lenses are the policy lenses waiting for the bot.
	Lenses []string
}

// DelegateRequest is one request to post.
type DelegateRequest struct {
	Job     queue.Job
	App     AppIdentity
	Subject *review.Subject
	Repo    *config.Repo
	Preset  delegate.Preset
	Binding delegate.Binding
	// Lenses are the policy lenses the answer settles.
	Lenses []string
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
func listPages[T any](ctx context.Context, f Fetcher, c *github.Client, what, path string, max int) ([]T, error) {
	var out []T
	for page := 1; ; page++ {
		var items []T
		var next int
		err := f.do(ctx, what, func(ctx context.Context) error {
			req, err := c.NewRequest("GET", fmt.Sprintf("%s?per_page=%d&page=%d", path, perPage, page), nil)
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
		err := w.Fetch.do(ctx, "list reviews", func(ctx context.Context) error {
			var resp *github.Response
			var err error
			batch, resp, err = client.PullRequests.ListReviews(ctx, owner, repo, number, &github.ListOptions{PerPage: perPage, Page: page})
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
			err := w.Fetch.do(ctx, "list review comments", func(ctx context.Context) error {
				var err error
				cs, _, err = client.PullRequests.ListReviewComments(ctx, owner, repo, number, br.ID, &github.ListOptions{PerPage: perPage})
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
		req, ok := w.Publisher.(DelegateRequester)
		if !ok {
			obs.Blocked[p.Name] = "this server does not write to GitHub"
			continue
		}
		b := delegate.Binding{Preset: p.Name, Repo: subj.Owner + "/" + subj.Repo, Number: subj.Number, Head: subj.HeadSHA, Base: subj.BaseSHA}
		id, at, err := req.RequestDelegate(ctx, client, &DelegateRequest{Job: job, App: w.App, Subject: subj, Repo: cfg, Preset: p, Binding: b, Lenses: lenses[p.Name]})
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
	if cfg.Delegate.Approval == config.DelegateApprovalNever || validApprover(ParseJobExtra(job.Extra).ApprovedBy, pr) {
		return "-"
	}
	why := "a maintainer's approval is needed first: someone with write access other than the author comments " +
		ApproveDelegateCommand(w.Command) + " on this head"
	headRepo, baseRepo := pr.GetHead().GetRepo(), pr.GetBase().GetRepo()
	if headRepo == nil || baseRepo == nil || headRepo.GetID() != baseRepo.GetID() || headRepo.GetFullName() != baseRepo.GetFullName() {
		return why + " (the pull request comes from a fork)"
	}
	login := pr.GetUser().GetLogin()
	var perm *github.RepositoryPermissionLevel
	err := w.Fetch.do(ctx, "get permission of "+login, func(ctx context.Context) error {
		var err error
		perm, _, err = client.Repositories.GetPermissionLevel(ctx, job.Owner, job.Repo, login)
		return err
	})
	if err != nil {
		return "the author's permission could not be read: " + err.Error()
	}
	if !canWrite(perm) {
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
		Reason:         "delegate.recheck",
		EnqueuedAt:     now,
		NotBefore:      at,
		Extra:          JobExtra{Recheck: attempt + 1}.raw(),
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
	attempt := ParseJobExtra(job.Extra).Recheck
	for _, p := range presets {
		v := verdicts([]delegate.Preset{p}, subj, trusted.Repo, obs)[p.Name]
		if v.Request == nil {
			continue
		}
		reason, key := "", ""
		switch {
		case v.Outcome != delegate.Pending:
			reason, key = "delegate.answered", EvidenceDelivery(job.Owner, job.Repo, job.Number, v.Evidence.Kind, v.Evidence.ID)
		case v.TimedOut:
			reason, key = "delegate.timeout", "delegate-timeout/"+v.Request.ID
		default:
			if v.InProgress {
				w.noteInProgress(ctx, client, job, subj, trusted.Repo, p, lenses[p.Name])
			}
			continue
		}
		log.Info().Str("preset", p.Name).Str("reason", reason).Msg("delegated lens settled; reviewing the head again")
		return w.enqueueSettled(ctx, job, pr, reason, key)
	}
	w.afterDelegation(ctx, job, subj, trusted.Repo, obs, attempt)
	return nil
}

// noteInProgress tells the gate check that the bot is reviewing the head. The lens stays
// pending; a failure only costs the note.
func (w *Worker) noteInProgress(ctx context.Context, client *github.Client, job queue.Job, subj *review.Subject, cfg *config.Repo, p delegate.Preset, lenses []string) {
	np, ok := w.Publisher.(DelegateProgress)
	if !ok {
		return
	}
	err := np.NoteDelegateInProgress(ctx, client, &DelegateNote{Job: job, App: w.App, Subject: subj, Repo: cfg, Preset: p, Lenses: lenses})
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("preset", p.Name).Msg("could not note on the gate check that the bot is reviewing")
	}
}

// EvidenceDelivery is the delivery id of the review that follows a bot's answer: the webhook of
// the answer and a later look at it name the same answer, so it is reviewed once.
func EvidenceDelivery(owner, repo string, number int, kind string, id int64) string {
	return fmt.Sprintf("delegate/%s/%s#%d/%s/%d", owner, repo, number, kind, id)
}

// answerJob queues the review that follows a bot's answer (a comment or a review) on pr. An
// answer is never news of a head, so the job is a follow-up: it must not supersede a newer head's
// review.
func answerJob(inst int64, owner, repo string, pr *github.PullRequest, kind string, id int64, reason string) queue.Job {
	return queue.Job{
		Key:            JobKey(owner, repo, pr.GetNumber()),
		DeliveryID:     EvidenceDelivery(owner, repo, pr.GetNumber(), kind, id),
		Kind:           queue.KindPullRequest,
		InstallationID: inst,
		Owner:          owner,
		Repo:           repo,
		Number:         pr.GetNumber(),
		HeadSHA:        pr.GetHead().GetSHA(),
		Reason:         "delegate." + reason,
		FollowUp:       true,
	}
}

func (w *Worker) enqueueSettled(ctx context.Context, job queue.Job, pr *github.PullRequest, reason, delivery string) error {
	err := w.Queue.Enqueue(ctx, queue.Job{
		Key: JobKey(job.Owner, job.Repo, job.Number), DeliveryID: delivery, Kind: queue.KindPullRequest,
		InstallationID: job.InstallationID, Owner: job.Owner, Repo: job.Repo, Number: job.Number,
		HeadSHA: job.HeadSHA, Reason: reason, EnqueuedAt: w.now(), FollowUp: true,
	})
	if errors.Is(err, queue.ErrDuplicate) {
		return nil
	}
	return err
}

// botOfPresets names the preset whose bot an account is ("" for none).
func botOfPresets(rt *delegate.Runtime, u *github.User) string {
	if rt == nil || u == nil {
		return ""
	}
	for _, n := range rt.PresetNames() {
		p, _ := rt.Preset(n)
		if p.Bot.Login == u.GetLogin() && p.Bot.UserID == u.GetID() {
			return n
		}
	}
	return ""
}

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}
