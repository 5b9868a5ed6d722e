package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lensgate/lensgate"
	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/webhook"
)

// fakeManifestAPI is GitHub's manifest conversion for one code, counting the conversions.
type fakeManifestAPI struct {
	*httptest.Server
	conversions atomic.Int32
}

// manifestServer answers GitHub's manifest conversion for one code.
func manifestServer(t *testing.T, code string) *fakeManifestAPI {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
	api := &fakeManifestAPI{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v3/app-manifests/{code}/conversions", func(w http.ResponseWriter, r *http.Request) {
		api.conversions.Add(1)
		if r.PathValue("code") != code {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{
			"id": 4242, "slug": "lensgate-test", "name": "lensgate-test",
			"html_url":       "https://github.com/apps/lensgate-test",
			"webhook_secret": "whsec-from-github", "pem": keyPEM,
			"client_id": "Iv1.x", "client_secret": "client-secret-from-github",
		})
	})
	api.Server = httptest.NewServer(mux)
	t.Cleanup(api.Close)
	return api
}

func TestSetupConvert(t *testing.T) {
	srv := manifestServer(t, "abc123")
	dir := filepath.Join(t.TempDir(), "conf")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"setup", "convert", "--code", "abc123", "--api-url", srv.URL + "/api/v3/", "--out", dir}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, secret := range []string{"whsec-from-github", "client-secret-from-github", "PRIVATE KEY"} {
		if strings.Contains(out.String()+errb.String(), secret) {
			t.Errorf("setup printed a secret (%s)", secret)
		}
	}
	for _, f := range []string{"lensgate.yml", "app-key.pem", "signing.key"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	s, err := config.LoadServer(filepath.Join(dir, "lensgate.yml"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("written config does not load: %v", err)
	}
	if abs, _ := filepath.Abs(dir); s.AuditFile != filepath.Join(abs, "state", "audit.jsonl") || s.SQLitePath() != filepath.Join(abs, "state", "queue.db") {
		t.Errorf("audit file %q and queue %q are not next to the keys", s.AuditFile, s.SQLitePath())
	}
	if s.GitHub.App.IntegrationID != 4242 || s.GitHub.App.WebhookSecret != "whsec-from-github" {
		t.Errorf("config holds id %d secret %q", s.GitHub.App.IntegrationID, s.GitHub.App.WebhookSecret)
	}
	if !strings.HasPrefix(s.GitHub.V3APIURL, srv.URL) || !strings.HasSuffix(s.GitHub.V4APIURL, "/api/graphql") {
		t.Errorf("enterprise URLs not derived: %q %q", s.GitHub.V3APIURL, s.GitHub.V4APIURL)
	}
	if !strings.Contains(out.String(), "installations/new") {
		t.Errorf("no install hint in %q", out.String())
	}
	// The details page's login: the App's OAuth client and a fresh session key; without --url
	// the page stays off.
	if o := s.GitHub.OAuth; o.ClientID != "Iv1.x" || o.ClientSecret != "client-secret-from-github" {
		t.Errorf("oauth client %+v", o)
	}
	if k, err := s.SessionKeyBytes(); err != nil || len(k) != 32 || s.PublicURL != "" {
		t.Errorf("session key %d bytes (%v), public_url %q", len(k), err, s.PublicURL)
	}

	// A second run never overwrites the keys it wrote.
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"setup", "convert", "--code", "abc123", "--api-url", srv.URL + "/api/v3/", "--out", dir}, &out, &errb); code == 0 {
		t.Error("second setup overwrote existing files")
	}
	// ... and refuses before spending the code: GitHub hands the App's key out only once.
	if n := srv.conversions.Load(); n != 1 {
		t.Errorf("%d conversions, want 1", n)
	}
}

func TestSetupConvertBadCode(t *testing.T) {
	srv := manifestServer(t, "right")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"setup", "convert", "--code", "wrong", "--api-url", srv.URL + "/api/v3/", "--out", t.TempDir()}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "manifest conversion") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

func TestAppManifest(t *testing.T) {
	tests := []struct {
		name, yml, url string
		wantErr        bool
	}{
		{"ok", "name: lensgate\ndefault_events: [pull_request]\n", "https://lg.example.com/", false},
		{"bad url", "name: x\n", "ftp://x", true},
		{"empty", "", "https://x", true},
		{"not yaml", "name: [", "https://x", true},
		{"key GitHub refuses", "name: x\nwebhook_secret: s\n", "https://lg.example.com", true},
		{"bad permission", "name: x\ndefault_permissions: {checks: all}\n", "https://lg.example.com", true},
		{"events not a list", "name: x\ndefault_events: pull_request\n", "https://lg.example.com", true},
		{"hook extra key", "name: x\nhook_attributes: {url: https://a, secret: s}\n", "https://lg.example.com", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := appManifest([]byte(tt.yml), tt.url, "", "")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			if err == nil && m["hook_attributes"].(map[string]any)["url"] != "https://lg.example.com/api/github/hook" {
				t.Errorf("hook url %v", m["hook_attributes"])
			}
		})
	}
}

// TestSetupManifestFromAppYML reads the real app.yml: only keys GitHub takes, exactly the events
// the App subscribes to, the least-privilege permissions, the webhook at --url.
func TestSetupManifestFromAppYML(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"setup", "manifest", "--file", "../../app.yml", "--url", "https://lg.example.com/"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var m struct {
		Name          string            `json:"name"`
		URL           string            `json:"url"`
		Public        *bool             `json:"public"`
		Hook          map[string]any    `json:"hook_attributes"`
		Events        []string          `json:"default_events"`
		Permissions   map[string]string `json:"default_permissions"`
		RequestOAuth  bool              `json:"request_oauth_on_install"`
		CallbackURLs  []string          `json:"callback_urls"`
		RedirectURL   string            `json:"redirect_url"`
		SetupURL      string            `json:"setup_url"`
		Description   string            `json:"description"`
		SetupOnUpdate bool              `json:"setup_on_update"`
	}
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("manifest has a key GitHub does not take: %v", err)
	}
	if m.Name == "" || m.URL == "" || m.Description == "" {
		t.Errorf("name %q url %q description %q", m.Name, m.URL, m.Description)
	}
	if m.Hook["url"] != "https://lg.example.com/api/github/hook" || m.Hook["active"] != true {
		t.Errorf("hook_attributes %v", m.Hook)
	}
	want := webhook.SubscribedEvents()
	got := append([]string(nil), m.Events...)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("default_events %v, the handlers subscribe to %v", got, want)
	}
	wantPerms := map[string]string{"contents": "read", "metadata": "read", "pull_requests": "write", "issues": "write", "checks": "write", "members": "read"}
	if !maps.Equal(m.Permissions, wantPerms) {
		t.Errorf("default_permissions %v, want %v", m.Permissions, wantPerms)
	}
	if m.Public == nil || *m.Public {
		t.Error("the App should be private unless the operator decides otherwise")
	}
	if m.RequestOAuth {
		t.Error("lensgate acts as the App, never on behalf of a user")
	}
}

func TestSetupManifestHTML(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"setup", "manifest", "--file", "../../app.yml", "--url", "https://lg.example.com",
		"--format", "html", "--org", "acme", "--web-url", "https://ghe.example.com/", "--state", "s1",
		"--redirect-url", "https://lg.example.com/done"}
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	action, manifest := parseManifestForm(t, out.String())
	if action != "https://ghe.example.com/organizations/acme/settings/apps/new?state=s1" {
		t.Errorf("form action %q", action)
	}
	if manifest["redirect_url"] != "https://lg.example.com/done" || manifest["name"] != "lensgate" {
		t.Errorf("manifest %v", manifest)
	}
}

// parseManifestForm returns the action and the decoded manifest field of the page's form.
func parseManifestForm(t *testing.T, page string) (string, map[string]any) {
	t.Helper()
	am := regexp.MustCompile(`<form action="([^"]*)" method="post">`).FindStringSubmatch(page)
	mm := regexp.MustCompile(`<input type="hidden" name="manifest" value="([^"]*)">`).FindStringSubmatch(page)
	if am == nil || mm == nil {
		t.Fatalf("no manifest form in:\n%s", page)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(html.UnescapeString(mm[1])), &m); err != nil {
		t.Fatalf("manifest field: %v", err)
	}
	return html.UnescapeString(am[1]), m
}

// lockedBuffer is written by run in one goroutine and read by the test in another.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSetupCreate plays the browser and GitHub: open the local page, post the form (here: read
// its state), come back with a code and a wrong then the right state.
func TestSetupCreate(t *testing.T) {
	gh := manifestServer(t, "code-77")
	dir := filepath.Join(t.TempDir(), "conf")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"setup", "create", "--file", "../../app.yml", "--url", "https://lg.example.com",
			"--api-url", gh.URL + "/api/v3/", "--web-url", gh.URL, "--out", dir}, &out, &errb)
	}()
	var local string
	for deadline := time.Now().Add(30 * time.Second); local == ""; {
		select {
		case code := <-exit:
			t.Fatalf("setup create exited %d early: %s", code, errb.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("setup create named no local page within 30s: %s", out.String())
		}
		if m := regexp.MustCompile(`Open (http://127\.0\.0\.1:\d+)/`).FindStringSubmatch(out.String()); m != nil {
			local = m[1]
		}
	}
	page := httpGet(t, local+"/", http.StatusOK)
	action, manifest := parseManifestForm(t, page)
	au, err := url.Parse(action)
	if err != nil || !strings.HasPrefix(action, gh.URL+"/settings/apps/new?") {
		t.Fatalf("form action %q", action)
	}
	state := au.Query().Get("state")
	if len(state) < 16 || manifest["redirect_url"] != local+"/callback" {
		t.Fatalf("state %q redirect %v", state, manifest["redirect_url"])
	}
	if hook := manifest["hook_attributes"].(map[string]any); hook["url"] != "https://lg.example.com/api/github/hook" {
		t.Errorf("hook %v", hook)
	}
	// A redirect that does not carry this run's state is refused and changes nothing.
	httpGet(t, local+"/callback?code=code-77&state=forged", http.StatusBadRequest)
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("a forged redirect wrote the configuration")
	}
	resp, err := http.Get(local + "/callback?code=code-77&state=" + url.QueryEscape(state))
	if err != nil {
		select {
		case code := <-exit:
			t.Fatalf("%v; setup create had exited %d: %s", err, code, errb.String())
		default:
			t.Fatalf("%v; setup create still running: %s", err, out.String())
		}
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("callback answered %d", resp.StatusCode)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("setup create still running 30s after the callback: %s", out.String())
	}
	if !strings.Contains(out.String(), "Created GitHub App") || strings.Contains(out.String(), "whsec-from-github") {
		t.Errorf("stdout %q", out.String())
	}
	s, err := config.LoadServer(filepath.Join(dir, "lensgate.yml"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("written config does not load: %v", err)
	}
	if s.GitHub.App.IntegrationID != 4242 {
		t.Errorf("App id %d", s.GitHub.App.IntegrationID)
	}
	if s.PublicURL != "https://lg.example.com" || s.GitHub.OAuth.ClientID != "Iv1.x" {
		t.Errorf("details page not configured: public_url %q, client %q", s.PublicURL, s.GitHub.OAuth.ClientID)
	}
	if cb, _ := manifest["callback_urls"].([]any); len(cb) != 1 || cb[0] != "https://lg.example.com/api/github/auth" {
		t.Errorf("callback_urls %v", manifest["callback_urls"])
	}
}

func httpGet(t *testing.T, u string, want int) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d %s, want %d", u, resp.StatusCode, b, want)
	}
	return string(b)
}

func TestEnterpriseWebURL(t *testing.T) {
	tests := []struct{ web, api, want string }{
		{"https://github.com", "https://api.github.com/", "https://github.com"},
		{"https://github.com", "https://ghe.example.com/api/v3/", "https://ghe.example.com"},
		{"https://github.com/", "http://10.0.0.5:8080/api/v3", "http://10.0.0.5:8080"},
		{"https://ghe.example.com", "https://ghe.example.com/api/v3/", "https://ghe.example.com"},
	}
	for _, tt := range tests {
		if got := enterpriseWebURL(tt.web, tt.api); got != tt.want {
			t.Errorf("enterpriseWebURL(%q, %q) = %q, want %q", tt.web, tt.api, got, tt.want)
		}
	}
}

// TestSetupManifestBuiltIn: without --file, setup uses the app.yml built into the binary, so it
// works in a directory that holds none; --file still chooses another manifest.
func TestSetupManifestBuiltIn(t *testing.T) {
	appYML, err := filepath.Abs(filepath.Join("..", "..", "app.yml"))
	if err != nil {
		t.Fatal(err)
	}
	manifest := func(extra ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		args := append([]string{"setup", "manifest", "--url", "https://lg.example.com"}, extra...)
		if code := run(context.Background(), args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errb.String())
		}
		return out.String()
	}
	t.Chdir(t.TempDir())
	builtIn := manifest()
	if fromFile := manifest("--file", appYML); builtIn != fromFile {
		t.Errorf("the built-in manifest differs from app.yml:\n%s\nvs\n%s", builtIn, fromFile)
	}
	if err := os.WriteFile("mine.yml", []byte("name: mine\ndescription: d\ndefault_events: [issues]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if own := manifest("--file", "mine.yml"); !strings.Contains(own, `"name": "mine"`) {
		t.Errorf("--file is not used: %s", own)
	}
}

// TestOperationsDocNamesEverySubscribedEvent: docs/operations.md lists each event app.yml
// subscribes to.
func TestOperationsDocNamesEverySubscribedEvent(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, list, _ := strings.Cut(string(doc), "subscribes to exactly the events it handles:")
	list, _, _ = strings.Cut(list, "(")
	var m struct {
		Events []string `yaml:"default_events"`
	}
	if err := yaml.Unmarshal(lensgate.AppManifest(), &m); err != nil || len(m.Events) == 0 {
		t.Fatalf("app.yml: %v", err)
	}
	for _, ev := range m.Events {
		if !strings.Contains(list, "`"+ev+"`") {
			t.Errorf("docs/operations.md's list of subscribed events lacks %s", ev)
		}
	}
}
