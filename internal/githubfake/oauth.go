package githubfake

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v62/github"
)

// The App's OAuth client as the fake knows it. Tests configure the details page with these.
const (
	OAuthClientID     = "Iv1.fakeclient"
	OAuthClientSecret = "fake-client-secret"
)

// oauthGrant is an authorization code waiting to be exchanged.
type oauthGrant struct {
	login       string
	redirectURI string
}

// authorizePage is the fake's sign-in: a form that asks which account to sign in as, standing
// in for GitHub's login and consent screens.
var authorizePage = template.Must(template.New("authorize").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in to the fake GitHub</title></head>
<body><main><h1>Sign in to the fake GitHub</h1>
<form method="post" action="/login/oauth/authorize">
<input type="hidden" name="client_id" value="{{.ClientID}}">
<input type="hidden" name="redirect_uri" value="{{.RedirectURI}}">
<input type="hidden" name="state" value="{{.State}}">
<label for="login">Username</label> <input id="login" name="login" autocomplete="username">
<button type="submit" id="authorize">Authorize</button>
</form></main></body></html>
`))

// routesOAuth serves GitHub's web OAuth flow (under the web URL, not the API prefix) and
// GET /user for user tokens.
func (s *Server) routesOAuth(mux *http.ServeMux) {
	mux.HandleFunc("GET /login/oauth/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != OAuthClientID {
			http.Error(w, "unknown client_id", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = authorizePage.Execute(w, map[string]string{"ClientID": q.Get("client_id"), "RedirectURI": q.Get("redirect_uri"), "State": q.Get("state")})
	})
	mux.HandleFunc("POST /login/oauth/authorize", func(w http.ResponseWriter, r *http.Request) {
		login := strings.TrimSpace(r.PostFormValue("login"))
		redirect, err := url.Parse(r.PostFormValue("redirect_uri"))
		if r.PostFormValue("client_id") != OAuthClientID || login == "" || err != nil || redirect.Host == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		code := fmt.Sprintf("code%d", s.id())
		s.oauthCodes[code] = oauthGrant{login: login, redirectURI: redirect.String()}
		s.mu.Unlock()
		q := redirect.Query()
		q.Set("code", code)
		q.Set("state", r.PostFormValue("state"))
		redirect.RawQuery = q.Encode()
		http.Redirect(w, r, redirect.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
		}
		code := r.PostFormValue("code")
		s.mu.Lock()
		g, known := s.oauthCodes[code]
		delete(s.oauthCodes, code) // a code is good once
		var tok string
		if known && id == OAuthClientID && secret == OAuthClientSecret &&
			(r.PostFormValue("redirect_uri") == "" || r.PostFormValue("redirect_uri") == g.redirectURI) {
			tok = fmt.Sprintf("gho_fake%d", s.id())
			s.userTokens[tok] = g.login
		}
		s.mu.Unlock()
		if tok == "" {
			// GitHub answers 200 with an error member for a bad code.
			writeJSON(w, http.StatusOK, map[string]string{"error": "bad_verification_code", "error_description": "The code passed is incorrect or expired."})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"access_token": tok, "token_type": "bearer", "scope": ""})
	})
	s.handle(mux, "GET /user", authNone, func(w http.ResponseWriter, r *http.Request) {
		_, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		login, ok := s.userTokens[cred]
		if !ok {
			writeError(w, http.StatusUnauthorized, "Requires authentication")
			return
		}
		writeJSON(w, http.StatusOK, &github.User{Login: github.String(login), ID: github.Int64(int64(len(login)) + 500000), Type: github.String("User")})
	})
}

// UserLogins is how many OAuth logins completed (tokens handed out).
func (s *Server) UserLogins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.userTokens)
}

// EditCheckRunText changes the stored text of a check run, as a test that tampers with what the
// App published.
func (s *Server) EditCheckRunText(fullName string, id int64, edit func(string) string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.mustRepo(fullName).checkRuns {
		if c.ID == id {
			c.Text = edit(c.Text)
			return true
		}
	}
	return false
}
