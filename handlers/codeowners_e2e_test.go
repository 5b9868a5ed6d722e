package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/publish"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// ownerPolicy protects README.md (the fixture pull request's one changed file) and requires a
// code owner's approval of it; its only required lens is one the builtin runtime passes.
const ownerPolicy = `protected_paths: ["README.md"]
protected_paths_require: %s
agent_review:
  version: 1
  required: [security]
  agents:
    security:
      preset: security
      instruction: Look for secrets and unsafe changes.
      publication: check
`

// ownerCodeOwners names the team @octo/docs and the user alice as owners of README.md, and
// the pull request's own author, whose approval of their own change must never count.
const ownerCodeOwners = "# owners\n* @octo/everyone\nREADME.md @octo/docs @alice @Codertocat\nbad[line @x\n"

// ownerNeed is the gate's reason while no owner approved: the author, an owner too, is not named.
const ownerNeed = "needs an approving review from a code owner of README.md: @octo/docs @alice\n"

func newOwnerEnv(t *testing.T, require string, files map[string]string) *delegateEnv {
	t.Helper()
	if files == nil {
		files = map[string]string{".github/CODEOWNERS": ownerCodeOwners}
	}
	files[".asdd.yml"] = fmt.Sprintf(ownerPolicy, require)
	de := newDelegateEnvWith(t, delegateSetup{files: files})
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		de.gh.SetPermission(fixtureRepo, u, "write")
	}
	de.gh.SetPermission(fixtureRepo, "erin", "read")
	de.gh.SetTeamMember("octo", "docs", "carol", "active")
	de.gh.SetTeamMember("octo", "docs", "dave", "pending")
	de.gh.SetTeamMember("octo", "docs", "erin", "active")
	return de
}

// published counts the publications of the fixture head so far.
func (de *delegateEnv) published() int {
	de.pubs.mu.Lock()
	defer de.pubs.mu.Unlock()
	n := 0
	for _, p := range de.pubs.pubs {
		if p.Subject != nil && p.Subject.HeadSHA == fixtureHead && p.Decision != nil {
			n++
		}
	}
	return n
}

// gate returns the gate check run of the fixture head, with the zero-width space the publisher
// puts after each @ (so that no one is mentioned) taken out.
func (de *delegateEnv) gate() githubfake.CheckRun {
	for _, c := range de.gh.CheckRuns(fixtureRepo, fixtureHead) {
		if c.Name == publish.DefaultCheckName {
			c.Summary = strings.ReplaceAll(c.Summary, "@\u200b", "@")
			c.Text = strings.ReplaceAll(c.Text, "@\u200b", "@")
			return c
		}
	}
	return githubfake.CheckRun{}
}

// review stores a review and sends its pull_request_review webhook with action ("dismissed"
// dismisses it first); with republish it waits until the App published the gate again.
func (de *delegateEnv) review(user, state, commit, action string, republish bool) int64 {
	de.t.Helper()
	before := de.published()
	event := map[string]string{"APPROVED": "APPROVE", "CHANGES_REQUESTED": "REQUEST_CHANGES", "COMMENTED": "COMMENT"}[state]
	rv := de.gh.AddReview(fixtureRepo, fixturePR, githubfake.Review{User: user, State: state, Event: event, CommitID: commit})
	if action == "dismissed" {
		de.gh.DismissReview(fixtureRepo, fixturePR, rv.ID)
	}
	code, body := de.send("pull_request_review", fmt.Sprintf("rv-%s-%d", user, rv.ID), de.gh.ReviewEventPayload(fixtureRepo, fixturePR, rv.ID, action))
	if code != http.StatusAccepted && code != http.StatusOK {
		de.t.Fatalf("review webhook: %d %q", code, body)
	}
	if republish {
		de.waitFor("gate published again after "+user+"'s review", func() bool { return de.published() > before })
	}
	return rv.ID
}

// openPending opens the pull request and waits for the gate to wait on the owners.
func (de *delegateEnv) openPending() {
	de.t.Helper()
	de.open()
	de.waitFor("gate action_required", func() bool { return de.gateConclusion(fixtureHead) == "action_required" })
	g := de.gate()
	if !strings.Contains(g.Summary+g.Text, ownerNeed) {
		de.t.Fatalf("gate check does not say what is needed of whom:\n%s\n%s", g.Summary, g.Text)
	}
}

// The gate waits for a code owner's approval of the head, re-evaluated on each pull request
// review event, whoever reviews: through webhook, queue, worker, publisher and the fake GitHub.
func TestCodeOwnerApprovalGate(t *testing.T) {
	other := strings.Repeat("e", 40)
	cases := []struct {
		name    string
		reviews func(de *delegateEnv)
		want    string
	}{
		{"user owner approves", func(de *delegateEnv) { de.review("alice", "APPROVED", fixtureHead, "submitted", true) }, "success"},
		{"team owner approves", func(de *delegateEnv) { de.review("carol", "APPROVED", fixtureHead, "submitted", true) }, "success"},
		{"non-owner approves", func(de *delegateEnv) { de.review("bob", "APPROVED", fixtureHead, "submitted", true) }, "action_required"},
		{"pending team member approves", func(de *delegateEnv) { de.review("dave", "APPROVED", fixtureHead, "submitted", true) }, "action_required"},
		{"team member without write access approves", func(de *delegateEnv) { de.review("erin", "APPROVED", fixtureHead, "submitted", true) }, "action_required"},
		{"author approves own change", func(de *delegateEnv) { de.review("Codertocat", "APPROVED", fixtureHead, "submitted", true) }, "action_required"},
		{"owner approved an older head", func(de *delegateEnv) { de.review("alice", "APPROVED", other, "submitted", true) }, "action_required"},
		{"owner's approval dismissed", func(de *delegateEnv) {
			de.review("alice", "APPROVED", fixtureHead, "submitted", true)
			de.waitFor("gate success", func() bool { return de.gateConclusion(fixtureHead) == "success" })
			de.review("alice", "APPROVED", fixtureHead, "dismissed", true)
		}, "action_required"},
		{"owner requests changes after approving", func(de *delegateEnv) {
			de.review("alice", "APPROVED", fixtureHead, "submitted", true)
			de.waitFor("gate success", func() bool { return de.gateConclusion(fixtureHead) == "success" })
			de.review("alice", "CHANGES_REQUESTED", fixtureHead, "submitted", true)
		}, "action_required"},
		{"owner comments after approving", func(de *delegateEnv) {
			de.review("alice", "APPROVED", fixtureHead, "submitted", true)
			de.review("alice", "COMMENTED", fixtureHead, "submitted", true)
		}, "success"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			de := newOwnerEnv(t, "code_owner_approval", nil)
			de.openPending()
			c.reviews(de)
			de.waitFor("gate "+c.want, func() bool { return de.gateConclusion(fixtureHead) == c.want })
			if c.want == "action_required" && !strings.Contains(de.gate().Summary+de.gate().Text, ownerNeed) {
				t.Fatalf("gate no longer says what is needed: %s", de.gate().Summary)
			}
		})
	}
}

// Without a CODEOWNERS file on the base branch, or with one only in the pull request, nothing
// can approve: the gate says so and stays pending. The pull request's own copy is never read.
func TestCodeOwnerApprovalWithoutBaseCodeOwners(t *testing.T) {
	de := newOwnerEnv(t, "code_owner_approval", map[string]string{})
	de.open()
	de.waitFor("gate action_required", func() bool { return de.gateConclusion(fixtureHead) == "action_required" })
	de.review("alice", "APPROVED", fixtureHead, "submitted", true)
	g := de.gate()
	if g.Conclusion != "action_required" || !strings.Contains(g.Summary+g.Text, "the base branch has no CODEOWNERS file") {
		t.Fatalf("gate %s: %s", g.Conclusion, g.Summary+g.Text)
	}
}

// With protected paths advisory (the default), reviews change nothing: the gate passes without
// any approval, a review event does not review again, and the note says it is advisory.
func TestCodeOwnerApprovalNotRequired(t *testing.T) {
	de := newOwnerEnv(t, "none", nil)
	de.open()
	de.waitFor("gate success", func() bool { return de.gateConclusion(fixtureHead) == "success" && de.published() == 1 })
	calls := de.reviewer.calls()
	before := de.published()
	de.review("bob", "APPROVED", fixtureHead, "submitted", false)
	de.handled("pull_request_review.submitted", 1)
	de.drain()
	if de.reviewer.calls() != calls || de.published() != before {
		t.Fatalf("a review event re-ran the review (%d -> %d calls, %d -> %d publications) with no approval required",
			calls, de.reviewer.calls(), before, de.published())
	}
	l, _ := de.pubs.lens("security", fixtureHead)
	if len(l.Findings) != 1 || !strings.Contains(l.Findings[0].Body, "Advisory") {
		t.Fatalf("protected-path note %+v", l.Findings)
	}
}

// An owner's approval re-evaluates the gate without sending the model lenses to the model
// again: their results of the same head are reused.
func TestCodeOwnerApprovalDoesNotRebillModelLenses(t *testing.T) {
	srv, calls := countingModel(t)
	rt, err := openai.New(openai.Options{BaseURL: srv.URL, Token: srv.Token, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg := "models:\n  reviewer: m\nprotected_paths: [\"README.md\"]\nprotected_paths_require: code_owner_approval\n" +
		"agent_review:\n  version: 1\n  required: [model-review]\n  agents:\n    model-review:\n      preset: openai\n      instruction: Review correctness.\n"
	de := newDelegateEnvWith(t, delegateSetup{files: map[string]string{".asdd.yml": cfg, "CODEOWNERS": "README.md @alice\n"}, runtimes: []runtime.Runtime{rt}})
	de.gh.SetPermission(fixtureRepo, "alice", "write")
	de.open()
	de.waitFor("gate waiting for the owner", func() bool {
		l, ok := de.pubs.lens("model-review", fixtureHead)
		return ok && l.Outcome == review.OutcomePassed && de.gateConclusion(fixtureHead) == "action_required"
	})
	before := calls()
	de.review("alice", "APPROVED", fixtureHead, "submitted", true)
	de.waitFor("gate success", func() bool { return de.gateConclusion(fixtureHead) == "success" })
	if n := calls(); before == 0 || n != before {
		t.Fatalf("model calls: %d for the review, %d more after the approval, want 0 more", before, n-before)
	}
}
