package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/internal/githubfake"
)

// withComment rewrites the fixture comment's body.
func withComment(t *testing.T, payload []byte, body string) []byte {
	t.Helper()
	q, _ := json.Marshal(body)
	return bytes.Replace(payload, []byte(`"You are totally right! I'll get this fixed right away."`), q, 1)
}

// setJSON decodes payload, lets edit change it and encodes it again.
func setJSON(t *testing.T, payload []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReviewCommand(t *testing.T) {
	onPR := "issue_comment.created.on-pull-request.with-installation.payload.json"
	onIssue := "issue_comment.created.with-installation.payload.json"
	tests := []struct {
		name       string
		file       string
		body       string
		permission string
		sender     string // "" keeps the fixture's user
		wantReview bool
		outcome    string
	}{
		{"writer on a pull request", onPR, "/lensgate review", "write", "", true, "queued"},
		{"admin with trailing text on later lines", onPR, "\n /lensgate review \nplease", "admin", "", true, "queued"},
		{"maintainer", onPR, "/lensgate review", "maintain", "", true, "queued"},
		{"reader", onPR, "/lensgate review", "read", "", false, "ignored"},
		{"triager", onPR, "/lensgate review", "triage", "", false, "ignored"},
		{"not the command", onPR, "/lensgate reviewed it", "write", "", false, "ignored"},
		{"command inside text", onPR, "please /lensgate review", "write", "", false, "ignored"},
		{"bot", onPR, "/lensgate review", "write", "Bot", false, "ignored"},
		{"plain issue", onIssue, "/lensgate review", "write", "", false, "ignored"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.gh.AddRepo(githubfake.Repo{Owner: "Codertocat", Name: "Hello-World", DefaultBranch: "master"})
			e.gh.AddPullRequest(fixtureRepo, githubfake.PullRequest{Number: 1, HeadSHA: fixtureHead, BaseSHA: fixtureBase, BaseRef: fixtureRef, Diff: []byte(readmeDiff)})
			e.gh.SetPermission(fixtureRepo, "Codertocat", tt.permission)
			payload := withComment(t, fixture(t, tt.file), tt.body)
			if tt.sender != "" {
				payload = setJSON(t, payload, func(m map[string]any) {
					m["sender"].(map[string]any)["type"] = tt.sender
					m["sender"].(map[string]any)["login"] = "ci[bot]"
				})
			}
			if code, body := e.send("issue_comment", "d-cmd", payload); code != http.StatusOK {
				t.Fatalf("%d %q", code, body)
			}
			e.handled("issue_comment.created", 1)
			e.drain()
			if got := e.metric("lensgate_webhook_events_total", map[string]string{"event": "issue_comment.created", "outcome": tt.outcome}); got != 1 {
				t.Fatalf("outcome %s recorded %v times", tt.outcome, got)
			}
			pubs := e.pub.all()
			if !tt.wantReview {
				if len(pubs) != 0 {
					t.Fatalf("%d publications, want none", len(pubs))
				}
				return
			}
			if len(pubs) != 1 || pubs[0].Job.Reason != "issue_comment.created" || pubs[0].Subject.Number != 1 || pubs[0].Decision.Subject.HeadSHA != fixtureHead {
				t.Fatalf("publications %+v", pubs)
			}
			if !strings.Contains(string(pubs[0].Job.Extra), `"requested_by":"Codertocat"`) {
				t.Fatalf("job extra %s", pubs[0].Job.Extra)
			}
		})
	}
}

func TestCheckRunRerequestedFindsPullByHead(t *testing.T) {
	e := newEnv(t)
	const head = "d6fde92930d4715a2b49857d24b940956b26d2d3"
	e.gh.AddRepo(githubfake.Repo{Owner: "github", Name: "hello-world", ID: 526, DefaultBranch: "master"})
	e.gh.AddPullRequest("github/hello-world", githubfake.PullRequest{Number: 7, HeadSHA: head, BaseRef: "master", Diff: []byte(readmeDiff)})
	code, body := e.send("check_run", "d-rerun", ownApp(t, "check_run", fixture(t, "check_run.rerequested.rfc3339.payload.json")))
	if code != http.StatusOK {
		t.Fatalf("%d %q", code, body)
	}
	e.handled("check_run.rerequested", 1)
	e.drain()
	if n := e.gh.CallCount("GET /repos/{owner}/{repo}/commits/{sha}/pulls"); n != 1 {
		t.Fatalf("lookup by head SHA called %d times", n)
	}
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Subject.Number != 7 || pubs[0].Decision.Subject.HeadSHA != head || pubs[0].Job.Reason != "check_run.rerequested" {
		t.Fatalf("publications %+v", pubs)
	}
	if !strings.Contains(string(pubs[0].Job.Extra), `"check_run_id":4`) {
		t.Fatalf("job extra %s", pubs[0].Job.Extra)
	}
}

func TestCheckRunUpstreamFixtureIsRefused(t *testing.T) {
	// The unmodified octokit file does not decode with go-github v62 (non-RFC 3339 times).
	e := newEnv(t)
	if code, _ := e.send("check_run", "d-raw", fixture(t, "check_run.rerequested.payload.json")); code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", code)
	}
}

func TestCheckSuiteRerequested(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	payload := setJSON(t, fixture(t, "check_suite.rerequested.payload.json"), func(m map[string]any) {
		m["installation"].(map[string]any)["id"] = githubfake.DefaultInstallationID
	})
	payload = ownApp(t, "check_suite", payload)
	if code, body := e.send("check_suite", "d-suite", payload); code != http.StatusOK {
		t.Fatalf("%d %q", code, body)
	}
	e.handled("check_suite.rerequested", 1)
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Subject.Number != fixturePR || pubs[0].Decision.Subject.HeadSHA != fixtureHead {
		t.Fatalf("publications %+v", pubs)
	}
	if n := e.gh.CallCount("GET /repos/{owner}/{repo}/commits/{sha}/pulls"); n != 0 {
		t.Fatalf("looked up by SHA although the event named the pull request")
	}
}

// ownApp makes a check event's run or suite one of this App's (the fixtures name another app).
func ownApp(t *testing.T, event string, payload []byte) []byte {
	t.Helper()
	return setJSON(t, payload, func(m map[string]any) {
		m[event].(map[string]any)["app"].(map[string]any)["id"] = githubfake.DefaultAppID
	})
}

// GitHub sends every app's re-runs to every app subscribed to check events: a re-run of
// another app's check run or suite is not lensgate's to act on.
func TestRerunOfAnotherAppsCheckIsIgnored(t *testing.T) {
	for _, event := range []string{"check_run", "check_suite"} {
		t.Run(event, func(t *testing.T) {
			e := newEnv(t)
			e.addFixturePR(readmeDiff)
			// The check_run fixture is of github/hello-world, the check_suite one of the fixture
			// pull request.
			e.gh.AddRepo(githubfake.Repo{Owner: "github", Name: "hello-world", ID: 526, DefaultBranch: "master"})
			e.gh.AddPullRequest("github/hello-world", githubfake.PullRequest{Number: 7, HeadSHA: "d6fde92930d4715a2b49857d24b940956b26d2d3", BaseRef: "master", Diff: []byte(readmeDiff)})
			payload := setJSON(t, fixture(t, map[string]string{"check_run": "check_run.rerequested.rfc3339.payload.json",
				"check_suite": "check_suite.rerequested.payload.json"}[event]), func(m map[string]any) {
				m["installation"].(map[string]any)["id"] = githubfake.DefaultInstallationID
				m[event].(map[string]any)["app"].(map[string]any)["id"] = githubfake.DefaultAppID + 1
			})
			if code, body := e.send(event, "d-other", payload); code != http.StatusOK {
				t.Fatalf("%d %q", code, body)
			}
			e.handled(event+".rerequested", 1)
			if code, body := e.send(event, "d-own", ownApp(t, event, payload)); code != http.StatusOK {
				t.Fatalf("%d %q", code, body)
			}
			e.handled(event+".rerequested", 2)
			e.drain()
			if n := e.reviewer.calls(); n != 1 {
				t.Fatalf("%d reviews, want one: for this App's re-run only", n)
			}
			if got := e.metric("lensgate_webhook_events_total", map[string]string{"event": event + ".rerequested", "outcome": "ignored"}); got != 1 {
				t.Fatalf("ignored %v, want 1", got)
			}
		})
	}
}

// A delivery replayed under a new delivery id (the signature has no timestamp, so a captured
// one still verifies) is a duplicate: its body was already accepted.
func TestReplayUnderNewDeliveryIDIsDuplicate(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	opened := fixture(t, "pull_request.opened.payload.json")
	if code, body := e.send("pull_request", "d-first", opened); code != http.StatusAccepted {
		t.Fatalf("%d %q", code, body)
	}
	code, body := e.send("pull_request", "d-replayed", opened)
	if code != http.StatusOK || body != "duplicate delivery" {
		t.Fatalf("replay answered %d %q", code, body)
	}
	// GitHub's own redelivery keeps the id: still the queue's duplicate, not a replay.
	if code, body := e.send("pull_request", "d-first", opened); code != http.StatusOK || body != "duplicate delivery" {
		t.Fatalf("redelivery answered %d %q", code, body)
	}
	e.drain()
	if n := e.reviewer.calls(); n != 1 {
		t.Fatalf("%d reviews, want 1", n)
	}
	if got := e.metric("lensgate_webhook_events_total", map[string]string{"outcome": "replay"}); got != 1 {
		t.Fatalf("replays counted %v", got)
	}
}

func TestIssuesTriage(t *testing.T) {
	e := newEnv(t)
	e.gh.AddRepo(githubfake.Repo{Owner: "Codertocat", Name: "Hello-World", DefaultBranch: "master"})
	e.gh.AddIssue(fixtureRepo, githubfake.Issue{Number: 1, Title: "Spelling error in the README file", Body: "It looks like you accidently spelled 'commit' with two 't's.", User: "Codertocat"})
	e.gh.SetFile(fixtureRepo, "master", ".asdd.yml", "triage_labels: [bug]\n")
	if code, body := e.send("issues", "d-issue", fixture(t, "issues.opened.with-installation.payload.json")); code != http.StatusAccepted {
		t.Fatalf("%d %q", code, body)
	}
	// issues.edited without an installation block cannot get a client: acknowledged, no work.
	if code, body := e.send("issues", "d-edit", fixture(t, "issues.edited.payload.json")); code != http.StatusOK || !strings.Contains(body, "installation") {
		t.Fatalf("%d %q", code, body)
	}
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Triage == nil || pubs[0].Subject.Kind != "issue" || pubs[0].Subject.Title != "Spelling error in the README file" {
		t.Fatalf("publications %+v", pubs)
	}
	if pubs[0].Config.Source != fixtureRepo+"@master" {
		t.Fatalf("issue configuration from %+v, want the default branch", pubs[0].Config)
	}
}

func TestIgnoredPullRequestActions(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	edited := setJSON(t, fixture(t, "pull_request.opened.payload.json"), func(m map[string]any) {
		m["action"] = "edited"
		m["changes"] = map[string]any{"body": map[string]any{"from": "old"}}
		m["sender"] = map[string]any{"login": githubfake.DefaultAppSlug + "[bot]", "type": "Bot"}
	})
	for name, payload := range map[string][]byte{
		"closed":           fixture(t, "pull_request.closed.payload.json"),
		"labeled":          fixture(t, "pull_request.labeled.payload.json"),
		"edited by itself": edited,
	} {
		if code, body := e.send("pull_request", "d-"+name, payload); code != http.StatusOK || !strings.HasPrefix(body, "ignored") {
			t.Fatalf("%s: %d %q", name, code, body)
		}
	}
	for _, ev := range []string{"installation", "installation_repositories"} {
		file := map[string]string{"installation": "installation.created.payload.json", "installation_repositories": "installation_repositories.added.payload.json"}[ev]
		if code, _ := e.send(ev, "d-"+ev, fixture(t, file)); code != http.StatusOK {
			t.Fatalf("%s: %d", ev, code)
		}
		e.handled(ev, 1)
	}
	e.drain()
	if n := len(e.pub.all()); n != 0 {
		t.Fatalf("%d publications, want none", n)
	}
}

func TestEditedBodyRebinds(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	e.gh.SetPullBody(fixtureRepo, fixturePR, "a new description")
	// The event shows the edit as GitHub sends it; the API shows it only after the read lag.
	updated := e.gh.PullRequest(fixtureRepo, fixturePR).UpdatedAt.Format(time.RFC3339)
	edited := setJSON(t, fixture(t, "pull_request.opened.payload.json"), func(m map[string]any) {
		m["action"] = "edited"
		m["changes"] = map[string]any{"body": map[string]any{"from": "old"}}
		pr := m["pull_request"].(map[string]any)
		pr["body"], pr["updated_at"] = "a new description", updated
	})
	if code, body := e.send("pull_request", "d-edit", edited); code != http.StatusAccepted {
		t.Fatalf("%d %q", code, body)
	}
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Subject.Body != "a new description" {
		t.Fatalf("publications %+v", pubs)
	}
}

func TestQueueFullAnswers503(t *testing.T) {
	e := newEnv(t, func(c *config.Server, _ *handlers.Options) { c.Queue.Size = 1; c.Queue.Workers = 1 })
	e.addFixturePR(readmeDiff)
	e.reviewer.gate = make(chan struct{})
	payload := fixture(t, "pull_request.opened.payload.json")
	other := func(n string) []byte {
		return bytes.ReplaceAll(payload, []byte(`"number": 2,`), []byte(`"number": `+n+`,`))
	}
	if code, _ := e.send("pull_request", "d-1", payload); code != http.StatusAccepted {
		t.Fatal(code)
	}
	e.waitFor("first review to start", func() bool { return e.reviewer.calls() == 1 })
	if code, _ := e.send("pull_request", "d-2", other("3")); code != http.StatusAccepted {
		t.Fatalf("second subject: %d", code)
	}
	code, body := e.send("pull_request", "d-3", other("4"))
	if code != http.StatusServiceUnavailable {
		t.Fatalf("third subject: %d %q, want 503", code, body)
	}
	if got := e.metric("lensgate_queue_dropped_total", map[string]string{"reason": "full"}); got != 1 {
		t.Fatalf("dropped{full} = %v", got)
	}
	close(e.reviewer.gate)
	e.drain()
}

func TestHealthReadinessAndKeys(t *testing.T) {
	e := newEnv(t)
	if code, body := e.get(handlers.RouteHealth); code != http.StatusOK || !strings.Contains(body, `"version":"test"`) {
		t.Fatalf("healthz %d %s", code, body)
	}
	if code, _ := e.get(handlers.RouteReady); code != http.StatusOK {
		t.Fatalf("readyz while running: %d", code)
	}
	if code, body := e.get(handlers.RouteKeys); code != http.StatusOK || body != `{"keys":[]}` {
		t.Fatalf("keys without a signing key: %d %s", code, body)
	}
	code, body := e.get(handlers.RouteMetrics)
	if code != http.StatusOK || !strings.Contains(body, "lensgate_github_requests_total") || !strings.Contains(body, "lensgate_queue_depth") {
		t.Fatalf("metrics %d", code)
	}
	e.drain()
	if code, _ := e.get(handlers.RouteReady); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz after shutdown: %d", code)
	}
}

func TestBackfillOnInstall(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(fmt.Sprint("enabled=", enabled), func(t *testing.T) {
			e := newEnv(t, func(c *config.Server, _ *handlers.Options) { c.Review.BackfillOnInstall = enabled })
			e.gh.AddRepo(githubfake.Repo{Owner: "Codertocat", Name: "Space", DefaultBranch: "main"})
			e.gh.AddPullRequest("Codertocat/Space", githubfake.PullRequest{Number: 1, HeadSHA: strings.Repeat("1", 40), Diff: []byte(readmeDiff)})
			e.gh.AddPullRequest("Codertocat/Space", githubfake.PullRequest{Number: 2, HeadSHA: strings.Repeat("2", 40), Draft: true, Diff: []byte(readmeDiff)})
			payload := setJSON(t, fixture(t, "installation_repositories.added.payload.json"), func(m map[string]any) {
				m["installation"].(map[string]any)["id"] = githubfake.DefaultInstallationID
			})
			if code, _ := e.send("installation_repositories", "d-inst", payload); code != http.StatusOK {
				t.Fatal(code)
			}
			e.handled("installation_repositories", 1)
			if enabled {
				e.handled("installation.backfill", 1)
			}
			e.drain()
			pubs := e.pub.all()
			if !enabled {
				if len(pubs) != 0 {
					t.Fatalf("%d publications without backfill", len(pubs))
				}
				return
			}
			if len(pubs) != 1 || pubs[0].Subject.Repo != "Space" || pubs[0].Subject.Number != 1 || pubs[0].Job.Reason != "installation.backfill" {
				t.Fatalf("publications %+v, want the one open non-draft pull request", pubs)
			}
		})
	}
}

// Start refuses an App id GitHub does not accept, and an App without the slug its comments are
// recognised by.
func TestStartChecksTheApp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opt   githubfake.Option
		appID int64
		want  string
	}{
		{"wrong App id", githubfake.WithAppSlug(githubfake.DefaultAppSlug), 999, "github app check (GET /app) failed"},
		{"no slug", githubfake.WithAppSlug(""), githubfake.DefaultAppID, "no slug"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t, tc.opt)
			ac := gh.AppConfig()
			cfg := config.DefaultServer()
			cfg.GitHub.WebURL, cfg.GitHub.V3APIURL, cfg.GitHub.V4APIURL = ac.WebURL, ac.V3APIURL, ac.V4APIURL
			cfg.GitHub.App.IntegrationID, cfg.GitHub.App.WebhookSecret, cfg.GitHub.App.PrivateKey = tc.appID, ac.App.WebhookSecret, ac.App.PrivateKey
			cfg.AuditFile = filepath.Join(t.TempDir(), "audit.jsonl")
			cfg.Queue.CatchupWindow = 0
			app, err := handlers.New(handlers.Options{Config: cfg, Logger: zerolog.Nop(), Reviewer: newPipeline(t)})
			if err != nil {
				t.Fatal(err)
			}
			err = app.Start(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start: %v, want %q", err, tc.want)
			}
		})
	}
}
