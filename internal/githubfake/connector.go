package githubfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

// Bot is another App's bot account, such as a review connector.
type Bot struct {
	Login  string
	UserID int64
	// AppID and AppSlug are the App its comments are made through (performed_via_github_app).
	AppID   int64
	AppSlug string
}

// AddBot registers a bot account: its user id, type Bot and App appear wherever its login does.
func (s *Server) AddBot(b Bot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[b.Login] = b
}

// viaApp is the performed_via_github_app of a comment by login (nil for a person).
func (s *Server) viaApp(login string) *github.App {
	if login == s.BotLogin() {
		return s.appJSON()
	}
	if b, ok := s.bots[login]; ok && b.AppID != 0 {
		return &github.App{ID: github.Int64(b.AppID), Slug: github.String(b.AppSlug), Name: github.String(b.AppSlug)}
	}
	return nil
}

// reactionJSON adds the creation time go-github does not model.
type reactionJSON struct {
	*github.Reaction
	CreatedAt *github.Timestamp `json:"created_at,omitempty"`
}

func (s *Server) requestReviewers(w http.ResponseWriter, r *http.Request) {
	st, pr := s.pull(w, r)
	if pr == nil {
		return
	}
	var in github.ReviewersRequest
	if !decodeBody(w, r, &in) {
		return
	}
	st.reviewRequests[pr.Number] = append(st.reviewRequests[pr.Number], in.Reviewers...)
	writeJSON(w, http.StatusCreated, s.prJSON(st, pr))
	for _, c := range s.connectors {
		if c.Via == "reviewers" && contains(in.Reviewers, c.Bot.Login) {
			s.schedule(st, c, pr.Number, pr.HeadSHA, s.now().UTC().Truncate(time.Second))
		}
	}
}

// ReviewRequests lists the reviewers requested for a pull request through the API.
func (s *Server) ReviewRequests(fullName string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.mustRepo(fullName).reviewRequests[number]...)
}

// Answer kinds of a scripted connector.
const (
	AnswerComment  = "comment"  // a clean conversation comment naming the reviewed commit
	AnswerReview   = "review"   // a COMMENTED review with the connector's heading
	AnswerReaction = "reaction" // a +1 reaction on the pull request
	AnswerEyes     = "eyes"     // an eyes reaction: working on it
)

// Answer is one thing a scripted connector does after a request.
type Answer struct {
	Kind string
	// After is how much later than the request the answer is stamped (the fake's clock is not
	// waited on: the answer is posted at once, with this time).
	After time.Duration
	// Body replaces the connector's usual comment or review body.
	Body string
	// Commit is the commit the answer names ("" for the head at the request).
	Commit string
	// Comments are the inline comments of a review answer.
	Comments []ReviewComment
	// As answers as another account (for look-alikes); nil for the connector's bot.
	As *Bot
}

// Connector scripts a review bot: whenever the App's comment starts with Trigger (or, with Via
// "reviewers", the bot is requested as a reviewer), it answers with the script of that request:
// the n-th request gets Scripts[n], the last script repeating.
type Connector struct {
	Bot     Bot
	Trigger string
	Via     string // "" (a comment) or "reviewers"
	Scripts [][]Answer
	// Heading, CleanHeadline are the connector's texts (Codex's when empty).
	Heading, CleanHeadline string
}

type connector struct {
	Connector
	requests int
}

// ScriptConnector registers the connector's bot and its script.
func (s *Server) ScriptConnector(c Connector) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Heading == "" {
		c.Heading = "### 💡 Codex Review\n\nHere are some automated review suggestions for this pull request."
	}
	if c.CleanHeadline == "" {
		c.CleanHeadline = "Codex Review: Didn't find any major issues."
	}
	s.bots[c.Bot.Login] = c.Bot
	s.connectors = append(s.connectors, &connector{Connector: c})
}

// OnEvent receives the webhook events (event name and payload) the fake emits when a bot
// answers, so a test can deliver them to the App.
func (s *Server) OnEvent(fn func(event string, payload []byte)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onEvent = fn
}

// requested runs, with s.mu held, after the App posted comment c: a connector whose trigger
// starts it answers.
func (s *Server) requested(st *repoState, number int, c *Comment) {
	pr, ok := st.pulls[number]
	if !ok {
		return
	}
	first, _, _ := strings.Cut(c.Body, "\n")
	for _, cn := range s.connectors {
		if cn.Via == "" && cn.Trigger != "" && strings.TrimSpace(first) == cn.Trigger {
			s.schedule(st, cn, number, pr.HeadSHA, c.CreatedAt)
		}
	}
}

// schedule posts the connector's answers to one request from a goroutine (the caller holds
// s.mu), then emits their webhooks.
func (s *Server) schedule(st *repoState, cn *connector, number int, head string, at time.Time) {
	if len(cn.Scripts) == 0 {
		return
	}
	script := cn.Scripts[min(cn.requests, len(cn.Scripts)-1)]
	cn.requests++
	full := st.FullName()
	go func() {
		for _, a := range script {
			s.answer(full, number, head, at, cn, a)
		}
	}()
}

func (s *Server) answer(full string, number int, head string, at time.Time, cn *connector, a Answer) {
	who := cn.Bot
	if a.As != nil {
		who = *a.As
		s.AddBot(who)
	}
	when := at.Add(a.After)
	commit := a.Commit
	if commit == "" {
		commit = head
	}
	switch a.Kind {
	case AnswerComment:
		body := a.Body
		if body == "" {
			body = cn.CleanHeadline + "\n\n**Reviewed commit:** `" + commit[:12] + "`\n"
		}
		c := s.AddCommentAt(full, number, who.Login, body, when)
		s.emit("issue_comment", s.IssueCommentPayload(full, number, c.ID))
	case AnswerReview:
		body := a.Body
		if body == "" {
			body = cn.Heading + "\n\n**Reviewed commit:** `" + commit[:12] + "`\n"
		}
		rv := s.AddReview(full, number, Review{User: who.Login, State: "COMMENTED", Event: "COMMENT", Body: body, CommitID: commit, Comments: a.Comments, SubmittedAt: when})
		s.emit("pull_request_review", s.ReviewPayload(full, number, rv.ID))
	case AnswerReaction, AnswerEyes:
		content := "+1"
		if a.Kind == AnswerEyes {
			content = "eyes"
		}
		s.AddReaction(full, fmt.Sprintf("issue/%d", number), who.Login, content, when)
	}
}

func (s *Server) emit(event string, payload []byte) {
	s.mu.Lock()
	fn := s.onEvent
	s.mu.Unlock()
	if fn != nil && payload != nil {
		fn(event, payload)
	}
}

// AddCommentAt adds a conversation comment by user with the given creation time.
func (s *Server) AddCommentAt(fullName string, number int, user, body string, at time.Time) Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	c := s.newComment(number, user, body)
	c.CreatedAt, c.UpdatedAt = at.UTC(), at.UTC()
	st.comments = append(st.comments, c)
	return *c
}

// AddReview adds a submitted review (by any account) with its inline comments and returns it.
func (s *Server) AddReview(fullName string, number int, rv Review) Review {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	pr := s.mustPR(fullName, number)
	rv.ID, rv.Number = s.id(), number
	rv.NodeID = fmt.Sprintf("PRR_fake%d", rv.ID)
	if rv.CommitID == "" {
		rv.CommitID = pr.HeadSHA
	}
	if rv.SubmittedAt.IsZero() {
		rv.SubmittedAt = s.now().UTC().Truncate(time.Second)
	}
	for i := range rv.Comments {
		c := &rv.Comments[i]
		c.ID, c.ReviewID, c.User, c.CommitID = s.id(), rv.ID, rv.User, rv.CommitID
		if c.Side == "" {
			c.Side = "RIGHT"
		}
	}
	r := rv
	r.Comments = append([]ReviewComment(nil), rv.Comments...)
	st.reviews = append(st.reviews, &r)
	return rv
}

// AddReaction adds a reaction by user on a subject ("issue/N", "comment/ID") at a time.
func (s *Server) AddReaction(fullName, subject, user, content string, at time.Time) Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := &Reaction{ID: s.id(), Subject: subject, Content: content, User: user, CreatedAt: at.UTC()}
	s.mustRepo(fullName).reactions = append(s.mustRepo(fullName).reactions, x)
	return *x
}

// IssueCommentPayload is the issue_comment "created" webhook of a stored comment.
func (s *Server) IssueCommentPayload(fullName string, number int, commentID int64) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	for _, c := range st.comments {
		if c.ID == commentID {
			is := s.issueJSON(st, number)
			ev := map[string]any{
				"action": "created", "issue": is, "comment": s.commentJSON(st, c), "repository": s.repoJSON(st),
				"installation": map[string]any{"id": s.installationID}, "sender": s.userJSON(c.User),
			}
			b, _ := json.Marshal(ev)
			return b
		}
	}
	return nil
}

// ReviewPayload is the pull_request_review "submitted" webhook of a stored review.
func (s *Server) ReviewPayload(fullName string, number int, reviewID int64) []byte {
	return s.ReviewEventPayload(fullName, number, reviewID, "submitted")
}

// SetHeadRepo makes a pull request come from another repository (a fork), by full name.
func (s *Server) SetHeadRepo(fullName string, number int, headRepo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustPR(fullName, number).HeadRepo = headRepo
}
