package publish

import (
	"context"
	"encoding/json"
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
	st.gh.ResetCalls()
	st.gh.Push(e2eRepo, e2ePR, e2eHead2, []byte(e2eDiff1), nil)
	st.synchronize(e2eHead2, "push-2")
	t.Logf("review of a push with 2 inline comments of the App: %d GitHub calls\n%s", st.gh.TotalCalls(), st.gh.CallSummary())

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

// TestVerificationAndCapsThroughTheApp: the fake model answers 30 findings on the two added
// lines of the change (10 warnings, 20 notes), plus a finding on a line the diff does not show,
// one on a file outside the change, one quoting code that is not there and one another lens of
// the policy reports too. The four are withdrawn: absent from the pull request, listed on the
// details record with why, counted in the receipt. Of the rest, the default cap places the 10
// warnings inline, most severe first; the notes never go inline; nothing is posted again on a
// re-run of the head.
func TestVerificationAndCapsThroughTheApp(t *testing.T) {
	model := &scriptedModel{}
	var fs []runtime.Finding
	for i := 0; i < 30; i++ {
		sev, line := "info", 2+i%2
		if i < 10 {
			sev = "medium"
		}
		fs = append(fs, runtime.Finding{Severity: sev, Path: "README.md", Line: line, Title: fmt.Sprintf("remark %d", i), Message: fmt.Sprintf("point %d", i)})
	}
	fs = append(fs,
		runtime.Finding{Severity: "high", Path: "README.md", Line: 40, Title: "off by one", Message: "a line the change does not have"},
		runtime.Finding{Severity: "high", Path: "main.go", Line: 1, Title: "leak", Message: "a file the change does not touch"},
		runtime.Finding{Severity: "high", Path: "README.md", Line: 2, Title: "secret printed", Message: "it calls `fmt.Println(token)` here"},
	)
	model.set(fs...)
	store := review.NewMemoryFeedback(nil)
	st := qualityStack(t, model, store)
	// A second lens whose model repeats the first lens's findings: the repeats are duplicates.
	st.gh.SetFile(e2eRepo, "master", ".asdd.yml", qualityConfig+"    style:\n      preset: fake\n      instruction: Style.\n")
	st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	d := st.decisions.last()
	checks := map[review.Check]int{}
	for _, w := range d.Verification.Withdrawn {
		checks[w.Check]++
	}
	// bugs: 2 location + 1 quote; style: the same 3, and its 30 others duplicate bugs's.
	if checks[review.CheckLocation] != 4 || checks[review.CheckQuote] != 2 || checks[review.CheckDuplicate] != 30 || len(d.Findings) != 30 {
		t.Fatalf("withdrawn by check %v, %d findings published", checks, len(d.Findings))
	}
	inline := inlineOf(st.gh, e2ePR)
	if len(inline) != 10 {
		t.Fatalf("%d inline comments, want the default cap of 10", len(inline))
	}
	for _, c := range inline {
		if !strings.Contains(c.Body, "**medium**") {
			t.Fatalf("a note or a withdrawn finding was placed inline: %q", c.Body)
		}
	}
	sticky := stickyBody(t, st.gh)
	for _, w := range []string{"off by one", "leak", "secret printed"} {
		if strings.Contains(sticky, w) {
			t.Fatalf("withdrawn finding %q shows in the advisory comment", w)
		}
	}
	if !strings.Contains(sticky, "<details><summary>") || strings.Contains(sticky, "over review.max_inline_comments") {
		t.Fatalf("advisory comment: the notes are not listed collapsed, or a warning was capped:\n%s", sticky)
	}
	gate := gateOf(st.gh, e2eHead1)
	rec, err := details.ParseRecord(gate.Text)
	if err != nil {
		t.Fatal(err)
	}
	// The record is bounded: it may list fewer than it counts, the most telling first.
	listed := map[string]bool{}
	for _, h := range rec.Held {
		if h.Kind != details.HeldWithdrawn || h.Reason == "" || h.Check == "" {
			t.Fatalf("held entry %+v", h)
		}
		listed[h.Title] = true
	}
	if rec.HeldTotal != 36 || !listed["off by one"] || !listed["leak"] || !listed["secret printed"] {
		t.Fatalf("details record lists %d of %d held: %+v", len(rec.Held), rec.HeldTotal, rec.Held)
	}
	// The receipt counts them in its coverage and lists them as dismissed by verification.
	pred := predicateOf(t, extractEnvelope(sticky))
	sources, _ := json.Marshal(pred["coverage"].(map[string]any)["sources"])
	if !strings.Contains(string(sources), "verification deterministic: 66 model finding(s) checked, 36 withdrawn (duplicate 30, location 4, quote 2)") {
		t.Fatalf("receipt coverage sources %s", sources)
	}
	dismissed := 0
	for _, f := range pred["declaration"].(map[string]any)["findings"].([]any) {
		if fm := f.(map[string]any); fm["disposition"] == "dismissed" && strings.HasPrefix(fmt.Sprint(fm["reason"]), "withdrawn on verification") {
			dismissed++
		}
	}
	if dismissed != 36 {
		t.Fatalf("the receipt lists %d withdrawn findings, want 36", dismissed)
	}
	counts, err := store.Quality(context.Background(), e2eRepo, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[review.QualityKind]int{}
	for _, c := range counts {
		got[c.Lens] = c.Counts
	}
	if got["bugs"][review.QualityPosted] != 10 || got["bugs"][review.QualityWithdrawn] != 3 || got["style"][review.QualityWithdrawn] != 33 {
		t.Fatalf("quality counts %+v", got)
	}

	// A re-run of the same head posts nothing again.
	st.send("pull_request", "d-reopened", edit(t, readPayload(t, "pull_request.opened.payload.json"), func(m map[string]any) { m["action"] = "reopened" }))
	st.wait("reopened")
	if n := len(st.gh.ReviewComments(e2eRepo, e2ePR)); n != 10 {
		t.Fatalf("%d inline comments after a re-run of the head", n)
	}
}

// TestResolvedThreadIsNeverPostedAgain: a person resolves the thread of an inline comment while
// the finding stays in the code. The next push reports it again: it is not posted again, the
// resolution is recorded as feedback (resolved without a fix) and counted.
func TestResolvedThreadIsNeverPostedAgain(t *testing.T) {
	model := &scriptedModel{}
	model.set(runtime.Finding{Severity: "medium", Path: "README.md", Line: 2, Title: "Command built from input", Message: "`exec(userInput)` runs input."})
	store := review.NewMemoryFeedback(nil)
	st := qualityStack(t, model, store)
	st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	posted := inlineOf(st.gh, e2ePR)
	if len(posted) != 1 {
		t.Fatalf("%d inline comments", len(posted))
	}
	var id int64
	for _, c := range posted {
		id = c.ID
	}
	if !st.gh.ResolveThread(e2eRepo, e2ePR, id) {
		t.Fatal("no thread to resolve")
	}
	st.gh.Push(e2eRepo, e2ePR, e2eHead2, []byte(e2eDiff1), nil)
	st.synchronize(e2eHead2, "push-2")
	if n := len(st.gh.ReviewComments(e2eRepo, e2ePR)); n != 1 {
		t.Fatalf("%d inline comments after the push, want the one resolved", n)
	}
	if d := st.decisions.last(); len(d.Findings) != 1 || !d.Findings[0].Open() {
		t.Fatalf("the finding is not open any more: %+v", d.Findings)
	}
	fbs, err := store.ListFeedback(context.Background(), e2eRepo, 10)
	if err != nil || len(fbs) != 1 || fbs[0].Kind != review.FeedbackResolved {
		t.Fatalf("feedback %+v %v", fbs, err)
	}
	counts, err := store.Quality(context.Background(), e2eRepo, time.Now().Add(-time.Hour))
	if err != nil || len(counts) != 1 || counts[0].Counts[review.QualityResolved] != 1 || counts[0].Counts[review.QualityPosted] != 1 {
		t.Fatalf("quality %+v %v", counts, err)
	}
}

// TestFixedFindingCountsAsAddressed: a posted finding that is gone after a push changing its
// file counts as fixed, and the repository's addressed rate for the lens is fixed / posted.
func TestFixedFindingCountsAsAddressed(t *testing.T) {
	model := &scriptedModel{}
	model.set(
		runtime.Finding{Severity: "medium", Path: "README.md", Line: 2, Title: "Command built from input", Message: "`exec(userInput)` runs input."},
		runtime.Finding{Severity: "medium", Path: "README.md", Line: 3, Title: "Unfinished work", Message: "The TODO `document flags` is left in."},
	)
	store := review.NewMemoryFeedback(nil)
	st := qualityStack(t, model, store)
	st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	if n := len(inlineOf(st.gh, e2ePR)); n != 2 {
		t.Fatalf("%d inline comments", n)
	}
	// The push rewrites the exec line; the model no longer reports it.
	fixedDiff := strings.Replace(e2eDiff1, "+Run it with exec(userInput).", "+Run it with run(quoted(userInput)).", 1)
	model.set(runtime.Finding{Severity: "medium", Path: "README.md", Line: 3, Title: "Unfinished work", Message: "The TODO `document flags` is left in."})
	st.gh.Push(e2eRepo, e2ePR, e2eHead2, []byte(fixedDiff), nil)
	st.synchronize(e2eHead2, "push-2")
	counts, err := store.Quality(context.Background(), e2eRepo, time.Now().Add(-time.Hour))
	if err != nil || len(counts) != 1 {
		t.Fatalf("quality %+v %v", counts, err)
	}
	c := counts[0]
	rate, ok := c.AddressedRate()
	if c.Counts[review.QualityPosted] != 2 || c.Counts[review.QualityFixed] != 1 || !ok || rate != 0.5 {
		t.Fatalf("counts %+v, addressed %v", c.Counts, rate)
	}
}
