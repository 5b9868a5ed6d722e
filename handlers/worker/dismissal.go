package worker

import (
	"context"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/review"
	"github.com/rs/zerolog"
)

// dismissals checks every unanswered dismiss command: accepted ones become dismissals of the
// review, refused ones an answer that says why. A dismissal already in effect is not checked
// again, so re-reading the same commands costs nothing. Commands from bots and from people
// without write access get no answer (a debug line only): comment spam must not become App
// comments.
func (w *Worker) dismissals(ctx context.Context, client *github.Client, subj *review.Subject, cfg *config.Repo, conv *pull.Conversation) ([]review.Dismissal, []publication.Answer) {
	var out []review.Dismissal
	var answers []publication.Answer
	perms := map[string]string{}
	accepted := map[string]bool{}
	log := zerolog.Ctx(ctx)
	for _, cmd := range conv.Commands {
		if conv.Answered[cmd.CommentID] {
			continue
		}
		if cmd.Bot {
			log.Debug().Str("user", cmd.User).Int64("comment_id", cmd.CommentID).Msg("dismiss command from a bot ignored")
			continue
		}
		refuse := func(why string) {
			answers = append(answers, publication.Answer{CommentID: cmd.CommentID, InReplyTo: cmd.InReplyTo, Text: "Not dismissed: " + why})
		}
		perm, ok := perms[cmd.User]
		if !ok {
			level, err := w.Fetch.Permission(ctx, client, subj.Owner, subj.Repo, cmd.User)
			if err != nil {
				// Unknown is not write access; the command is read again on the next run.
				log.Warn().Err(err).Msg("permission of a dismiss command's author unknown; command left for the next run")
				continue
			}
			perm = level.GetPermission()
			perms[cmd.User] = perm
		}
		if !pull.CanWrite(&github.RepositoryPermissionLevel{Permission: &perm}) {
			log.Debug().Str("user", cmd.User).Str("permission", nonBlank(perm, "none")).Int64("comment_id", cmd.CommentID).
				Msg("dismiss command from a user without write access ignored")
			continue
		}
		id, reason := "", cmd.Args
		if cmd.InReplyTo != 0 {
			id = conv.Inline[cmd.InReplyTo]
		} else {
			first, rest, _ := strings.Cut(cmd.Args, " ")
			id, reason = first, strings.TrimSpace(rest)
		}
		reason = strings.TrimSpace(firstLineOf(reason))
		prior, known := conv.Prior.Finding(id)
		switch {
		case cmd.InReplyTo != 0 && id == "":
			refuse("reply to one of lensgate's inline finding comments, or write the command in the conversation with the finding's `LG-…` id.")
			continue
		case cmd.InReplyTo == 0 && !review.ValidFindingID(id):
			refuse("name the finding: `" + pull.DismissCommand(w.Command) + " LG-<id> <reason>` (the id is listed with each finding in the advisory comment).")
			continue
		case reason == "":
			refuse("give a one-sentence reason: `" + pull.DismissCommand(w.Command) + " <reason>`.")
			continue
		case !known:
			refuse("`" + id + "` is not a finding of this pull request.")
			continue
		case prior.Disposition == review.DispositionDismissed || accepted[id]:
			continue // already dismissed
		case authorMayNotDismiss(cfg, subj, cmd.User, prior):
			log.Info().Str("user", cmd.User).Str("finding", id).Str("lens", prior.Lens).
				Msg("dismissal of a blocking finding by the pull request's author refused (separation of duties)")
			refuse("the pull request's author cannot dismiss a blocking finding of a required lens; " +
				"another person with write access can (`dismissals.by_author` in .asdd.yml).")
			continue
		}
		if len(reason) > 300 {
			reason = reason[:300]
			reason = strings.ToValidUTF8(reason, "")
		}
		accepted[id] = true
		log.Info().Str("user", cmd.User).Str("finding", id).Str("lens", prior.Lens).Msg("finding dismissed")
		out = append(out, review.Dismissal{ID: id, Reason: reason, By: cmd.User})
		if cmd.InReplyTo == 0 {
			answers = append(answers, publication.Answer{CommentID: cmd.CommentID, Text: "Dismissed `" + id + "`: " + reason +
				". It no longer blocks the gate and is not posted again on this pull request."})
		}
	}
	return out, answers
}

// authorMayNotDismiss reports whether separation of duties refuses user's dismissal of f: user
// wrote the pull request, f blocks (critical or high) and its lens is required, and the policy
// does not let authors dismiss (dismissals.by_author). Without a configuration nothing is
// required, so nothing blocks.
func authorMayNotDismiss(cfg *config.Repo, subj *review.Subject, user string, f review.Finding) bool {
	if cfg == nil || cfg.Dismissals.ByAuthor || subj.Author == "" || !strings.EqualFold(user, subj.Author) || !f.Severity.Blocks() {
		return false
	}
	for _, l := range cfg.Policy.Lenses {
		if l.Name == f.Lens {
			return l.Required && l.Outcome != config.OutcomeAdvisory
		}
	}
	return false
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func nonBlank(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
