package handlers_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/githubfake"
)

// reviewCommentPayload is a pull_request_review_comment "created" webhook for a reply by user,
// shaped from the issue_comment payload of a stored comment.
func reviewCommentPayload(t *testing.T, de *delegateEnv, user, userType, body string) []byte {
	t.Helper()
	c := de.gh.AddComment(fixtureRepo, fixturePR, "someone-else", "placeholder")
	var ev map[string]any
	if err := json.Unmarshal(de.gh.IssueCommentPayload(fixtureRepo, fixturePR, c.ID), &ev); err != nil {
		t.Fatal(err)
	}
	u := map[string]any{"login": user, "type": userType, "id": 4242}
	out := map[string]any{
		"action":       "created",
		"pull_request": map[string]any{"number": fixturePR},
		"repository":   ev["repository"],
		"installation": ev["installation"],
		"comment":      map[string]any{"id": c.ID + 1000, "body": body, "user": u, "in_reply_to_id": 1},
		"sender":       u,
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// commentPayload is the issue_comment webhook of a new comment by user, of the given account
// type ("User" or "Bot").
func commentPayload(de *delegateEnv, user, userType, body string) []byte {
	c := de.gh.AddComment(fixtureRepo, fixturePR, user, body)
	p := string(de.gh.IssueCommentPayload(fixtureRepo, fixturePR, c.ID))
	if userType == "Bot" {
		p = strings.ReplaceAll(p, `"login":"`+user+`","id"`, `"login":"`+user+`","type":"Bot","id"`)
		p = strings.ReplaceAll(p, `"login":"`+user+`","type":"User"`, `"login":"`+user+`","type":"Bot"`)
	}
	return []byte(p)
}

// A dismiss command is never the approval a delegated lens waits for, whoever writes it and
// wherever: the bot is not asked and the lens stays pending.
func TestDelegateApprovalNotByDismiss(t *testing.T) {
	cases := []struct {
		name  string
		setup func(de *delegateEnv)
		event string
		body  func(t *testing.T, de *delegateEnv) []byte
	}{
		{
			name:  "reader",
			event: "issue_comment",
			body: func(t *testing.T, de *delegateEnv) []byte {
				de.gh.SetPermission(fixtureRepo, "a-reader", "read")
				return commentPayload(de, "a-reader", "User", "/lensgate dismiss please")
			},
		},
		{
			name:  "review-comment reply",
			event: "pull_request_review_comment",
			body: func(t *testing.T, de *delegateEnv) []byte {
				return reviewCommentPayload(t, de, "Codertocat", "User", "/lensgate dismiss please")
			},
		},
		{
			name:  "bot",
			event: "issue_comment",
			body: func(t *testing.T, de *delegateEnv) []byte {
				de.gh.SetPermission(fixtureRepo, "spam-bot[bot]", "write")
				return commentPayload(de, "spam-bot[bot]", "Bot", "/lensgate dismiss please")
			},
		},
		{
			// The author of a fork's pull request, even with write access: a dismissal never
			// approves, and neither does the author's own approve-delegate command.
			name:  "fork author",
			setup: func(de *delegateEnv) { de.gh.SetHeadRepo(fixtureRepo, fixturePR, "someone/Hello-World") },
			event: "issue_comment",
			body: func(t *testing.T, de *delegateEnv) []byte {
				de.gh.SetPermission(fixtureRepo, "Codertocat", "write")
				return commentPayload(de, "Codertocat", "User", "/lensgate dismiss please")
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			de := newDelegateEnv(t, "", []githubfake.Answer{{Kind: githubfake.AnswerComment, After: time.Minute}})
			de.gh.SetPermission(fixtureRepo, "Codertocat", "read")
			if tc.setup != nil {
				tc.setup(de)
			}
			de.open()
			de.waitLens(fixtureHead, "pending", "a maintainer's approval is needed first")
			if code, body := de.send(tc.event, "d-attack", tc.body(t, de)); code >= 300 {
				t.Fatalf("%s: %d %q", tc.event, code, body)
			}
			de.handled(tc.event+".dismiss", 1)
			if tc.name == "fork author" {
				// The author has write access: the dismissal is reviewed, and must not ask.
				de.waitFor("the dismissal's review", func() bool { return de.reviewer.calls() >= 2 })
				if n := len(de.requests(fixtureHead)); n != 0 {
					t.Fatalf("%d requests to the bot after the fork author's dismissal, want none", n)
				}
				if code, body := de.send("issue_comment", "d-self-approve", commentPayload(de, "Codertocat", "User", "/lensgate approve-delegate")); code >= 300 {
					t.Fatalf("approve: %d %q", code, body)
				}
				de.handled("issue_comment.approve-delegate", 1)
			}
			de.drain()
			if n := len(de.requests(fixtureHead)); n != 0 {
				t.Fatalf("%d requests to the bot after %s, want none", n, tc.name)
			}
			if l, _ := de.pubs.lens("codex-review", fixtureHead); l.Outcome != "pending" || !strings.Contains(l.Cause, "approval is needed") {
				t.Fatalf("lens %s (%s) after %s, want pending for approval", l.Outcome, l.Cause, tc.name)
			}
		})
	}
}

// A maintainer's approve-delegate command asks the bot; the review command alone does not, and
// a dismiss from someone without write access gets neither a reply nor a review.
func TestDelegateApprovalByMaintainer(t *testing.T) {
	de := newDelegateEnv(t, "", []githubfake.Answer{{Kind: githubfake.AnswerComment, After: time.Minute}})
	de.gh.SetPermission(fixtureRepo, "Codertocat", "read")
	de.gh.SetPermission(fixtureRepo, "maintainer", "maintain")
	de.open()
	de.waitLens(fixtureHead, "pending", "/lensgate approve-delegate")
	calls := de.reviewer.calls()
	for i := range 3 {
		if code, body := de.send("issue_comment", fmt.Sprintf("d-spam-%d", i), commentPayload(de, "Codertocat", "User", "/lensgate dismiss LG-000000000000 spam")); code >= 300 {
			t.Fatalf("spam: %d %q", code, body)
		}
	}
	de.handled("issue_comment.dismiss", 3)
	if code, body := de.send("issue_comment", "d-review", commentPayload(de, "maintainer", "User", "/lensgate review")); code >= 300 {
		t.Fatalf("review: %d %q", code, body)
	}
	de.waitFor("the review command's review", func() bool { return de.reviewer.calls() > calls })
	de.waitLens(fixtureHead, "pending", "approval is needed")
	if n := len(de.requests(fixtureHead)); n != 0 {
		t.Fatalf("%d requests after a review command, want none", n)
	}
	if code, body := de.send("issue_comment", "d-approve", commentPayload(de, "maintainer", "User", "/lensgate approve-delegate")); code >= 300 {
		t.Fatalf("approve: %d %q", code, body)
	}
	de.waitLens(fixtureHead, "passed", "found no major issues")
	if n := len(de.requests(fixtureHead)); n != 1 {
		t.Fatalf("%d requests after approval, want 1", n)
	}
	if got := de.reviewer.calls() - calls; got != 3 { // review command, approval, the bot's answer
		t.Errorf("%d reviews after the commands, want 3 (spam dismissals queue none)", got)
	}
	for _, c := range de.gh.Comments(fixtureRepo, fixturePR) {
		if c.User == de.gh.BotLogin() && strings.Contains(c.Body, "Not dismissed") {
			t.Errorf("the App answered a dismissal without write access: %q", c.Body)
		}
	}
}
