package pull

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/internal/digest"
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
	// Questions are the ask commands found: the conversation's, then the review threads'.
	Questions []Asked
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
		err := f.Do(ctx, fmt.Sprintf("list comments of %s/%s#%d page %d", owner, repo, number, page), func(ctx context.Context) error {
			var err error
			cs, resp, err = c.Issues.ListComments(ctx, owner, repo, number, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{Page: page, PerPage: PerPage}})
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
				issueCmds = append(issueCmds, Command{CommentID: ic.GetID(), User: login, Bot: IsBot(ic.GetUser()), Args: args})
			}
			if q, ok := issueAsk(ic, askOfDismiss(command)); ok {
				conv.Questions = append(conv.Questions, q)
			}
		}
		page = resp.NextPage
	}
	var reviewCmds []Command
	var reviewComments []*github.PullRequestComment
	var reviewQuestions []Asked
	for page := first(counts.reviewComments()); page != 0 && page <= maxCommentPages; {
		var cs []*github.PullRequestComment
		var resp *github.Response
		err := f.Do(ctx, fmt.Sprintf("list review comments of %s/%s#%d page %d", owner, repo, number, page), func(ctx context.Context) error {
			var err error
			cs, resp, err = c.PullRequests.ListComments(ctx, owner, repo, number, &github.PullRequestListCommentsOptions{ListOptions: github.ListOptions{Page: page, PerPage: PerPage}})
			return err
		})
		if err != nil {
			return nil, err
		}
		reviewComments = append(reviewComments, cs...)
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
				reviewCmds = append(reviewCmds, Command{CommentID: rc.GetID(), InReplyTo: rc.GetInReplyTo(), User: login, Bot: IsBot(rc.GetUser()), Args: args})
			}
			if q, ok := reviewAsk(rc, askOfDismiss(command)); ok {
				reviewQuestions = append(reviewQuestions, q)
			}
		}
		page = resp.NextPage
	}
	conv.Commands = append(issueCmds, reviewCmds...)
	fillThreads(reviewQuestions, reviewComments)
	conv.Questions = append(conv.Questions, reviewQuestions...)
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
	err := f.Do(ctx, fmt.Sprintf("compare %s...%s in %s/%s", digest.Short(from), digest.Short(head), owner, repo), func(ctx context.Context) error {
		var err error
		cmp, _, err = c.Repositories.CompareCommits(ctx, owner, repo, from, head, &github.ListOptions{PerPage: PerPage})
		return err
	})
	if IsNotFound(err) {
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

// PullCounts are a pull request's comment counts (GitHub's comments and review_comments).
type PullCounts struct {
	IssueComments, ReviewComments int
}

func (c *PullCounts) issueComments() int {
	if c == nil {
		return -1
	}
	return c.IssueComments
}

func (c *PullCounts) reviewComments() int {
	if c == nil {
		return -1
	}
	return c.ReviewComments
}
