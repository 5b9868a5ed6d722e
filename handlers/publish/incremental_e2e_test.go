package publish

import (
	"context"
	"crypto/ed25519"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/worker"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// fakeModel is an OpenAI-compatible chat completions endpoint. Its security lens flags every
// added line containing BAD( in the diff it is sent; every other lens finds nothing. It counts
// the prompt tokens of every call (bytes / 4, the estimate the pipeline budgets with) and
// reports them as usage.
type fakeModel struct {
	mu      sync.Mutex
	calls   int
	tokens  int
	perCall []int
	srv     *modelfake.Server
}

var (
	reLens    = regexp.MustCompile(`(?m)^LENS ([a-z0-9_-]+):$`)
	reDataEnd = regexp.MustCompile(`(?m)^LENSGATE_UNTRUSTED_DATA_[0-9a-f]+$`)
)

func newFakeModel(t *testing.T) *fakeModel {
	m := &fakeModel{}
	m.srv = modelfake.New("test-token", func(req modelfake.Request) modelfake.Reply {
		system, user := req.System, req.User
		tokens := (len(system) + len(user) + 3) / 4
		m.mu.Lock()
		m.calls++
		m.tokens += tokens
		m.perCall = append(m.perCall, tokens)
		m.mu.Unlock()
		d := user
		if i := strings.Index(d, "\n## Diff\n"); i >= 0 {
			d = d[i+len("\n## Diff\n"):]
		}
		if loc := reDataEnd.FindStringIndex(d); loc != nil {
			d = d[:loc[0]]
		}
		type finding struct {
			Severity string `json:"severity"`
			Title    string `json:"title"`
			Message  string `json:"message"`
			Path     string `json:"path"`
		}
		var bad []finding
		for _, f := range diff.Parse([]byte(d)) {
			f.Walk(func(l diff.Line) bool {
				if l.Kind == '+' && strings.Contains(string(l.Text), "BAD(") {
					bad = append(bad, finding{"block", "unsafe call", "BAD call: " + strings.TrimSpace(string(l.Text)), fmt.Sprintf("%s:%d", f.Path(), l.New)})
				}
				return true
			})
		}
		type lens struct {
			Lens     string    `json:"lens"`
			Verdict  string    `json:"verdict"`
			Summary  string    `json:"summary"`
			Findings []finding `json:"findings"`
		}
		ans := struct {
			Schema         string `json:"schema"`
			Recommendation string `json:"recommendation"`
			Summary        string `json:"summary"`
			Lenses         []lens `json:"lenses"`
		}{Schema: "asdd/review/v0.1", Recommendation: "comment", Summary: "reviewed"}
		for _, name := range reLens.FindAllStringSubmatch(system, -1) {
			l := lens{Lens: name[1], Verdict: "ok", Summary: "nothing found", Findings: []finding{}}
			if name[1] == "security" && len(bad) > 0 {
				l.Verdict, l.Summary, l.Findings = "request-changes", "unsafe calls", bad
				ans.Recommendation = "request-changes"
			}
			ans.Lenses = append(ans.Lenses, l)
		}
		content, _ := json.Marshal(ans)
		return modelfake.Reply{Content: string(content), PromptTokens: tokens, CompletionTokens: 20}
	})
	t.Cleanup(m.srv.Close)
	return m
}

func (m *fakeModel) counts() (calls, tokens int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, m.tokens
}

// modelPipeline is the real review pipeline with the openai runtime against the fake model.
func modelPipeline(t *testing.T, m *fakeModel) *review.Pipeline {
	t.Helper()
	rt, err := openai.New(openai.Options{BaseURL: m.srv.URL, Token: m.srv.Token, Model: "test-model", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt), Logger: zerolog.Nop()})
}

// fullEveryTime hides the last review from the pipeline: every push is reviewed whole.
type fullEveryTime struct{ next worker.Reviewer }

func (f fullEveryTime) Review(ctx context.Context, s *review.Subject, c *config.Repo) (*review.Decision, error) {
	s.Prior, s.Since, s.Dismissals = nil, nil, nil
	return f.next.Review(ctx, s, c)
}

func headSHA(n int) string {
	sum := sha1.Sum([]byte(fmt.Sprint("head ", n)))
	return hex.EncodeToString(sum[:])
}

// prFiles renders the pull request's ten files (each added, 60 lines); bad says which file
// has a BAD( line and extra adds a changed line to a file.
func prDiff(bad map[int]bool, extra map[int]string) string {
	var b strings.Builder
	for i := 0; i < 10; i++ {
		var lines []string
		for k := 1; k <= 60; k++ {
			switch {
			case k == 30 && bad[i]:
				lines = append(lines, fmt.Sprintf("	result := BAD(input%d) // line %d", i, k))
			default:
				lines = append(lines, fmt.Sprintf("	value%d := compute(%d, %d) // an ordinary line of file %d", k, i, k, i))
			}
		}
		if e := extra[i]; e != "" {
			lines = append(lines, e)
		}
		path := fmt.Sprintf("pkg/file%d.go", i)
		fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, len(lines))
		for _, l := range lines {
			b.WriteString("+" + l + "\n")
		}
	}
	return b.String()
}

// modelConfig turns the walkthrough off: these tests count and measure the lens calls.
const modelConfig = "runtime: openai\nmodels:\n  reviewer: test-model\nwalkthrough:\n  enabled: false\n"

// adopt gives the repository an .asdd.yml that reviews with the model, and the pull request
// what the adopted intake asks for: one lane label and the authorship box ticked.
func adopt(st *stack) {
	st.gh.SetFile(e2eRepo, "master", ".asdd.yml", modelConfig)
	st.gh.SetLabels(e2eRepo, e2ePR, "feature")
	st.gh.SetPullBody(e2eRepo, e2ePR, "Ten files.\n\n- [x] Authored by a human\n")
}

func (st *stack) synchronize(head, delivery string) {
	st.t.Helper()
	sync := edit(st.t, readPayload(st.t, "pull_request.synchronize.payload.json"), func(m map[string]any) {
		m["after"] = head
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = head
	})
	st.send("pull_request", delivery, sync)
	st.wait(delivery)
}

// reviewCommentReply delivers a pull_request_review_comment created by login, replying to the
// inline comment parent (the fake holds the reply already).
func (st *stack) reviewCommentReply(delivery string, c githubfake.ReviewComment, login, userType string) {
	st.t.Helper()
	st.sendReviewCommentReply(delivery, c, login, userType)
	st.wait(delivery)
}

// sendReviewCommentReply delivers the reply's event without waiting for a publication.
func (st *stack) sendReviewCommentReply(delivery string, c githubfake.ReviewComment, login, userType string) {
	st.t.Helper()
	var opened map[string]any
	if err := json.Unmarshal(readPayload(st.t, "pull_request.opened.payload.json"), &opened); err != nil {
		st.t.Fatal(err)
	}
	pr := opened["pull_request"].(map[string]any)
	pr["head"].(map[string]any)["sha"] = st.gh.PullRequest(e2eRepo, e2ePR).HeadSHA
	payload := map[string]any{
		"action": "created", "pull_request": pr, "repository": opened["repository"],
		"sender":       map[string]any{"login": login, "type": userType, "id": 7},
		"installation": opened["installation"],
		"comment": map[string]any{"id": c.ID, "body": c.Body, "in_reply_to_id": c.InReplyTo, "path": c.Path,
			"user": map[string]any{"login": login, "type": userType, "id": 7}},
	}
	b, err := json.Marshal(payload)
	if err != nil {
		st.t.Fatal(err)
	}
	st.send("pull_request_review_comment", delivery, b)
}

// conversationCommand adds a conversation comment and delivers its issue_comment event (the
// fixture's number, body and author changed in memory).
func (st *stack) conversationCommand(delivery, login, userType, body string) githubfake.Comment {
	st.t.Helper()
	c := st.sendConversationCommand(delivery, login, userType, body)
	st.wait(delivery)
	return c
}

// sendConversationCommand delivers the command's event without waiting for a publication.
func (st *stack) sendConversationCommand(delivery, login, userType, body string) githubfake.Comment {
	st.t.Helper()
	c := st.gh.AddComment(e2eRepo, e2ePR, login, body)
	payload := edit(st.t, readPayload(st.t, "issue_comment.created.on-pull-request.with-installation.payload.json"), func(m map[string]any) {
		m["issue"].(map[string]any)["number"] = e2ePR
		cm := m["comment"].(map[string]any)
		cm["id"], cm["body"] = c.ID, body
		cm["user"].(map[string]any)["login"], cm["user"].(map[string]any)["type"] = login, userType
		m["sender"].(map[string]any)["login"], m["sender"].(map[string]any)["type"] = login, userType
	})
	st.send("issue_comment", delivery, payload)
	return c
}

// stickyState decodes the review state in the App's advisory comment.
func stickyState(t *testing.T, gh *githubfake.Server) *review.State {
	t.Helper()
	cs := botComments(gh)
	for _, c := range cs {
		if strings.HasPrefix(c.Body, markerAdvisory) {
			st, err := review.DecodeState(pull.HiddenValue(c.Body, pull.MarkerMemo))
			if err != nil {
				t.Fatalf("review state: %v", err)
			}
			return st
		}
	}
	t.Fatal("no advisory comment")
	return nil
}

func stickyBody(t *testing.T, gh *githubfake.Server) string {
	t.Helper()
	for _, c := range botComments(gh) {
		if strings.HasPrefix(c.Body, markerAdvisory) {
			return c.Body
		}
	}
	t.Fatal("no advisory comment")
	return ""
}

func openIDs(st *review.State) []string {
	var out []string
	for _, f := range st.Findings {
		if f.Open() {
			out = append(out, f.ID)
		}
	}
	slices.Sort(out)
	return out
}

// tenPushes opens the pull request and pushes ten times: push k touches file k-1, fixing
// its BAD( line when it has one and adding one otherwise. It returns the heads in order.
func tenPushes(st *stack) []string {
	bad := map[int]bool{0: true, 2: true, 4: true, 6: true, 8: true}
	extra := map[int]string{}
	st.send("pull_request", "opened", readPayload(st.t, "pull_request.opened.payload.json"))
	st.wait("opened")
	heads := []string{e2eHead1}
	for k := 1; k <= 10; k++ {
		i := k - 1
		if bad[i] {
			delete(bad, i)
			extra[i] = fmt.Sprintf("	_ = safe(input%d) // fixed in push %d", i, k)
		} else {
			bad[i] = true
		}
		head := headSHA(k)
		st.gh.Push(e2eRepo, e2ePR, head, []byte(prDiff(bad, extra)), nil)
		st.synchronize(head, fmt.Sprint("push-", k))
		heads = append(heads, head)
	}
	return heads
}

func TestIncrementalReviewOfTenPushes(t *testing.T) {
	initial := prDiff(map[int]bool{0: true, 2: true, 4: true, 6: true, 8: true}, nil)

	// Full re-review of every push: the baseline.
	fullModel := newFakeModel(t)
	full := newStack(t, fullEveryTime{next: modelPipeline(t, fullModel)}, initial)
	adopt(full)
	tenPushes(full)
	fullCalls, fullTokens := fullModel.counts()
	if fullCalls == 0 {
		d := full.decisions.last()
		t.Fatalf("the model was not called: gate %s %s, lenses %+v, intake %+v", d.Gate.State, d.Gate.Reason, d.Lenses, d.Intake)
	}

	model := newFakeModel(t)
	st := newStack(t, modelPipeline(t, model), initial)
	adopt(st)
	heads := tenPushes(st)
	incCalls, incTokens := model.counts()
	t.Logf("ten pushes: full re-review %d model calls, %d prompt tokens; incremental %d calls, %d prompt tokens (%.1f %%)",
		fullCalls, fullTokens, incCalls, incTokens, 100*float64(incTokens)/float64(fullTokens))
	// The pipeline's own count (the usage each call reported) agrees with the model's.
	reported := 0
	st.decisions.mu.Lock()
	for _, d := range st.decisions.all {
		reported += d.Tokens.Prompt
	}
	st.decisions.mu.Unlock()
	if reported != incTokens {
		t.Fatalf("decisions report %d prompt tokens, the model counted %d", reported, incTokens)
	}
	if incTokens*10 > fullTokens*3 {
		t.Fatalf("incremental review sent %d prompt tokens, more than 30 %% of a full re-review's %d", incTokens, fullTokens)
	}
	state := stickyState(t, st.gh)
	if got, want := openIDs(state), openIDs(stickyState(t, full.gh)); !slices.Equal(got, want) || len(got) != 5 {
		t.Fatalf("final open findings differ: incremental %v, full %v", got, want)
	}
	if d := st.decisions.last(); d.Coverage.Scope != review.ScopeIncremental || d.Coverage.Since != heads[9] {
		t.Fatalf("last push: scope %q since %q", d.Coverage.Scope, d.Coverage.Since)
	}

	// The finding on file0 was fixed by push 1: fixed with that head's full SHA in the signed
	// receipt, its thread resolved with one reply, and no inline comment posted twice.
	var fixed review.Finding
	for _, f := range state.Findings {
		if f.Path == "pkg/file0.go" {
			fixed = f
		}
	}
	if fixed.Disposition != review.DispositionFixed || fixed.FixCommit != heads[1] {
		t.Fatalf("file0 finding %+v, want fixed in %s", fixed, heads[1])
	}
	envelope := extractEnvelope(stickyBody(t, st.gh))
	pub := st.key.Public().(ed25519.PublicKey)
	body := st.gh.PullBody(e2eRepo, e2ePR)
	subject := disclosure.Verify(envelope, disclosure.Options{PublicKey: pub}).SubjectDigest
	rep := disclosure.Verify(envelope, disclosure.Options{PublicKey: pub, ExpectedSubjectDigest: subject, Body: &body, Policy: disclosure.DefaultPolicy()})
	if !rep.OK {
		t.Fatalf("receipt does not verify: %v %v", rep.ReasonCodes, rep.Errors)
	}
	if dir := os.Getenv("LENSGATE_E2E_RECEIPT_DIR"); dir != "" {
		// For checking with the command line: lensgate receipt verify --envelope ... --public-key ...
		_ = os.WriteFile(filepath.Join(dir, "receipt.json"), envelope, 0o600)
		_ = os.WriteFile(filepath.Join(dir, "body.md"), []byte(body), 0o600)
		_ = os.WriteFile(filepath.Join(dir, "public-key.hex"), []byte(hex.EncodeToString(pub)), 0o600)
		_ = os.WriteFile(filepath.Join(dir, "subject-digest"), []byte(subject), 0o600)
	}
	foundFixed := false
	for _, f := range predicateOf(t, envelope)["declaration"].(map[string]any)["findings"].([]any) {
		fm := f.(map[string]any)
		if fm["id"] == fixed.ID {
			foundFixed = fm["disposition"] == "fixed" && fm["fixCommit"] == heads[1]
		}
	}
	if !foundFixed {
		t.Fatalf("the receipt does not list %s as fixed in %s", fixed.ID, heads[1])
	}
	pred := predicateOf(t, envelope)
	runs, _ := json.Marshal(pred["declaration"].(map[string]any)["reviewRuns"])
	if !strings.Contains(string(runs), "lensgate/security/openai@"+heads[10]) {
		t.Fatalf("the receipt does not name the head each lens completed on: %s", runs)
	}
	if src, _ := json.Marshal(pred["coverage"].(map[string]any)["sources"]); !strings.Contains(string(src), "compare "+heads[9]+"..."+heads[10]) {
		t.Fatalf("the receipt's coverage does not say the model lenses saw the compare: %s", src)
	}
	perFP := map[string][]githubfake.ReviewComment{}
	for _, c := range st.gh.ReviewComments(e2eRepo, e2ePR) {
		fp := pull.HiddenValue(c.Body, pull.MarkerFingerprint)
		perFP[fp] = append(perFP[fp], c)
	}
	for fp, cs := range perFP {
		if len(cs) != 1 {
			t.Fatalf("finding %s posted inline %d times", fp, len(cs))
		}
	}
	top := perFP[fixed.ID]
	if len(top) != 1 || !st.gh.ThreadResolved(e2eRepo, e2ePR, top[0].ID) {
		t.Fatalf("thread of the fixed finding not resolved (%d comments)", len(top))
	}
	if rs := st.gh.Replies(e2eRepo, e2ePR, top[0].ID); len(rs) != 1 || !strings.Contains(rs[0].Body, "Fixed in `"+heads[1]+"`") {
		t.Fatalf("replies to the fixed thread: %+v", rs)
	}
	if !strings.Contains(stickyBody(t, st.gh), "fixed in `"+heads[1]+"`") {
		t.Fatal("the advisory comment does not show the fixed finding")
	}
	if g := gateOf(st.gh, heads[10]); !strings.Contains(g.Text, "fixed in `"+heads[1]+"`") {
		t.Fatal("the check run does not show the fixed finding")
	}

	// Dismissal of file1's finding: from a read-only user it is ignored without a reply or a
	// review run and changes nothing; from a writer it sticks across a later push.
	var target review.Finding
	for _, f := range state.Findings {
		if f.Path == "pkg/file1.go" && f.Open() {
			target = f
		}
	}
	inline := perFP[target.ID]
	if len(inline) != 1 {
		t.Fatalf("no inline comment for %s", target.ID)
	}
	st.gh.SetPermission(e2eRepo, "reader", "read")
	st.gh.SetPermission(e2eRepo, "maintainer", "write")
	callsBefore, _ := model.counts()
	r1 := st.gh.AddReviewCommentReply(e2eRepo, e2ePR, inline[0].ID, "reader", "/lensgate dismiss we accept this risk")
	st.sendReviewCommentReply("dismiss-reader", r1, "reader", "User")
	if f, _ := stickyState(t, st.gh).Finding(target.ID); !f.Open() {
		t.Fatalf("a read-only user's dismissal was applied: %+v", f)
	}
	if rs := st.gh.Replies(e2eRepo, e2ePR, inline[0].ID); len(rs) != 1 {
		t.Fatalf("replies after a read-only user's dismissal: %+v", rs)
	}
	if st.gh.ThreadResolved(e2eRepo, e2ePR, inline[0].ID) {
		t.Fatal("thread resolved after a refused dismissal")
	}
	r2 := st.gh.AddReviewCommentReply(e2eRepo, e2ePR, inline[0].ID, "maintainer", "/lensgate dismiss the input is a compile-time constant")
	st.reviewCommentReply("dismiss-writer", r2, "maintainer", "User")
	if calls, _ := model.counts(); calls != callsBefore {
		t.Fatalf("re-evaluating the same head called the model %d times", calls-callsBefore)
	}
	f, _ := stickyState(t, st.gh).Finding(target.ID)
	if f.Disposition != review.DispositionDismissed || f.Reason != "the input is a compile-time constant" || f.DismissedBy != "maintainer" {
		t.Fatalf("dismissal not applied: %+v", f)
	}
	if !st.gh.ThreadResolved(e2eRepo, e2ePR, inline[0].ID) {
		t.Fatal("thread of the dismissed finding not resolved")
	}
	rs := st.gh.Replies(e2eRepo, e2ePR, inline[0].ID)
	if n := len(rs); n != 3 || !strings.Contains(rs[2].Body, "Dismissed: the input is a compile-time constant") {
		t.Fatalf("replies after the dismissal: %+v", rs)
	}

	// A later push touching file1 again (its BAD( line stays): the dismissal sticks, nothing is
	// posted again for it, the refused command is not answered twice.
	bad := map[int]bool{1: true, 3: true, 5: true, 7: true, 9: true}
	extra := map[int]string{0: "	_ = safe(input0) // fixed in push 1", 2: "	_ = safe(input2) // fixed in push 3",
		4: "	_ = safe(input4) // fixed in push 5", 6: "	_ = safe(input6) // fixed in push 7", 8: "	_ = safe(input8) // fixed in push 9",
		1: "	more := compute(1, 99)"}
	st.gh.Push(e2eRepo, e2ePR, headSHA(11), []byte(prDiff(bad, extra)), nil)
	st.synchronize(headSHA(11), "push-11")
	if f, _ := stickyState(t, st.gh).Finding(target.ID); f.Disposition != review.DispositionDismissed {
		t.Fatalf("dismissal lost on the next push: %+v", f)
	}
	if n := len(st.gh.Replies(e2eRepo, e2ePR, inline[0].ID)); n != 3 {
		t.Fatalf("%d replies after the next push, want 3", n)
	}
	for _, c := range st.gh.ReviewComments(e2eRepo, e2ePR) {
		if pull.HiddenValue(c.Body, pull.MarkerFingerprint) == target.ID && c.ID != inline[0].ID {
			t.Fatal("the dismissed finding was posted again")
		}
	}
	if g := gateOf(st.gh, headSHA(11)); !strings.Contains(g.Text, "dismissed: the input is a compile-time constant") {
		t.Fatal("the check run does not show the dismissal")
	}

	// A force-push falls back to a full review.
	callsBefore, before := model.counts()
	st.gh.ForcePush(e2eRepo, e2ePR, headSHA(12), []byte(prDiff(bad, extra)), nil)
	st.synchronize(headSHA(12), "force-push")
	callsAfter, after := model.counts()
	d := st.decisions.last()
	if d.Coverage.Scope != review.ScopeFull || !strings.Contains(d.Coverage.ScopeReason, "not an ancestor") {
		t.Fatalf("force-push: scope %q (%s)", d.Coverage.Scope, d.Coverage.ScopeReason)
	}
	perFull := fullTokens / fullCalls
	if got := (after - before) / max(callsAfter-callsBefore, 1); got < perFull*9/10 {
		t.Fatalf("force-push review sent %d tokens per call, a full review about %d", got, perFull)
	}
}

func TestDismissCommandsRefusedWithAReason(t *testing.T) {
	model := newFakeModel(t)
	st := newStack(t, modelPipeline(t, model), prDiff(map[int]bool{0: true, 2: true}, nil))
	adopt(st)
	st.send("pull_request", "opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	st.gh.SetPermission(e2eRepo, "maintainer", "write")
	before := stickyState(t, st.gh)
	open := openIDs(before)
	if len(open) != 2 {
		t.Fatalf("open findings %v", open)
	}
	id := open[0]
	inlineBefore := len(st.gh.ReviewComments(e2eRepo, e2ePR))
	calls, _ := model.counts()

	// An id shaped like a finding's but of another pull request's file.
	foreign := "LG-" + strings.Repeat("ab", 6)
	tests := []struct {
		name, user, userType, body, want string
	}{
		{"no finding named", "maintainer", "User", "/lensgate dismiss", "name the finding"},
		{"no reason", "maintainer", "User", "/lensgate dismiss " + id, "give a one-sentence reason"},
		{"unknown id", "maintainer", "User", "/lensgate dismiss LG-nothex reason", "name the finding"},
		{"a finding of another pull request", "maintainer", "User", "/lensgate dismiss " + foreign + " it is fine", "`" + foreign + "` is not a finding of this pull request"},
		{"by the author", "Codertocat", "User", "/lensgate dismiss " + id + " my own change is fine", "the pull request's author cannot dismiss a blocking finding"},
	}
	st.gh.SetPermission(e2eRepo, "Codertocat", "admin")
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := st.conversationCommand(fmt.Sprint("cmd-", i), tt.user, tt.userType, tt.body)
			var answers []githubfake.Comment
			for _, bc := range botComments(st.gh) {
				if pull.HiddenValue(bc.Body, pull.MarkerAnswer) == fmt.Sprint(c.ID) {
					answers = append(answers, bc)
				}
			}
			if len(answers) != 1 || !strings.Contains(answers[0].Body, "Not dismissed: ") || !strings.Contains(answers[0].Body, tt.want) {
				t.Fatalf("answers %+v, want one saying %q", answers, tt.want)
			}
			if got := openIDs(stickyState(t, st.gh)); !slices.Equal(got, open) {
				t.Fatalf("open findings changed: %v", got)
			}
		})
	}
	if n := len(st.gh.ReviewComments(e2eRepo, e2ePR)); n != inlineBefore {
		t.Fatalf("inline comments %d -> %d", inlineBefore, n)
	}
	if c, _ := model.counts(); c != calls {
		t.Fatalf("commands called the model %d times", c-calls)
	}
	// A command answered once is not answered again on the next run.
	answered := len(botComments(st.gh))
	st.synchronize(e2eHead1, "same-head-again")
	if n := len(botComments(st.gh)); n != answered {
		t.Fatalf("bot comments %d -> %d after another run", answered, n)
	}

	// Commands from a bot or from someone without write access get no answer and no run, not
	// even when another run reads them.
	st.gh.SetPermission(e2eRepo, "reader", "read")
	ignored := []githubfake.Comment{
		st.sendConversationCommand("cmd-bot", "helper[bot]", "Bot", "/lensgate dismiss "+id+" automated triage says so"),
		st.sendConversationCommand("cmd-reader", "reader", "User", "/lensgate dismiss "+id+" I think it is fine"),
	}

	// The conversation form from a writer dismisses, answers once and resolves the thread.
	c := st.conversationCommand("cmd-ok", "maintainer", "User", "/lensgate dismiss "+id+" generated code, fixed upstream")
	for _, bc := range botComments(st.gh) {
		for _, c := range ignored {
			if pull.HiddenValue(bc.Body, pull.MarkerAnswer) == fmt.Sprint(c.ID) {
				t.Fatalf("the App answered an ignored command: %q", bc.Body)
			}
		}
	}
	f, _ := stickyState(t, st.gh).Finding(id)
	if f.Disposition != review.DispositionDismissed || f.Reason != "generated code, fixed upstream" {
		t.Fatalf("not dismissed: %+v", f)
	}
	var ok int
	for _, bc := range botComments(st.gh) {
		if pull.HiddenValue(bc.Body, pull.MarkerAnswer) == fmt.Sprint(c.ID) && strings.Contains(bc.Body, "Dismissed `"+id+"`") {
			ok++
		}
	}
	if ok != 1 {
		t.Fatalf("%d answers to the accepted command", ok)
	}
	for _, rc := range st.gh.ReviewComments(e2eRepo, e2ePR) {
		if pull.HiddenValue(rc.Body, pull.MarkerFingerprint) == id && !st.gh.ThreadResolved(e2eRepo, e2ePR, rc.ID) {
			t.Fatal("the dismissed finding's thread is not resolved")
		}
	}
	if d := st.decisions.last(); d.Gate.State != review.OutcomeFailed {
		// The other blocking finding still fails the gate.
		t.Fatalf("gate %s", d.Gate.State)
	}
}

// largePR gives the fixture pull request n added files of three lines each.
func largePR(st *stack, n int) {
	files := make([]githubfake.File, n)
	for i := range files {
		files[i] = githubfake.File{Filename: fmt.Sprintf("gen/part%04d.txt", i), Status: "added",
			Patch: fmt.Sprintf("@@ -0,0 +1,3 @@\n+entry %d\n+value %d\n+end", i, i*7)}
	}
	st.gh.Push(e2eRepo, e2ePR, e2eHead1, nil, files)
}

func TestFiveThousandFilePullRequest(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxChunks int
		calls     int
		capped    int // files left out by review.max_chunks
	}{
		{"every listed file within the chunks", 8, 8, 0},
		{"a chunk cap", 4, 4, 1400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := newFakeModel(t)
			st := newStack(t, modelPipeline(t, model), readmeDiffForLarge)
			adopt(st)
			st.gh.SetFile(e2eRepo, "master", ".asdd.yml", modelConfig+fmt.Sprintf("review:\n  max_diff_lines: 3200\n  max_chunks: %d\n", tc.maxChunks))
			largePR(st, 5000)
			st.gh.ResetCalls()
			st.send("pull_request", "opened", readPayload(t, "pull_request.opened.payload.json"))
			st.wait("opened")
			calls, tokens := model.counts()
			t.Logf("5,000-file pull request, max_chunks %d: %d model calls, %d prompt tokens; %d GitHub calls (%d writes)\n%s",
				tc.maxChunks, calls, tokens, st.gh.TotalCalls(), st.gh.Writes(), st.gh.CallSummary())
			d := st.decisions.last()
			if calls != tc.calls || d.Coverage.Chunks != tc.calls {
				t.Fatalf("%d model calls, %d chunks; want %d", calls, d.Coverage.Chunks, tc.calls)
			}
			refused := 0
			for _, c := range st.gh.Log() {
				if c.Route == "GET /repos/{owner}/{repo}/pulls/{number}" && c.Status == http.StatusNotAcceptable {
					refused++
				}
			}
			if refused != 1 {
				t.Fatalf("GitHub refused the diff media type %d times, want once", refused)
			}
			if st.gh.Calls()["GET /repos/{owner}/{repo}/pulls/{number}/files"] < 30 {
				t.Fatalf("the paged files API was not read to its end: %s", st.gh.CallSummary())
			}
			var capped, unlisted []review.Gap
			for _, g := range d.Coverage.Gaps {
				switch {
				case strings.Contains(g.Reason, "review.max_chunks"):
					capped = append(capped, g)
				case strings.Contains(g.Reason, "beyond the 3000 files GitHub lists"):
					unlisted = append(unlisted, g)
				default:
					t.Fatalf("unexpected gap %+v", g)
				}
			}
			// The files API lists the first 3,000; the cap leaves out exactly the last listed ones.
			if len(capped) != tc.capped {
				t.Fatalf("%d files capped, want %d", len(capped), tc.capped)
			}
			for i, g := range capped {
				if want := fmt.Sprintf("gen/part%04d.txt", 3000-tc.capped+i); g.Path != want {
					t.Fatalf("capped file %d is %s, want %s", i, g.Path, want)
				}
			}
			// The 2,000 files beyond GitHub's list are named from the git trees of the merge base
			// and the head.
			if len(unlisted) != 2000 || d.Coverage.FilesTotal != 5000 {
				t.Fatalf("%d files beyond GitHub's list named, total %d", len(unlisted), d.Coverage.FilesTotal)
			}
			for i, g := range unlisted {
				if want := fmt.Sprintf("gen/part%04d.txt", 3000+i); g.Path != want {
					t.Fatalf("unlisted file %d is %s, want %s", i, g.Path, want)
				}
			}
			if d.Coverage.Status != review.CoveragePartial || d.Coverage.FilesReviewed != 3000-tc.capped {
				t.Fatalf("coverage %s, %d reviewed", d.Coverage.Status, d.Coverage.FilesReviewed)
			}
			for _, l := range d.Lenses {
				if l.Outcome != review.OutcomePassed {
					t.Fatalf("lens %s %s: %s", l.Name, l.Outcome, l.Cause)
				}
			}
		})
	}
}

const readmeDiffForLarge = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # Hello-World\n+x\n"

// With dismissals.by_author the author may dismiss a blocking finding of their own pull request,
// and the dismissal names them.
func TestAuthorDismissalWhenAllowed(t *testing.T) {
	model := newFakeModel(t)
	st := newStack(t, modelPipeline(t, model), prDiff(map[int]bool{0: true}, nil))
	adopt(st)
	st.gh.SetFile(e2eRepo, "master", ".asdd.yml", modelConfig+"dismissals:\n  by_author: true\n")
	st.send("pull_request", "opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	open := openIDs(stickyState(t, st.gh))
	if len(open) != 1 {
		t.Fatalf("open findings %v", open)
	}
	st.gh.SetPermission(e2eRepo, "Codertocat", "write")
	st.conversationCommand("cmd-author", "Codertocat", "User", "/lensgate dismiss "+open[0]+" reviewed with the team")
	f, _ := stickyState(t, st.gh).Finding(open[0])
	if f.Disposition != review.DispositionDismissed || f.DismissedBy != "Codertocat" {
		t.Fatalf("the author's dismissal was not applied: %+v", f)
	}
	if d := st.decisions.last(); d.Gate.State != review.OutcomePassed {
		t.Fatalf("gate %s after the only blocking finding was dismissed", d.Gate.State)
	}
}
