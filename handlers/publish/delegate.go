package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

var (
	_ publication.DelegateRequester = (*Publisher)(nil)
	_ publication.DelegateProgress  = (*Publisher)(nil)
)

// InProgressNote is the line the gate check's text starts with while a bot that reacted eyes
// to the request reviews the head.
func InProgressNote(bot string, lenses []string) string {
	return fmt.Sprintf("**%s is reviewing this head** (it reacted 👀 to the request); %s stays pending until it answers.",
		bot, strings.Join(lenses, ", "))
}

// NoteDelegateInProgress puts the in-progress line at the top of the gate check's text: one
// check-run update (authorised and audited), no comment, the conclusion untouched. It writes
// nothing when the line is already there, when the head has no gate check yet, or when the
// text would not fit GitHub's limit (the receipt in it is never cut).
func (p *Publisher) NoteDelegateInProgress(ctx context.Context, gh *github.Client, n *publication.DelegateNote) error {
	if n == nil || n.Subject == nil {
		return errors.New("no delegate note")
	}
	pub := &publication.Publication{Job: n.Job, App: n.App, Subject: n.Subject, Repo: n.Repo}
	r := p.newRun(ctx, gh, pub, "delegate-progress-"+n.Preset.Name)
	if n.Repo != nil {
		for _, l := range n.Repo.Policy.Lenses {
			r.info.publication[l.Name] = l.Publication
		}
	}
	cr, err := r.findCheck(ctx, p.checkName)
	if err != nil || cr == nil {
		return err
	}
	line := InProgressNote(n.Preset.Bot.Login, n.Lenses)
	out := cr.GetOutput()
	if strings.Contains(out.GetText(), line) {
		return nil
	}
	text := line + "\n\n" + out.GetText()
	if len(text) > maxCheckText {
		zerolog.Ctx(ctx).Info().Msg("gate check text full; the in-progress note is not added")
		return nil
	}
	if !r.authorize(ctx, pdp.Action{Kind: pdp.KindCheckRunUpdate, Target: checksTarget, Lenses: n.Lenses}) {
		return errors.New(strings.Join(r.notes, "; "))
	}
	opts := github.UpdateCheckRunOptions{Name: cr.GetName(), Output: &github.CheckRunOutput{
		Title: github.String(out.GetTitle()), Summary: github.String(out.GetSummary()), Text: github.String(text)}}
	err = p.call(ctx, "note the delegated review in progress", func(ctx context.Context) (*github.Response, error) {
		_, resp, err := gh.Checks.UpdateCheckRun(ctx, r.info.owner, r.info.repo, cr.GetID(), opts)
		return resp, err
	}, nil)
	_ = r.finish(ctx)
	return err
}

// RequestDelegate posts the request comment for one head (authorised and audited by the PDP)
// and, for a reviewers preset, asks for the bot's review through the requested-reviewers API.
// A failed answer to the POST is re-checked by listing the comments before it is repeated, so
// the request is never posted twice.
func (p *Publisher) RequestDelegate(ctx context.Context, gh *github.Client, dr *publication.DelegateRequest) (int64, time.Time, error) {
	if dr == nil || dr.Subject == nil {
		return 0, time.Time{}, errors.New("no delegate request")
	}
	pub := &publication.Publication{Job: dr.Job, App: dr.App, Subject: dr.Subject, Repo: dr.Repo}
	r := p.newRun(ctx, gh, pub, "delegate-"+dr.Preset.Name)
	if dr.Repo != nil {
		for _, l := range dr.Repo.Policy.Lenses {
			r.info.publication[l.Name] = l.Publication
		}
	}
	body := delegate.RequestBody(dr.Preset, dr.Binding)
	if !r.authorize(ctx, pdp.Action{Kind: pdp.KindDelegateRequest, Target: "delegate:" + dr.Preset.Name, Lenses: dr.Lenses}) {
		return 0, time.Time{}, errors.New(strings.Join(r.notes, "; "))
	}
	var posted *github.IssueComment
	marker := dr.Binding.Marker()
	err := p.call(ctx, "post the delegate request", func(ctx context.Context) (*github.Response, error) {
		c, resp, err := gh.Issues.CreateComment(ctx, r.info.owner, r.info.repo, r.info.number, &github.IssueComment{Body: github.String(body)})
		posted = c
		return resp, err
	}, func(ctx context.Context) (bool, error) {
		c, err := r.findOwnComment(ctx, marker)
		if c != nil {
			posted = c
		}
		return c != nil, err
	})
	if err != nil {
		return 0, time.Time{}, err
	}
	if dr.Preset.RequestVia == delegate.RequestReviewers {
		if r.authorize(ctx, pdp.Action{Kind: pdp.KindReviewersRequest, Target: "reviewers:" + dr.Preset.Name, Lenses: dr.Lenses}) {
			err := p.call(ctx, "request a review from "+dr.Preset.Reviewer, func(ctx context.Context) (*github.Response, error) {
				_, resp, err := gh.PullRequests.RequestReviewers(ctx, r.info.owner, r.info.repo, r.info.number,
					github.ReviewersRequest{Reviewers: []string{dr.Preset.Reviewer}})
				return resp, err
			}, nil)
			if err != nil {
				// The request comment stands as the record; without the reviewer request the
				// bot may never answer, and the lens then times out as pending.
				zerolog.Ctx(ctx).Warn().Err(err).Str("reviewer", dr.Preset.Reviewer).Msg("requested-reviewers call failed")
			}
		}
	}
	_ = r.finish(ctx)
	if posted == nil || posted.GetID() == 0 {
		return 0, time.Time{}, fmt.Errorf("post the delegate request: GitHub returned no comment")
	}
	return posted.GetID(), posted.GetCreatedAt().Time, nil
}

// findOwnComment returns the App's own conversation comment holding marker, or nil.
func (r *run) findOwnComment(ctx context.Context, marker string) (*github.IssueComment, error) {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{Page: 1, PerPage: 100}} // the worker's URL, so a repeat is a 304
	for page := 0; page < 10; page++ {
		cs, resp, err := r.gh.Issues.ListComments(ctx, r.info.owner, r.info.repo, r.info.number, opts)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if c.GetUser().GetLogin() == r.info.botLogin && strings.Contains(c.GetBody(), marker) {
				return c, nil
			}
		}
		if resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
	return nil, nil
}
