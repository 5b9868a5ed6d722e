package pull

import (
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

// Asked is one `/lensgate ask <question>` comment. Its text and thread are untrusted.
type Asked struct {
	CommentID int64
	// InReplyTo is the inline comment whose thread the question was asked in (0 in the
	// conversation); Path and Line are the lines of that thread.
	InReplyTo int64
	Path      string
	Line      int
	User      string
	Bot       bool
	Question  string
	Created   time.Time
	// Thread are the earlier comments of the question's review thread, oldest first.
	Thread []string
}

// AskCommand is the ask command that belongs to a review command such as "/lensgate review":
// its first word followed by "ask".
func AskCommand(reviewCommand string) string {
	word, _, _ := strings.Cut(DismissCommand(reviewCommand), " ")
	return word + " ask"
}

// askOfDismiss is the ask command of the same first word as a dismiss command.
func askOfDismiss(dismiss string) string {
	word, _, _ := strings.Cut(dismiss, " ")
	return word + " ask"
}

// ParseAsk returns the question of an ask command: the text after the command on the body's
// first non-empty line and every line after it, and whether the body is an ask command with
// a question.
func ParseAsk(body, command string) (string, bool) {
	lines := strings.Split(body, "\n")
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		rest, ok := strings.CutPrefix(line, command+" ")
		if !ok {
			return "", false
		}
		q := strings.TrimSpace(rest + "\n" + strings.Join(lines[i+1:], "\n"))
		return q, q != ""
	}
	return "", false
}

// CanRead reports whether a permission lets its user read the repository, and so ask the App
// about its pull requests.
func CanRead(p *github.RepositoryPermissionLevel) bool {
	switch p.GetPermission() {
	case "admin", "maintain", "write", "triage", "read":
		return true
	}
	return false
}

// issueAsk is the question of a conversation comment, when it asks one.
func issueAsk(ic *github.IssueComment, command string) (Asked, bool) {
	q, ok := ParseAsk(ic.GetBody(), command)
	if !ok {
		return Asked{}, false
	}
	return Asked{CommentID: ic.GetID(), User: ic.GetUser().GetLogin(), Bot: IsBot(ic.GetUser()), Question: q,
		Created: ic.GetCreatedAt().Time}, true
}

// reviewAsk is the question of a review-thread comment, when it asks one. A question that
// starts a thread is answered in that thread, about its own lines.
func reviewAsk(rc *github.PullRequestComment, command string) (Asked, bool) {
	q, ok := ParseAsk(rc.GetBody(), command)
	if !ok {
		return Asked{}, false
	}
	a := Asked{CommentID: rc.GetID(), InReplyTo: rc.GetInReplyTo(), User: rc.GetUser().GetLogin(), Bot: IsBot(rc.GetUser()),
		Question: q, Created: rc.GetCreatedAt().Time, Path: rc.GetPath(), Line: rc.GetLine()}
	if a.Line == 0 {
		a.Line = rc.GetOriginalLine()
	}
	if a.InReplyTo == 0 {
		a.InReplyTo = a.CommentID
	}
	return a, true
}

// maxThreadComments bounds the earlier comments of a thread a question is asked with.
const maxThreadComments = 20

// fillThreads gives each question asked in a review thread the thread's lines (when its own
// comment did not carry them) and its earlier comments (everyone's, the App's included: all of
// it is data for the answer).
func fillThreads(qs []Asked, all []*github.PullRequestComment) {
	for i := range qs {
		q := &qs[i]
		if q.InReplyTo == 0 {
			continue
		}
		for _, c := range all {
			root := c.GetInReplyTo()
			if root == 0 {
				root = c.GetID()
			}
			if root != q.InReplyTo || c.GetID() >= q.CommentID {
				continue
			}
			if c.GetID() == q.InReplyTo && q.Path == "" {
				q.Path, q.Line = c.GetPath(), c.GetLine()
				if q.Line == 0 {
					q.Line = c.GetOriginalLine()
				}
			}
			q.Thread = append(q.Thread, c.GetUser().GetLogin()+": "+c.GetBody())
		}
		if n := len(q.Thread); n > maxThreadComments {
			q.Thread = q.Thread[n-maxThreadComments:]
		}
	}
}
