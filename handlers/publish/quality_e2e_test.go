package publish

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
)

// scriptedModel is a model runtime in this process whose answer a test sets: the findings of
// every lens it is asked about.
type scriptedModel struct {
	mu       sync.Mutex
	findings []runtime.Finding
}

func (m *scriptedModel) Name() string { return "fake" }

func (m *scriptedModel) set(fs ...runtime.Finding) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.findings = fs
}

func (m *scriptedModel) Review(_ context.Context, req *runtime.Request) (*runtime.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	res := &runtime.Result{Model: "fake-model"}
	for _, l := range req.Lenses {
		res.Lenses = append(res.Lenses, runtime.LensReport{Lens: l.Name, Verdict: runtime.VerdictConcerns, Summary: "looked",
			Findings: append([]runtime.Finding(nil), m.findings...)})
	}
	return res, nil
}

// qualityConfig adopts one model lens, bugs, reviewed by the scripted model.
const qualityConfig = `runtime: fake
agent_review:
  version: 1
  aggregation: all-required
  required: [bugs]
  agents:
    bugs:
      preset: fake
      instruction: Find bugs.
`

func qualityStack(t *testing.T, model *scriptedModel, store review.FeedbackStore) *stack {
	t.Helper()
	p := review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(model), WorkRoot: t.TempDir(), Feedback: store})
	st := newStackWith(t, p, e2eDiff1, func(o *Options) { o.Feedback = store })
	st.gh.SetFile(e2eRepo, "master", ".asdd.yml", qualityConfig)
	st.gh.SetLabels(e2eRepo, e2ePR, "feature")
	st.gh.SetPullBody(e2eRepo, e2ePR, "Adds a run line.\n\n- [x] Authored by a human\n")
	return st
}

// inlineOf maps the fingerprint of each of the App's inline comments on pull request number to
// the comment.
func inlineOf(gh *githubfake.Server, number int) map[string]githubfake.ReviewComment {
	out := map[string]githubfake.ReviewComment{}
	for _, c := range gh.ReviewComments(e2eRepo, number) {
		if fp := pull.HiddenValue(c.Body, pull.MarkerFingerprint); fp != "" && c.User == gh.BotLogin() {
			out[fp] = c
		}
	}
	return out
}

// openPR opens pull request number of the same repository with head and diff, and reviews it.
func (st *stack) openPR(number int, head, diff string) {
	st.t.Helper()
	payload := edit(st.t, readPayload(st.t, "pull_request.opened.payload.json"), func(m map[string]any) {
		m["number"] = number
		pr := m["pull_request"].(map[string]any)
		pr["number"], pr["id"], pr["node_id"] = number, 9000+number, fmt.Sprintf("PR_fake%d", number)
		pr["head"].(map[string]any)["sha"] = head
		pr["body"] = "Another change.\n\n- [x] Authored by a human\n"
		pr["labels"] = []any{map[string]any{"name": "feature", "id": 1, "node_id": "L_1", "color": "fff", "default": false}}
	})
	if _, _, err := st.gh.AddFromPullRequestEvent(payload, []byte(diff)); err != nil {
		st.t.Fatal(err)
	}
	st.send("pull_request", fmt.Sprintf("open-%d", number), payload)
	st.wait(fmt.Sprintf("open-%d", number))
}

// TestFeedbackSuppressesOnTheNextPullRequest: through the server stack, a finding dismissed
// on one pull request and a finding voted down (👎 on its inline comment, read when that pull
// request is reviewed again) are not published on the next pull request of the repository that
// reports them again; they are counted as suppressed and listed on its details record, and
// the quality figures count what happened.
func TestFeedbackSuppressesOnTheNextPullRequest(t *testing.T) {
	model := &scriptedModel{}
	model.set(
		runtime.Finding{Severity: "medium", Path: "README.md", Line: 2, Title: "Command built from input", Message: "`exec(userInput)` runs what the reader typed."},
		runtime.Finding{Severity: "medium", Path: "README.md", Line: 3, Title: "Unfinished work", Message: "The TODO `document flags` is left in."},
	)
	store := review.NewMemoryFeedback(nil)
	st := qualityStack(t, model, store)
	st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	first := st.decisions.last()
	if len(first.Findings) != 2 || len(first.Verification.Withdrawn) != 0 {
		t.Fatalf("first review: %+v, withdrawn %+v", first.Findings, first.Verification.Withdrawn)
	}
	var execID, todoID string
	for _, f := range first.Findings {
		if f.Line == 2 {
			execID = f.ID
		} else {
			todoID = f.ID
		}
	}
	posted := inlineOf(st.gh, e2ePR)
	if len(posted) != 2 {
		t.Fatalf("%d inline comments, want 2", len(posted))
	}

	// A maintainer dismisses one finding in its thread; someone votes the other down.
	st.gh.SetPermission(e2eRepo, "maintainer", "write")
	reply := st.gh.AddReviewCommentReply(e2eRepo, e2ePR, posted[execID].ID, "maintainer", "/lensgate dismiss the input is a constant here")
	st.reviewCommentReply("dismiss", reply, "maintainer", "User")
	st.gh.AddReaction(e2eRepo, fmt.Sprintf("review_comment/%d", posted[todoID].ID), "bob", "-1", time.Now())
	st.gh.AddReaction(e2eRepo, fmt.Sprintf("review_comment/%d", posted[todoID].ID), "carol", "+1", time.Now())
	// The reactions are read when the pull request is reviewed again.
	st.gh.Push(e2eRepo, e2ePR, e2eHead2, []byte(e2eDiff1), nil)
	st.synchronize(e2eHead2, "push-2")

	fbs, err := store.ListFeedback(context.Background(), e2eRepo, 10)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[review.FeedbackKind]string{}
	for _, fb := range fbs {
		kinds[fb.Kind] = fb.FindingID
	}
	if kinds[review.FeedbackDismissed] != execID || kinds[review.FeedbackThumbsDown] != todoID {
		t.Fatalf("feedback kept: %+v", fbs)
	}

	// The next pull request of the repository reports both again: neither is published.
	const head3 = "4444444444444444444444444444444444444444"
	st.openPR(3, head3, e2eDiff1)
	d := st.decisions.last()
	if len(d.Verification.Suppressed) != 2 || len(d.Findings) != 0 {
		t.Fatalf("next pull request: suppressed %+v, findings %+v", d.Verification.Suppressed, d.Findings)
	}
	if n := len(st.gh.ReviewComments(e2eRepo, 3)); n != 0 {
		t.Fatalf("%d inline comments on the next pull request", n)
	}
	for _, c := range st.gh.Comments(e2eRepo, 3) {
		if strings.Contains(c.Body, "Command built from input") || strings.Contains(c.Body, "Unfinished work") || strings.Contains(c.Body, "suppressed") {
			t.Fatalf("a suppressed finding shows on the pull request: %q", c.Body)
		}
	}
	gate := gateOf(st.gh, head3)
	rec, err := details.ParseRecord(gate.Text)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for _, h := range rec.Held {
		held[h.ID] = h.Kind + ": " + h.Reason
	}
	if !strings.Contains(held[execID], "suppressed: the same finding was dismissed on #2") ||
		!strings.Contains(held[todoID], "suppressed: the same finding was voted down on #2") {
		t.Fatalf("details record held %+v", rec.Held)
	}
	counts, err := store.Quality(context.Background(), e2eRepo, time.Now().Add(-time.Hour))
	if err != nil || len(counts) != 1 {
		t.Fatalf("quality %+v %v", counts, err)
	}
	c := counts[0].Counts
	if c[review.QualityPosted] != 2 || c[review.QualityDismissed] != 1 || c[review.QualityThumbsDown] != 1 || c[review.QualityThumbsUp] != 1 ||
		c[review.QualitySuppressed] != 2 {
		t.Fatalf("quality counts %+v", c)
	}
}
