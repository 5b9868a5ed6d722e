package delegate

import (
	"fmt"
	"testing"

	"github.com/lensgate/lensgate/review/runtime"
)

// BenchmarkEvaluateBusyPullRequest judges a lens on a pull request with as much activity as one
// look reads: 1000 comments, 300 reviews and 300 reactions, the answer last.
func BenchmarkEvaluateBusyPullRequest(b *testing.B) {
	obs := &runtime.Delegation{Now: at(600), Requests: []runtime.DelegateRequest{request(tHead, 0)}}
	for i := range 999 {
		obs.Comments = append(obs.Comments, runtime.BotComment{ID: int64(i), User: runtime.Actor{Login: "someone", ID: 5}, Body: fmt.Sprintf("comment %d", i), CreatedAt: at(i % 500)})
	}
	obs.Comments = append(obs.Comments, botComment(5000, 400, cleanBody(tHead)))
	for i := range 300 {
		obs.Reviews = append(obs.Reviews, findingsReview(int64(6000+i), i, tHead0))
		obs.Reactions = append(obs.Reactions, reaction(int64(7000+i), i, "eyes"))
	}
	in := Input{Preset: Codex(), Repo: tRepo, Number: tPR, Head: tHead, Base: tBase, Observed: obs}
	b.ReportAllocs()
	for b.Loop() {
		if v := Evaluate(in); v.Outcome != Passed {
			b.Fatalf("outcome %s: %s", v.Outcome, v.Cause)
		}
	}
}
