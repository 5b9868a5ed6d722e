package publish

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
)

// TestModelSectionInCheckAndComment: the check summary and the advisory comment say what the
// model was not given and what it cost, per review and per lens, with "estimated" where a
// server sent no count; a withheld file's name is shown inert.
func TestModelSectionInCheckAndComment(t *testing.T) {
	d := &review.Decision{
		Gate: review.Gate{State: review.OutcomeFailed, Reason: "required lens(es) failed: correctness"},
		Lenses: []review.LensResult{
			{Name: "correctness", Required: true, Outcome: review.OutcomeFailed, Runtime: "openai",
				Tokens: &review.TokenCount{Prompt: 9000, Completion: 300, Total: 9300}},
			{Name: "quality", Required: true, Outcome: review.OutcomePending, Runtime: "openai",
				Cause: "independent model call: token budget: models.max_tokens_per_review (10000) would be exceeded"},
			{Name: "security", Required: true, Outcome: review.OutcomePassed, Runtime: "builtin"},
		},
		Tokens: review.Tokens{TokenCount: review.TokenCount{Prompt: 9000, Completion: 3300, Total: 12300, Estimated: true},
			Calls: []review.ModelCall{{Runtime: "openai", Call: runtime.Call{Lenses: []string{"correctness"}, Attempts: 1}},
				{Runtime: "openai", Call: runtime.Call{Lenses: []string{"quality"}, Independent: true, Cause: "token budget: …"}}}},
		ModelInput: review.ModelInput{Sent: true, RedactedValues: 3, RedactedKinds: map[string]int{"github-token": 2, "private-key": 1},
			WithheldFiles: []string{".env.production", "<img src=x>.pem"}},
	}
	d.Lenses[0].Tokens.Estimated = true
	for name, text := range map[string]string{"check summary": summary(d), "comment section": modelSection(d)} {
		for _, want := range []string{
			"Model tokens: 12,300 (prompt 9,000, completion 3,300, estimated) in 1 call(s), 1 call(s) not sent (token budget or prompt budget); per lens: correctness 9,300 (estimated).",
			"3 secret value(s) replaced by a placeholder before the change was sent to the model (github-token 2, private-key 1).",
			"2 file(s) withheld from the model (models.exclude_paths): `.env.production`, `<img src=x>.pem`.",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, text)
			}
		}
	}
	if !strings.Contains(summary(d), "token budget") {
		t.Error("the check does not show the token budget cause")
	}
	if modelSection(&review.Decision{}) != "" {
		t.Error("a review without a model has a model section")
	}
}

// TestModelSpendIsPublishedAndAudited: through the fake GitHub, the gate check's summary and
// the advisory comment carry the model section, and the audit record of the write that
// concludes the gate carries the tokens; no other record does.
func TestModelSpendIsPublishedAndAudited(t *testing.T) {
	e := newTestEnv(t)
	s := e.subject()
	d := decision(s, review.OutcomeFailed)
	d.Lenses[1].Runtime = "openai"
	d.Lenses[1].Tokens = &review.TokenCount{Prompt: 4000, Completion: 200, Total: 4200}
	d.Tokens = review.Tokens{TokenCount: review.TokenCount{Prompt: 4000, Completion: 200, Total: 4200},
		Calls: []review.ModelCall{{Runtime: "openai", Call: runtime.Call{Lenses: []string{"correctness"}, Attempts: 1}}}}
	d.ModelInput = review.ModelInput{Sent: true, RedactedValues: 1, RedactedKinds: map[string]int{"github-token": 1}, WithheldFiles: []string{".env"}}
	ctx := zerolog.Nop().WithContext(context.Background())
	if err := e.beginAndPublish(ctx, e.publication("d-spend", d, s)); err != nil {
		t.Fatal(err)
	}
	const line = "Model tokens: 4,200 (prompt 4,000, completion 200) in 1 call(s); per lens: correctness 4,200."
	g := e.gateRuns(s.HeadSHA)
	if len(g) != 1 || !strings.Contains(g[0].Summary, line) || !strings.Contains(g[0].Summary, "1 file(s) withheld") {
		t.Fatalf("gate check summary lacks the model section: %+v", g)
	}
	c := e.botComments()
	if len(c) != 1 || !strings.Contains(c[0].Body, line) || !strings.Contains(c[0].Body, "1 secret value(s) replaced") {
		t.Fatalf("advisory comment lacks the model section: %+v", c)
	}
	var with []pdp.Record
	for _, r := range e.sink.Records() {
		if r.Payload.Tokens != nil {
			with = append(with, r)
		}
	}
	if len(with) != 1 || with[0].Action != "publish."+string(pdp.KindCheckRunUpdate) {
		t.Fatalf("records with tokens: %+v", with)
	}
	tk := with[0].Payload.Tokens
	if tk.Total != 4200 || tk.Prompt != 4000 || tk.Completion != 200 || tk.Calls != 1 || tk.Estimated || tk.Lenses["correctness"] != 4200 {
		t.Fatalf("audit tokens %+v", tk)
	}
	if err := pdp.VerifyRecords(e.sink.Records()); err != nil {
		t.Fatal(err)
	}
}
