package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"go.yaml.in/yaml/v3"

	"github.com/lensgate/lensgate"
	"github.com/lensgate/lensgate/disclosure"
)

// setupCmd turns GitHub's App manifest flow into a working server configuration:
// `setup create` runs the whole flow through a local page, `setup manifest` prints the manifest
// (or a page that posts it) for doing it by hand, and `setup convert` exchanges the code GitHub
// returns for the App's id, key and webhook secret and writes them out.
type setupCmd struct {
	Create   setupCreateCmd   `cmd:"" help:"Register the App from app.yml in a browser and write its server config: serves GitHub's manifest form on a local address and catches GitHub's redirect."`
	Manifest setupManifestCmd `cmd:"" help:"Print app.yml as the manifest GitHub's App manifest flow takes (JSON), or as a page that posts it to GitHub (html)."`
	Convert  setupConvertCmd  `cmd:"" help:"Exchange a manifest code for the new App's credentials and write a server config."`
}

// manifestFlags are shared by create and manifest.
type manifestFlags struct {
	File   string `type:"existingfile" placeholder:"FILE" help:"The App manifest in YAML; default: the app.yml built into lensgate."`
	URL    string `required:"" help:"Public base URL of this lensgate server; webhooks go to URL/api/github/hook."`
	Name   string `help:"App name (GitHub App names are unique across GitHub); default is the manifest's."`
	Org    string `help:"Register the App under this organisation instead of your personal account."`
	WebURL string `name:"web-url" default:"https://github.com" env:"GITHUB_WEB_URL" help:"GitHub's web address (GitHub Enterprise Server: https://HOST; setup create derives it from --api-url)."`
}

// load reads the manifest (--file, else the built-in app.yml) and fills in the server's URLs.
func (f *manifestFlags) load(redirect string) (map[string]any, error) {
	data, name := lensgate.AppManifest(), "built-in app.yml"
	if f.File != "" {
		var err error
		if data, err = os.ReadFile(f.File); err != nil {
			return nil, err
		}
		name = f.File
	}
	m, err := appManifest(data, f.URL, f.Name, redirect)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// registerURL is GitHub's page that takes the manifest form: the personal or the organisation's
// "new App" page, with state handed back on the redirect.
func (f *manifestFlags) registerURL(state string) (string, error) {
	u, err := url.Parse(strings.TrimRight(f.WebURL, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("--web-url %q is not an http(s) URL", f.WebURL)
	}
	if f.Org != "" {
		u = u.JoinPath("organizations", f.Org, "settings", "apps", "new")
	} else {
		u = u.JoinPath("settings", "apps", "new")
	}
	if state != "" {
		u.RawQuery = url.Values{"state": {state}}.Encode()
	}
	return u.String(), nil
}

type setupManifestCmd struct {
	manifestFlags
	RedirectURL string `name:"redirect-url" help:"Where GitHub sends the browser with the code after creating the App."`
	Format      string `enum:"json,html" default:"json" help:"json: the manifest, the value of the form field GitHub takes; html: a page whose button posts it to GitHub."`
	State       string `help:"Value GitHub hands back with the code, to tie the redirect to this request (html only; random when empty)."`
}

func (c *setupManifestCmd) Run(e *env) error {
	m, err := c.load(c.RedirectURL)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if c.Format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	}
	state := c.State
	if state == "" {
		if state, err = randomState(); err != nil {
			return err
		}
	}
	action, err := c.registerURL(state)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	return writeManifestPage(e.stdout, action, m)
}

// manifestKeys are the keys GitHub's manifest flow accepts; it refuses a manifest with others.
var manifestKeys = map[string]bool{
	"name": true, "url": true, "hook_attributes": true, "redirect_url": true, "callback_urls": true,
	"setup_url": true, "description": true, "public": true, "default_events": true,
	"default_permissions": true, "request_oauth_on_install": true, "setup_on_update": true,
}

// appManifest reads the YAML manifest, checks it has only keys GitHub accepts, and points its
// webhook at base. The App's homepage (url) stays the manifest's when it has one.
func appManifest(data []byte, base, name, redirect string) (map[string]any, error) {
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("empty manifest")
	}
	var unknown []string
	for k := range m {
		if !manifestKeys[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("keys GitHub's manifest flow does not accept: %s", strings.Join(unknown, ", "))
	}
	if err := checkManifestValues(m); err != nil {
		return nil, err
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("--url %q is not an http(s) URL", base)
	}
	base = strings.TrimRight(base, "/")
	if s, _ := m["url"].(string); s == "" {
		m["url"] = base
	}
	hook, _ := m["hook_attributes"].(map[string]any)
	if hook == nil {
		hook = map[string]any{}
	}
	hook["url"] = base + "/api/github/hook"
	hook["active"] = true
	m["hook_attributes"] = hook
	// Readers of the details page log in through the App's OAuth client, which returns here.
	m["callback_urls"] = []any{base + "/api/github/auth"}
	if name != "" {
		m["name"] = name
	}
	if redirect != "" {
		m["redirect_url"] = redirect
	}
	return m, nil
}

// checkManifestValues catches the mistakes GitHub would only report on its form page.
func checkManifestValues(m map[string]any) error {
	if perms, ok := m["default_permissions"]; ok {
		pm, ok := perms.(map[string]any)
		if !ok {
			return errors.New("default_permissions must map permission names to read or write")
		}
		for k, v := range pm {
			if v != "read" && v != "write" && v != "admin" {
				return fmt.Errorf("default_permissions.%s: %v is not read, write or admin", k, v)
			}
		}
	}
	if evs, ok := m["default_events"]; ok {
		list, ok := evs.([]any)
		if !ok {
			return errors.New("default_events must be a list of event names")
		}
		for _, ev := range list {
			if s, ok := ev.(string); !ok || s == "" {
				return fmt.Errorf("default_events: %v is not an event name", ev)
			}
		}
	}
	if hook, ok := m["hook_attributes"]; ok {
		hm, ok := hook.(map[string]any)
		if !ok {
			return errors.New("hook_attributes must be a mapping (url, active)")
		}
		for k := range hm {
			if k != "url" && k != "active" {
				return fmt.Errorf("hook_attributes.%s: GitHub accepts only url and active", k)
			}
		}
	}
	return nil
}

func randomState() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

var manifestPage = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Register {{.Name}}</title></head>
<body>
<h1>Register the GitHub App {{.Name}}</h1>
<p>Webhooks will go to <code>{{.Hook}}</code>. GitHub shows the permissions and events before anything is created.</p>
<form action="{{.Action}}" method="post">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<button type="submit">Register on GitHub</button>
</form>
</body></html>
`))

// writeManifestPage writes the page whose form posts the manifest to GitHub's action URL.
func writeManifestPage(w io.Writer, action string, m map[string]any) error {
	js, err := json.Marshal(m)
	if err != nil {
		return err
	}
	hook, _ := m["hook_attributes"].(map[string]any)
	return manifestPage.Execute(w, map[string]any{
		"Name": m["name"], "Hook": hook["url"], "Action": action, "Manifest": string(js),
	})
}

type setupCreateCmd struct {
	manifestFlags
	APIURL string        `name:"api-url" default:"https://api.github.com/" env:"GITHUB_V3_API_URL" help:"GitHub REST API base (GitHub Enterprise Server: https://HOST/api/v3/)."`
	Out    string        `required:"" type:"path" help:"Directory for lensgate.yml, app-key.pem and signing.key (created 0700)."`
	Listen string        `default:"127.0.0.1:0" help:"Local address of the registration page and of GitHub's redirect back (port 0 picks a free one)."`
	Wait   time.Duration `default:"1h" help:"How long to wait for the registration (GitHub's code is valid for one hour)."`
}

// Run serves the form page on a local address; GitHub redirects the browser back to it with the
// code, which is converted at once. The state parameter ties the redirect to this run.
func (c *setupCreateCmd) Run(e *env) error {
	c.WebURL = enterpriseWebURL(c.WebURL, c.APIURL)
	if err := checkSetupDir(c.Out); err != nil {
		return exitWith(exitUsage, err)
	}
	state, err := randomState()
	if err != nil {
		return err
	}
	action, err := c.registerURL(state)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("--listen: %w", err))
	}
	local := "http://" + ln.Addr().String()
	m, err := c.load(local + "/callback")
	if err != nil {
		_ = ln.Close()
		return exitWith(exitUsage, err)
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	var once sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = writeManifestPage(w, action, m)
	})
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 || q.Get("code") == "" {
			http.Error(w, "this redirect does not belong to this registration", http.StatusBadRequest)
			return
		}
		handled := false
		once.Do(func() {
			handled = true
			var buf strings.Builder
			err := convertManifest(r.Context(), c.APIURL, q.Get("code"), c.Out, c.URL, &buf)
			if err != nil {
				http.Error(w, "registration failed; see the terminal", http.StatusBadGateway)
			} else {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				fmt.Fprintln(w, "The App is registered and lensgate's configuration is written. You can close this page; the terminal says what comes next.")
			}
			done <- result{buf.String(), err}
		})
		if !handled {
			http.Error(w, "this registration is already complete", http.StatusGone)
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	defer func() {
		// The callback signals before its answer is written: let it reach the browser (a closed
		// connection would show an error page for a registration that worked).
		sctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 5*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
	}()

	fmt.Fprintf(e.stdout, "Open %s/ in a browser on this machine and press \"Register on GitHub\".\n", local)
	fmt.Fprintf(e.stdout, "Waiting for GitHub to send the browser back (up to %s)...\n", c.Wait)
	select {
	case r := <-done:
		fmt.Fprint(e.stdout, r.out)
		return r.err
	case err := <-serveErr:
		return fmt.Errorf("setup create: local page stopped: %w", err)
	case <-time.After(c.Wait):
		return fmt.Errorf("setup create: no registration within %s", c.Wait)
	case <-e.ctx.Done():
		return e.ctx.Err()
	}
}

// enterpriseWebURL derives GitHub Enterprise Server's web address from its API address
// (https://HOST/api/v3/ -> https://HOST) when only --api-url points away from github.com.
func enterpriseWebURL(webURL, apiURL string) string {
	if strings.TrimRight(webURL, "/") != "https://github.com" || strings.TrimRight(apiURL, "/") == "https://api.github.com" {
		return webURL
	}
	u, err := url.Parse(apiURL)
	if err != nil || u.Host == "" {
		return webURL
	}
	return u.Scheme + "://" + u.Host
}

type setupConvertCmd struct {
	Code   string `required:"" help:"The code GitHub appended to the redirect URL after creating the App."`
	APIURL string `name:"api-url" default:"https://api.github.com/" env:"GITHUB_V3_API_URL" help:"GitHub REST API base (GitHub Enterprise Server: https://HOST/api/v3/)."`
	Out    string `required:"" type:"path" help:"Directory for lensgate.yml, app-key.pem and signing.key (created 0700)."`
	URL    string `help:"Public base URL of this lensgate server, written as public_url (turns the details page on)."`
}

func (c *setupConvertCmd) Run(e *env) error {
	return convertManifest(e.ctx, c.APIURL, c.Code, c.Out, c.URL, e.stdout)
}

// convertManifest exchanges the code for the App's credentials, writes the configuration and
// keys under out and tells w what was written (never a secret).
func convertManifest(ctx context.Context, apiURL, code, out, publicURL string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, defaultHTTPTimeout)
	defer cancel()
	client, err := github.NewClient(nil).WithEnterpriseURLs(apiURL, apiURL)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("--api-url: %w", err))
	}
	if err := checkSetupDir(out); err != nil {
		return exitWith(exitUsage, err)
	}
	app, _, err := client.Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		return fmt.Errorf("manifest conversion: %w", err)
	}
	if app.GetID() == 0 || app.GetPEM() == "" || app.GetWebhookSecret() == "" {
		return errors.New("manifest conversion: GitHub's answer lacks the App id, key or webhook secret")
	}
	paths, err := writeSetup(out, apiURL, publicURL, app)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Created GitHub App %q (id %d).\n", app.GetName(), app.GetID())
	fmt.Fprintf(w, "Server config:    %s\nApp key:          %s\nReceipt key:      %s (public key %s)\n",
		paths.config, paths.appKey, paths.signingKey, paths.publicKey)
	fmt.Fprintf(w, "Start with:       lensgate serve --config %s\n", paths.config)
	if app.GetHTMLURL() != "" {
		fmt.Fprintf(w, "Install it from:  %s/installations/new\n", strings.TrimRight(app.GetHTMLURL(), "/"))
	}
	return nil
}

// setupFiles are the files setup writes into its output directory.
var setupFiles = []string{"lensgate.yml", "app-key.pem", "signing.key"}

// checkSetupDir refuses an output directory that already holds one of setup's files. It runs
// before GitHub is asked for the credentials too: the App's key is handed out only once.
func checkSetupDir(dir string) error {
	for _, name := range setupFiles {
		f := filepath.Join(dir, name)
		if _, err := os.Stat(f); err == nil {
			return fmt.Errorf("%s exists; refusing to overwrite it", f)
		}
	}
	return nil
}

type setupPaths struct{ config, appKey, signingKey, publicKey string }

// writeSetup writes the App key, a new receipt signing key and a server config naming both.
// Secrets go into files of mode 0600 and never to stdout.
func writeSetup(dir, apiURL, publicURL string, app *github.AppConfig) (setupPaths, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return setupPaths{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return setupPaths{}, err
	}
	p := setupPaths{
		config:     filepath.Join(abs, "lensgate.yml"),
		appKey:     filepath.Join(abs, "app-key.pem"),
		signingKey: filepath.Join(abs, "signing.key"),
	}
	if err := checkSetupDir(dir); err != nil {
		return setupPaths{}, err
	}
	if err := os.WriteFile(p.appKey, []byte(app.GetPEM()), 0o600); err != nil {
		return setupPaths{}, err
	}
	pub, err := disclosure.GenerateKey(p.signingKey, nil)
	if err != nil {
		return setupPaths{}, err
	}
	p.publicKey = hex.EncodeToString(pub)
	gh := map[string]any{
		"timeout": "10s",
		"app": map[string]any{
			"integration_id":   app.GetID(),
			"webhook_secret":   app.GetWebhookSecret(),
			"private_key_file": p.appKey,
		},
	}
	if strings.TrimRight(apiURL, "/") != "https://api.github.com" {
		// GitHub Enterprise Server: https://HOST/api/v3/ → web https://HOST, GraphQL /api/graphql.
		if u, err := url.Parse(apiURL); err == nil {
			web := u.Scheme + "://" + u.Host
			gh["web_url"] = web
			gh["v3_api_url"] = apiURL
			gh["v4_api_url"] = web + "/api/graphql"
		}
	}
	// The state (durable queue and audit ledger) goes next to the keys, not into whatever
	// directory serve starts in.
	cfg := map[string]any{"signing_key_file": p.signingKey, "state_dir": filepath.Join(abs, "state"), "github": gh}
	// The details page: its readers log in with the App's OAuth client; the session key is
	// fresh. It is on once public_url is set (the origin of --url).
	if app.GetClientID() != "" && app.GetClientSecret() != "" {
		gh["oauth"] = map[string]any{"client_id": app.GetClientID(), "client_secret": app.GetClientSecret()}
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return setupPaths{}, err
	}
	cfg["details"] = map[string]any{"session_key": hex.EncodeToString(key)}
	if u, err := url.Parse(publicURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && gh["oauth"] != nil {
		cfg["public_url"] = u.Scheme + "://" + u.Host
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return setupPaths{}, err
	}
	header := "# Written by `lensgate setup convert`. Every key is described in deploy/lensgate.example.yml.\n"
	if err := os.WriteFile(p.config, append([]byte(header), out...), 0o600); err != nil {
		return setupPaths{}, err
	}
	return p, nil
}
