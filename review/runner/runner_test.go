package runner_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runner"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

var token = []byte("0123456789abcdef0123456789abcdef-shared")

func seedKey(b byte) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32)) }

// fakeModel is a local OpenAI-compatible endpoint that answers every lens it is asked with
// request-changes and one blocking finding.
// titles is the title the fake model gives its finding (which makes the finding's id).
var titles atomic.Value

func init() { titles.Store("Nil check removed") }

func fakeModel(t testing.TB) (*modelfake.Server, func() int) {
	srv := modelfake.New("sk-model", func(req modelfake.Request) modelfake.Reply {
		findings := map[string][]modelfake.Finding{}
		for _, name := range req.Lenses() {
			findings[name] = []modelfake.Finding{{Path: "loader.go", Line: 2, Severity: "block", Title: titles.Load().(string),
				Message: "Load panics on an empty path."}}
		}
		return modelfake.Reply{Content: modelfake.ReviewAnswer(req.Lenses(), findings), PromptTokens: 900, CompletionTokens: 40}
	})
	t.Cleanup(srv.Close)
	return srv, func() int { return len(srv.Requests()) }
}

// startRunner serves a real runner on a unix socket and returns its address.
func startRunner(t testing.TB, model *modelfake.Server, tok []byte, mods ...func(*runner.Options)) (string, *runner.Server, func()) {
	t.Helper()
	rt, err := openai.New(openai.Options{BaseURL: model.URL + "/chat/completions", Token: model.Token, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	o := runner.Options{
		Runtimes: runtime.NewRegistry(builtin.New(builtin.Options{}), rt), Witness: observation.Signer{Key: seedKey(7)},
		Token: tok, Version: "v-test", Logger: zerolog.Nop(), MaxRequestBytes: 4 << 20,
	}
	for _, m := range mods {
		m(&o)
	}
	srv, err := runner.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "lgr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "r.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go func() { _ = hs.Serve(ln) }()
	stop := func() { _ = hs.Close() }
	t.Cleanup(stop)
	return "unix://" + sock, srv, stop
}

const changeDiff = "diff --git a/loader.go b/loader.go\n--- a/loader.go\n+++ b/loader.go\n@@ -1,3 +1,2 @@\n func Load(p string) *Config {\n-\tif p == \"\" { return nil }\n \treturn parse(p)\n"

func subject() *review.Subject {
	return &review.Subject{
		Kind: review.KindPullRequest, Owner: "o", Repo: "r", Number: 12, Title: "Simplify Load", Body: "Simplify.",
		Author: "alice", HeadSHA: strings.Repeat("c", 40), BaseSHA: strings.Repeat("d", 40), Diff: []byte(changeDiff),
		Local: true, OpenPRsByAuthor: -1,
	}
}

func repoConfig() *config.Repo {
	cfg := config.DefaultRepo()
	cfg.Models.Reviewer = "reviewer-7b"
	cfg.Review.TimeoutSeconds = 5
	cfg.Policy = config.Policy{Version: 1, Aggregation: config.AggregationAllRequired, Required: []string{"correctness", "secrets"}}
	cfg.Policy.Lenses = []config.Lens{
		{Name: "correctness", Preset: openai.Name, Instruction: "Check the correctness of the change.", Outcome: config.OutcomeReview, Publication: config.PublicationReview, Required: true},
		{Name: "secrets", Preset: "builtin", Instruction: "Look for secrets.", Outcome: config.OutcomeReview, Publication: config.PublicationReview, Required: true},
	}
	return cfg
}

type split struct {
	t       testing.TB
	client  *runner.Client
	pipe    *review.Pipeline
	receipt ed25519.PrivateKey
}

func newSplit(t testing.TB, addr string, tok []byte) *split {
	t.Helper()
	c, err := runner.NewClient(addr, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, _, err := c.Registry(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &split{t: t, client: c, receipt: seedKey(1),
		pipe: review.NewPipeline(review.Options{Runtimes: reg, Logger: zerolog.Nop()})}
}

func (s *split) review() (*review.Decision, *review.Subject) {
	s.t.Helper()
	subj := subject()
	d, err := s.pipe.Review(context.Background(), subj, repoConfig())
	if err != nil {
		s.t.Fatal(err)
	}
	return d, subj
}

// sign composes and signs the receipt the way the worker does, after edit.
func (s *split) sign(d *review.Decision, subj *review.Subject, edit func(*disclosure.Predicate)) *disclosure.Receipt {
	s.t.Helper()
	p := review.Predicate(d, subj, time.Now())
	p.TimeClaims = []disclosure.TimeClaim{{Kind: "reviewCompleted", Value: time.Now().UTC().Format(time.RFC3339), AssertedBy: "lensgate"}}
	if edit != nil {
		edit(p)
	}
	disc, err := disclosure.Disclose(subj.Body, p, disclosure.Signer{Key: s.receipt})
	if err != nil {
		s.t.Fatal(err)
	}
	return disc.Receipt
}

// TestSplitRunnerObservationMatches: a worker whose runtimes are the runner's (over a real
// unix socket) reviews with the builtin runtime and a local OpenAI-compatible endpoint,
// composes and signs the receipt with its own key, and gets from the runner an observation
// that verifies MATCH against that receipt under the runner's witness key, naming the real
// identities of both runtimes. The worker never had the witness key.
func TestSplitRunnerObservationMatches(t *testing.T) {
	model, calls := fakeModel(t)
	addr, srv, _ := startRunner(t, model, token)
	s := newSplit(t, addr, token)
	d, subj := s.review()
	if lr := lensOf(d, "correctness"); lr.Outcome != review.OutcomeFailed || len(lr.Findings) != 1 {
		t.Fatalf("correctness %+v", lr)
	}
	if calls() == 0 {
		t.Fatal("the model was never called")
	}
	rc := s.sign(d, subj, nil)
	obs, err := runner.RunOf(d.Session).Observe(context.Background(), rc.Envelope, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	res := observation.Verify(obs.Envelope, observation.Options{WitnessKey: srv.WitnessPublicKey(), ReceiptKey: s.receipt.Public().(ed25519.PublicKey),
		Receipt: rc.Envelope, Expected: []observation.Expectation{{Name: "openai", EndpointHost: strings.TrimPrefix(model.Root(), "http://"), ModelResponded: "reviewer-7b"}}})
	if res.RunnerObservation != observation.Match {
		t.Fatalf("observation %s %v %v", res.RunnerObservation, res.ReasonCodes, res.Errors)
	}
	kinds := map[string]string{}
	for _, c := range res.Statement.Calls {
		kinds[c.Runtime.Name] = c.Runtime.Kind
	}
	if kinds["builtin"] != observation.KindBuiltin || kinds["openai"] != observation.KindOpenAI || res.Statement.Runner.Version != "v-test" {
		t.Fatalf("calls %+v", res.Statement.Calls)
	}
	// The receipt key does not verify it: the worker cannot have made it.
	if r := observation.Verify(obs.Envelope, observation.Options{WitnessKey: s.receipt.Public().(ed25519.PublicKey), Receipt: rc.Envelope}); r.RunnerObservation == observation.Match {
		t.Fatal("the observation verifies under the receipt key")
	}
}

// TestRunnerRefusesAReceiptItDidNotSee: each receipt differs from the review the runner ran
// in one thing, and the runner signs none of them.
func TestRunnerRefusesAReceiptItDidNotSee(t *testing.T) {
	model, _ := fakeModel(t)
	addr, _, _ := startRunner(t, model, token)
	s := newSplit(t, addr, token)
	d, subj := s.review()
	cases := []struct {
		name string
		edit func(*disclosure.Predicate)
		want string
	}{
		{"a finding left out", func(p *disclosure.Predicate) { p.Findings = p.Findings[1:]; p.FindingsTotal = len(p.Findings) }, "leaves out finding"},
		{"a finding added", func(p *disclosure.Predicate) {
			f := p.Findings[0]
			f.ID = "LG-000000000000"
			p.Findings = append(p.Findings, f)
			p.FindingsTotal = len(p.Findings)
		}, "did not derive"},
		{"a severity lowered", func(p *disclosure.Predicate) { p.Findings[0].Severity = "low" }, "severity"},
		{"another head", func(p *disclosure.Predicate) { p.Subject.HeadSHA = strings.Repeat("e", 40) }, "head"},
		{"another diff", func(p *disclosure.Predicate) { p.Subject.ReviewedDiffDigest = strings.Repeat("0", 64) }, "reviewedDiffDigest"},
		{"another plan", func(p *disclosure.Predicate) { p.PlanDigest = strings.Repeat("1", 64) }, "planRef"},
		{"a completion before the run", func(p *disclosure.Predicate) {
			p.TimeClaims[0].Value = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		}, "outside the runner's window"},
		{"a completion in the future", func(p *disclosure.Predicate) {
			p.TimeClaims[0].Value = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		}, "outside the runner's window"},
	}
	rn := runner.RunOf(d.Session)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(d.Findings) == 0 {
				t.Fatal("the review has no findings to tamper with")
			}
			rc := s.sign(d, subj, c.edit)
			obs, err := rn.Observe(context.Background(), rc.Envelope, nil, 0)
			if err == nil || obs != nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "HTTP 409") {
				t.Fatalf("observe: %v, want a refusal naming %q", err, c.want)
			}
		})
	}
	// The honest receipt is still observed afterwards.
	if _, err := rn.Observe(context.Background(), s.sign(d, subj, nil).Envelope, nil, 0); err != nil {
		t.Fatal(err)
	}
}

// TestCarriedFindingsNeedAnEarlierObservation: a finding the runner did not derive in this run
// (one carried from an earlier head, now fixed) may stand in the receipt only when an
// earlier observation this runner signed for the same subject lists it.
func TestCarriedFindingsNeedAnEarlierObservation(t *testing.T) {
	model, _ := fakeModel(t)
	addr, _, _ := startRunner(t, model, token)
	s := newSplit(t, addr, token)
	titles.Store("Nil check removed")
	d1, subj := s.review()
	first, err := runner.RunOf(d1.Session).Observe(context.Background(), s.sign(d1, subj, nil).Envelope, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	earlier := lensOf(d1, "correctness").Findings[0]
	// The next push: the model words its finding differently, so the earlier one is gone
	// (fixed) and a new one is found.
	titles.Store("Empty path not handled")
	t.Cleanup(func() { titles.Store("Nil check removed") })
	carry := func(id, sev string) func(*disclosure.Predicate) {
		return func(p *disclosure.Predicate) {
			p.Findings = append(p.Findings, disclosure.Finding{ID: id, Severity: sev, Title: "carried", Disposition: "fixed", FixCommit: strings.Repeat("c", 40)})
			p.FindingsTotal = len(p.Findings)
		}
	}
	observe := func(edit func(*disclosure.Predicate), prior ...[]byte) (*observation.Signed, *disclosure.Receipt, error) {
		d, subj := s.review()
		if lensOf(d, "correctness").Findings[0].ID == earlier.ID {
			t.Fatal("the second review found the same finding")
		}
		rc := s.sign(d, subj, edit)
		obs, err := runner.RunOf(d.Session).Observe(context.Background(), rc.Envelope, prior, 0)
		return obs, rc, err
	}
	if _, _, err := observe(carry(earlier.ID, string(earlier.Severity))); err == nil || !strings.Contains(err.Error(), "no earlier observation") {
		t.Fatalf("carried without the earlier observation: %v", err)
	}
	obs, rc, err := observe(carry(earlier.ID, string(earlier.Severity)), first.Envelope)
	if err != nil {
		t.Fatalf("carried with the earlier observation: %v", err)
	}
	if r := observation.Verify(obs.Envelope, observation.Options{WitnessKey: seedKey(7).Public().(ed25519.PublicKey), Receipt: rc.Envelope}); r.RunnerObservation != observation.Match {
		t.Fatalf("carried observation %s %v", r.RunnerObservation, r.Errors)
	}
	if _, _, err := observe(carry(earlier.ID, "low"), first.Envelope); err == nil {
		t.Fatal("a carried finding with another severity was observed")
	}
	if _, _, err := observe(carry("LG-bbbbbbbbbbbb", "high"), first.Envelope); err == nil {
		t.Fatal("a finding the earlier observation does not list was observed")
	}
	// An "earlier observation" signed by another key vouches for nothing.
	p, err := observation.Parse(first.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	st := p.Statement
	st.Findings = append(st.Findings, observation.Finding{ID: "LG-bbbbbbbbbbbb", Lens: "correctness", Severity: "high"})
	st.FindingsTotal++
	st.FindingsRoot = observation.FindingsRoot(st.Findings)
	fake, err := observation.Sign(st, observation.Signer{Key: seedKey(9)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := observe(carry("LG-bbbbbbbbbbbb", "high"), fake.Envelope); err == nil {
		t.Fatal("an observation signed by another key vouched for a finding")
	}
}

// TestRunnerAuthentication: a worker with another token is refused, a runner with another
// token is not believed, a replayed request is refused, and an oversized one gets a 413.
func TestRunnerAuthentication(t *testing.T) {
	model, _ := fakeModel(t)
	addr, _, _ := startRunner(t, model, token)
	wrong := []byte("ffffffffffffffffffffffffffffffff-other")
	c, err := runner.NewClient(addr, wrong, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The runner answers 401, but signs it with its own token, which this client does not
	// share: it believes neither the refusal nor anything else.
	if _, err := c.Info(context.Background()); err == nil || !strings.Contains(err.Error(), "not authenticated") {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := runner.NewClient(addr, []byte("short"), nil); err == nil {
		t.Fatal("a short token was accepted")
	}
	// A pinned witness key that is not the runner's is refused.
	pc, _ := runner.NewClient(addr, token, seedKey(3).Public().(ed25519.PublicKey))
	if _, err := pc.Info(context.Background()); err == nil || !strings.Contains(err.Error(), "pinned") {
		t.Fatalf("pinned key: %v", err)
	}

	sock := strings.TrimPrefix(addr, "unix://")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}, ExpectContinueTimeout: 5 * time.Second}}
	send := func(hdr http.Header, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, "http://runner"+runner.PathCalls, bytes.NewReader(body))
		req.Header = hdr
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send(http.Header{}, []byte(`{}`)); code != http.StatusUnauthorized {
		t.Fatalf("unauthenticated: %d", code)
	}
	hdr, body := runner.SignedRequestForTest(token, http.MethodPost, runner.PathCalls, []byte(`{"runtime":"builtin"}`))
	if code := send(hdr, body); code != http.StatusBadRequest {
		t.Fatalf("first: %d", code)
	}
	if code := send(hdr, body); code != http.StatusUnauthorized {
		t.Fatalf("replayed: %d", code)
	}
	hdr, body = runner.SignedRequestAtForTest(token, http.MethodPost, runner.PathCalls, []byte(`{}`), time.Now().Add(-10*time.Minute))
	if code := send(hdr, body); code != http.StatusUnauthorized {
		t.Fatalf("stale: %d", code)
	}
	hdr, body = runner.SignedRequestForTest(token, http.MethodPost, runner.PathCalls, bytes.Repeat([]byte(" "), 5<<20))
	if code := send(hdr, body); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized: %d", code)
	}
}

// TestRunnerDownFailsClosed: with the runner gone, the lenses it would run are pending with a
// cause that says so, the gate does not pass, and no observation can be had.
func TestRunnerDownFailsClosed(t *testing.T) {
	model, _ := fakeModel(t)
	addr, _, stop := startRunner(t, model, token)
	s := newSplit(t, addr, token)
	stop()
	d, subj := s.review()
	for _, lr := range d.Lenses {
		if lr.Outcome != review.OutcomePending || !strings.Contains(lr.Cause, "runner unreachable") {
			t.Fatalf("lens %s: %s %q", lr.Name, lr.Outcome, lr.Cause)
		}
	}
	if d.Gate.State == review.OutcomePassed {
		t.Fatal("the gate passed without a runner")
	}
	rn := runner.RunOf(d.Session)
	if rn == nil {
		t.Fatal("no run recorded")
	}
	if obs, err := rn.Observe(context.Background(), s.sign(d, subj, nil).Envelope, nil, 0); err == nil || obs != nil {
		t.Fatalf("observation without a runner: %v", err)
	}
}

func lensOf(d *review.Decision, name string) review.LensResult {
	for _, l := range d.Lenses {
		if l.Name == name {
			return l
		}
	}
	return review.LensResult{}
}

// TestConcurrentReviewsThroughOneRunner: reviews of several workers at once each get their own
// run and an observation that matches their own receipt, and not another's.
func TestConcurrentReviewsThroughOneRunner(t *testing.T) {
	model, _ := fakeModel(t)
	addr, srv, _ := startRunner(t, model, token)
	const n = 6
	type out struct {
		env, receipt, otherReceipt []byte
		err                        error
	}
	results := make(chan out, n)
	for i := 0; i < n; i++ {
		s := newSplit(t, addr, token)
		go func() {
			subj := subject()
			d, err := s.pipe.Review(context.Background(), subj, repoConfig())
			if err != nil {
				results <- out{err: err}
				return
			}
			sign := func(edit func(*disclosure.Predicate)) []byte {
				p := review.Predicate(d, subj, time.Now())
				if edit != nil {
					edit(p)
				}
				disc, err := disclosure.Disclose(subj.Body, p, disclosure.Signer{Key: s.receipt})
				if err != nil {
					return nil
				}
				return disc.Receipt.Envelope
			}
			rc := &disclosure.Receipt{Envelope: sign(nil)}
			// Another receipt of the same change, which this run did not observe.
			other := &disclosure.Receipt{Envelope: sign(func(p *disclosure.Predicate) { p.Limitations = append(p.Limitations, "another receipt") })}
			obs, err := runner.RunOf(d.Session).Observe(context.Background(), rc.Envelope, nil, 0)
			if err != nil {
				results <- out{err: err}
				return
			}
			results <- out{env: obs.Envelope, receipt: rc.Envelope, otherReceipt: other.Envelope}
		}()
	}
	for i := 0; i < n; i++ {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if res := observation.Verify(r.env, observation.Options{WitnessKey: srv.WitnessPublicKey(), Receipt: r.receipt}); res.RunnerObservation != observation.Match {
			t.Fatalf("observation %s %v", res.RunnerObservation, res.Errors)
		}
		if res := observation.Verify(r.env, observation.Options{WitnessKey: srv.WitnessPublicKey(), Receipt: r.otherReceipt}); res.RunnerObservation == observation.Match {
			t.Fatal("an observation matches a receipt it was not made for")
		}
	}
}

// TestRetiredWitnessKeyStillVouches: after the runner's witness key is rotated, a finding
// carried from a head observed under the old key is accepted when the old key is listed as
// retired, and refused when it is not.
func TestRetiredWitnessKeyStillVouches(t *testing.T) {
	model, _ := fakeModel(t)
	oldAddr, _, _ := startRunner(t, model, token)
	titles.Store("Nil check removed")
	s := newSplit(t, oldAddr, token)
	d1, subj := s.review()
	first, err := runner.RunOf(d1.Session).Observe(context.Background(), s.sign(d1, subj, nil).Envelope, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	earlier := lensOf(d1, "correctness").Findings[0]
	titles.Store("Empty path not handled")
	t.Cleanup(func() { titles.Store("Nil check removed") })
	carry := func(p *disclosure.Predicate) {
		p.Findings = append(p.Findings, disclosure.Finding{ID: earlier.ID, Severity: string(earlier.Severity), Title: "carried", Disposition: "fixed", FixCommit: strings.Repeat("c", 40)})
		p.FindingsTotal = len(p.Findings)
	}
	rotated := func(o *runner.Options) { o.Witness = observation.Signer{Key: seedKey(8)} }
	for _, c := range []struct {
		name    string
		retired bool
	}{{"old key retired", true}, {"old key forgotten", false}} {
		t.Run(c.name, func(t *testing.T) {
			mods := []func(*runner.Options){rotated}
			if c.retired {
				mods = append(mods, func(o *runner.Options) {
					o.PreviousWitnessKeys = []ed25519.PublicKey{seedKey(7).Public().(ed25519.PublicKey)}
				})
			}
			addr, _, _ := startRunner(t, model, token, mods...)
			s2 := newSplit(t, addr, token)
			d, subj := s2.review()
			_, err := runner.RunOf(d.Session).Observe(context.Background(), s2.sign(d, subj, carry).Envelope, [][]byte{first.Envelope}, 0)
			if (err == nil) != c.retired {
				t.Fatalf("observe: %v", err)
			}
		})
	}
}
