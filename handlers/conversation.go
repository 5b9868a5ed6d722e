package handlers

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review"
)

// Hidden markers the App writes and reads back from its own comments. Untrusted text is
// sanitised by the publisher so it can never contain them.
const (
	// MarkerAdvisory starts the App's sticky advisory comment.
	MarkerAdvisory = "<!-- lensgate:advisory -->"
	// MarkerMemo holds the review state (review.EncodeState) in the advisory comment.
	MarkerMemo = "<!-- lensgate:memo "
	// MarkerFingerprint carries the finding id in an inline comment.
	MarkerFingerprint = "<!-- lensgate:fp:"
	// MarkerAnswer carries the id of the command comment a reply answers.
	MarkerAnswer = "<!-- lensgate:answer:"
	// MarkerClosed carries the finding id whose thread a reply closes (fixed or dismissed).
	MarkerClosed = "<!-- lensgate:closed:"
	// MarkerEnd ends every hidden marker.
	MarkerEnd = " -->"
)

// HiddenValue returns the text between marker and MarkerEnd in body ("" when absent).
func HiddenValue(body, marker string) string {
	i := strings.Index(body, marker)
	if i < 0 {
		return ""
	}
	rest := body[i+len(marker):]
	j := strings.Index(rest, MarkerEnd)
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// Conversation is what the App reads of a pull request's comments before a review: the state
// its last review left, its own inline comments, and the dismiss commands people wrote.
type Conversation struct {
	// Prior is the state in the App's advisory comment (nil when none or unreadable).
	Prior *review.State
	// Inline maps the id of each of the App's inline comments to its finding id.
	Inline map[int64]string
	// Answered holds the command comments the App already replied to.
	Answered map[int64]bool
	// Commands are the dismiss commands found, oldest first.
	Commands []Command
}

// Command is one `/lensgate dismiss` comment.
type Command struct {
	CommentID int64
	// InReplyTo is the inline comment a review-comment reply answers (0 in the conversation).
	InReplyTo int64
	User      string
	Bot       bool
	// Args is the text after the command word.
	Args string
}

// DismissCommand is the dismiss command that belongs to a review command such as
// "/lensgate review": its first word followed by "dismiss".
func DismissCommand(reviewCommand string) string {
	word, _, _ := strings.Cut(strings.TrimSpace(reviewCommand), " ")
	if word == "" {
		word = "/lensgate"
	}
	return word + " dismiss"
}

// ApproveDelegateCommand is the command with which a maintainer approves asking another review
// bot for a pull request that needs approval (delegate.approval: external): the review
// command's first word followed by "approve-delegate".
func ApproveDelegateCommand(reviewCommand string) string {
	word, _, _ := strings.Cut(DismissCommand(reviewCommand), " ")
	return word + " approve-delegate"
}

// ParseDismiss returns the arguments of a dismiss command: the text after the command on the
// body's first non-empty line, and whether the body is one.
func ParseDismiss(body, command string) (string, bool) {
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if line == command {
			return "", true
		}
		if rest, ok := strings.CutPrefix(line, command+" "); ok {
			return strings.TrimSpace(rest), true
		}
		return "", false
	}
	return "", false
}

// ReadConversation lists the pull request's conversation and review comments once each.
//
// counts, when known, skips a list the pull request's comment counts say is empty.
func (f Fetcher) ReadConversation(ctx context.Context, c *github.Client, owner, repo string, number int, botLogin, command string, counts *PullCounts) (*Conversation, error) {
	conv := &Conversation{Inline: map[int64]string{}, Answered: map[int64]bool{}}
	var sticky *github.IssueComment
	var issueCmds []Command
	first := func(n int) int {
		if counts != nil && n == 0 {
			return 0 // nothing to list
		}
		return 1
	}
	for page := first(counts.issueComments()); page != 0 && page <= maxCommentPages; {
		var cs []*github.IssueComment
		var resp *github.Response
		err := f.do(ctx, fmt.Sprintf("list comments of %s/%s#%d page %d", owner, repo, number, page), func(ctx context.Context) error {
			var err error
			cs, resp, err = c.Issues.ListComments(ctx, owner, repo, number, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{Page: page, PerPage: perPage}})
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, ic := range cs {
			login := ic.GetUser().GetLogin()
			if botLogin != "" && login == botLogin {
				if strings.HasPrefix(ic.GetBody(), MarkerAdvisory) && (sticky == nil || ic.GetID() < sticky.GetID()) {
					sticky = ic
				}
				markAnswered(conv, ic.GetBody())
				continue
			}
			if args, ok := ParseDismiss(ic.GetBody(), command); ok {
				issueCmds = append(issueCmds, Command{CommentID: ic.GetID(), User: login, Bot: isBot(ic.GetUser()), Args: args})
			}
		}
		page = resp.NextPage
	}
	var reviewCmds []Command
	for page := first(counts.reviewComments()); page != 0 && page <= maxCommentPages; {
		var cs []*github.PullRequestComment
		var resp *github.Response
		err := f.do(ctx, fmt.Sprintf("list review comments of %s/%s#%d page %d", owner, repo, number, page), func(ctx context.Context) error {
			var err error
			cs, resp, err = c.PullRequests.ListComments(ctx, owner, repo, number, &github.PullRequestListCommentsOptions{ListOptions: github.ListOptions{Page: page, PerPage: perPage}})
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, rc := range cs {
			login := rc.GetUser().GetLogin()
			if botLogin != "" && login == botLogin {
				if fp := HiddenValue(rc.GetBody(), MarkerFingerprint); fp != "" && rc.GetInReplyTo() == 0 {
					conv.Inline[rc.GetID()] = fp
				}
				markAnswered(conv, rc.GetBody())
				continue
			}
			if args, ok := ParseDismiss(rc.GetBody(), command); ok {
				reviewCmds = append(reviewCmds, Command{CommentID: rc.GetID(), InReplyTo: rc.GetInReplyTo(), User: login, Bot: isBot(rc.GetUser()), Args: args})
			}
		}
		page = resp.NextPage
	}
	conv.Commands = append(issueCmds, reviewCmds...)
	if sticky != nil {
		if text := HiddenValue(sticky.GetBody(), MarkerMemo); text != "" {
			st, err := review.DecodeState(text)
			if err != nil {
				zerolog.Ctx(ctx).Warn().Err(err).Msg("review state in the advisory comment unreadable; reviewing the whole pull request")
			} else {
				conv.Prior = st
			}
		}
	}
	return conv, nil
}

// maxCommentPages bounds the comment pages read (100 comments each).
const maxCommentPages = 20

func markAnswered(conv *Conversation, body string) {
	for rest := body; ; {
		i := strings.Index(rest, MarkerAnswer)
		if i < 0 {
			return
		}
		rest = rest[i+len(MarkerAnswer):]
		var id int64
		if _, err := fmt.Sscanf(rest, "%d", &id); err == nil && id > 0 {
			conv.Answered[id] = true
		}
	}
}

// Compare reads the changes from an earlier head to head. It returns nil when from is not an
// ancestor of head (a force-push or a rebase): only "ahead" (and "identical") compares are
// increments.
func (f Fetcher) Compare(ctx context.Context, c *github.Client, owner, repo, from, head string) (*review.Increment, error) {
	var cmp *github.CommitsComparison
	err := f.do(ctx, fmt.Sprintf("compare %s...%s in %s/%s", shortRef(from), shortRef(head), owner, repo), func(ctx context.Context) error {
		var err error
		cmp, _, err = c.Repositories.CompareCommits(ctx, owner, repo, from, head, &github.ListOptions{PerPage: perPage})
		return err
	})
	if isNotFound(err) {
		return nil, nil // the earlier head is gone (force-pushed away and collected)
	}
	if err != nil {
		return nil, err
	}
	switch cmp.GetStatus() {
	case "ahead", "identical":
	default:
		return nil, nil
	}
	inc := &review.Increment{From: from}
	for _, cf := range cmp.Files {
		inc.Files = append(inc.Files, review.File{
			Path: cf.GetFilename(), PreviousPath: cf.GetPreviousFilename(), Status: cf.GetStatus(),
			Additions: cf.GetAdditions(), Deletions: cf.GetDeletions(), Patch: cf.GetPatch(),
			Binary: cf.Patch == nil && cf.GetChanges() == 0 && cf.GetStatus() != review.FileRemoved,
		})
	}
	// GitHub lists at most 300 files in a compare; a larger one is reviewed in full.
	if len(cmp.Files) >= maxCompareFiles {
		inc.Truncated = true
	}
	return inc, nil
}

// maxCompareFiles is the most files GitHub lists in one compare.
const maxCompareFiles = 300

func shortRef(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// Answer is a reply the publisher posts to a command comment: in its review thread when the
// command was a reply to an inline comment, in the conversation otherwise.
type Answer struct {
	CommentID int64
	// InReplyTo is the inline comment whose thread the reply goes to (0: the conversation).
	InReplyTo int64
	Text      string
}

// dismissals checks every unanswered dismiss command: accepted ones become dismissals of the
// review, refused ones an answer that says why. A dismissal already in effect is not checked
// again, so re-reading the same commands costs nothing. Commands from bots and from people
// without write access get no answer (a debug line only): comment spam must not become App
// comments.
func (w *Worker) dismissals(ctx context.Context, client *github.Client, subj *review.Subject, cfg *config.Repo, conv *Conversation) ([]review.Dismissal, []Answer) {
	var out []review.Dismissal
	var answers []Answer
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
			answers = append(answers, Answer{CommentID: cmd.CommentID, InReplyTo: cmd.InReplyTo, Text: "Not dismissed: " + why})
		}
		perm, ok := perms[cmd.User]
		if !ok {
			level, err := w.permission(ctx, client, subj.Owner, subj.Repo, cmd.User)
			if err != nil {
				// Unknown is not write access; the command is read again on the next run.
				log.Warn().Err(err).Msg("permission of a dismiss command's author unknown; command left for the next run")
				continue
			}
			perm = level.GetPermission()
			perms[cmd.User] = perm
		}
		if !canWrite(&github.RepositoryPermissionLevel{Permission: &perm}) {
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
			refuse("name the finding: `" + DismissCommand(w.Command) + " LG-<id> <reason>` (the id is listed with each finding in the advisory comment).")
			continue
		case reason == "":
			refuse("give a one-sentence reason: `" + DismissCommand(w.Command) + " <reason>`.")
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
			answers = append(answers, Answer{CommentID: cmd.CommentID, Text: "Dismissed `" + id + "`: " + reason +
				". It no longer blocks the gate and is not posted again on this pull request."})
		}
	}
	return out, answers
}

// permission reads a user's permission on the repository.
func (w *Worker) permission(ctx context.Context, client *github.Client, owner, repo, login string) (*github.RepositoryPermissionLevel, error) {
	var level *github.RepositoryPermissionLevel
	err := w.Fetch.do(ctx, "get permission of "+login, func(ctx context.Context) error {
		var err error
		level, _, err = client.Repositories.GetPermissionLevel(ctx, owner, repo, login)
		return err
	})
	return level, err
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
