package publish

import (
	"context"
	"slices"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/review"
)

// maxReactionReads bounds the inline comments whose reactions one run reads (the newest first):
// GitHub sends no webhook for reactions, so they are read when the pull request is reviewed
// again, at one request per comment.
const maxReactionReads = 20

// learn records what this run learnt about the repository's findings: the quality events the
// decision states (withdrawn, suppressed, dismissed), the inline comments it posted, the posted
// findings this head fixed, and what people said on lensgate's inline comments (👍, 👎, threads
// resolved while the finding stayed open). A store or GitHub failure is logged; it never fails
// the publication.
func (r *run) learn(ctx context.Context, d *review.Decision, plan inlinePlan) {
	store := r.p.feedback
	if store == nil || d == nil {
		return
	}
	now := r.p.now()
	repo, number := r.info.fullName, r.info.number
	events := review.QualityEvents(repo, number, d, now)
	var fbs []review.Feedback
	byID := map[string]review.Finding{}
	for _, f := range d.Findings {
		byID[f.ID] = f
		if f.Disposition == review.DispositionDismissed {
			fbs = append(fbs, review.FeedbackOn(repo, number, f, review.FeedbackDismissed, f.Reason, f.DismissedBy, now))
		}
	}
	event := func(f review.Finding, k review.QualityKind) {
		events = append(events, review.QualityEvent{Repo: repo, Number: number, Lens: f.Lens, FindingID: f.ID, Kind: k, At: now})
	}
	for _, p := range plan.post {
		if plan.placed[placeKey(p.c.Path, p.c.Line)] {
			f, ok := byID[p.fp]
			if !ok {
				f = review.Finding{ID: p.fp, Lens: p.lens}
			}
			event(f, review.QualityPosted)
		}
	}
	for _, f := range d.Findings {
		if _, posted := r.inline.top[f.ID]; posted && f.Disposition == review.DispositionFixed && f.FixCommit == r.info.headSHA {
			event(f, review.QualityFixed)
		}
	}
	said, saidEvents := r.readFeedback(ctx, byID, now)
	fbs, events = append(fbs, said...), append(events, saidEvents...)
	log := zerolog.Ctx(ctx)
	if err := store.RecordFeedback(ctx, fbs); err != nil {
		log.Warn().Err(err).Msg("feedback on findings not recorded")
	}
	if err := store.RecordQuality(ctx, events); err != nil {
		log.Warn().Err(err).Msg("quality events not recorded")
	}
}

// readFeedback reads the reactions on the newest of the App's inline comments and the review
// threads, and turns them into feedback on the findings they are about. Only findings of this
// pull request's decision are known; a comment of a finding no longer in it is skipped.
func (r *run) readFeedback(ctx context.Context, byID map[string]review.Finding, now time.Time) ([]review.Feedback, []review.QualityEvent) {
	if len(r.inline.top) == 0 {
		return nil, nil
	}
	type posted struct {
		id int64
		f  review.Finding
	}
	var comments []posted
	for fp, id := range r.inline.top {
		if f, ok := byID[fp]; ok {
			comments = append(comments, posted{id, f})
		}
	}
	slices.SortFunc(comments, func(a, b posted) int { return cmpDesc(a.id, b.id) })
	repo, number := r.info.fullName, r.info.number
	var fbs []review.Feedback
	var evs []review.QualityEvent
	add := func(f review.Finding, fk review.FeedbackKind, qk review.QualityKind, by string) {
		fbs = append(fbs, review.FeedbackOn(repo, number, f, fk, "", by, now))
		evs = append(evs, review.QualityEvent{Repo: repo, Number: number, Lens: f.Lens, FindingID: f.ID, Kind: qk, At: now})
	}
	for i, c := range comments {
		if i == maxReactionReads {
			break
		}
		rs, err := r.commentReactions(ctx, c.id)
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("reactions on an inline comment unreadable; read again on the next review")
			break
		}
		for _, x := range rs {
			by := x.GetUser().GetLogin()
			if by == r.info.botLogin || x.GetUser().GetType() == "Bot" {
				continue
			}
			switch x.GetContent() {
			case "-1":
				add(c.f, review.FeedbackThumbsDown, review.QualityThumbsDown, by)
			case "+1":
				add(c.f, review.FeedbackThumbsUp, review.QualityThumbsUp, by)
			}
		}
	}
	threads, err := r.reviewThreads(ctx)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("review threads unreadable; resolutions read again on the next review")
		return fbs, evs
	}
	for _, c := range comments {
		if th, ok := threads[c.id]; ok && th.resolved && c.f.Open() {
			add(c.f, review.FeedbackResolved, review.QualityResolved, "")
		}
	}
	return fbs, evs
}

// commentReactions lists the reactions on one review comment (at most maxListPages pages).
func (r *run) commentReactions(ctx context.Context, id int64) ([]*github.Reaction, error) {
	var out []*github.Reaction
	err := r.p.call(ctx, "list reactions of an inline comment", func(ctx context.Context) (*github.Response, error) {
		out = out[:0]
		opts := &github.ListOptions{PerPage: 100}
		for page := 0; page < maxListPages; page++ {
			rs, resp, err := r.gh.Reactions.ListPullRequestCommentReactions(ctx, r.info.owner, r.info.repo, id, opts)
			if err != nil {
				return resp, err
			}
			out = append(out, rs...)
			if resp.NextPage == 0 {
				return resp, nil
			}
			opts.Page = resp.NextPage
		}
		return nil, nil
	}, nil)
	return out, err
}

func cmpDesc(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}
