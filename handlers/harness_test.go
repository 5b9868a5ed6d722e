package handlers_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/worker"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/testkit"
	"github.com/lensgate/lensgate/review"
)

// Facts of the octokit pull_request fixtures.
const (
	fixtureRepo = "Codertocat/Hello-World"
	fixturePR   = 2
	fixtureHead = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	fixtureBase = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
	fixtureRef  = "master"
)

const readmeDiff = "diff --git a/README.md b/README.md\n" +
	"index 1111111..2222222 100644\n" +
	"--- a/README.md\n" +
	"+++ b/README.md\n" +
	"@@ -1 +1,2 @@\n" +
	" # Hello-World\n" +
	"+A friendly line.\n"

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "webhooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordingPublisher keeps every publication.
type recordingPublisher struct {
	mu    sync.Mutex
	begun []*publication.Publication
	pubs  []*publication.Publication
	// abandoned records every interruption reported instead of a publication.
	abandoned []publication.Interruption
}

func newRecordingPublisher() *recordingPublisher { return &recordingPublisher{} }

func (p *recordingPublisher) Begin(_ context.Context, _ *github.Client, pub *publication.Publication) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.begun = append(p.begun, pub)
	return nil
}

func (p *recordingPublisher) Publish(_ context.Context, _ *github.Client, pub *publication.Publication) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pubs = append(p.pubs, pub)
	return nil
}

func (p *recordingPublisher) Abandon(_ context.Context, _ *github.Client, pub *publication.Publication, why publication.Interruption) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.abandoned = append(p.abandoned, why)
	return nil
}

func (p *recordingPublisher) all() []*publication.Publication {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*publication.Publication(nil), p.pubs...)
}

// countingReviewer wraps a reviewer, recording the configurations it was given.
type countingReviewer struct {
	next worker.Reviewer
	mu   sync.Mutex
	cfgs []*config.Repo
	subj []*review.Subject
	// gate, when set, holds every review until closed (or the job is cancelled).
	gate chan struct{}
}

func (r *countingReviewer) Review(ctx context.Context, s *review.Subject, c *config.Repo) (*review.Decision, error) {
	r.mu.Lock()
	r.cfgs = append(r.cfgs, c)
	r.subj = append(r.subj, s)
	gate := r.gate
	r.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.next.Review(ctx, s, c)
}

func (r *countingReviewer) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cfgs)
}

// env is the whole App against the fake GitHub.
type env struct {
	t        testing.TB
	gh       *githubfake.Server
	app      *handlers.Server
	http     *httptest.Server
	pub      *recordingPublisher
	reviewer *countingReviewer
	logs     *testkit.SyncBuffer
	reg      *prometheus.Registry
	stopped  bool
}

type envOption func(*config.Server, *handlers.Options)

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	return newEnvOn(t, githubfake.New(t), opts...)
}

// newEnvOn starts the App against a fake GitHub the test prepared.
func newEnvOn(t testing.TB, gh *githubfake.Server, opts ...envOption) *env {
	t.Helper()
	ac := gh.AppConfig()
	cfg := config.DefaultServer()
	cfg.GitHub.WebURL, cfg.GitHub.V3APIURL, cfg.GitHub.V4APIURL = ac.WebURL, ac.V3APIURL, ac.V4APIURL
	cfg.GitHub.App.IntegrationID = ac.App.IntegrationID
	cfg.GitHub.App.WebhookSecret = ac.App.WebhookSecret
	cfg.GitHub.App.PrivateKey = ac.App.PrivateKey
	cfg.GitHub.Timeout = 2 * time.Second
	cfg.Review.SnapshotAttempts = 3
	cfg.Queue.CatchupWindow = 0 // tests that want catch-up turn it on
	cfg.AuditFile = filepath.Join(t.TempDir(), "audit.jsonl")
	e := &env{t: t, gh: gh, pub: newRecordingPublisher(), logs: &testkit.SyncBuffer{}, reg: prometheus.NewRegistry()}
	e.reviewer = &countingReviewer{next: newPipeline(t)}
	o := handlers.Options{
		Config:         cfg,
		Logger:         zerolog.New(e.logs),
		Reviewer:       e.reviewer,
		Triager:        newTriager(t),
		Publisher:      e.pub,
		InitialBackoff: time.Millisecond,
		MaxBackoff:     5 * time.Millisecond,
		Version:        "test",
		Registry:       e.reg,
	}
	for _, opt := range opts {
		opt(cfg, &o)
	}
	app, err := handlers.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.app = app
	e.http = httptest.NewServer(app.Handler())
	t.Cleanup(func() {
		e.http.Close()
		e.drain()
		for _, line := range strings.Split(e.logs.String(), "\n") {
			if k := testkit.DuplicateKey(line); k != "" {
				t.Errorf("log line carries %q twice: %.300s", k, line)
			}
		}
	})
	return e
}

// drain stops the queue after every accepted job has run.
func (e *env) drain() {
	e.t.Helper()
	if e.stopped {
		return
	}
	e.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.app.Shutdown(ctx); err != nil {
		e.t.Errorf("shutdown: %v", err)
	}
}

// addFixturePR stores the pull request the octokit fixtures describe, with diff.
func (e *env) addFixturePR(diff string) {
	e.t.Helper()
	if _, _, err := e.gh.AddFromPullRequestEvent(fixture(e.t, "pull_request.opened.payload.json"), []byte(diff)); err != nil {
		e.t.Fatal(err)
	}
}

// send posts a signed webhook and returns the status and body.
func (e *env) send(event, delivery string, body []byte) (int, string) {
	e.t.Helper()
	body = e.gh.StampPullRequestEvent(event, body)
	req, err := githubfake.WebhookRequest(e.http.URL+handlers.RouteHook, event, delivery, e.gh.WebhookSecret(), body)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.do(req)
}

func (e *env) do(req *http.Request) (int, string) {
	e.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func (e *env) get(path string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.http.URL+path, nil)
	return e.do(req)
}

// metric sums the samples of a counter or gauge whose labels include want.
func (e *env) metric(name string, want map[string]string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				total += m.GetCounter().GetValue()
			case m.Gauge != nil:
				total += m.GetGauge().GetValue()
			}
		}
	}
	return total
}

// waitFor polls cond; asynchronous event handling has no completion signal of its own.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// handled waits until the event stage recorded n outcomes for event.
func (e *env) handled(event string, n float64) {
	e.t.Helper()
	e.waitFor(event+" handled", func() bool {
		return e.metric("lensgate_webhook_events_total", map[string]string{"event": event}) >= n
	})
}
