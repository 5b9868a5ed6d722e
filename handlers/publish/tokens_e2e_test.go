package publish

import (
	"testing"
)

// TestModelTokensPerReview counts what the App spends on the model (the local OpenAI-compatible
// fake) for the first review of a pull request and for the review after one push, by the usage
// each call reported, and checks that the decisions' counts agree with the model's.
func TestModelTokensPerReview(t *testing.T) {
	model := newFakeModel(t)
	st := newStack(t, modelPipeline(t, model), prDiff(map[int]bool{0: true, 2: true, 4: true}, nil))
	adopt(st)
	st.send("pull_request", "opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	calls1, prompt1 := model.counts()
	first := st.decisions.last().Tokens

	head := headSHA(1)
	st.gh.Push(e2eRepo, e2ePR, head, []byte(prDiff(map[int]bool{0: true, 2: true, 4: true, 6: true}, nil)), nil)
	st.synchronize(head, "push-1")
	calls2, prompt2 := model.counts()
	push := st.decisions.last().Tokens

	t.Logf("model tokens: first review %d calls, %d tokens (%d prompt, %d completion); push %d calls, %d tokens (%d prompt, %d completion)",
		calls1, first.Total, first.Prompt, first.Completion, calls2-calls1, push.Total, push.Prompt, push.Completion)
	if calls1 == 0 || first.Total == 0 || push.Total == 0 {
		t.Fatalf("no model spend counted: first %+v, push %+v", first.TokenCount, push.TokenCount)
	}
	if first.Prompt != prompt1 || push.Prompt != prompt2-prompt1 {
		t.Errorf("decisions count %d and %d prompt tokens, the model saw %d and %d", first.Prompt, push.Prompt, prompt1, prompt2-prompt1)
	}
}
