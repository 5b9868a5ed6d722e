package publish

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/review"
)

// maxMemoBytes bounds the review state kept in the advisory comment; a larger one is left out
// and the next review is a full one.
const maxMemoBytes = 24 << 10

// Targets of the conversation housekeeping. Replies to commands are part of the advisory
// conversation, thread replies and resolutions part of the review: they take no action slot
// of their own under max_actions_per_run.
const (
	targetConversation = "advisory-comment"
	targetReview       = "review"
)

// memo is the review state to keep for the next run: the decision's, or the previous one when
// this run reviewed nothing (an invalid configuration, an outage).
func (r *run) memo(pub *publication.Publication) string {
	st := pub.Decision.State
	if st == nil {
		st = pub.Subject.Prior
	}
	if st == nil {
		return ""
	}
	text, err := review.EncodeState(st)
	if err != nil {
		r.notes = append(r.notes, "review state not kept: "+oneLine(err.Error(), 200))
		return ""
	}
	if len(text) > maxMemoBytes {
		r.notes = append(r.notes, "review state too large to keep; the next push is reviewed in full")
		return ""
	}
	return text
}

// answerCommands posts one reply per answered command: in the command's review thread or in
// the conversation. A reply carries the command's id, so it is never repeated.
func (r *run) answerCommands(ctx context.Context, answers []publication.Answer) {
	for _, a := range answers {
		body := answerBody(a)
		if a.InReplyTo != 0 {
			if !r.authorize(ctx, pdp.Action{Kind: pdp.KindThreadReply, Target: targetReview}) {
				return
			}
			r.fail(r.p.call(ctx, "reply to a command in its thread", func(ctx context.Context) (*github.Response, error) {
				_, resp, err := r.gh.PullRequests.CreateCommentInReplyTo(ctx, r.info.owner, r.info.repo, r.info.number, body, a.InReplyTo)
				return resp, err
			}, nil))
			continue
		}
		if !r.authorize(ctx, pdp.Action{Kind: pdp.KindCommentReply, Target: targetConversation}) {
			return
		}
		r.fail(r.p.call(ctx, "answer a command", func(ctx context.Context) (*github.Response, error) {
			_, resp, err := r.gh.Issues.CreateComment(ctx, r.info.owner, r.info.repo, r.info.number, &github.IssueComment{Body: github.String(body)})
			return resp, err
		}, nil))
	}
}

// closeThreads resolves the review thread of every fixed or dismissed finding that has an
// inline comment, and replies once "fixed in <sha>" or "dismissed: <reason>". A thread whose
// resolution failed gets no reply, so the next run tries both again.
func (r *run) closeThreads(ctx context.Context, d *review.Decision, posted inlineIndex) {
	type closing struct {
		f  review.Finding
		id int64
	}
	var todo []closing
	for _, f := range d.Findings {
		if f.Open() {
			continue
		}
		if id, ok := posted.top[f.ID]; ok && !posted.closed[f.ID] {
			todo = append(todo, closing{f, id})
		}
	}
	if len(todo) == 0 {
		return
	}
	threads, err := r.reviewThreads(ctx)
	if err != nil {
		r.fail(err)
		return
	}
	for _, c := range todo {
		th, ok := threads[c.id]
		if ok && !th.resolved {
			if !r.authorize(ctx, pdp.Action{Kind: pdp.KindThreadResolve, Target: targetReview}) {
				return
			}
			if err := r.resolveThread(ctx, th.id); err != nil {
				r.fail(err)
				continue
			}
		}
		text := "Fixed in " + code(c.f.FixCommit, 40) + "."
		if c.f.Disposition == review.DispositionDismissed {
			text = "Dismissed: " + oneLine(c.f.Reason, 300)
			if c.f.DismissedBy != "" {
				text += " (by " + code(c.f.DismissedBy, 64) + ")"
			}
		}
		body := text + "\n\n" + pull.MarkerClosed + c.f.ID + pull.MarkerEnd
		if !r.authorize(ctx, pdp.Action{Kind: pdp.KindThreadReply, Target: targetReview}) {
			return
		}
		r.fail(r.p.call(ctx, "reply to a closed finding's thread", func(ctx context.Context) (*github.Response, error) {
			_, resp, err := r.gh.PullRequests.CreateCommentInReplyTo(ctx, r.info.owner, r.info.repo, r.info.number, body, c.id)
			return resp, err
		}, nil))
	}
}

type thread struct {
	id       string
	resolved bool
}

const threadsQuery = `query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: $first, after: $after) {
        nodes { id isResolved comments(first: 1) { nodes { databaseId } } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}`

const resolveMutation = `mutation($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } }
}`

// reviewThreads maps the database id of each thread's first comment to the thread.
func (r *run) reviewThreads(ctx context.Context) (map[int64]thread, error) {
	out := map[int64]thread{}
	after := ""
	for page := 0; page < maxListPages; page++ {
		vars := map[string]any{"owner": r.info.owner, "name": r.info.repo, "number": r.info.number, "first": 100}
		if after != "" {
			vars["after"] = after
		}
		var res struct {
			Repository struct {
				PullRequest struct {
					ReviewThreads struct {
						Nodes []struct {
							ID         string `json:"id"`
							IsResolved bool   `json:"isResolved"`
							Comments   struct {
								Nodes []struct {
									DatabaseID int64 `json:"databaseId"`
								} `json:"nodes"`
							} `json:"comments"`
						} `json:"nodes"`
						PageInfo struct {
							HasNextPage bool   `json:"hasNextPage"`
							EndCursor   string `json:"endCursor"`
						} `json:"pageInfo"`
					} `json:"reviewThreads"`
				} `json:"pullRequest"`
			} `json:"repository"`
		}
		if err := r.graphql(ctx, "list review threads", threadsQuery, vars, &res); err != nil {
			return nil, err
		}
		rt := res.Repository.PullRequest.ReviewThreads
		for _, n := range rt.Nodes {
			if len(n.Comments.Nodes) > 0 {
				out[n.Comments.Nodes[0].DatabaseID] = thread{id: n.ID, resolved: n.IsResolved}
			}
		}
		if !rt.PageInfo.HasNextPage || rt.PageInfo.EndCursor == "" {
			return out, nil
		}
		after = rt.PageInfo.EndCursor
	}
	return out, nil
}

func (r *run) resolveThread(ctx context.Context, id string) error {
	var res struct {
		ResolveReviewThread struct {
			Thread struct {
				IsResolved bool `json:"isResolved"`
			} `json:"thread"`
		} `json:"resolveReviewThread"`
	}
	if err := r.graphql(ctx, "resolve a review thread", resolveMutation, map[string]any{"threadId": id}, &res); err != nil {
		return err
	}
	if !res.ResolveReviewThread.Thread.IsResolved {
		return &CallError{Op: "resolve a review thread", Err: fmt.Errorf("thread %s still unresolved", id)}
	}
	return nil
}

// graphql sends one GraphQL request with the installation client and decodes its data. A
// GraphQL error (HTTP 200 with errors) is a failure like any other.
func (r *run) graphql(ctx context.Context, op, query string, vars map[string]any, data any) error {
	var out struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	err := r.p.call(ctx, op, func(ctx context.Context) (*github.Response, error) {
		req, err := r.gh.NewRequest("POST", r.p.graphqlURL(r.gh), map[string]any{"query": query, "variables": vars})
		if err != nil {
			return nil, err
		}
		return r.gh.Do(ctx, req, &out)
	}, nil)
	if err != nil {
		return err
	}
	if len(out.Errors) > 0 {
		msgs := make([]string, 0, len(out.Errors))
		for _, e := range out.Errors {
			msgs = append(msgs, e.Message)
		}
		return &CallError{Op: op, Err: fmt.Errorf("graphql: %s", oneLine(strings.Join(msgs, "; "), 300))}
	}
	if err := json.Unmarshal(out.Data, data); err != nil {
		return &CallError{Op: op, Err: fmt.Errorf("graphql answer: %w", err)}
	}
	return nil
}

// graphqlURL is the GraphQL endpoint: the configured one, else "graphql" next to the REST
// base (api.github.com/graphql).
func (p *Publisher) graphqlURL(gh *github.Client) string {
	if p.graphQL != "" {
		return p.graphQL
	}
	return gh.BaseURL.ResolveReference(&url.URL{Path: "graphql"}).String()
}
