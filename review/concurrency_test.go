package review

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/review/runtime"
)

// eightFiles is a change the chunking cuts into eight parts (review.max_diff_lines 9): one
// file each, every one with a line the fake models report.
func eightFiles() string {
	var b strings.Builder
	for i := range 8 {
		b.WriteString(addedFile(fmt.Sprintf("src/f%d.go", i), fmt.Sprintf("BAD %d", i)))
	}
	return b.String()
}

// twoGroupConfig reviews with two runtime groups: lens "all" on runtime m1, lens "api" on m2.
func twoGroupConfig() *config.Repo {
	cfg := config.DefaultRepo()
	cfg.Policy = policyWith(config.Lens{Name: "all", Preset: "m1", Required: true}, config.Lens{Name: "api", Preset: "m2", Required: true})
	cfg.IgnorePaths = nil
	cfg.Review.MaxDiffLines = 9
	// Both lenses report the same finding: verification would withdraw one as a duplicate.
	cfg.Review.Quality.Verify = config.VerifyOff
	return cfg
}

// answer is what the fake models say of a request: one finding per file, from its content only.
func answer(req *runtime.Request) *runtime.Result {
	res := &runtime.Result{Model: "fake-model"}
	for _, l := range req.Lenses {
		rep := runtime.LensReport{Lens: l.Name, Verdict: runtime.VerdictConcerns, Summary: fmt.Sprintf("part %d of %d", req.Chunk, req.Chunks)}
		for _, f := range req.Files {
			rep.Findings = append(rep.Findings, runtime.Finding{Rule: "bad", Severity: runtime.SeverityMedium, Path: f.Path(), Line: 1,
				Title: "bad line in " + f.Path(), Key: f.Path()})
		}
		res.Lenses = append(res.Lenses, rep)
		res.Calls = append(res.Calls, runtime.Call{Lenses: []string{l.Name}, Model: "fake-model", Attempts: 1,
			Usage: runtime.Tokens{PromptTokens: 100 * req.Chunk, CompletionTokens: 10}})
	}
	return res
}

// inFlight counts calls in flight and keeps the most seen.
type inFlight struct {
	now, peak atomic.Int64
}

func (c *inFlight) enter() {
	n := c.now.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (c *inFlight) leave() { c.now.Add(-1) }

// countingModel is a model runtime that counts its calls in flight per review, per
// installation and in all. It does not pace itself: the pipeline holds a slot per request.
type countingModel struct {
	name  string
	total *inFlight
	inst  map[int]*inFlight // by pull request number: the test maps numbers to installations
	rev   map[int]*inFlight // by pull request number: one review each
}

func (m *countingModel) Name() string { return m.name }

func (m *countingModel) Review(_ context.Context, req *runtime.Request) (*runtime.Result, error) {
	for _, c := range []*inFlight{m.total, m.inst[req.Subject.Number], m.rev[req.Subject.Number]} {
		c.enter()
		defer c.leave()
	}
	// Long enough for the calls of several reviews to overlap; nothing is asserted of time.
	time.Sleep(2 * time.Millisecond)
	return answer(req), nil
}

// pacedModel takes a slot for each of its two model calls per request, made at once, the way
// the openai runtime's main and independent passes do.
type pacedModel struct{ countingModel }

func (m *pacedModel) PacesCalls() {}

func (m *pacedModel) Review(ctx context.Context, req *runtime.Request) (*runtime.Result, error) {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k := range 2 {
		wg.Go(func() {
			release, err := runtime.AcquireSlot(ctx, req.Slots)
			if err != nil {
				errs[k] = err
				return
			}
			defer release()
			for _, c := range []*inFlight{m.total, m.inst[req.Subject.Number], m.rev[req.Subject.Number]} {
				c.enter()
				defer c.leave()
			}
			time.Sleep(2 * time.Millisecond)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return answer(req), nil
}

// Concurrent calls never pass the per-review, per-installation and process bounds, whether
// the pipeline holds the slot for a request or the runtime takes one per model call.
func TestConcurrentCallsStayWithinBounds(t *testing.T) {
	const perReview, perInstallation, total = 3, 4, 5
	for _, paced := range []bool{false, true} {
		t.Run(fmt.Sprintf("paced=%v", paced), func(t *testing.T) {
			all := &inFlight{}
			inst := map[int64]*inFlight{1: {}, 2: {}}
			byNumber, rev := map[int]*inFlight{}, map[int]*inFlight{}
			installation := map[int]int64{}
			for n := 1; n <= 6; n++ {
				installation[n] = int64(1 + n%2)
				byNumber[n], rev[n] = inst[installation[n]], &inFlight{}
			}
			var m1, m2 runtime.Runtime
			if paced {
				m1 = &pacedModel{countingModel{name: "m1", total: all, inst: byNumber, rev: rev}}
				m2 = &pacedModel{countingModel{name: "m2", total: all, inst: byNumber, rev: rev}}
			} else {
				m1 = &countingModel{name: "m1", total: all, inst: byNumber, rev: rev}
				m2 = &countingModel{name: "m2", total: all, inst: byNumber, rev: rev}
			}
			limits := NewCallLimits(total, perInstallation)
			p := NewPipeline(Options{Runtimes: runtime.NewRegistry(m1, m2), Logger: zerolog.Nop(),
				MaxConcurrentCalls: perReview, CallLimits: limits})
			var wg sync.WaitGroup
			for n := 1; n <= 6; n++ {
				wg.Go(func() {
					subj := pushSubject(sha('1'), eightFiles(), nil, nil)
					subj.Number, subj.InstallationID = n, installation[n]
					d, err := p.Review(context.Background(), subj, twoGroupConfig())
					if err != nil {
						t.Error(err)
						return
					}
					if len(d.Findings) != 16 || d.Coverage.Chunks != 8 {
						t.Errorf("review %d: %d findings, %d chunks; lenses %+v", n, len(d.Findings), d.Coverage.Chunks, d.Lenses)
					}
				})
			}
			wg.Wait()
			if len(limits.inst) != 0 {
				t.Errorf("the bounds of %d installation(s) are kept with no call in flight", len(limits.inst))
			}
			if got := all.peak.Load(); got > total {
				t.Errorf("%d calls in flight in all, bound %d", got, total)
			}
			for id, c := range inst {
				if got := c.peak.Load(); got > perInstallation {
					t.Errorf("installation %d: %d calls in flight, bound %d", id, got, perInstallation)
				}
			}
			for n, c := range rev {
				if got := c.peak.Load(); got > perReview {
					t.Errorf("review %d: %d calls in flight, bound %d", n, got, perReview)
				}
			}
			t.Logf("peak in flight: %d in all, installation 1 %d, installation 2 %d", all.peak.Load(), inst[1].peak.Load(), inst[2].peak.Load())
		})
	}
}

// budgetModel reserves a fixed amount before each call and spends all of it, at once with
// the other calls of the review.
type budgetModel struct {
	name    string
	reserve int
	granted atomic.Int64
	refused atomic.Int64
}

func (m *budgetModel) Name() string { return m.name }
func (m *budgetModel) PacesCalls()  {}

func (m *budgetModel) Review(ctx context.Context, req *runtime.Request) (*runtime.Result, error) {
	release, err := runtime.AcquireSlot(ctx, req.Slots)
	if err != nil {
		return nil, err
	}
	defer release()
	res := answer(req)
	if ok, cause := req.Budget.Reserve(ctx, m.reserve); !ok {
		m.refused.Add(1)
		for i := range res.Lenses {
			res.Lenses[i] = runtime.LensReport{Lens: res.Lenses[i].Lens, Verdict: runtime.VerdictSkipped, Cause: "token budget: " + cause}
		}
		res.Calls = nil
		return res, nil
	}
	m.granted.Add(1)
	time.Sleep(time.Millisecond)
	req.Budget.Settle(ctx, m.reserve, m.reserve)
	for i := range res.Calls {
		res.Calls[i].Usage = runtime.Tokens{PromptTokens: m.reserve / len(res.Calls)}
	}
	return res, nil
}

// Calls made at once never spend past models.max_tokens_per_review, nor past the daily
// allowance of an installation whose reviews run at once: each reserves before it is made.
func TestConcurrentCallsNeverOverspendATokenCap(t *testing.T) {
	const reserve = 1000
	t.Run("per review", func(t *testing.T) {
		m1, m2 := &budgetModel{name: "m1", reserve: reserve}, &budgetModel{name: "m2", reserve: reserve}
		p := NewPipeline(Options{Runtimes: runtime.NewRegistry(m1, m2), Logger: zerolog.Nop(), MaxConcurrentCalls: 16})
		cfg := twoGroupConfig()
		cfg.Models.MaxTokensPerReview = 10 * reserve
		d, err := p.Review(context.Background(), pushSubject(sha('1'), eightFiles(), nil, nil), cfg)
		if err != nil {
			t.Fatal(err)
		}
		granted := m1.granted.Load() + m2.granted.Load()
		if granted != 10 || m1.refused.Load()+m2.refused.Load() != 6 {
			t.Fatalf("%d calls granted, %d refused; want 10 and 6 of 16 calls of %d tokens under a cap of %d",
				granted, m1.refused.Load()+m2.refused.Load(), reserve, cfg.Models.MaxTokensPerReview)
		}
		if d.Tokens.Total > cfg.Models.MaxTokensPerReview {
			t.Fatalf("spent %d tokens, cap %d", d.Tokens.Total, cfg.Models.MaxTokensPerReview)
		}
	})
	t.Run("per installation per day", func(t *testing.T) {
		m1, m2 := &budgetModel{name: "m1", reserve: reserve}, &budgetModel{name: "m2", reserve: reserve}
		ledger := NewTokenLedger(20*reserve, nil)
		p := NewPipeline(Options{Runtimes: runtime.NewRegistry(m1, m2), Logger: zerolog.Nop(), MaxConcurrentCalls: 16, Tokens: ledger})
		var wg sync.WaitGroup
		for n := 1; n <= 4; n++ {
			wg.Go(func() {
				subj := pushSubject(sha('1'), eightFiles(), nil, nil)
				subj.Number, subj.InstallationID = n, 9
				if _, err := p.Review(context.Background(), subj, twoGroupConfig()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		granted := m1.granted.Load() + m2.granted.Load()
		if granted != 20 || ledger.Used(9) != 20*reserve {
			t.Fatalf("%d calls granted, %d tokens counted; want 20 calls and %d tokens of 64 calls", granted, ledger.Used(9), 20*reserve)
		}
	})
}

// reverseModel holds every call until all of them are in flight, then answers them last part
// first, each after the one planned after it answered.
type reverseModel struct {
	name    string
	offset  int // the index of this runtime's first call in plan order
	arrived *sync.WaitGroup
	done    []chan struct{}
	stuck   atomic.Bool
}

func (m *reverseModel) Name() string { return m.name }

func (m *reverseModel) Review(_ context.Context, req *runtime.Request) (*runtime.Result, error) {
	k := m.offset + req.Chunk - 1
	m.arrived.Done()
	all := make(chan struct{})
	go func() { m.arrived.Wait(); close(all) }()
	// A guard against a hang, not a measure: the calls never got in flight together.
	guard := time.After(20 * time.Second)
	select {
	case <-all:
	case <-guard:
		m.stuck.Store(true)
	}
	if k+1 < len(m.done) {
		select {
		case <-m.done[k+1]:
		case <-guard:
			m.stuck.Store(true)
		}
	}
	defer close(m.done[k])
	return answer(req), nil
}

// The receipt of a review whose calls run at once and answer in reverse order is byte for
// byte the receipt of the same review made one call at a time.
func TestConcurrentReviewReceiptMatchesSequential(t *testing.T) {
	clock := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	review := func(t *testing.T, rts []runtime.Runtime, maxCalls int) ([]byte, string) {
		p := NewPipeline(Options{Runtimes: runtime.NewRegistry(rts...), Logger: zerolog.Nop(), MaxConcurrentCalls: maxCalls,
			Now: func() time.Time { return clock }, Version: "v1"})
		subj := pushSubject(sha('1'), eightFiles(), nil, nil)
		subj.RepositoryNodeID, subj.NodeID = "R_1", "PR_7"
		d, err := p.Review(context.Background(), subj, twoGroupConfig())
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Findings) != 16 || len(d.Tokens.Calls) != 16 {
			t.Fatalf("%d findings, %d calls; lenses %+v", len(d.Findings), len(d.Tokens.Calls), d.Lenses)
		}
		disc, err := disclosure.Disclose(subj.Body, Predicate(d, subj, clock), disclosure.Signer{Key: ed25519.NewKeyFromSeed(make([]byte, 32))})
		if err != nil {
			t.Fatal(err)
		}
		// The observation of the calls too: the same calls, in the same order, with the same digests.
		st, err := json.Marshal(d.ObservationStatement(disc.Receipt, "v1"))
		if err != nil {
			t.Fatal(err)
		}
		return append(append([]byte(disc.Body), disc.Receipt.Envelope...), st...), d.Comment
	}
	seqBytes, seqComment := review(t, []runtime.Runtime{&fakeRuntime{name: "m1", fn: okAnswer}, &fakeRuntime{name: "m2", fn: okAnswer}}, 1)

	var arrived sync.WaitGroup
	arrived.Add(16)
	done := make([]chan struct{}, 16)
	for i := range done {
		done[i] = make(chan struct{})
	}
	m1 := &reverseModel{name: "m1", arrived: &arrived, done: done}
	m2 := &reverseModel{name: "m2", offset: 8, arrived: &arrived, done: done}
	conBytes, conComment := review(t, []runtime.Runtime{m1, m2}, 16)
	if m1.stuck.Load() || m2.stuck.Load() {
		t.Fatal("the 16 calls were not all in flight at once")
	}
	if string(conBytes) != string(seqBytes) || conComment != seqComment {
		n := 0
		for n < min(len(conBytes), len(seqBytes)) && conBytes[n] == seqBytes[n] {
			n++
		}
		t.Fatalf("concurrent review differs from the sequential one from byte %d: %q vs %q", n,
			conBytes[n:min(n+200, len(conBytes))], seqBytes[n:min(n+200, len(seqBytes))])
	}
}

func okAnswer(req *runtime.Request) (*runtime.Result, error) { return answer(req), nil }
