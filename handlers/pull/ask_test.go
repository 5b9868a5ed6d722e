package pull

import (
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestParseAsk(t *testing.T) {
	cases := []struct {
		body, want string
		ok         bool
	}{
		{"/lensgate ask what is this?", "what is this?", true},
		{"\n  /lensgate ask why\nsecond line\n", "why\nsecond line", true},
		{"/lensgate ask", "", false},
		{"/lensgate ask   ", "", false},
		{"/lensgate asking", "", false},
		{"please /lensgate ask x", "", false},
		{"/lensgate dismiss LG-1 x", "", false},
	}
	for _, c := range cases {
		got, ok := ParseAsk(c.body, AskCommand("/lensgate review"))
		if got != c.want || ok != c.ok {
			t.Errorf("ParseAsk(%q) = %q, %v; want %q, %v", c.body, got, ok, c.want, c.ok)
		}
	}
	if AskCommand("/bot review") != "/bot ask" || askOfDismiss("/bot dismiss") != "/bot ask" {
		t.Fatal("the ask command does not follow the review command's first word")
	}
}

func TestCanRead(t *testing.T) {
	for perm, want := range map[string]bool{"admin": true, "maintain": true, "write": true, "triage": true, "read": true, "none": false, "": false} {
		if got := CanRead(&github.RepositoryPermissionLevel{Permission: github.String(perm)}); got != want {
			t.Errorf("CanRead(%q) = %v", perm, got)
		}
	}
	if CanRead(nil) {
		t.Error("CanRead(nil)")
	}
}

// TestFillThreads: a question in a review thread gets the thread's file and line and the
// comments before it, and nothing of other threads or later comments.
func TestFillThreads(t *testing.T) {
	c := func(id, reply int64, user, body string) *github.PullRequestComment {
		rc := &github.PullRequestComment{ID: github.Int64(id), Body: github.String(body), User: &github.User{Login: github.String(user)},
			Path: github.String("a.go"), Line: github.Int(7)}
		if reply != 0 {
			rc.InReplyTo = github.Int64(reply)
		}
		return rc
	}
	all := []*github.PullRequestComment{c(1, 0, "bot", "finding"), c(2, 1, "ann", "really?"), c(3, 0, "bob", "other thread"),
		c(4, 1, "ann", "/lensgate ask why?"), c(5, 1, "bob", "later")}
	qs := []Asked{{CommentID: 4, InReplyTo: 1, Question: "why?"}, {CommentID: 9, Question: "in the conversation"}}
	fillThreads(qs, all)
	if q := qs[0]; q.Path != "a.go" || q.Line != 7 || len(q.Thread) != 2 || q.Thread[0] != "bot: finding" || q.Thread[1] != "ann: really?" {
		t.Fatalf("thread question %+v", q)
	}
	if q := qs[1]; q.Path != "" || q.Thread != nil {
		t.Fatalf("conversation question %+v", q)
	}
}

// TestQuestionStartingAThread: a question that starts a review thread is answered in it, about
// its own lines; a reply keeps its thread's.
func TestQuestionStartingAThread(t *testing.T) {
	root := &github.PullRequestComment{ID: github.Int64(5), Body: github.String("/lensgate ask is this safe?"),
		User: &github.User{Login: github.String("ann")}, Path: github.String("b.go"), Line: github.Int(3)}
	q, ok := reviewAsk(root, "/lensgate ask")
	if !ok || q.InReplyTo != 5 || q.Path != "b.go" || q.Line != 3 || q.Question != "is this safe?" {
		t.Fatalf("question %+v", q)
	}
	reply := &github.PullRequestComment{ID: github.Int64(6), InReplyTo: github.Int64(5), Body: github.String("/lensgate ask and here?"),
		User: &github.User{Login: github.String("bob")}, Path: github.String("b.go"), OriginalLine: github.Int(4)}
	if q, ok := reviewAsk(reply, "/lensgate ask"); !ok || q.InReplyTo != 5 || q.Line != 4 {
		t.Fatalf("reply question %+v", q)
	}
}
