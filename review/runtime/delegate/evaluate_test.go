package delegate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/review/runtime"
)

const (
	tRepo  = "octo/hello"
	tPR    = 7
	tHead  = "abcdef0123456789abcdef0123456789abcdef01"
	tHead0 = "0000000000000000000000000000000000000000"
	tBase  = "2222222222222222222222222222222222222222"
)

var (
	t0    = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	codex = Codex()
	bot   = runtime.Actor{Login: "chatgpt-codex-connector[bot]", ID: 199175422}
)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func request(head string, sec int) runtime.DelegateRequest {
	b := Binding{Preset: CodexPreset, Repo: tRepo, Number: tPR, Head: head, Base: tBase}
	return runtime.DelegateRequest{Preset: b.Preset, Repo: b.Repo, Number: b.Number, Head: b.Head, Base: b.Base, ID: b.ID(), CommentID: 10, At: at(sec)}
}

func cleanBody(commit string) string {
	return "Codex Review: Didn't find any major issues. Nice work!\n\n**Reviewed commit:** `" + commit + "`"
}

func botComment(id int64, sec int, body string) runtime.BotComment {
	return runtime.BotComment{ID: id, User: bot, AppID: 1144995, AppSlug: "chatgpt-codex-connector", Body: body, CreatedAt: at(sec)}
}

func findingsReview(id int64, sec int, commit string, comments ...runtime.BotReviewComment) runtime.BotReview {
	return runtime.BotReview{ID: id, User: bot, State: "COMMENTED", CommitID: commit, SubmittedAt: at(sec),
		Body:     "\n### 💡 Codex Review\n\nHere are some automated review suggestions for this pull request.\n\n**Reviewed commit:** `" + commit[:10] + "`\n",
		Comments: comments}
}

func reaction(id int64, sec int, content string) runtime.BotReaction {
	return runtime.BotReaction{ID: id, User: bot, Content: content, CreatedAt: at(sec)}
}

func TestEvaluate(t *testing.T) {
	inline := runtime.BotReviewComment{ID: 501, Path: "main.go", Line: 3, Body: "**![P1 Badge](https://img) Handle the error**\n\nThe error is dropped."}
	lookalike := botComment(30, 60, cleanBody(tHead))
	lookalike.User.ID = 4242
	wrongApp := botComment(31, 60, cleanBody(tHead))
	wrongApp.AppID = 99
	noApp := botComment(32, 60, cleanBody(tHead))
	noApp.AppID, noApp.AppSlug = 0, ""
	reviewLookalike := findingsReview(33, 60, tHead)
	reviewLookalike.User.Login = "chatgpt-codex-connector"
	approved := findingsReview(34, 60, tHead)
	approved.State = "APPROVED"

	cases := []struct {
		name       string
		obs        runtime.Delegation
		onFindings string
		outcome    string
		cause      string // substring of the cause (pending) or summary (otherwise)
		kind       string
		findings   int
	}{
		{name: "clean comment passes", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Comments: []runtime.BotComment{botComment(20, 60, cleanBody(tHead))}}, outcome: Passed, cause: "found no major issues", kind: EvidenceComment},
		{name: "clean comment with short reviewed commit", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Comments: []runtime.BotComment{botComment(20, 60, cleanBody(tHead[:10]))}}, outcome: Passed, kind: EvidenceComment},
		{name: "renamed headline passes", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Comments: []runtime.BotComment{botComment(20, 60, "Agent Review: Didn't find any major issues.\n\n**Reviewed commit:** `"+tHead+"`\n")}}, outcome: Passed, kind: EvidenceComment},
		{name: "findings review fails by default", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Reviews: []runtime.BotReview{findingsReview(21, 60, tHead, inline)}}, outcome: Failed, cause: "1 suggestion", kind: EvidenceReview, findings: 1},
		{name: "findings review passes when findings pass", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Reviews: []runtime.BotReview{findingsReview(21, 60, tHead, inline)}}, onFindings: OnFindingsPass, outcome: Passed, kind: EvidenceReview, findings: 1},
		{name: "+1 one second after the request passes", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Reactions: []runtime.BotReaction{reaction(22, 1, "+1")}}, outcome: Passed, cause: "reacted", kind: EvidenceReaction},
		{name: "+1 in the request's second is pending", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Reactions: []runtime.BotReaction{{ID: 22, User: bot, Content: "+1", CreatedAt: at(0).Add(900 * time.Millisecond)}}}, outcome: Pending, cause: "waiting for chatgpt-codex-connector[bot]"},
		{name: "eyes alone is in progress", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Reactions: []runtime.BotReaction{reaction(23, 5, "eyes")}}, outcome: Pending, cause: "is reviewing"},
		{name: "review of an older head is pending", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Reviews: []runtime.BotReview{findingsReview(21, 60, tHead0)}}, outcome: Pending, cause: "waiting"},
		{name: "comment naming an older head is pending", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Comments: []runtime.BotComment{botComment(20, 60, cleanBody(tHead0))}}, outcome: Pending},
		{name: "answer to the older head's request is pending", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead0, 0)},
			Comments: []runtime.BotComment{botComment(20, 60, cleanBody(tHead))}}, outcome: Pending, cause: "no request"},
		{name: "comment before the request is pending", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 100)},
			Comments: []runtime.BotComment{botComment(20, 60, cleanBody(tHead))}}, outcome: Pending},
		{name: "comment in the request's second is pending", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 60)},
			Comments: []runtime.BotComment{botComment(20, 60, cleanBody(tHead))}}, outcome: Pending},
		{name: "comment before the head's push is pending", obs: runtime.Delegation{Now: at(120), HeadPushedAt: at(90), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Comments: []runtime.BotComment{botComment(20, 60, cleanBody(tHead))}}, outcome: Pending},
		{name: "look-alike id is pending", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Comments: []runtime.BotComment{lookalike}}, outcome: Pending},
		{name: "look-alike login review is pending", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Reviews: []runtime.BotReview{reviewLookalike}}, outcome: Pending},
		{name: "comment through another app is pending", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Comments: []runtime.BotComment{wrongApp, noApp}}, outcome: Pending},
		{name: "approving review does not count", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Reviews: []runtime.BotReview{approved}}, outcome: Pending},
		{name: "unsolicited answer is pending", obs: runtime.Delegation{Now: at(120),
			Comments: []runtime.BotComment{botComment(20, 60, cleanBody(tHead))}, Reactions: []runtime.BotReaction{reaction(22, 60, "+1")}}, outcome: Pending, cause: "no request"},
		{name: "blocked request says why", obs: runtime.Delegation{Now: at(120), Blocked: map[string]string{CodexPreset: "a maintainer's approval is needed"}},
			outcome: Pending, cause: "approval is needed"},
		{name: "timeout is pending with cause", obs: runtime.Delegation{Now: at(15 * 60), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Reactions: []runtime.BotReaction{reaction(23, 5, "eyes")}}, outcome: Pending, cause: "no answer from chatgpt-codex-connector[bot] within 15m0s"},
		{name: "answer after the timeout still counts", obs: runtime.Delegation{Now: at(20 * 60), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Comments: []runtime.BotComment{botComment(20, 16*60, cleanBody(tHead))}}, outcome: Passed},
		{name: "newest answer wins", obs: runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
			Comments: []runtime.BotComment{botComment(20, 60, cleanBody(tHead))}, Reviews: []runtime.BotReview{findingsReview(21, 90, tHead, inline)}},
			outcome: Failed, kind: EvidenceReview, findings: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Evaluate(Input{Preset: codex, Repo: tRepo, Number: tPR, Head: tHead, Base: tBase, OnFindings: c.onFindings, Observed: &c.obs})
			if v.Outcome != c.outcome {
				t.Fatalf("outcome %s (cause %q, summary %q), want %s", v.Outcome, v.Cause, v.Summary, c.outcome)
			}
			text := v.Summary
			if v.Outcome == Pending {
				text = v.Cause
				if v.Cause == "" {
					t.Fatal("pending without a cause")
				}
			}
			if !strings.Contains(text, c.cause) {
				t.Errorf("text %q does not contain %q", text, c.cause)
			}
			if c.kind != "" && v.Evidence.Kind != c.kind {
				t.Errorf("evidence kind %q, want %q", v.Evidence.Kind, c.kind)
			}
			if len(v.Findings) != c.findings {
				t.Errorf("%d findings, want %d", len(v.Findings), c.findings)
			}
		})
	}
}

func TestEvaluateFindingAttribution(t *testing.T) {
	obs := runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
		Reviews: []runtime.BotReview{findingsReview(21, 60, tHead, runtime.BotReviewComment{ID: 9, Path: "a.go", Line: 4, Body: "**![P2 Badge](https://x/y.svg) Close the file**\n\nIt leaks."})}}
	v := Evaluate(Input{Preset: codex, Repo: tRepo, Number: tPR, Head: tHead, Base: tBase, Observed: &obs})
	f := v.Findings[0]
	if f.Rule != bot.Login || f.Path != "a.go" || f.Line != 4 || f.Title != bot.Login+": Close the file" || f.Severity != runtime.SeverityMedium || !strings.Contains(f.Message, "It leaks.") {
		t.Fatalf("finding %+v", f)
	}
	if !v.Deadline.Equal(at(0).Add(DefaultTimeout)) || v.Request == nil || v.Evidence.ID != 21 {
		t.Fatalf("verdict %+v", v)
	}
}

func TestCleanCommentGrammar(t *testing.T) {
	footer := "<details> <summary>ℹ️ About Codex in GitHub</summary>\n<br/>\n\nIf Codex has suggestions, it will comment; otherwise it will react with 👍.\n</details>"
	cases := []struct {
		body string
		ok   bool
	}{
		{"Codex Review: Didn't find any major issues.\n\n**Reviewed commit:** `" + tHead + "`", true},
		{"Codex Review: Didn't find any major issues.\r\n\r\n**Reviewed commit:** `" + tHead + "`\r\n", true},
		{"Codex Review: Didn't find any major issues. 🎉 Keep it up\n\n**Reviewed commit:** `" + tHead[:12] + "`\n\n" + footer + "\n", true},
		{"Codex Review: Didn't find any major issues.\n\n**Reviewed commit:** `" + tHead + "`\n" + footer, true},
		{"Codex Review: Didn't find any major issues.\n\n**Reviewed commit:** `" + tHead[:9] + "`", false},
		{"Codex Review: Didn't find any major issues.\n\n**Reviewed commit:** `" + strings.ToUpper(tHead) + "`", false},
		{"Codex Review: Didn't find any major issues.  two spaces\n\n**Reviewed commit:** `" + tHead + "`", false},
		{"Codex Review: Didn't find any major issues. " + strings.Repeat("x", 81) + "\n\n**Reviewed commit:** `" + tHead + "`", false},
		{"Codex Review: Didn't find any major issues. a\u200bb\n\n**Reviewed commit:** `" + tHead + "`", false},
		{"Codex Review: Didn't find any major issues.\n\n**Reviewed commit:** `" + tHead + "`\n\nBut see this problem.", false},
		{"Codex Review: Didn't find any major issues.\n\n**Reviewed commit:** `" + tHead + "`\n**Reviewed commit:** `" + tHead + "`", false},
		{"Codex Review: Didn't find any major issues.\n**Reviewed commit:** `" + tHead + "`", false},
		{"Codex Review: Found issues.\n\n**Reviewed commit:** `" + tHead + "`", false},
		{"> Codex Review: Didn't find any major issues.\n\n**Reviewed commit:** `" + tHead + "`", false},
		{"Codex Review: Didn't find any major issues.\n\n**Reviewed commit:** `" + tHead + "`" + strings.Repeat(" ", MaxAnswerBodyBytes), false},
	}
	for i, c := range cases {
		if got := codex.cleanComment(c.body, tHead); got != c.ok {
			t.Errorf("case %d: clean %v, want %v: %q", i, got, c.ok, c.body)
		}
	}
}

func TestMarker(t *testing.T) {
	b := Binding{Preset: CodexPreset, Repo: tRepo, Number: tPR, Head: tHead, Base: tBase}
	body := RequestBody(codex, b)
	if !strings.HasPrefix(body, "@codex review\n\n<!-- lensgate-delegate:v1 ") || len(body) > MaxRequestBodyBytes {
		t.Fatalf("body %q", body)
	}
	got, err := ParseRequest(body)
	if err != nil || got != b {
		t.Fatalf("parse: %+v %v", got, err)
	}
	other := b
	other.Head = tHead0
	if other.ID() == b.ID() {
		t.Fatal("ids of different heads collide")
	}
	for name, bad := range map[string]string{
		"tampered id":   strings.Replace(body, "head-sha="+tHead, "head-sha="+tHead0, 1),
		"two markers":   body + "\n" + b.Marker(),
		"upper sha":     strings.Replace(body, tHead, strings.ToUpper(tHead), 1),
		"leading zero":  strings.Replace(body, "pull-request=7", "pull-request=07", 1),
		"name only":     "see " + MarkerName,
		"oversized":     body + strings.Repeat("x", MaxRequestBodyBytes),
		"missing field": strings.Replace(body, " base-sha="+tBase, "", 1),
	} {
		if _, err := ParseRequest(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseRequest("@codex review"); err != ErrNoMarker {
		t.Errorf("plain comment: %v", err)
	}
}

func TestRuntimeReports(t *testing.T) {
	rt, err := New()
	if err != nil {
		t.Fatal(err)
	}
	obs := &runtime.Delegation{Now: at(120), Requests: []runtime.DelegateRequest{request(tHead, 0)},
		Reviews: []runtime.BotReview{findingsReview(21, 60, tHead, runtime.BotReviewComment{ID: 9, Path: "a.go", Line: 4, Body: "Close it"})}}
	req := &runtime.Request{
		Subject:    runtime.Subject{Owner: "octo", Repo: "hello", Number: tPR, HeadSHA: tHead, BaseSHA: tBase},
		Lenses:     []runtime.Lens{{Name: "strict", Preset: "codex"}, {Name: "lenient", Preset: "codex"}, {Name: "odd", Preset: "nobody"}},
		Settings:   runtime.Settings{OutcomeOnFindings: map[string]string{"lenient": OnFindingsPass}},
		Delegation: obs,
	}
	res, err := rt.Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{runtime.VerdictRequestChanges, runtime.VerdictConcerns, runtime.VerdictSkipped}
	for i, l := range res.Lenses {
		if l.Verdict != want[i] {
			t.Errorf("%s: verdict %s, want %s (%s)", l.Lens, l.Verdict, want[i], l.Cause)
		}
	}
	req.Delegation = nil
	res, _ = rt.Review(context.Background(), req)
	if res.Lenses[0].Verdict != runtime.VerdictSkipped || !strings.Contains(res.Lenses[0].Cause, "only the GitHub App") {
		t.Fatalf("offline: %+v", res.Lenses[0])
	}
}

func TestPresetValidate(t *testing.T) {
	copilot := Preset{Name: "copilot", Bot: Bot{Login: "copilot-pull-request-reviewer[bot]", UserID: 1}, RequestVia: RequestReviewers,
		Reviewer: "copilot-pull-request-reviewer[bot]", Evidence: []string{EvidenceReview}}
	if err := copilot.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := Codex().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Preset){
		"no id":           func(p *Preset) { p.Bot.UserID = 0 },
		"bad login":       func(p *Preset) { p.Bot.Login = "a b" },
		"no evidence":     func(p *Preset) { p.Evidence = nil },
		"odd evidence":    func(p *Preset) { p.Evidence = []string{"status"} },
		"loose comments":  func(p *Preset) { p.Evidence = []string{EvidenceComment} },
		"via":             func(p *Preset) { p.RequestVia = "mail" },
		"comment no text": func(p *Preset) { p.RequestVia = RequestComment },
		"multiline text":  func(p *Preset) { p.RequestText = "a\nb" },
	} {
		p := copilot
		mod(&p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
