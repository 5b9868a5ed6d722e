package openai_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review/modelctx"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

type countingBudget struct{ reserved, settled int }

func (b *countingBudget) Reserve(_ context.Context, n int) (bool, string) {
	b.reserved += n
	return true, ""
}

func (b *countingBudget) Settle(_ context.Context, _, used int) { b.settled += used }

// TestWriteFencesTheQuestionAndHoldsTheSchema: the question, the thread and the diff are
// fenced data in the user message, never in the system message; the answer is held to the
// prose schema and cut at MaxBytes; the call counts against the budget.
func TestWriteFencesTheQuestionAndHoldsTheSchema(t *testing.T) {
	model := newModel(t, func(req modelfake.Request) modelfake.Reply {
		if req.N > 1 { // an answer of the review shape is no prose answer
			return reply(reviewJSON("fine", "correctness"))
		}
		system, user := req.System, req.User
		_, inside, outside := fenced(t, user)
		if strings.Contains(system, injection) || strings.Contains(outside, injection) || !strings.Contains(inside, injection) ||
			!strings.Contains(inside, "earlier reply") || !strings.Contains(inside, "loader.go line 2") {
			t.Errorf("untrusted data outside the fence:\nsystem %s\nuser %s", system, user)
		}
		return reply(`{"schema":"lensgate/prose/v0.1","text":"Load returns nil for an empty path.\n\nThat is all."}`)
	})
	rt, err := openai.New(openai.Options{BaseURL: model.URL, Token: model.Token, Model: "m", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b := &countingBudget{}
	out, err := rt.Write(context.Background(), &runtime.ProseRequest{Kind: runtime.ProseAnswer, Diff: []byte(changeDiff),
		Subject: runtime.Subject{Number: 3, Title: "t"}, Question: injection, Thread: []string{"earlier reply"}, Path: "loader.go", Line: 2,
		Budget: b, MaxBytes: 20})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "Load returns nil for…" || out.Call.Usage.Total() != 1050 || out.Call.Lenses[0] != runtime.ProseAnswer || b.settled != 1050 || b.reserved == 0 {
		t.Fatalf("prose %+v budget %+v", out, b)
	}
	if r := model.Requests()[0]; r.Format != "json_schema" || !strings.Contains(string(r.Schema), openai.ProseSchema) {
		t.Fatalf("response format %s %s", r.Format, r.Schema)
	}
	// An answer of the review shape is no prose answer (the fake's answer from the second call).
	if out, err := rt.Write(context.Background(), &runtime.ProseRequest{Kind: runtime.ProseWalkthrough, Budget: b}); err == nil || out.Call.Cause == "" {
		t.Fatalf("a review answer was taken as prose: %+v", out)
	}
}

// TestWriteGetsTheLensContext: the repository's rules go to the system message, as for a lens;
// linked issues and the code around the changes are fenced data.
func TestWriteGetsTheLensContext(t *testing.T) {
	model := newModel(t, func(req modelfake.Request) modelfake.Reply {
		system, user := req.System, req.User
		_, inside, _ := fenced(t, user)
		if !strings.Contains(system, "Prefer table-driven tests.") || strings.Contains(system, "Crash on save") ||
			!strings.Contains(inside, "## Linked issue #4") || !strings.Contains(inside, "Crash on save") || !strings.Contains(inside, "func Load") {
			t.Errorf("context misplaced:\nsystem %s\nuser %s", system, user)
		}
		return reply(`{"schema":"lensgate/prose/v0.1","text":"It fixes the crash."}`)
	})
	rt, err := openai.New(openai.Options{BaseURL: model.URL, Token: model.Token, Model: "m", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := &modelctx.Context{
		Rules:  []modelctx.Rule{{Path: "AGENTS.md", Scope: "the whole repository", Text: "Prefer table-driven tests."}},
		Issues: []modelctx.Issue{{Number: 4, Title: "Crash on save", Body: "It crashes."}},
		Code:   []modelctx.Code{{Path: "loader.go", Start: 1, End: 3, Kind: "function", Name: "Load", Text: "func Load(p string) *Config {\n}\n"}},
	}
	out, err := rt.Write(context.Background(), &runtime.ProseRequest{Kind: runtime.ProseWalkthrough, Diff: []byte(changeDiff), Context: ctx,
		Subject: runtime.Subject{Number: 3, Title: "t"}})
	if err != nil || out.Text != "It fixes the crash." {
		t.Fatalf("%v %+v", err, out)
	}
}
