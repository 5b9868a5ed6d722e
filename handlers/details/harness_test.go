package details_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/handlers/publish"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/worker"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/internal/testkit"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/policy"
)

// Facts of the octokit pull_request payload.
const (
	fixtureRepo = "Codertocat/Hello-World"
	fixturePR   = 2
	fixtureHead = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	newHead     = "4444444444444444444444444444444444444444"
)

const fixtureDiff = "diff --git a/README.md b/README.md\n" +
	"index 1111111..2222222 100644\n" +
	"--- a/README.md\n" +
	"+++ b/README.md\n" +
	"@@ -1 +1,2 @@\n" +
	" # Hello-World\n" +
	"+Run it with exec(userInput).\n"

// Users of the fake GitHub and their permission on the (private) fixture repository.
const (
	writer   = "alice"
	reader   = "bob"
	stranger = "mallory"
)

// plantedReviewer is a deterministic reviewer whose every free-text field carries markup,
// so the page's escaping can be proven on each of them.
type plantedReviewer struct{ markup func(field string) string }

func (p plantedReviewer) Review(_ context.Context, s *review.Subject, cfg *config.Repo) (*review.Decision, error) {
	m := p.markup
	if m == nil {
		m = func(string) string { return "" }
	}
	plan, err := policy.NewPlan(cfg.Policy)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(s.Diff)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	d := &review.Decision{
		Recommendation: review.RecommendComment, PlanDigest: plan.Digest(), Intake: review.Intake{Passed: true},
		Coverage: review.Coverage{Status: review.CoveragePartial, FilesTotal: len(s.Files) + 1, FilesReviewed: len(s.Files),
			Gaps: []review.Gap{{Path: "vendor/" + m("gap-path") + "big.bin", Reason: "binary file " + m("gap-reason")}}},
		Subject: review.SubjectContext{Kind: s.Kind, Owner: s.Owner, Repo: s.Repo, Number: s.Number,
			RepositoryNodeID: s.RepositoryNodeID, NodeID: s.NodeID, HeadSHA: s.HeadSHA, BaseSHA: s.BaseSHA,
			ReviewedDiffDigest: hex.EncodeToString(sum[:])},
		Gate: review.Gate{State: review.OutcomePassed, Reason: "all required lenses passed " + m("gate-reason")},
	}
	for _, l := range cfg.Policy.Lenses {
		lr := review.LensResult{Name: l.Name, Required: l.Required, Publication: l.Publication, Outcome: review.OutcomePassed,
			Runtime: "builtin", Summary: "looked at " + l.Name + " " + m("summary-"+l.Name)}
		if l.Name == "security" {
			f := review.Finding{ID: "security:readme", Lens: l.Name, Severity: review.SeverityMedium, Path: "README.md" + m("path"),
				Line: 2, Title: "Command built from input " + m("title"), Body: "Quote the argument. " + m("body")}
			lr.Findings = append(lr.Findings, f)
			d.Findings = append(d.Findings, f)
		}
		if l.Name == "tests" {
			// An advisory lens whose runtime gave up: its cause is runtime text too.
			lr.Outcome, lr.Cause = review.OutcomePending, "runtime timed out "+m("cause")
			d.Gate.AdvisoryPending = append(d.Gate.AdvisoryPending, l.Name)
		}
		if l.Name == "security" {
			// A model judged this lens; the others made no model call.
			lr.Tokens = &review.TokenCount{Prompt: 1200, Completion: 34, Total: 1234}
			d.Tokens.TokenCount = *lr.Tokens
		}
		d.Lenses = append(d.Lenses, lr)
		d.Runs = append(d.Runs, review.Run{Lens: l.Name, Runtime: "builtin", Model: "model-" + l.Name, Started: now, Finished: now.Add(1500 * time.Millisecond), Outcome: lr.Outcome})
	}
	return d, nil
}

// stack is the whole App with the real publisher and the details page against the fake.
type stack struct {
	t       testing.TB
	gh      *githubfake.Server
	key     ed25519.PrivateKey
	witness ed25519.PrivateKey
	srv     *httptest.Server
	done    chan error
	ledger  string
	logs    *testkit.SyncBuffer
}

type stackOptions struct {
	reviewer    worker.Reviewer
	public      bool
	publicRepos bool
	title       string
	// witness signs a runner observation beside each receipt.
	witness bool
	// ledgerBytes fills the audit ledger with records of other pull requests up to about
	// this size before the App starts.
	ledgerBytes int
	// viewsPerMinute is details.views_per_minute.
	viewsPerMinute int
	// quality serves the repository page's quality figures.
	quality details.QualitySource
}

func newStack(t testing.TB, o stackOptions) *stack {
	t.Helper()
	st := &stack{t: t, gh: githubfake.New(t), done: make(chan error, 16), logs: &testkit.SyncBuffer{}}
	payload := st.payload(o)
	if _, _, err := st.gh.AddFromPullRequestEvent(payload, []byte(fixtureDiff)); err != nil {
		t.Fatal(err)
	}
	st.gh.SetPermission(fixtureRepo, writer, "write")
	st.gh.SetPermission(fixtureRepo, reader, "read")
	seed := sha256.Sum256([]byte("lensgate details test key"))
	st.key = ed25519.NewKeyFromSeed(seed[:])
	st.ledger = filepath.Join(t.TempDir(), "audit.jsonl")
	if o.ledgerBytes > 0 {
		details.FillLedgerForTest(t, st.ledger, fixtureRepo, o.ledgerBytes)
	}
	sink, err := pdp.OpenFileSink(st.ledger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sink.Close() })

	var app *handlers.Server
	st.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { app.Handler().ServeHTTP(w, r) }))
	public := "http://" + st.srv.Listener.Addr().String()
	po := publish.Options{Signer: &disclosure.Signer{Key: st.key}, Audit: sink, DetailsURL: public, RunnerVersion: "test",
		Retry: publish.Retry{Attempts: 3, Backoff: time.Millisecond, MaxWait: time.Second}, ContentSpacing: -1}
	var witnessKeys []ed25519.PublicKey
	if o.witness {
		ws := sha256.Sum256([]byte("lensgate details test witness"))
		st.witness = ed25519.NewKeyFromSeed(ws[:])
		po.Witness = &observation.Signer{Key: st.witness}
		witnessKeys = []ed25519.PublicKey{st.witness.Public().(ed25519.PublicKey)}
	}
	pubr, err := publish.New(po)
	if err != nil {
		t.Fatal(err)
	}
	ac := st.gh.AppConfig()
	cfg := config.DefaultServer()
	cfg.GitHub.WebURL, cfg.GitHub.V3APIURL, cfg.GitHub.V4APIURL = ac.WebURL, ac.V3APIURL, ac.V4APIURL
	cfg.GitHub.App.IntegrationID = ac.App.IntegrationID
	cfg.GitHub.App.WebhookSecret = ac.App.WebhookSecret
	cfg.GitHub.App.PrivateKey = ac.App.PrivateKey
	cfg.GitHub.Timeout = 5 * time.Second
	cfg.GitHub.OAuth = config.ServerOAuth{ClientID: githubfake.OAuthClientID, ClientSecret: githubfake.OAuthClientSecret}
	cfg.AuditFile = st.ledger
	cfg.Queue.CatchupWindow = 0
	cfg.PublicURL = public
	cfg.Details = config.ServerDetails{SessionKey: strings.Repeat("ab", 32), PublicRepos: o.publicRepos, ViewsPerMinute: o.viewsPerMinute}
	reviewer := o.reviewer
	if reviewer == nil {
		reviewer = plantedReviewer{}
	}
	app, err = handlers.New(handlers.Options{
		Config: cfg, Logger: zerolog.New(st.logs), Reviewer: reviewer,
		Publisher:      testkit.NotifyingPublisher{Next: pubr, Done: st.done},
		SigningKeys:    []ed25519.PublicKey{st.key.Public().(ed25519.PublicKey)},
		WitnessKeys:    witnessKeys,
		InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Version: "test",
		Quality: o.quality,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	st.srv.Start()
	t.Cleanup(func() {
		st.srv.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = app.Shutdown(sctx)
		cancel()
	})
	return st
}

// payload is the octokit opened payload with the test's title and visibility (changed in
// memory, see testdata/README.md).
func (st *stack) payload(o stackOptions) []byte {
	st.t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "pull_request.opened.payload.json"))
	if err != nil {
		st.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		st.t.Fatal(err)
	}
	m["repository"].(map[string]any)["private"] = !o.public
	if o.title != "" {
		m["pull_request"].(map[string]any)["title"] = o.title
	}
	out, err := json.Marshal(m)
	if err != nil {
		st.t.Fatal(err)
	}
	return out
}

// review delivers the opened webhook and waits for the publication.
func (st *stack) review(o stackOptions) {
	st.t.Helper()
	req, err := githubfake.WebhookRequest(st.srv.URL+handlers.RouteHook, "pull_request", fmt.Sprintf("d-%d", time.Now().UnixNano()), st.gh.WebhookSecret(), st.payload(o))
	if err != nil {
		st.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		st.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		st.t.Fatalf("webhook answered %d", resp.StatusCode)
	}
	st.wait("review")
}

func (st *stack) wait(what string) {
	st.t.Helper()
	select {
	case err := <-st.done:
		if err != nil {
			st.t.Fatalf("%s: publish: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		st.t.Fatalf("%s: no publication; logs:\n%s", what, st.logs.String())
	}
}

// gateRun is the gate check run of a head.
func (st *stack) gateRun(head string) githubfake.CheckRun {
	st.t.Helper()
	for _, c := range st.gh.CheckRuns(fixtureRepo, head) {
		if c.Name == publish.DefaultCheckName {
			return c
		}
	}
	st.t.Fatalf("no gate check run for %s", head)
	return githubfake.CheckRun{}
}

func (st *stack) pageURL(head string) string {
	p := "/details/" + fixtureRepo + "/" + fmt.Sprint(fixturePR)
	if head != "" {
		p += "/" + head
	}
	return st.srv.URL + p
}

// client is a browser-like HTTP client: a cookie jar, redirects followed.
func (st *stack) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 20 * time.Second}
}

// login runs the OAuth flow through the fake GitHub's sign-in form as login.
func (st *stack) login(c *http.Client, login string) {
	st.t.Helper()
	resp, err := c.Get(st.srv.URL + "/api/github/auth?return=" + url.QueryEscape("/details/"+fixtureRepo+"/2"))
	if err != nil {
		st.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	form := url.Values{}
	for _, name := range []string{"client_id", "redirect_uri", "state"} {
		form.Set(name, hiddenValue(string(body), name))
	}
	form.Set("login", login)
	resp, err = c.PostForm(st.gh.URL()+"/login/oauth/authorize", form)
	if err != nil {
		st.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
		st.t.Fatalf("login as %s ended with %d at %s", login, resp.StatusCode, resp.Request.URL)
	}
}

// hiddenValue reads an <input type="hidden" name=NAME value=...> of the fake's sign-in form.
func hiddenValue(html, name string) string {
	i := strings.Index(html, `name="`+name+`" value="`)
	if i < 0 {
		return ""
	}
	rest := html[i+len(`name="`+name+`" value="`):]
	j := strings.Index(rest, `"`)
	v := rest[:j]
	return strings.NewReplacer("&amp;", "&", "&#43;", "+", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'").Replace(v)
}

func get(t testing.TB, c *http.Client, u string) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}
