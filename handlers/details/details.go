// Package details serves lensgate's details page: for one pull request, the gate and every
// lens, the findings with their lines, the coverage and its gaps, the policy used, the history
// of reviewed heads, the audit ledger entries, and the signed receipt with the server's
// verification beside one the reader's browser computes itself.
//
// The page keeps no state of its own. It reads what the App published on GitHub (the gate
// check run of each reviewed head carries a hidden details record and the signed receipt; the
// advisory comment names the reviewed heads) and the local audit ledger. Readers log in with
// GitHub's OAuth (go-githubapp's oauth2 package) and see a page only when they can read the
// repository.
package details

import (
	"context"
	"crypto/ed25519"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/palantir/go-githubapp/oauth2"
	"github.com/rs/zerolog"
)

// DefaultCheckName is the gate check run's name the publisher uses by default.
const DefaultCheckName = "lensgate"

// RouteAuth is the OAuth login route (go-githubapp's default).
const RouteAuth = oauth2.DefaultRoute

// RouteLogout ends a session.
const RouteLogout = "/api/github/logout"

//go:embed templates/*.tmpl
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Rerun is a re-run request from the page.
type Rerun struct {
	InstallationID int64
	Owner, Repo    string
	Number         int
	HeadSHA        string
	By             string // the login that asked
}

// Options configure the page.
type Options struct {
	// Clients reach GitHub as the App. Required.
	Clients githubapp.ClientCreator
	// App returns the App's id and slug once known (they are read at start).
	App func() (id int64, slug string)
	// WebURL and V3APIURL are GitHub's addresses (the OAuth endpoints live under WebURL).
	WebURL, V3APIURL string
	// ClientID and ClientSecret are the App's OAuth client; empty turns login off (then only
	// public repositories are served, and only with PublicRepos).
	ClientID, ClientSecret string
	// SessionKey signs cookies and CSRF tokens (at least 32 bytes). Required.
	SessionKey []byte
	// PublicURL is the App's public origin; empty derives it from each request.
	PublicURL string
	// PublicRepos serves pages of public repositories without login.
	PublicRepos bool
	// Keys are the receipt public keys (the ones served at /.well-known/lensgate/keys).
	Keys []ed25519.PublicKey
	// WitnessKeys are the runner's observation public keys (served there too).
	WitnessKeys []ed25519.PublicKey
	// KeysPath is where the keys are served, for the in-browser verification.
	KeysPath string
	// AuditFile is the local audit ledger ("" shows none).
	AuditFile string
	// CheckName is the gate check run's name (DefaultCheckName when empty).
	CheckName string
	// Rerun queues a review; nil hides the re-run form.
	Rerun func(ctx context.Context, r Rerun) error
	// Quality, when set, serves the repository page's quality figures (RepoPath).
	Quality QualitySource
	// ViewsPerMinute bounds the page views, envelope downloads and re-runs of one client
	// (DefaultViewsPerMinute when zero; bursts of 20).
	ViewsPerMinute int
	// Timeout bounds the GitHub reads of one page view (20s when zero).
	Timeout time.Duration
	Logger  zerolog.Logger
	Now     func() time.Time
}

// Handler serves the page, its assets, the receipt downloads and the login.
type Handler struct {
	o         Options
	sign      signer
	publicURL string
	page      *template.Template
	repoPage  *template.Template
	missing   *template.Template
	assets    http.Handler
	auth      http.Handler
	mux       *http.ServeMux
	ledger    *ledgerIndex // nil without an audit ledger
	limits    *clientLimits
	revoked   *revocations
}

// New builds the page handler.
func New(o Options) (*Handler, error) {
	if o.Clients == nil {
		return nil, errors.New("details: no GitHub client creator")
	}
	if len(o.SessionKey) < 32 {
		return nil, errors.New("details: the session key needs at least 32 bytes")
	}
	if o.CheckName == "" {
		o.CheckName = DefaultCheckName
	}
	if o.Timeout == 0 {
		o.Timeout = 20 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.App == nil {
		o.App = func() (int64, string) { return 0, "" }
	}
	h := &Handler{o: o, sign: signer{key: o.SessionKey, now: o.Now}, publicURL: strings.TrimSuffix(o.PublicURL, "/"),
		limits: newClientLimits(o.ViewsPerMinute), revoked: newRevocations()}
	if o.AuditFile != "" {
		h.ledger = newLedgerIndex(o.AuditFile)
	}
	var err error
	if h.page, err = template.New("page.html.tmpl").Funcs(funcs).ParseFS(templateFS, "templates/page.html.tmpl"); err != nil {
		return nil, fmt.Errorf("details: %w", err)
	}
	if h.repoPage, err = template.New("repo.html.tmpl").Funcs(funcs).ParseFS(templateFS, "templates/repo.html.tmpl"); err != nil {
		return nil, fmt.Errorf("details: %w", err)
	}
	if h.missing, err = template.New("notfound.html.tmpl").Funcs(funcs).ParseFS(templateFS, "templates/notfound.html.tmpl"); err != nil {
		return nil, fmt.Errorf("details: %w", err)
	}
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, fmt.Errorf("details: %w", err)
	}
	h.assets = http.StripPrefix(Route+"assets/", http.FileServerFS(sub))
	if o.ClientID != "" {
		cfg := githubapp.Config{WebURL: o.WebURL}
		cfg.OAuth.ClientID, cfg.OAuth.ClientSecret = o.ClientID, o.ClientSecret
		params := []oauth2.Param{
			oauth2.WithStore(stateStore{h}),
			oauth2.OnLogin(h.onLogin),
			oauth2.OnError(h.onLoginError),
			oauth2.ForceTLS(strings.HasPrefix(h.publicURL, "https://")),
		}
		if h.publicURL != "" {
			params = append(params, oauth2.WithRedirectURL(h.publicURL+RouteAuth))
		}
		h.auth = oauth2.NewHandler(oauth2.GetConfig(cfg, nil), params...)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Route+"assets/{file}", h.serveAsset)
	mux.HandleFunc("GET "+Route+"{owner}/{repo}", h.serveRepo)
	mux.HandleFunc("GET "+Route+"{owner}/{repo}/{number}", h.servePage)
	mux.HandleFunc("GET "+Route+"{owner}/{repo}/{number}/{head}", h.servePage)
	mux.HandleFunc("GET "+Route+"{owner}/{repo}/{number}/{head}/receipt.json", h.serveEnvelope)
	mux.HandleFunc("GET "+Route+"{owner}/{repo}/{number}/{head}/observation.json", h.serveEnvelope)
	mux.HandleFunc("POST "+Route+"{owner}/{repo}/{number}/rerun", h.serveRerun)
	mux.HandleFunc("POST "+RouteLogout, h.serveLogout)
	if h.auth != nil {
		mux.Handle("GET "+RouteAuth, h.auth)
	}
	h.mux = mux
	return h, nil
}

// Routes lists the patterns a server must send to this handler.
func (h *Handler) Routes() []string {
	return []string{Route, RouteAuth, RouteLogout}
}

// ServeHTTP implements http.Handler with the page's security headers on every answer.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	// Everything the page needs is embedded and served from here; nothing else may load.
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	h.assets.ServeHTTP(w, r)
}

// target is the pull request a request names.
type target struct {
	owner, repo string
	number      int
	head        string
}

var (
	reName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
	reHead = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
)

func parseTarget(r *http.Request) (target, bool) {
	t := target{owner: r.PathValue("owner"), repo: r.PathValue("repo"), head: r.PathValue("head")}
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil || n <= 0 || !reName.MatchString(t.owner) || !reName.MatchString(t.repo) {
		return t, false
	}
	if t.head != "" && !reHead.MatchString(t.head) {
		return t, false
	}
	t.number = n
	return t, true
}

// access is what the viewer may do on the repository.
type access struct {
	login string // "" for an anonymous reader of a public repository
	write bool
	inst  int64
	gh    *github.Client
}

// errNotFound covers every reason a page is not shown: no such repository, no installation,
// no permission. The reader learns nothing from the difference.
var errNotFound = errors.New("not found")

// authorize finds the installation for the repository and decides whether the viewer may read
// it: a logged-in user with at least read permission, or anyone for a public repository when
// PublicRepos is on. It returns (nil, nil) when the viewer must log in first.
func (h *Handler) authorize(ctx context.Context, r *http.Request, t target) (*access, error) {
	s := h.viewer(r)
	if s == nil && !h.o.PublicRepos {
		return nil, nil
	}
	app, err := h.o.Clients.NewAppClient()
	if err != nil {
		return nil, fmt.Errorf("app client: %w", err)
	}
	inst, resp, err := app.Apps.FindRepositoryInstallation(ctx, t.owner, t.repo)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return nil, errNotFound
		}
		return nil, fmt.Errorf("find installation: %w", err)
	}
	gh, err := h.o.Clients.NewInstallationClient(inst.GetID())
	if err != nil {
		return nil, fmt.Errorf("installation client: %w", err)
	}
	a := &access{inst: inst.GetID(), gh: gh}
	if s == nil {
		repo, resp, err := gh.Repositories.Get(ctx, t.owner, t.repo)
		if err != nil {
			if resp != nil && resp.StatusCode == http.StatusNotFound {
				return nil, errNotFound
			}
			return nil, fmt.Errorf("get repository: %w", err)
		}
		if repo.GetPrivate() || repo.GetVisibility() == "internal" {
			// The same 404 as a repository without the App, so that an anonymous reader cannot
			// tell which private repositories have it installed; the 404 offers the login.
			return nil, errNotFound
		}
		return a, nil
	}
	perm, resp, err := gh.Repositories.GetPermissionLevel(ctx, t.owner, t.repo, s.Login)
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusForbidden) {
			return nil, errNotFound
		}
		return nil, fmt.Errorf("permission level: %w", err)
	}
	switch perm.GetPermission() {
	case "admin", "maintain", "write":
		a.write = true
	case "read", "triage":
	default:
		return nil, errNotFound
	}
	a.login = s.Login
	return a, nil
}

// checkAccess runs authorize and answers the request itself when the page cannot be shown: a login
// redirect, a vague 404 or an error page. It returns nil then.
func (h *Handler) checkAccess(w http.ResponseWriter, r *http.Request, t target, ctx context.Context) *access {
	a, err := h.authorize(ctx, r, t)
	switch {
	case err == nil && a != nil:
		return a
	case err == nil && h.auth != nil && r.Method == http.MethodGet:
		http.Redirect(w, r, RouteAuth+"?return="+url.QueryEscape(r.URL.Path), http.StatusFound)
	case err == nil, errors.Is(err, errNotFound):
		h.notFound(w, r)
	default:
		zerolog.Ctx(ctx).Warn().Err(err).Msg("details page: access check failed")
		h.unavailable(w)
	}
	return nil
}

func (h *Handler) context(r *http.Request, t target) (context.Context, context.CancelFunc) {
	log := h.o.Logger.With().Str(githubapp.LogKeyRepositoryOwner, t.owner).Str(githubapp.LogKeyRepositoryName, t.repo).
		Int(githubapp.LogKeyPRNum, t.number).Logger()
	ctx, cancel := context.WithTimeout(r.Context(), h.o.Timeout)
	return log.WithContext(ctx), cancel
}

// open reads the page's target and lets the viewer in: the request's context (with its log
// fields and deadline), its cancel, and the viewer's access. A nil access means the answer (404,
// login redirect) has been written.
func (h *Handler) open(w http.ResponseWriter, r *http.Request) (target, context.Context, context.CancelFunc, *access) {
	t, ok := parseTarget(r)
	if !ok {
		h.notFound(w, r)
		return t, nil, nil, nil
	}
	if h.limited(w, r) {
		return t, nil, nil, nil
	}
	ctx, cancel := h.context(r, t)
	a := h.checkAccess(w, r, t, ctx)
	if a == nil {
		cancel()
		return t, nil, nil, nil
	}
	return t, ctx, cancel, a
}

func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	t, ctx, cancel, a := h.open(w, r)
	if a == nil {
		return
	}
	defer cancel()
	v, err := h.load(ctx, a, t)
	if err != nil {
		if errors.Is(err, errNotFound) {
			h.notFound(w, r)
			return
		}
		zerolog.Ctx(ctx).Warn().Err(err).Msg("details page: GitHub read failed")
		h.unavailable(w)
		return
	}
	v.Viewer = a.login
	v.CanRerun = a.write && h.o.Rerun != nil && v.Stale != ""
	if s := h.viewer(r); s != nil {
		v.CSRF = h.csrfToken(s) // the log-out form, and the re-run form when offered
	}
	v.RerunQueued = r.URL.Query().Get("rerun") == "queued"
	v.LoginEnabled = h.auth != nil
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.page.Execute(w, v); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("details page: render failed")
	}
}

// serveEnvelope answers the exact envelope bytes of a head's receipt or observation, for
// download and for the in-browser verification.
func (h *Handler) serveEnvelope(w http.ResponseWriter, r *http.Request) {
	t, ctx, cancel, a := h.open(w, r)
	if a == nil {
		return
	}
	defer cancel()
	ok, err := h.belongs(ctx, a.gh, t, t.head)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("details page: GitHub read failed")
		h.unavailable(w)
		return
	}
	if !ok {
		h.notFound(w, r)
		return
	}
	hv, err := h.loadHead(ctx, a.gh, t, t.head)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("details page: GitHub read failed")
		h.unavailable(w)
		return
	}
	kind, env := "receipt", []byte(nil)
	if hv != nil {
		env = hv.envelope
		if strings.HasSuffix(r.URL.Path, "/observation.json") {
			kind, env = "observation", hv.observation
		}
	}
	if len(env) == 0 {
		h.notFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="`+kind+`-`+t.head[:12]+`.json"`)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(env)
}

func (h *Handler) serveRerun(w http.ResponseWriter, r *http.Request) {
	t, ok := parseTarget(r)
	s := h.viewer(r)
	if !ok || s == nil || h.o.Rerun == nil {
		h.notFound(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if !h.checkCSRF(r, s) {
		http.Error(w, "The form expired or did not come from this page; reload the page and try again.", http.StatusForbidden)
		return
	}
	if h.limited(w, r) {
		return
	}
	ctx, cancel := h.context(r, t)
	defer cancel()
	a := h.checkAccess(w, r, t, ctx)
	if a == nil {
		return
	}
	if !a.write {
		http.Error(w, "A re-run needs write access to the repository.", http.StatusForbidden)
		return
	}
	pr, resp, err := a.gh.PullRequests.Get(ctx, t.owner, t.repo, t.number)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			h.notFound(w, r)
			return
		}
		h.unavailable(w)
		return
	}
	if pr.GetState() != "open" {
		http.Error(w, "The pull request is not open.", http.StatusConflict)
		return
	}
	err = h.o.Rerun(ctx, Rerun{InstallationID: a.inst, Owner: t.owner, Repo: t.repo, Number: t.number, HeadSHA: pr.GetHead().GetSHA(), By: s.Login})
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("details page: re-run not queued")
		http.Error(w, "The re-run could not be queued; try again later.", http.StatusServiceUnavailable)
		return
	}
	zerolog.Ctx(ctx).Info().Str("by", s.Login).Msg("details page: re-run queued")
	http.Redirect(w, r, Path(t.owner, t.repo, t.number, "")+"?rerun=queued", http.StatusSeeOther)
}

// serveLogout ends the session: the cookie is cleared and the session revoked on the server,
// so a copy of the cookie no longer works either. The form carries the session's CSRF token
// (a page of another origin cannot log the reader out).
func (h *Handler) serveLogout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	s := h.viewer(r)
	if s != nil && !h.checkCSRF(r, s) {
		http.Error(w, "The form expired or did not come from this page; reload the page and try again.", http.StatusForbidden)
		return
	}
	if s != nil && !h.revoked.revoke(s.ID, time.Unix(s.Expires, 0), h.o.Now()) {
		h.o.Logger.Warn().Int("revoked", maxRevoked).Msg("details page: too many sessions revoked at once; this logout only clears the cookie")
	}
	h.setCookie(w, r, cookieSession, "", -1)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("Logged out.\n"))
}

// onLogin finishes the OAuth flow: it asks GitHub who logged in, starts the session and
// returns to the page the reader came from.
func (h *Handler) onLogin(w http.ResponseWriter, r *http.Request, login *oauth2.Login) {
	ls, _ := h.loginState(r)
	h.setCookie(w, r, cookieLogin, "", -1)
	client := github.NewClient(login.Client)
	if h.o.V3APIURL != "" {
		var err error
		if client, err = client.WithEnterpriseURLs(h.o.V3APIURL, h.o.V3APIURL); err != nil {
			h.onLoginError(w, r, err)
			return
		}
	}
	u, _, err := client.Users.Get(r.Context(), "")
	if err != nil || u.GetLogin() == "" {
		h.onLoginError(w, r, fmt.Errorf("read the logged-in user: %w", err))
		return
	}
	id, err := randomHex(16)
	if err != nil {
		h.onLoginError(w, r, err)
		return
	}
	v, err := h.sign.seal(cookieSession, session{Login: u.GetLogin(), ID: id, Expires: h.sign.now().Add(sessionTTL).Unix()})
	if err != nil {
		h.onLoginError(w, r, err)
		return
	}
	h.setCookie(w, r, cookieSession, v, sessionTTL)
	to := ls.Return
	if to == "" {
		to = "/"
	}
	http.Redirect(w, r, to, http.StatusFound)
}

func (h *Handler) onLoginError(w http.ResponseWriter, r *http.Request, err error) {
	h.o.Logger.Warn().Err(err).Msg("details page: login failed")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte("The GitHub login did not complete. Go back to the pull request and open the details link again.\n"))
}

// notFound answers the one 404 page of every reason a page is not shown. A reader who is not
// logged in is offered the login, whatever the reason, so the offer tells nothing either.
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNotFound)
	data := map[string]string{"Title": "Not found", "Message": "There is no page here, or you cannot see it. If you expected one, log in with an account that can read the repository."}
	if h.auth != nil && h.viewer(r) == nil && safeReturn(r.URL.Path) != "" {
		data["Login"] = RouteAuth + "?return=" + url.QueryEscape(r.URL.Path)
	}
	_ = h.missing.Execute(w, data)
}

func (h *Handler) unavailable(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusBadGateway)
	_ = h.missing.Execute(w, map[string]string{"Title": "GitHub could not be read", "Message": "The page could not read GitHub just now. This may be temporary: reload in a minute."})
}
