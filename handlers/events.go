package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/queue"
)

// errBadPayload marks a webhook body that is not the JSON its event type promises; the
// dispatcher answers 400.
var errBadPayload = errors.New("malformed webhook payload")

func badPayload(err error) error { return fmt.Errorf("%w: %v", errBadPayload, err) }

// JobExtra is what a job carries in queue.Job.Extra (JSON), for the worker and the publisher.
type JobExtra struct {
	// DefaultBranch is where an issue's configuration is read.
	DefaultBranch string `json:"default_branch,omitempty"`
	// RepositoryNodeID binds an issue subject (the issue API does not return its repository).
	RepositoryNodeID string `json:"repository_node_id,omitempty"`
	// RequestedBy is the user whose comment command asked for the review.
	RequestedBy string `json:"requested_by,omitempty"`
	// CommentID is the comment carrying the command, for a reaction.
	CommentID int64 `json:"comment_id,omitempty"`
	// CheckRunID is the check run whose re-run was requested.
	CheckRunID int64 `json:"check_run_id,omitempty"`
}

func (x JobExtra) raw() json.RawMessage {
	b, _ := json.Marshal(x)
	if string(b) == "{}" {
		return nil
	}
	return b
}

// ParseJobExtra decodes a job's Extra (unknown or malformed fields are ignored).
func ParseJobExtra(raw json.RawMessage) JobExtra {
	var x JobExtra
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &x)
	}
	return x
}

// JobKey is the coalescing key of a pull request or issue.
func JobKey(owner, repo string, number int) string {
	return fmt.Sprintf("%s/%s#%d", owner, repo, number)
}

// hooks holds what the event handlers share.
type hooks struct {
	queue        queue.Queue
	clients      githubapp.ClientCreator
	fetch        Fetcher
	reviewDrafts bool
	backfill     bool
	command      string
	now          func() time.Time
	events       *eventMetrics
}

// enqueue offers a job and maps the queue's answers to the webhook's: a duplicate delivery is a
// success that does nothing, a full queue is an error the dispatcher turns into 503.
func (h *hooks) enqueue(ctx context.Context, job queue.Job) error {
	job.EnqueuedAt = h.now()
	err := h.queue.Enqueue(ctx, job)
	log := zerolog.Ctx(ctx)
	switch {
	case err == nil:
		log.Debug().Str("job_key", job.Key).Str("head_sha", job.HeadSHA).Msg("review job queued")
		respond(ctx, http.StatusAccepted, "queued "+job.Key)
		h.events.outcome(job.Reason, "queued")
		return nil
	case errors.Is(err, queue.ErrDuplicate):
		log.Info().Str("job_key", job.Key).Msg("delivery already accepted; nothing to do")
		respond(ctx, http.StatusOK, "duplicate delivery")
		h.events.outcome(job.Reason, "duplicate")
		return nil
	default:
		h.events.outcome(job.Reason, "refused")
		return fmt.Errorf("enqueue %s: %w", job.Key, err)
	}
}

// skip answers 200 with the reason, so GitHub's delivery log shows why nothing happened.
func (h *hooks) skip(ctx context.Context, reason, why string) error {
	zerolog.Ctx(ctx).Debug().Str("reason", why).Msg("event ignored")
	respond(ctx, http.StatusOK, "ignored: "+why)
	h.events.outcome(reason, "ignored")
	return nil
}

// respond sets the webhook's answer when the handler runs inside the request (events handled
// asynchronously have no one to answer).
func respond(ctx context.Context, status int, msg string) {
	defer func() { _ = recover() }() // no responder in async contexts
	githubapp.SetResponder(ctx, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(msg + "\n"))
	})
}

// pullRequestHandler turns pull_request events into review jobs.
type pullRequestHandler struct{ *hooks }

var _ githubapp.EventHandler = pullRequestHandler{}

func (pullRequestHandler) Handles() []string { return []string{"pull_request"} }

// pullRequestEvent is the part of a pull_request payload the handler reads. Decoding only this
// (payloads are often 20-30 KB) keeps the webhook answer cheap; the worker reads the pull request
// fresh from GitHub anyway.
type pullRequestEvent struct {
	Action      string `json:"action"`
	PullRequest *struct {
		Number int    `json:"number"`
		Draft  bool   `json:"draft"`
		State  string `json:"state"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
	} `json:"pull_request"`
	Repository *struct {
		Name  string `json:"name"`
		Owner struct {
			Login string `json:"login"`
		} `json:"owner"`
	} `json:"repository"`
	Installation *struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Sender  *github.User `json:"sender"`
	Changes *struct {
		Title json.RawMessage `json:"title"`
		Body  json.RawMessage `json:"body"`
		Base  json.RawMessage `json:"base"`
	} `json:"changes"`
}

func (h pullRequestHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev pullRequestEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return badPayload(err)
	}
	pr := ev.PullRequest
	if pr == nil || ev.Repository == nil {
		return badPayload(errors.New("pull_request event without pull_request or repository"))
	}
	owner, name := ev.Repository.Owner.Login, ev.Repository.Name
	var inst int64
	if ev.Installation != nil {
		inst = ev.Installation.ID
	}
	repo := &github.Repository{Name: &name, Owner: &github.User{Login: &owner}}
	ctx, _ = githubapp.PreparePRContext(ctx, inst, repo, pr.Number)
	reason := eventType + "." + ev.Action
	switch ev.Action {
	case "opened", "reopened", "ready_for_review", "synchronize":
	case "edited":
		// Only a new title, body or base changes what is reviewed; lensgate's own body edits
		// (the disclosure block) must not trigger another review.
		if isBot(ev.Sender) {
			return h.skip(ctx, reason, "edited by a bot")
		}
		if ch := ev.Changes; ch == nil || (ch.Title == nil && ch.Body == nil && ch.Base == nil) {
			return h.skip(ctx, reason, "edit does not change title, body or base")
		}
	default:
		return h.skip(ctx, reason, "action "+ev.Action+" is not reviewed")
	}
	if pr.State == "closed" {
		return h.skip(ctx, reason, "pull request is closed")
	}
	if pr.Draft && !h.reviewDrafts {
		return h.skip(ctx, reason, "draft pull request")
	}
	if inst == 0 || owner == "" || name == "" || pr.Number <= 0 {
		return h.skip(ctx, reason, "no installation, repository or number in payload")
	}
	return h.enqueue(ctx, queue.Job{
		Key:            JobKey(owner, name, pr.Number),
		DeliveryID:     deliveryID,
		Kind:           queue.KindPullRequest,
		InstallationID: inst,
		Owner:          owner,
		Repo:           name,
		Number:         pr.Number,
		HeadSHA:        pr.Head.SHA,
		Reason:         reason,
	})
}

// issuesHandler turns issues events into triage jobs.
type issuesHandler struct{ *hooks }

var _ githubapp.EventHandler = issuesHandler{}

func (issuesHandler) Handles() []string { return []string{"issues"} }

func (h issuesHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev github.IssuesEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return badPayload(err)
	}
	is, repo := ev.GetIssue(), ev.GetRepo()
	if is == nil || repo == nil {
		return badPayload(errors.New("issues event without issue or repository"))
	}
	inst := githubapp.GetInstallationIDFromEvent(&ev)
	ctx, _ = githubapp.PrepareRepoContext(ctx, inst, repo)
	reason := eventType + "." + ev.GetAction()
	switch ev.GetAction() {
	case "opened":
	case "edited":
		if isBot(ev.GetSender()) {
			return h.skip(ctx, reason, "edited by a bot")
		}
	default:
		return h.skip(ctx, reason, "action "+ev.GetAction()+" is not triaged")
	}
	if is.IsPullRequest() {
		return h.skip(ctx, reason, "issue is a pull request")
	}
	if inst == 0 {
		return h.skip(ctx, reason, "no installation in payload")
	}
	return h.enqueue(ctx, queue.Job{
		Key:            JobKey(repo.GetOwner().GetLogin(), repo.GetName(), is.GetNumber()),
		DeliveryID:     deliveryID,
		Kind:           queue.KindIssue,
		InstallationID: inst,
		Owner:          repo.GetOwner().GetLogin(),
		Repo:           repo.GetName(),
		Number:         is.GetNumber(),
		Reason:         reason,
		Extra:          JobExtra{DefaultBranch: repo.GetDefaultBranch(), RepositoryNodeID: repo.GetNodeID()}.raw(),
	})
}

// issueCommentHandler runs the review command from people with write access to the repository.
// It needs GitHub calls (permission, head SHA), so it runs in the asynchronous event stage.
type issueCommentHandler struct{ *hooks }

var _ githubapp.EventHandler = issueCommentHandler{}

func (issueCommentHandler) Handles() []string { return []string{"issue_comment"} }

// IsCommand reports whether a comment body asks for a review: its first non-empty line is
// exactly the command, optionally followed by whitespace.
func IsCommand(body, command string) bool {
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		return line == command
	}
	return false
}

func (h issueCommentHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev github.IssueCommentEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return badPayload(err)
	}
	is, repo, c := ev.GetIssue(), ev.GetRepo(), ev.GetComment()
	if is == nil || repo == nil || c == nil {
		return badPayload(errors.New("issue_comment event without issue, repository or comment"))
	}
	inst := githubapp.GetInstallationIDFromEvent(&ev)
	ctx, log := githubapp.PreparePRContext(ctx, inst, repo, is.GetNumber())
	reason := eventType + "." + ev.GetAction()
	switch {
	case ev.GetAction() != "created":
		return h.skip(ctx, reason, "only new comments are commands")
	case !IsCommand(c.GetBody(), h.command):
		return h.skip(ctx, reason, "not a command")
	case isBot(ev.GetSender()) || isBot(c.GetUser()):
		return h.skip(ctx, reason, "command from a bot")
	case !is.IsPullRequest():
		return h.skip(ctx, reason, "command on an issue, not a pull request")
	case inst == 0:
		return h.skip(ctx, reason, "no installation in payload")
	}
	owner, name, login := repo.GetOwner().GetLogin(), repo.GetName(), c.GetUser().GetLogin()
	client, err := h.clients.NewInstallationClient(inst)
	if err != nil {
		return fmt.Errorf("installation client: %w", err)
	}
	var perm *github.RepositoryPermissionLevel
	err = h.fetch.do(ctx, "get permission of "+login, func(ctx context.Context) error {
		var err error
		perm, _, err = client.Repositories.GetPermissionLevel(ctx, owner, name, login)
		return err
	})
	if err != nil {
		return err
	}
	if !canWrite(perm) {
		log.Info().Str("user", login).Str("permission", perm.GetPermission()).Msg("review command from a user without write access ignored")
		h.events.outcome(reason, "ignored")
		return nil
	}
	pr, err := h.fetch.GetPull(ctx, client, owner, name, is.GetNumber())
	if err != nil {
		return err
	}
	if pr.GetState() == "closed" {
		return h.skip(ctx, reason, "pull request is closed")
	}
	return h.enqueue(ctx, queue.Job{
		Key:            JobKey(owner, name, pr.GetNumber()),
		DeliveryID:     deliveryID,
		Kind:           queue.KindPullRequest,
		InstallationID: inst,
		Owner:          owner,
		Repo:           name,
		Number:         pr.GetNumber(),
		HeadSHA:        pr.GetHead().GetSHA(),
		Reason:         reason,
		Extra:          JobExtra{RequestedBy: login, CommentID: c.GetID()}.raw(),
	})
}

func canWrite(p *github.RepositoryPermissionLevel) bool {
	switch p.GetPermission() {
	case "admin", "maintain", "write":
		return true
	}
	return false
}

// checkHandler re-runs a review when someone presses Re-run on lensgate's check
// (check_run.rerequested) or Re-run all (check_suite.rerequested). It runs asynchronously
// because an event without pull_requests needs a lookup by head SHA.
type checkHandler struct{ *hooks }

var _ githubapp.EventHandler = checkHandler{}

func (checkHandler) Handles() []string { return []string{"check_run", "check_suite"} }

func (h checkHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var (
		action, headSHA string
		prs             []*github.PullRequest
		repo            *github.Repository
		inst            int64
		checkRunID      int64
	)
	switch eventType {
	case "check_run":
		var ev github.CheckRunEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return badPayload(err)
		}
		action, repo, inst = ev.GetAction(), ev.GetRepo(), githubapp.GetInstallationIDFromEvent(&ev)
		headSHA, prs, checkRunID = ev.GetCheckRun().GetHeadSHA(), ev.GetCheckRun().PullRequests, ev.GetCheckRun().GetID()
	case "check_suite":
		var ev github.CheckSuiteEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return badPayload(err)
		}
		action, repo, inst = ev.GetAction(), ev.GetRepo(), githubapp.GetInstallationIDFromEvent(&ev)
		headSHA, prs = ev.GetCheckSuite().GetHeadSHA(), ev.GetCheckSuite().PullRequests
	}
	if repo == nil {
		return badPayload(errors.New(eventType + " event without repository"))
	}
	ctx, log := githubapp.PrepareRepoContext(ctx, inst, repo)
	reason := eventType + "." + action
	if action != "rerequested" {
		return h.skip(ctx, reason, "action "+action+" is not a re-run")
	}
	if inst == 0 {
		return h.skip(ctx, reason, "no installation in payload")
	}
	owner, name := repo.GetOwner().GetLogin(), repo.GetName()
	client, err := h.clients.NewInstallationClient(inst)
	if err != nil {
		return fmt.Errorf("installation client: %w", err)
	}
	if len(prs) == 0 && headSHA != "" {
		// GitHub leaves pull_requests empty for forks and sometimes for plain branches.
		err := h.fetch.do(ctx, "list pull requests for "+headSHA, func(ctx context.Context) error {
			var err error
			prs, _, err = client.PullRequests.ListPullRequestsWithCommit(ctx, owner, name, headSHA, &github.ListOptions{PerPage: perPage})
			return err
		})
		if err != nil {
			return err
		}
	}
	var errs []error
	queued := 0
	for _, pr := range prs {
		// Check events can name pull requests of other repositories (fork to upstream).
		if b := pr.GetBase().GetRepo(); b != nil && b.GetID() != 0 && repo.GetID() != 0 && b.GetID() != repo.GetID() {
			continue
		}
		if pr.GetState() == "closed" {
			continue
		}
		head := pr.GetHead().GetSHA()
		if head == "" {
			head = headSHA
		}
		// Several pull requests can share a head; each gets its own job, one delivery each.
		did := deliveryID
		if queued > 0 {
			did = fmt.Sprintf("%s/%d", deliveryID, pr.GetNumber())
		}
		err := h.enqueue(ctx, queue.Job{
			Key:            JobKey(owner, name, pr.GetNumber()),
			DeliveryID:     did,
			Kind:           queue.KindPullRequest,
			InstallationID: inst,
			Owner:          owner,
			Repo:           name,
			Number:         pr.GetNumber(),
			HeadSHA:        head,
			Reason:         reason,
			Extra:          JobExtra{CheckRunID: checkRunID}.raw(),
		})
		if err != nil {
			errs = append(errs, err)
		}
		queued++
	}
	if queued == 0 {
		log.Info().Str("head_sha", headSHA).Msg("re-run requested for a head without an open pull request")
		h.events.outcome(reason, "ignored")
	}
	return errors.Join(errs...)
}

// installationHandler logs installation changes.
type installationHandler struct{ *hooks }

var _ githubapp.EventHandler = installationHandler{}

func (installationHandler) Handles() []string {
	return []string{"installation", "installation_repositories"}
}

func (h installationHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	log := zerolog.Ctx(ctx)
	var (
		inst    int64
		account string
		added   []*github.Repository
	)
	switch eventType {
	case "installation":
		var ev github.InstallationEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return badPayload(err)
		}
		names := make([]string, 0, len(ev.Repositories))
		for _, r := range ev.Repositories {
			names = append(names, r.GetFullName())
		}
		inst, account = ev.GetInstallation().GetID(), ev.GetInstallation().GetAccount().GetLogin()
		log.Info().Int64(githubapp.LogKeyInstallationID, inst).Str("account", account).
			Str("action", ev.GetAction()).Strs("repositories", names).Msg("installation changed")
		if ev.GetAction() == "created" {
			added = ev.Repositories
		}
	case "installation_repositories":
		var ev github.InstallationRepositoriesEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return badPayload(err)
		}
		var addedNames, removed []string
		for _, r := range ev.RepositoriesAdded {
			addedNames = append(addedNames, r.GetFullName())
		}
		for _, r := range ev.RepositoriesRemoved {
			removed = append(removed, r.GetFullName())
		}
		inst, account = ev.GetInstallation().GetID(), ev.GetInstallation().GetAccount().GetLogin()
		log.Info().Int64(githubapp.LogKeyInstallationID, inst).Str("action", ev.GetAction()).
			Strs("added", addedNames).Strs("removed", removed).Msg("installation repositories changed")
		added = ev.RepositoriesAdded
	}
	h.events.outcome(eventType, "logged")
	if !h.backfill || inst == 0 || len(added) == 0 {
		return nil
	}
	return h.backfillRepos(ctx, inst, account, deliveryID, added)
}

// backfillRepos queues a review of every open, non-draft pull request of newly installed
// repositories, bounded per repository.
func (h installationHandler) backfillRepos(ctx context.Context, inst int64, account, deliveryID string, repos []*github.Repository) error {
	client, err := h.clients.NewInstallationClient(inst)
	if err != nil {
		return fmt.Errorf("installation client: %w", err)
	}
	var errs []error
	for _, r := range repos {
		owner, name, ok := strings.Cut(r.GetFullName(), "/")
		if !ok {
			owner, name = account, r.GetName()
		}
		var prs []*github.PullRequest
		err := h.fetch.do(ctx, "list open pull requests of "+owner+"/"+name, func(ctx context.Context) error {
			var err error
			prs, _, err = client.PullRequests.List(ctx, owner, name, &github.PullRequestListOptions{State: "open", ListOptions: github.ListOptions{PerPage: maxBackfillPerRepo}})
			return err
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, pr := range prs {
			if pr.GetDraft() && !h.reviewDrafts {
				continue
			}
			if err := h.enqueue(ctx, queue.Job{
				Key:            JobKey(owner, name, pr.GetNumber()),
				DeliveryID:     fmt.Sprintf("%s/%s/%s#%d", deliveryID, owner, name, pr.GetNumber()),
				Kind:           queue.KindPullRequest,
				InstallationID: inst,
				Owner:          owner,
				Repo:           name,
				Number:         pr.GetNumber(),
				HeadSHA:        pr.GetHead().GetSHA(),
				Reason:         "installation.backfill",
			}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// maxBackfillPerRepo bounds the open pull requests one installation event reviews per repository.
const maxBackfillPerRepo = 50
