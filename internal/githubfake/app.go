package githubfake

import (
	"bytes"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// GenerateKey makes an RSA key for a fake App (2048 bits, as GitHub issues).
func GenerateKey() (*rsa.PrivateKey, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate app key: %w", err)
	}
	return k, nil
}

// PrivateKeyPEM is the App's private key in the PKCS#1 PEM form GitHub hands out.
func (s *Server) PrivateKeyPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(s.key)}))
}

// AppConfig is a go-githubapp configuration pointing at this server.
func (s *Server) AppConfig() githubapp.Config {
	var c githubapp.Config
	c.WebURL = s.srv.URL + "/"
	c.V3APIURL = s.APIURL()
	c.V4APIURL = s.srv.URL + apiPrefix + "/graphql"
	c.App.IntegrationID = s.appID
	c.App.WebhookSecret = s.webhookSecret
	c.App.PrivateKey = s.PrivateKeyPEM()
	return c
}

// ClientCreator is go-githubapp's default caching client creator configured for this server.
func (s *Server) ClientCreator(t testing.TB) githubapp.ClientCreator {
	t.Helper()
	cc, err := githubapp.NewDefaultCachingClientCreator(s.AppConfig(), githubapp.WithClientUserAgent("lensgate-test"))
	if err != nil {
		t.Fatalf("githubfake: client creator: %v", err)
	}
	return cc
}

// InstallationClient is a real go-github client authenticated as the App's installation.
func (s *Server) InstallationClient(t testing.TB) *github.Client {
	t.Helper()
	c, err := s.ClientCreator(t).NewInstallationClient(s.installationID)
	if err != nil {
		t.Fatalf("githubfake: installation client: %v", err)
	}
	return c
}

// Sign returns the X-Hub-Signature-256 header value for body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// WebhookRequest builds a signed webhook POST as GitHub sends it.
func WebhookRequest(url, event, deliveryID, secret string, body []byte) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", deliveryID)
	req.Header.Set("X-Hub-Signature-256", Sign(secret, body))
	req.Header.Set("User-Agent", "GitHub-Hookshot/fake")
	return req, nil
}

type authKind int

const (
	authNone         authKind = iota
	authApp                   // App JWT (Bearer)
	authInstallation          // installation token
	authAny                   // either
)

// authorize checks the Authorization header. Callers hold s.mu.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, kind authKind) bool {
	if !s.checkAuth || kind == authNone {
		return true
	}
	scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	scheme = strings.ToLower(scheme)
	isJWT := scheme == "bearer" && s.verifyJWT(cred) == nil
	_, isToken := s.tokens[cred]
	isToken = isToken && (scheme == "token" || scheme == "bearer")
	ok := false
	switch kind {
	case authApp:
		ok = isJWT
	case authInstallation:
		ok = isToken
	case authAny:
		ok = isJWT || isToken
	}
	if !ok {
		if kind == authApp && isToken {
			writeError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
			return false
		}
		writeError(w, http.StatusUnauthorized, "Bad credentials")
	}
	return ok
}

// verifyJWT checks an RS256 App JWT signed by the App key with the App id as issuer.
func (s *Server) verifyJWT(tok string) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return fmt.Errorf("jwt: malformed")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("jwt signature: %w", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&s.key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("jwt: %w", err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("jwt claims: %w", err)
	}
	var claims struct {
		Iss any   `json:"iss"`
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		return fmt.Errorf("jwt claims: %w", err)
	}
	if fmt.Sprint(claims.Iss) != strconv.FormatInt(s.appID, 10) {
		return fmt.Errorf("jwt: issuer %v", claims.Iss)
	}
	if claims.Exp != 0 && time.Unix(claims.Exp, 0).Before(s.now().Add(-time.Minute)) {
		return fmt.Errorf("jwt: expired")
	}
	return nil
}

// IssueToken creates an installation token directly, for tests that build their own client.
func (s *Server) IssueToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issueToken(s.installationID)
}

func (s *Server) issueToken(inst int64) string {
	tok := fmt.Sprintf("ghs_fake%d", s.id())
	s.tokens[tok] = inst
	return tok
}

// TokenClient is a plain go-github client using a freshly issued installation token.
func (s *Server) TokenClient() *github.Client {
	c := github.NewClient(&http.Client{Transport: tokenTransport{token: s.IssueToken()}})
	c, _ = c.WithEnterpriseURLs(s.APIURL(), s.APIURL())
	return c
}

type tokenTransport struct{ token string }

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "token "+t.token)
	return http.DefaultTransport.RoundTrip(r2)
}

func (s *Server) appJSON() *github.App {
	return &github.App{
		ID:      github.Int64(s.appID),
		Slug:    github.String(s.appSlug),
		NodeID:  github.String(fmt.Sprintf("A_fake%d", s.appID)),
		Name:    github.String(s.appSlug),
		Owner:   &github.User{Login: github.String("lensgate-org"), Type: github.String("Organization")},
		HTMLURL: github.String(s.srv.URL + "/apps/" + s.appSlug),
	}
}

func (s *Server) botUser() *github.User {
	return &github.User{
		Login: github.String(s.BotLogin()),
		ID:    github.Int64(s.appID + 100000),
		Type:  github.String("Bot"),
	}
}

func (s *Server) routesApp(mux *http.ServeMux) {
	s.handle(mux, "GET /app", authApp, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.appJSON())
	})
	s.handle(mux, tokenRoute, authApp, func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil || !s.installed(id) {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		exp := github.Timestamp{Time: s.now().Add(time.Hour)}
		writeJSON(w, http.StatusCreated, &github.InstallationToken{
			Token:     github.String(s.issueToken(id)),
			ExpiresAt: &exp,
		})
	})
	s.handle(mux, "GET /app/installations/{id}", authApp, func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil || id != s.installationID {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		writeJSON(w, http.StatusOK, s.installationJSON())
	})
	s.handle(mux, "GET /repos/{owner}/{repo}/installation", authApp, func(w http.ResponseWriter, r *http.Request) {
		if s.repo(w, r) == nil {
			return
		}
		writeJSON(w, http.StatusOK, s.installationJSON())
	})
	s.handle(mux, "GET /app/hook/deliveries", authApp, s.listDeliveries)
	s.handle(mux, "GET /app/hook/deliveries/{id}", authApp, s.getDelivery)
	s.handle(mux, "POST /app/hook/deliveries/{id}/attempts", authApp, s.redeliver)
}

func (s *Server) installationJSON() *github.Installation {
	return &github.Installation{
		ID:      github.Int64(s.installationID),
		AppID:   github.Int64(s.appID),
		AppSlug: github.String(s.appSlug),
		Account: &github.User{Login: github.String("lensgate-org"), Type: github.String("Organization")},
	}
}
