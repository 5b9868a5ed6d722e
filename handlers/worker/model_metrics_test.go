package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
)

// TestModelMetrics: every model call of a review is counted with its tokens (estimated or
// not), its result and, when it was sent, its latency.
func TestModelMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	w := &Worker{Metrics: NewMetrics(reg)}
	w.observeModel(review.Tokens{TokenCount: review.TokenCount{Prompt: 1700, Completion: 150, Total: 1850}, Calls: []review.ModelCall{
		{Runtime: "openai", Call: runtime.Call{Attempts: 1, Duration: 3 * time.Second, Usage: runtime.Tokens{PromptTokens: 1000, CompletionTokens: 100}}},
		{Runtime: "openai", Call: runtime.Call{Attempts: 2, Duration: time.Second, Cause: "refused",
			Usage: runtime.Tokens{PromptTokens: 700, CompletionTokens: 50, Estimated: true}}},
		{Runtime: "openai", Call: runtime.Call{Cause: "token budget: …"}},
	}})
	w.observeModel(review.Tokens{}) // a review without a model changes nothing
	want := `
# HELP lensgate_model_calls_total Model calls of reviews by runtime and result (answered, rejected, not-sent).
# TYPE lensgate_model_calls_total counter
lensgate_model_calls_total{result="answered",runtime="openai"} 1
lensgate_model_calls_total{result="not-sent",runtime="openai"} 1
lensgate_model_calls_total{result="rejected",runtime="openai"} 1
# HELP lensgate_model_tokens_total Model tokens spent by reviews, by kind (prompt, completion) and estimated (true when the server sent no count).
# TYPE lensgate_model_tokens_total counter
lensgate_model_tokens_total{estimated="false",kind="completion"} 100
lensgate_model_tokens_total{estimated="false",kind="prompt"} 1000
lensgate_model_tokens_total{estimated="true",kind="completion"} 50
lensgate_model_tokens_total{estimated="true",kind="prompt"} 700
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "lensgate_model_tokens_total", "lensgate_model_calls_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(w.Metrics.CallSeconds); n != 1 {
		t.Fatalf("%d latency series", n)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, mf := range mfs {
		switch mf.GetName() {
		case "lensgate_model_call_duration_seconds":
			seen++
			if h := mf.GetMetric()[0].GetHistogram(); h.GetSampleCount() != 2 || h.GetSampleSum() != 4 {
				t.Fatalf("latency %v", h)
			}
		case "lensgate_model_review_calls":
			seen++
			if h := mf.GetMetric()[0].GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 3 {
				t.Fatalf("review calls %v", h)
			}
		case "lensgate_model_review_tokens":
			seen++
			if h := mf.GetMetric()[0].GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 1850 {
				t.Fatalf("review tokens %v", h)
			}
		}
	}
	if seen != 3 {
		t.Fatalf("%d histograms gathered, want 3", seen)
	}
}
