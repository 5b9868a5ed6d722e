package worker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/review"
)

// askWindow is the period ask.per_user_per_hour counts questions over.
const askWindow = time.Hour

// maxQuestionsPerRun bounds the questions one review answers; the rest wait for the next run.
const maxQuestionsPerRun = 5

// questions picks the unanswered questions this review answers: asked by a person with at
// least read access, within the per-user rate limit of the pull request. A question beyond the
// limit, or asked while questions are turned off, is answered at once without a model call;
// one from a bot or from someone without access gets no answer at all. The rate limit is
// counted from the conversation itself (every question of the user in the last hour, answered
// or not), so it holds across replicas and restarts.
func (w *Worker) questions(ctx context.Context, client *github.Client, subj *review.Subject, cfg *config.Repo, conv *pull.Conversation) ([]review.Question, []publication.Answer) {
	if cfg == nil || conv == nil || len(conv.Questions) == 0 {
		return nil, nil
	}
	log := zerolog.Ctx(ctx)
	asked := append([]pull.Asked(nil), conv.Questions...)
	sort.SliceStable(asked, func(i, j int) bool { return asked[i].CommentID < asked[j].CommentID })
	since := w.now().Add(-askWindow)
	perUser := map[string]int{}
	perms := map[string]bool{}
	var out []review.Question
	var answers []publication.Answer
	for _, q := range asked {
		user := strings.ToLower(q.User)
		if !q.Created.Before(since) {
			perUser[user]++
		}
		if conv.Answered[q.CommentID] || q.Bot {
			continue
		}
		reply := func(text string) {
			answers = append(answers, publication.Answer{CommentID: q.CommentID, InReplyTo: q.InReplyTo, Text: text})
		}
		can, ok := perms[user]
		if !ok {
			level, err := w.Fetch.Permission(ctx, client, subj.Owner, subj.Repo, q.User)
			if err != nil {
				log.Warn().Err(err).Msg("permission of a question's author unknown; question left for the next run")
				continue
			}
			can = pull.CanRead(level)
			perms[user] = can
		}
		switch {
		case !can:
			log.Debug().Str("user", q.User).Int64("comment_id", q.CommentID).Msg("question from a user without read access ignored")
		case !cfg.Ask.Enabled:
			reply("Questions are turned off for this repository (`ask.enabled: false` in .asdd.yml).")
		case perUser[user] > cfg.Ask.PerUserPerHour:
			reply(fmt.Sprintf("Not answered: at most %d questions per person per hour on a pull request (`ask.per_user_per_hour`). Ask again later.",
				cfg.Ask.PerUserPerHour))
		case len(out) == maxQuestionsPerRun:
			// Left for the next run; it is answered then.
		default:
			out = append(out, review.Question{CommentID: q.CommentID, InReplyTo: q.InReplyTo, Path: q.Path, Line: q.Line,
				User: q.User, Text: q.Question, Thread: q.Thread})
		}
	}
	return out, answers
}

// answersOf turns the review's answers to questions into replies.
func answersOf(d *review.Decision) []publication.Answer {
	var out []publication.Answer
	for _, a := range d.Answers {
		out = append(out, publication.Answer{CommentID: a.CommentID, InReplyTo: a.InReplyTo, Text: a.Text, Model: a.Model, Asker: a.User})
	}
	return out
}
