package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-github/v62/github"
	"go.yaml.in/yaml/v3"

	"github.com/lensgate/lensgate/disclosure"
)

// setupCmd turns GitHub's App manifest flow into a working server configuration:
// `setup manifest` prints the manifest to post to GitHub, `setup convert` exchanges the code
// GitHub returns for the App's id, key and webhook secret and writes them out.
type setupCmd struct {
	Manifest setupManifestCmd `cmd:"" help:"Print app.yml as the JSON manifest GitHub's App manifest flow takes."`
	Convert  setupConvertCmd  `cmd:"" help:"Exchange a manifest code for the new App's credentials and write a server config."`
}

type setupManifestCmd struct {
	File        string `default:"app.yml" type:"existingfile" help:"The App manifest in YAML."`
	URL         string `required:"" help:"Public base URL of this lensgate server; webhooks go to URL/api/github/hook."`
	Name        string `help:"App name (GitHub App names are unique across GitHub); default is the manifest's."`
	RedirectURL string `name:"redirect-url" help:"Where GitHub sends the browser with the code after creating the App."`
}

func (c *setupManifestCmd) Run(e *env) error {
	data, err := os.ReadFile(c.File)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	m, err := appManifest(data, c.URL, c.Name, c.RedirectURL)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("%s: %w", c.File, err))
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// appManifest reads the YAML manifest and points its webhook and homepage at base.
func appManifest(data []byte, base, name, redirect string) (map[string]any, error) {
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("empty manifest")
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("--url %q is not an http(s) URL", base)
	}
	base = strings.TrimRight(base, "/")
	m["url"] = base
	hook, _ := m["hook_attributes"].(map[string]any)
	if hook == nil {
		hook = map[string]any{}
	}
	hook["url"] = base + "/api/github/hook"
	hook["active"] = true
	m["hook_attributes"] = hook
	if name != "" {
		m["name"] = name
	}
	if redirect != "" {
		m["redirect_url"] = redirect
	}
	return m, nil
}

type setupConvertCmd struct {
	Code   string `required:"" help:"The code GitHub appended to the redirect URL after creating the App."`
	APIURL string `name:"api-url" default:"https://api.github.com/" env:"GITHUB_V3_API_URL" help:"GitHub REST API base (GitHub Enterprise Server: https://HOST/api/v3/)."`
	Out    string `required:"" type:"path" help:"Directory for lensgate.yml, app-key.pem and signing.key (created 0700)."`
}

func (c *setupConvertCmd) Run(e *env) error {
	ctx, cancel := context.WithTimeout(e.ctx, defaultHTTPTimeout)
	defer cancel()
	client, err := github.NewClient(nil).WithEnterpriseURLs(c.APIURL, c.APIURL)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("--api-url: %w", err))
	}
	app, _, err := client.Apps.CompleteAppManifest(ctx, c.Code)
	if err != nil {
		return fmt.Errorf("manifest conversion: %w", err)
	}
	if app.GetID() == 0 || app.GetPEM() == "" || app.GetWebhookSecret() == "" {
		return errors.New("manifest conversion: GitHub's answer lacks the App id, key or webhook secret")
	}
	paths, err := writeSetup(c.Out, c.APIURL, app)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Created GitHub App %q (id %d).\n", app.GetName(), app.GetID())
	fmt.Fprintf(e.stdout, "Server config:    %s\nApp key:          %s\nReceipt key:      %s (public key %s)\n",
		paths.config, paths.appKey, paths.signingKey, paths.publicKey)
	fmt.Fprintf(e.stdout, "Start with:       lensgate serve --config %s\n", paths.config)
	if app.GetHTMLURL() != "" {
		fmt.Fprintf(e.stdout, "Install it from:  %s/installations/new\n", strings.TrimRight(app.GetHTMLURL(), "/"))
	}
	return nil
}

type setupPaths struct{ config, appKey, signingKey, publicKey string }

// writeSetup writes the App key, a new receipt signing key and a server config naming both.
// Secrets go into files of mode 0600 and never to stdout.
func writeSetup(dir, apiURL string, app *github.AppConfig) (setupPaths, error) {
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
	for _, f := range []string{p.config, p.appKey, p.signingKey} {
		if _, err := os.Stat(f); err == nil {
			return setupPaths{}, fmt.Errorf("%s exists; refusing to overwrite it", f)
		}
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
	cfg := map[string]any{"signing_key_file": p.signingKey, "github": gh}
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
