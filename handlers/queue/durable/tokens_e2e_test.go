package durable

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// usagePerCall is the usage the fake model reports for every answer.
const usagePerCall = 1000 + 50

// okModel starts a model endpoint (modelfake) that passes every lens it is asked about and
// reports usagePerCall tokens.
func okModel(t *testing.T) *modelfake.Server {
	m := modelfake.New("sk-test", func(req modelfake.Request) modelfake.Reply {
		return modelfake.Reply{Content: modelfake.ReviewAnswer(req.Lenses(), nil), PromptTokens: 1000, CompletionTokens: 50}
	})
	t.Cleanup(m.Close)
	return m
}

// modelCalls is how many calls the model has answered.
func modelCalls(m *modelfake.Server) int64 { return int64(len(m.Requests())) }

func modelPipeline(t *testing.T, model *modelfake.Server, tokens review.DailyTokens) *review.Pipeline {
	t.Helper()
	rt, err := openai.New(openai.Options{BaseURL: model.URL + "/chat/completions", Token: model.Token, Backoff: time.Millisecond, MaxTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt), Logger: zerolog.Nop(), WorkRoot: t.TempDir(), Tokens: tokens})
}

func modelRepo() *config.Repo {
	cfg := config.DefaultRepo()
	cfg.Models.Reviewer = "m"
	cfg.Review.TimeoutSeconds = 5
	cfg.Policy = config.Policy{Version: 1, Aggregation: config.AggregationAllRequired, Required: []string{"correctness"},
		Lenses: []config.Lens{{Name: "correctness", Preset: openai.Name, Instruction: "Check that the change is correct.",
			Outcome: config.OutcomeReview, Publication: config.PublicationReview, Required: true}}}
	return cfg
}

func modelSubject(inst int64, n int) *review.Subject {
	return &review.Subject{Kind: review.KindPullRequest, Owner: "o", Repo: "r", Number: n, Title: "Guard Load",
		Author: "a", HeadSHA: strings.Repeat("c", 40), BaseSHA: strings.Repeat("d", 40), InstallationID: inst, Local: true,
		OpenPRsByAuthor: -1,
		Diff:            []byte("diff --git a/loader.go b/loader.go\n--- a/loader.go\n+++ b/loader.go\n@@ -1,2 +1,3 @@\n func Load(p string) {\n+\tif p == \"\" { return }\n }\n")}
}

// TestTokenCapAcrossReplicas: two replicas' pipelines on one database review pull requests of
// one installation at once against a model. Together they spend no more than the daily cap, the
// review that would pass it makes no call and its lens is pending with the cap's cause, a
// replica started again keeps refusing, and another installation still gets its reviews.
func TestTokenCapAcrossReplicas(t *testing.T) {
	const limit = 10_000
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			srv := okModel(t)
			dsn := be.dsn(t)
			qa, qb := open(t, dsn, testOptions()), open(t, dsn, testOptions())
			ledgers := []*TokenLedger{ledgerOn(t, qa, limit, nil), ledgerOn(t, qb, limit, nil)}
			pipes := []*review.Pipeline{modelPipeline(t, srv, ledgers[0]), modelPipeline(t, srv, ledgers[1])}

			passed, pending := reviewUntilCapped(t, pipes)
			spent := modelCalls(srv) * usagePerCall
			if spent > limit {
				t.Fatalf("the model was called %d times, %d tokens, over the daily cap of %d", modelCalls(srv), spent, limit)
			}
			if int64(passed[0]+passed[1]) != modelCalls(srv) {
				t.Fatalf("%v reviews passed, %d model calls", passed, modelCalls(srv))
			}
			// Both replicas reviewed, and together they had the cap once.
			if passed[0] == 0 || passed[1] == 0 {
				t.Fatalf("reviews passed per replica %v, want both to have reviewed", passed)
			}
			for _, l := range ledgers {
				if got := usedOn(t, l, 5); got != spent {
					t.Fatalf("the ledger counts %d, the model reported %d", got, spent)
				}
			}
			if len(pending) != 2 {
				t.Fatalf("%d pending lenses, want one per replica", len(pending))
			}
			// The count a cause names may hold the other replica's reservation of a call in flight.
			causeRE := regexp.MustCompile(`token budget: runtimes\.max_tokens_per_installation_per_day \(10000\) would be exceeded: (\d+) used today, the next call may use up to (\d+)$`)
			for _, l := range pending {
				m := causeRE.FindStringSubmatch(l.Cause)
				if m == nil {
					t.Fatalf("pending cause %q, want the daily cap with today's count", l.Cause)
				}
				var used, next int64
				_, _ = fmt.Sscan(m[1], &used)
				_, _ = fmt.Sscan(m[2], &next)
				if used < spent-next || used > limit || used+next <= limit {
					t.Fatalf("cause %q: %d used today and %d next, with %d spent in all", l.Cause, used, next, spent)
				}
			}

			// A replica started again refuses too and calls nothing.
			calls := modelCalls(srv)
			if err := qa.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			restarted := modelPipeline(t, srv, ledgerOn(t, open(t, dsn, testOptions()), limit, nil))
			d, err := restarted.Review(context.Background(), modelSubject(5, 999), modelRepo())
			if err != nil {
				t.Fatal(err)
			}
			if l := d.Lenses[0]; l.Outcome != review.OutcomePending || !strings.Contains(l.Cause, "max_tokens_per_installation_per_day") {
				t.Fatalf("after a restart: %+v", l)
			}
			if d.Gate.State == review.OutcomePassed {
				t.Fatal("the gate passed with the lens over the cap")
			}
			if modelCalls(srv) != calls {
				t.Fatal("the restarted replica called the model over the cap")
			}
			// A replica whose database is gone makes no call: the cap holds when it cannot be counted.
			d, err = modelPipeline(t, srv, ledgers[0]).Review(context.Background(), modelSubject(7, 1), modelRepo())
			if err != nil {
				t.Fatal(err)
			}
			if l := d.Lenses[0]; l.Outcome != review.OutcomePending || !strings.Contains(l.Cause, "token budget") ||
				!strings.Contains(l.Cause, "could not be checked") {
				t.Fatalf("with the database closed: %+v", l)
			}
			if modelCalls(srv) != calls {
				t.Fatal("a replica without its count called the model")
			}
			// Another installation has its own allowance.
			d, err = pipes[1].Review(context.Background(), modelSubject(6, 1), modelRepo())
			if err != nil {
				t.Fatal(err)
			}
			if l := d.Lenses[0]; l.Outcome != review.OutcomePassed {
				t.Fatalf("another installation: %+v", l)
			}
		})
	}
}

// reviewUntilCapped runs reviews of installation 5 on every pipeline at once, each until its
// lens is not passed, and returns the reviews passed per pipeline and the lenses left pending.
func reviewUntilCapped(t *testing.T, pipes []*review.Pipeline) (map[int]int, []review.LensResult) {
	t.Helper()
	var (
		mu      sync.Mutex
		passed  = map[int]int{} // reviews passed per replica
		pending []review.LensResult
		wg      sync.WaitGroup
	)
	errs := make(chan error, len(pipes))
	// Every replica finishes its first review before any goes on: left to the scheduler, a
	// loaded machine may run one replica's loop to the cap before the other starts.
	var first sync.WaitGroup
	first.Add(len(pipes))
	for i, p := range pipes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arrive := sync.OnceFunc(first.Done)
			defer arrive()
			for n := 1; ; n++ {
				if n == 2 {
					arrive()
					first.Wait()
				}
				d, err := p.Review(context.Background(), modelSubject(5, 100*i+n), modelRepo())
				if err != nil {
					errs <- err
					return
				}
				l := d.Lenses[0]
				mu.Lock()
				switch l.Outcome {
				case review.OutcomePassed:
					passed[i]++
				case review.OutcomePending:
					pending = append(pending, l)
				}
				mu.Unlock()
				if l.Outcome != review.OutcomePassed {
					if l.Outcome != review.OutcomePending {
						errs <- fmt.Errorf("replica %d: lens %+v", i, l)
					}
					return
				}
				if n > 50 {
					errs <- fmt.Errorf("replica %d: %d reviews and no cap", i, n)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return passed, pending
}

// TestTokenCapInMemoryIsPerProcess: with the memory queue's ledger each replica counts alone,
// so two replicas together spend past the cap; the durable ledger above is what shares it.
func TestTokenCapInMemoryIsPerProcess(t *testing.T) {
	const limit = 10_000
	srv := okModel(t)
	pipes := []*review.Pipeline{modelPipeline(t, srv, review.NewTokenLedger(limit, nil)),
		modelPipeline(t, srv, review.NewTokenLedger(limit, nil))}
	passed, pending := reviewUntilCapped(t, pipes)
	if spent := modelCalls(srv) * usagePerCall; spent <= limit || len(pending) != 2 {
		t.Fatalf("%d tokens spent by two in-memory ledgers of %d each (%v passed), want more than one cap", spent, limit, passed)
	}
}
