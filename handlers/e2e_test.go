package handlers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/publication"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/handlers/repoconfig"
	"github.com/lensgate/lensgate/handlers/webhook"
	"github.com/lensgate/lensgate/handlers/worker"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/review"
)

const (
	routeGetPull  = "GET /repos/{owner}/{repo}/pulls/{number}"
	routeCommits  = "GET /repos/{owner}/{repo}/pulls/{number}/commits"
	routeContents = "GET /repos/{owner}/{repo}/contents/{path...}"
)

func TestOpenedProducesDecisionForHead(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	code, body := e.send("pull_request", "d-opened", fixture(t, "pull_request.opened.payload.json"))
	if code != http.StatusAccepted {
		t.Fatalf("opened: %d %q", code, body)
	}
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 {
		t.Fatalf("publications = %d, want 1", len(pubs))
	}
	p := pubs[0]
	if p.Decision == nil || p.Failure != nil {
		t.Fatalf("no decision: failure %v", p.Failure)
	}
	if p.Decision.Gate.State == review.OutcomePending || p.Decision.PlanDigest == "" || len(p.Decision.Lenses) == 0 {
		t.Fatalf("pipeline decision %+v", p.Decision.Gate)
	}
	sum := sha256.Sum256([]byte(readmeDiff))
	sc := p.Decision.Subject
	if sc.HeadSHA != fixtureHead || sc.BaseSHA != fixtureBase || sc.ReviewedDiffDigest != hex.EncodeToString(sum[:]) {
		t.Fatalf("subject binding %+v", sc)
	}
	if sc.RepositoryNodeID != "MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=" || sc.NodeID != "MDExOlB1bGxSZXF1ZXN0Mjc5MTQ3NDM3" {
		t.Fatalf("node ids %q %q", sc.RepositoryNodeID, sc.NodeID)
	}
	if !bytes.Equal(p.Subject.Diff, []byte(readmeDiff)) || len(p.Subject.Files) != 1 || p.Subject.Files[0].Path != "README.md" {
		t.Fatalf("snapshot diff/files: %q %+v", p.Subject.Diff, p.Subject.Files)
	}
	if p.Config.Origin != repoconfig.OriginServer || p.App.Slug != githubfake.DefaultAppSlug {
		t.Fatalf("config %+v app %+v", p.Config, p.App)
	}
	if len(e.pub.begun) != 1 {
		t.Fatalf("Begin called %d times", len(e.pub.begun))
	}
	if u := e.gh.Unhandled(); len(u) != 0 {
		t.Fatalf("calls to routes the fake lacks: %v", u)
	}
}

func TestSameDeliveryTwiceIsOneJob(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	payload := fixture(t, "pull_request.opened.payload.json")
	c1, _ := e.send("pull_request", "same-id", payload)
	c2, b2 := e.send("pull_request", "same-id", payload)
	if c1 != http.StatusAccepted || c2 != http.StatusOK || !strings.Contains(b2, "duplicate") {
		t.Fatalf("answers %d, %d %q", c1, c2, b2)
	}
	e.drain()
	if n := len(e.pub.all()); n != 1 {
		t.Fatalf("publications = %d, want 1", n)
	}
	// The pull request and its diff media type share one route: two reads for one job.
	if n := e.gh.CallCount(routeGetPull); n != 2 {
		t.Fatalf("pull request route read %d times, want 2", n)
	}
}

// withHead rewrites a payload's head SHA.
func withHead(payload []byte, head string) []byte {
	return bytes.ReplaceAll(payload, []byte(fixtureHead), []byte(head))
}

func TestQuickSynchronizeReviewsNewestHeadOnce(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	// Hold reviews so the pushes arrive while one is running, as in a real burst.
	e.reviewer.gate = make(chan struct{})
	payload := fixture(t, "pull_request.synchronize.payload.json")
	var heads []string
	for i := range 5 {
		head := fmt.Sprintf("%040x", i+1)
		heads = append(heads, head)
		e.gh.Push(fixtureRepo, fixturePR, head, []byte(readmeDiff), nil)
		code, body := e.send("pull_request", fmt.Sprint("sync-", i), withHead(payload, head))
		if code != http.StatusAccepted {
			t.Fatalf("synchronize %d: %d %q", i, code, body)
		}
	}
	close(e.reviewer.gate)
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 {
		for _, p := range pubs {
			t.Logf("published head %s", p.Subject.HeadSHA)
		}
		t.Fatalf("publications = %d, want 1", len(pubs))
	}
	if got := pubs[0].Decision.Subject.HeadSHA; got != heads[4] {
		t.Fatalf("reviewed head %s, want newest %s", got, heads[4])
	}
}

func TestDraftIsNotReviewed(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	draft := bytes.Replace(fixture(t, "pull_request.opened.payload.json"), []byte(`"draft": false`), []byte(`"draft": true`), 1)
	code, body := e.send("pull_request", "d-draft", draft)
	if code != http.StatusOK || !strings.Contains(body, "draft") {
		t.Fatalf("draft: %d %q", code, body)
	}
	code, body = e.send("pull_request", "d-to-draft", fixture(t, "pull_request.converted_to_draft.with-installation.payload.json"))
	if code != http.StatusOK || !strings.Contains(body, "ignored") {
		t.Fatalf("converted_to_draft: %d %q", code, body)
	}
	e.drain()
	if n := len(e.pub.all()); n != 0 || e.gh.TotalCalls() != 1 { // only GET /app at start
		t.Fatalf("publications %d, GitHub calls %s", n, e.gh.CallSummary())
	}
}

func TestDraftReviewedWhenConfigured(t *testing.T) {
	e := newEnv(t, func(c *config.Server, _ *handlers.Options) { c.Review.ReviewDrafts = true })
	e.addFixturePR(readmeDiff)
	draft := bytes.Replace(fixture(t, "pull_request.opened.payload.json"), []byte(`"draft": false`), []byte(`"draft": true`), 1)
	if code, body := e.send("pull_request", "d-draft", draft); code != http.StatusAccepted {
		t.Fatalf("draft with review_drafts: %d %q", code, body)
	}
	e.drain()
	if n := len(e.pub.all()); n != 1 {
		t.Fatalf("publications %d, want 1", n)
	}
}

func TestWebhookRejections(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	payload := fixture(t, "pull_request.opened.payload.json")
	url := e.http.URL + handlers.RouteHook
	build := func(event, sig string, body []byte) *http.Request {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", "d-"+event)
		if sig != "" {
			req.Header.Set("X-Hub-Signature-256", sig)
		}
		return req
	}
	secret := e.gh.WebhookSecret()
	notJSON := []byte(`{"action": "opened", "pull_request": `)
	wrongShape := []byte(`{"action": "opened", "pull_request": "a string", "repository": 7}`)
	big := bytes.Repeat([]byte(" "), webhook.MaxWebhookBytes+1)
	sha1Only := build("pull_request", "", payload)
	sha1Only.Header.Set("X-Hub-Signature", "sha1=0000000000000000000000000000000000000000")
	tests := []struct {
		name string
		req  *http.Request
		want int
	}{
		{"bad signature", build("pull_request", githubfake.Sign("wrong-secret", payload), payload), http.StatusBadRequest},
		{"missing signature", build("pull_request", "", payload), http.StatusBadRequest},
		{"sha1 signature only", sha1Only, http.StatusBadRequest},
		{"signature of another body", build("pull_request", githubfake.Sign(secret, []byte("{}")), payload), http.StatusBadRequest},
		{"malformed JSON", build("pull_request", githubfake.Sign(secret, notJSON), notJSON), http.StatusBadRequest},
		{"wrong JSON shape", build("pull_request", githubfake.Sign(secret, wrongShape), wrongShape), http.StatusBadRequest},
		{"malformed JSON on an async event", build("issue_comment", githubfake.Sign(secret, notJSON), notJSON), http.StatusBadRequest},
		{"oversized", build("pull_request", githubfake.Sign(secret, big), big), http.StatusRequestEntityTooLarge},
		{"unknown event", build("star", githubfake.Sign(secret, []byte(`{"action":"created"}`)), []byte(`{"action":"created"}`)), http.StatusAccepted},
		{"ping", build("ping", githubfake.Sign(secret, fixture(t, "ping.with-app_id.payload.json")), fixture(t, "ping.with-app_id.payload.json")), http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := e.do(tt.req); code != tt.want {
				t.Fatalf("status %d %q, want %d", code, body, tt.want)
			}
		})
	}
	t.Run("chunked oversized body", func(t *testing.T) {
		req := build("pull_request", githubfake.Sign(secret, big), big)
		req.ContentLength = -1 // no length header: the limit must hold while reading
		req.Body = readerOnly{bytes.NewReader(big)}
		if code, _ := e.do(req); code != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", code)
		}
	})
	t.Run("GET", func(t *testing.T) {
		if code, _ := e.get(handlers.RouteHook); code != http.StatusMethodNotAllowed {
			t.Fatalf("status %d", code)
		}
	})
	e.drain()
	if n := len(e.pub.all()); n != 0 || e.gh.TotalCalls() != 1 {
		t.Fatalf("rejected requests did work: %d publications, calls %s", n, e.gh.CallSummary())
	}
}

type readerOnly struct{ r *bytes.Reader }

func (r readerOnly) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r readerOnly) Close() error               { return nil }

const baseConfig = "runtime: builtin\nreview:\n  max_diff_lines: 1234\n"

func TestConfigEditInPullRequestUsesBasePolicy(t *testing.T) {
	e := newEnv(t)
	diff := readmeDiff + "diff --git a/.asdd.yml b/.asdd.yml\n" +
		"index 3333333..4444444 100644\n--- a/.asdd.yml\n+++ b/.asdd.yml\n" +
		"@@ -1,3 +1,3 @@\n runtime: builtin\n review:\n-  max_diff_lines: 1234\n+  max_diff_lines: lots\n"
	e.addFixturePR(diff)
	e.gh.SetFile(fixtureRepo, fixtureRef, ".asdd.yml", baseConfig)
	e.gh.SetFile(fixtureRepo, fixtureHead, ".asdd.yml", "runtime: builtin\nreview:\n  max_diff_lines: lots\n")
	if code, body := e.send("pull_request", "d-cfg", fixture(t, "pull_request.opened.payload.json")); code != http.StatusAccepted {
		t.Fatalf("%d %q", code, body)
	}
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Decision == nil {
		t.Fatalf("publications %d", len(pubs))
	}
	p := pubs[0]
	if p.Config.Origin != repoconfig.OriginRepository || p.Config.Source != fixtureRepo+"@"+fixtureRef || p.Config.Path != ".asdd.yml" {
		t.Fatalf("config source %+v, want the base branch", p.Config)
	}
	if p.Repo == nil || p.Repo.Review.MaxDiffLines != 1234 {
		t.Fatalf("publication carries configuration %+v", p.Repo)
	}
	if len(e.reviewer.cfgs) != 1 || e.reviewer.cfgs[0].Review.MaxDiffLines != 1234 {
		t.Fatalf("reviewed with %+v, want the base branch's max_diff_lines 1234", e.reviewer.cfgs)
	}
	if p.Proposed == nil || p.Proposed.HeadSHA != fixtureHead || len(p.Proposed.Problems) == 0 {
		t.Fatalf("proposed config not validated: %+v", p.Proposed)
	}
	if pr := p.Proposed.Problems[0]; pr.File != ".asdd.yml" || pr.Line != 3 {
		t.Fatalf("proposed problem %+v, want .asdd.yml line 3", pr)
	}
}

// configRejected requires the one publication of a run whose configuration or policy was
// invalid: nothing reviewed, no defaults applied, and a failing gate whose findings are the
// problems. It returns the publication and its first finding.
func (e *env) configRejected() (*publication.Publication, review.Finding) {
	e.t.Helper()
	pubs := e.pub.all()
	if len(pubs) != 1 {
		e.t.Fatalf("publications %d", len(pubs))
	}
	p := pubs[0]
	if e.reviewer.calls() != 0 || p.Repo != nil {
		e.t.Fatal("reviewed despite an invalid configuration or policy")
	}
	if len(p.ConfigProblems) == 0 || p.Decision == nil || p.Decision.Gate.State != review.OutcomeFailed {
		e.t.Fatalf("want a failing gate with problems, got %+v / %+v", p.ConfigProblems, p.Decision)
	}
	return p, p.Decision.Findings[0]
}

func TestInvalidBaseConfigFailsGateWithLine(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	e.gh.SetFile(fixtureRepo, fixtureRef, ".asdd.yml", "runtime: builtin\nmerge_posture: yolo\n")
	e.send("pull_request", "d-bad", fixture(t, "pull_request.opened.payload.json"))
	e.drain()
	p, f := e.configRejected()
	if f.Path != ".asdd.yml" || f.Line != 2 || f.Title == "" || !strings.Contains(p.Decision.Gate.Reason, ".asdd.yml:2") {
		t.Fatalf("finding %+v reason %q", f, p.Decision.Gate.Reason)
	}
}

func TestOrganizationConfigFallback(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	e.gh.AddRepo(githubfake.Repo{Owner: "Codertocat", Name: ".github"})
	e.gh.SetFile("Codertocat/.github", "main", ".asdd.yml", "review:\n  max_diff_lines: 77\n")
	e.send("pull_request", "d-org", fixture(t, "pull_request.opened.payload.json"))
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Config.Origin != repoconfig.OriginOrganization || pubs[0].Config.Source != "Codertocat/.github" {
		t.Fatalf("publications %d config %+v", len(pubs), pubs[0].Config)
	}
	if e.reviewer.cfgs[0].Review.MaxDiffLines != 77 {
		t.Fatalf("max_diff_lines %d, want the organisation's 77", e.reviewer.cfgs[0].Review.MaxDiffLines)
	}
}

func TestSnapshotRetriesTransientFailures(t *testing.T) {
	tests := []struct {
		name   string
		inject func(gh *githubfake.Server)
	}{
		{"502 twice", func(gh *githubfake.Server) { gh.FailNext(routeGetPull, http.StatusBadGateway, 2) }},
		{"429 then ok", func(gh *githubfake.Server) {
			gh.Inject(routeCommits, githubfake.Fault{Status: http.StatusTooManyRequests, RetryAfter: 0, Times: 1})
		}},
		// GitHub names the wait of a secondary limit; one under the longest wait is waited out.
		{"secondary rate limit", func(gh *githubfake.Server) { gh.SecondaryRateLimitNext(routeCommits, 1, 1) }},
		{"timeout", func(gh *githubfake.Server) { gh.DelayNext(routeGetPull, 3*time.Second, 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The client timeout stays under the injected delay but leaves a loaded machine room
			// for the start-up GET /app.
			e := newEnv(t, func(c *config.Server, o *handlers.Options) {
				c.GitHub.Timeout = 2 * time.Second
				o.MaxBackoff = 2 * time.Second // room for the secondary limit's Retry-After
			})
			e.addFixturePR(readmeDiff)
			tt.inject(e.gh)
			e.send("pull_request", "d-retry", fixture(t, "pull_request.opened.payload.json"))
			e.drain()
			pubs := e.pub.all()
			if len(pubs) != 1 || pubs[0].Failure != nil || pubs[0].Decision.Subject.HeadSHA != fixtureHead {
				t.Fatalf("publications %d, failure %v", len(pubs), pubs[0].Failure)
			}
		})
	}
}

func TestSnapshotOutageEndsInOperationalFailure(t *testing.T) {
	tests := []struct {
		name   string
		route  string
		status int
	}{
		{"500 on the pull request", routeGetPull, http.StatusInternalServerError},
		{"503 on the commits", routeCommits, http.StatusServiceUnavailable},
		{"429 on the commits", routeCommits, http.StatusTooManyRequests},
		{"502 on the configuration", routeContents, http.StatusBadGateway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.addFixturePR(readmeDiff)
			e.gh.FailNext(tt.route, tt.status, 100)
			e.send("pull_request", "d-down", fixture(t, "pull_request.opened.payload.json"))
			e.drain()
			pubs := e.pub.all()
			if len(pubs) != 1 {
				t.Fatalf("publications %d, want the failure reported once", len(pubs))
			}
			p := pubs[0]
			var oe *pull.OperationalError
			if !errors.As(p.Failure, &oe) || oe.Attempts != 3 {
				t.Fatalf("failure %v, want an pull.OperationalError after 3 attempts", p.Failure)
			}
			if p.Decision == nil || p.Decision.Gate.State != review.OutcomePending || !strings.Contains(p.Decision.Gate.Reason, "github unavailable") {
				t.Fatalf("decision %+v, want a pending gate naming the outage", p.Decision)
			}
			if e.reviewer.calls() != 0 {
				t.Fatal("reviewed without a snapshot")
			}
			if n := e.gh.CallCount(tt.route); n != 3 {
				t.Fatalf("%s called %d times, want 3", tt.route, n)
			}
		})
	}
}

func TestNotFoundIsNotRetried(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	e.gh.FailNext(routeGetPull, http.StatusNotFound, 1)
	e.send("pull_request", "d-404", fixture(t, "pull_request.opened.payload.json"))
	e.drain()
	if n := e.gh.CallCount(routeGetPull); n != 1 {
		t.Fatalf("404 retried: %d calls", n)
	}
	pubs := e.pub.all()
	var oe *pull.OperationalError
	if len(pubs) != 1 || errors.As(pubs[0].Failure, &oe) || pubs[0].Failure == nil {
		t.Fatalf("want one report of a non-operational failure, got %+v", pubs)
	}
	if got := e.metric("lensgate_queue_finished_total", map[string]string{"result": "permanent"}); got != 1 {
		t.Fatalf("finished{permanent} = %v: a 404 must not be retried by the queue", got)
	}
}

func TestPipelineFindingsReachPublication(t *testing.T) {
	e := newEnv(t)
	conflict := "diff --git a/README.md b/README.md\n" +
		"index 1111111..2222222 100644\n--- a/README.md\n+++ b/README.md\n" +
		"@@ -1 +1,4 @@\n # Hello-World\n+<<<<<<< HEAD\n+mine\n+=======\n"
	e.addFixturePR(conflict)
	e.send("pull_request", "d-conflict", fixture(t, "pull_request.opened.payload.json"))
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Decision == nil {
		t.Fatalf("publications %d", len(pubs))
	}
	d := pubs[0].Decision
	if d.Gate.State != review.OutcomeFailed || d.PlanDigest == "" || len(d.Lenses) == 0 {
		t.Fatalf("gate %+v plan %q lenses %d", d.Gate, d.PlanDigest, len(d.Lenses))
	}
	found := false
	for _, f := range d.Findings {
		if f.Rule == "conflict-marker" && f.Path == "README.md" && f.Line == 2 {
			found = true
		}
	}
	if !found {
		t.Fatalf("conflict marker not found in %+v", d.Findings)
	}
}

func TestCatchupRedeliversFailedDeliveriesAtStart(t *testing.T) {
	gh := githubfake.New(t)
	failed := gh.AddHookDelivery(githubfake.HookDelivery{GUID: "g-failed", Event: "pull_request", Action: "opened", StatusCode: http.StatusServiceUnavailable, DeliveredAt: time.Now().Add(-time.Hour)})
	gh.AddHookDelivery(githubfake.HookDelivery{GUID: "g-ok", Event: "pull_request", Action: "opened", StatusCode: http.StatusAccepted, DeliveredAt: time.Now().Add(-time.Hour)})
	e := newEnvOn(t, gh, func(c *config.Server, _ *handlers.Options) { c.Queue.CatchupWindow = 24 * time.Hour })
	select {
	case <-e.app.CatchupDone():
	case <-time.After(20 * time.Second):
		t.Fatal("catch-up did not finish")
	}
	if got := gh.Redeliveries(); len(got) != 1 || got[0] != failed.ID {
		t.Fatalf("redeliveries %v, want only %d", got, failed.ID)
	}
}

func TestHeadNotYetVisibleIsReadAgain(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	newHead := strings.Repeat("ab", 20)
	// The first read still shows the old head, as when the API lags the webhook; the push
	// becomes visible on the second read.
	e.gh.OnNext(routeGetPull, func(*http.Request) {
		e.gh.OnNext(routeGetPull, func(*http.Request) { e.gh.Push(fixtureRepo, fixturePR, newHead, []byte(readmeDiff), nil) })
	})
	// The push happens between the reads here, so the payload's updated_at is set by hand: not
	// after the state the first read shows, as GitHub's would be.
	updated := e.gh.PullRequest(fixtureRepo, fixturePR).UpdatedAt.Format(time.RFC3339)
	e.send("pull_request", "d-lag", setJSON(t, withHead(fixture(t, "pull_request.synchronize.payload.json"), newHead), func(m map[string]any) {
		m["pull_request"].(map[string]any)["updated_at"] = updated
	}))
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Decision.Subject.HeadSHA != newHead {
		t.Fatalf("publications %+v, want one review of %s", pubs, newHead)
	}
}

func TestStaleJobIsSkipped(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	shown := strings.Repeat("cd", 20)
	e.gh.Push(fixtureRepo, fixturePR, shown, []byte(readmeDiff), nil)
	// The push is long past: GitHub's replicas show it already.
	e.gh.CatchUp()
	// The event names the older head; the pull request has moved on and stays there, and the
	// newer push's own event never comes (lost, or received before this one and overtaken).
	// The older head is not reviewed; the head GitHub shows is, once.
	e.send("pull_request", "d-stale", fixture(t, "pull_request.synchronize.payload.json"))
	e.waitFor("a publication", func() bool { return len(e.pub.all()) > 0 })
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Decision == nil || pubs[0].Decision.Subject.HeadSHA != shown {
		t.Fatalf("publications %+v, want one review of the head GitHub shows", pubs)
	}
	if got := e.metric("lensgate_reviews_total", map[string]string{"result": "stale"}); got != 1 {
		t.Fatalf("stale count %v", got)
	}
}

func TestDiffTooLargeFallsBackToPatches(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	// The pull request itself reads fine; the diff media type on the same route is refused.
	e.gh.OnNext(routeGetPull, func(*http.Request) { e.gh.FailNext(routeGetPull, http.StatusNotAcceptable, 1) })
	e.send("pull_request", "d-huge", fixture(t, "pull_request.opened.payload.json"))
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Failure != nil || pubs[0].Decision == nil {
		t.Fatalf("publications %+v", pubs)
	}
	p := pubs[0]
	if len(p.Subject.Diff) != 0 || len(p.Subject.Files) != 1 || p.Subject.Files[0].Patch == "" {
		t.Fatalf("subject diff %q files %+v, want the per-file patches", p.Subject.Diff, p.Subject.Files)
	}
	if p.Decision.Gate.State == review.OutcomePending || p.Decision.Coverage.FilesReviewed != 1 {
		t.Fatalf("decision %+v coverage %+v", p.Decision.Gate, p.Decision.Coverage)
	}
}

type panickyReviewer struct{ worker.Reviewer }

func (p panickyReviewer) Review(ctx context.Context, s *review.Subject, c *config.Repo) (*review.Decision, error) {
	if s.Number == fixturePR {
		panic("reviewer bug")
	}
	return p.Reviewer.Review(ctx, s, c)
}

func TestPanickingReviewIsRecoveredAndCounted(t *testing.T) {
	e := newEnv(t, func(_ *config.Server, o *handlers.Options) { o.Reviewer = panickyReviewer{o.Reviewer} })
	e.addFixturePR(readmeDiff)
	e.gh.AddPullRequest(fixtureRepo, githubfake.PullRequest{Number: 3, HeadSHA: fixtureHead, BaseRef: fixtureRef, Diff: []byte(readmeDiff)})
	payload := fixture(t, "pull_request.opened.payload.json")
	e.send("pull_request", "d-panic", payload)
	e.send("pull_request", "d-after", bytes.ReplaceAll(payload, []byte(`"number": 2,`), []byte(`"number": 3,`)))
	e.drain()
	if got := e.metric("lensgate_queue_panics_total", nil); got != 1 {
		t.Fatalf("panics = %v", got)
	}
	pubs := e.pub.all()
	if len(pubs) != 2 {
		t.Fatalf("publications %+v, want the panicked run reported and the next job reviewed", pubs)
	}
	for _, p := range pubs {
		switch p.Subject.Number {
		case 2: // the panicked run concludes its check as pending
			if p.Decision == nil || p.Decision.Gate.State != review.OutcomePending || !strings.Contains(p.Decision.Gate.Reason, "panicked") {
				t.Errorf("panicked run published %+v", p.Decision)
			}
		case 3:
			if p.Failure != nil {
				t.Errorf("next job failed: %v", p.Failure)
			}
		}
	}
	if !strings.Contains(e.logs.String(), "review job panicked") || !strings.Contains(e.logs.String(), "reviewer bug") {
		t.Fatal("panic not logged")
	}
}

// A review that outlives the job timeout still concludes its gate check: pending with the
// cause, never left in progress and never a pass.
func TestTimedOutReviewIsReportedPending(t *testing.T) {
	e := newEnv(t, func(c *config.Server, _ *handlers.Options) { c.Review.JobTimeout = 300 * time.Millisecond })
	e.reviewer.gate = make(chan struct{}) // never opened: the review hangs
	e.addFixturePR(readmeDiff)
	e.send("pull_request", "d-hang", fixture(t, "pull_request.opened.payload.json"))
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Failure == nil || pubs[0].Decision == nil {
		t.Fatalf("publications = %+v, want one pending report", pubs)
	}
	d := pubs[0].Decision
	if d.Gate.State != review.OutcomePending || !strings.Contains(d.Gate.Reason, "job timeout") || d.Subject.HeadSHA != fixtureHead {
		t.Fatalf("gate = %+v for %s", d.Gate, d.Subject.HeadSHA)
	}
}

// A changed workflow is read whole at the head, so a pull_request_target trigger far above the
// changed checkout step reaches the review.
func TestChangedWorkflowIsReadWhole(t *testing.T) {
	e := newEnv(t)
	const path = ".github/workflows/ci.yml"
	diff := "diff --git a/" + path + " b/" + path + "\n" +
		"index 1111111..2222222 100644\n--- a/" + path + "\n+++ b/" + path + "\n" +
		"@@ -20,1 +20,3 @@\n   steps:\n" +
		"+    - uses: actions/checkout@v4\n" +
		"+      with: { ref: \"${{ github.event.pull_request.head.sha }}\" }\n"
	// The head file as the diff describes it: the trigger on line 2, the changed steps at 20-22.
	head := "on:\n  pull_request_target:\n" + strings.Repeat("# filler\n", 17) + "  steps:\n" +
		"    - uses: actions/checkout@v4\n      with: { ref: \"${{ github.event.pull_request.head.sha }}\" }\n"
	e.addFixturePR(diff)
	e.gh.SetFile(fixtureRepo, fixtureHead, path, head)
	e.send("pull_request", "d-workflow", fixture(t, "pull_request.opened.payload.json"))
	e.drain()
	if len(e.reviewer.subj) != 1 {
		t.Fatalf("reviews = %d", len(e.reviewer.subj))
	}
	var got []byte
	for _, f := range e.reviewer.subj[0].Files {
		if f.Path == path {
			got = f.HeadContent
		}
	}
	if string(got) != head {
		t.Fatalf("head content = %q", got)
	}
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Decision == nil {
		t.Fatal("no decision")
	}
	found := false
	for _, f := range pubs[0].Decision.Findings {
		found = found || f.Path == path && f.Rule == "workflow-pull-request-target-checkout"
	}
	if !found || pubs[0].Decision.Gate.State != review.OutcomeFailed {
		t.Errorf("the untrusted checkout under pull_request_target was not found: gate %s, findings %+v", pubs[0].Decision.Gate.State, pubs[0].Decision.Findings)
	}
}
