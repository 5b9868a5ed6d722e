package details

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Cookie names. Both are HttpOnly, SameSite=Lax (the OAuth redirect back from GitHub is a
// cross-site navigation that must carry the login state) and Secure behind https.
const (
	cookieSession = "lensgate_session"
	cookieLogin   = "lensgate_login"
)

const (
	sessionTTL = 12 * time.Hour
	loginTTL   = 10 * time.Minute
)

// signer signs small JSON values into cookie-safe strings: base64url(JSON) "." base64url(MAC),
// each purpose under its own derived key so a value of one kind never passes for another.
type signer struct {
	key []byte
	now func() time.Time
}

func (s signer) mac(purpose string, data []byte) []byte {
	k := hmac.New(sha256.New, s.key)
	k.Write([]byte("lensgate details " + purpose))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write(data)
	return m.Sum(nil)
}

func (s signer) seal(purpose string, v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(data) + "." + base64.RawURLEncoding.EncodeToString(s.mac(purpose, data)), nil
}

var errBadValue = errors.New("invalid signed value")

func (s signer) open(purpose, value string, v any) error {
	body, sig, ok := strings.Cut(value, ".")
	if !ok || len(value) > 4096 {
		return errBadValue
	}
	data, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return errBadValue
	}
	want, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(want, s.mac(purpose, data)) {
		return errBadValue
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errBadValue
	}
	return nil
}

// session is a logged-in reader.
type session struct {
	Login   string `json:"l"`
	ID      string `json:"i"` // random per login; the CSRF token is derived from it
	Expires int64  `json:"e"`
}

// loginState is the OAuth state of a login in progress and where to return afterwards.
type loginState struct {
	State   string `json:"s"`
	Return  string `json:"r"`
	Expires int64  `json:"e"`
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func (h *Handler) setCookie(w http.ResponseWriter, r *http.Request, name, value string, ttl time.Duration) {
	c := &http.Cookie{
		Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: h.secure(r), MaxAge: int(ttl / time.Second),
	}
	if ttl <= 0 {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// secure reports whether cookies must be Secure: the public URL is https or the request came
// over TLS.
func (h *Handler) secure(r *http.Request) bool {
	return strings.HasPrefix(h.publicURL, "https://") || r.TLS != nil
}

// viewer returns the logged-in reader, or nil.
func (h *Handler) viewer(r *http.Request) *session {
	c, err := r.Cookie(cookieSession)
	if err != nil {
		return nil
	}
	var s session
	if h.sign.open(cookieSession, c.Value, &s) != nil || s.Login == "" || h.sign.now().Unix() > s.Expires ||
		h.revoked.has(s.ID) {
		return nil
	}
	return &s
}

// maxRevoked bounds the revoked sessions remembered; expired ones are dropped first.
const maxRevoked = 100000

// revocations are the sessions logged out before their expiry, kept until they expire. They
// live in this process: with several replicas behind a load balancer, a logout revokes the
// session on the replica that served it (the cookie is cleared in the browser either way).
type revocations struct {
	mu  sync.Mutex
	ids map[string]time.Time
}

func newRevocations() *revocations { return &revocations{ids: map[string]time.Time{}} }

// revoke remembers a logged-out session; false when the bound is reached with none expired.
func (rv *revocations) revoke(id string, expires, now time.Time) bool {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if len(rv.ids) >= maxRevoked {
		for k, exp := range rv.ids {
			if now.After(exp) {
				delete(rv.ids, k)
			}
		}
	}
	if len(rv.ids) >= maxRevoked {
		return false
	}
	rv.ids[id] = expires
	return true
}

func (rv *revocations) has(id string) bool {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	_, ok := rv.ids[id]
	return ok
}

// csrfToken is the token the re-run form carries: bound to the session, so a form of one
// login never works for another.
func (h *Handler) csrfToken(s *session) string {
	return base64.RawURLEncoding.EncodeToString(h.sign.mac("csrf", []byte(s.ID+"\x00"+s.Login)))
}

func (h *Handler) checkCSRF(r *http.Request, s *session) bool {
	got, err := base64.RawURLEncoding.DecodeString(r.PostFormValue("csrf"))
	if err != nil || !hmac.Equal(got, h.sign.mac("csrf", []byte(s.ID+"\x00"+s.Login))) {
		return false
	}
	// A browser names the page that sent a POST; one from another origin is refused even with
	// a token.
	// "null" (a sandboxed frame, a redirect across origins, a data: or file: page) is not this
	// page's origin either.
	if o := r.Header.Get("Origin"); o != "" && o != h.origin(r) {
		return false
	}
	return true
}

// origin is the page's own origin as a browser names it.
func (h *Handler) origin(r *http.Request) string {
	if h.publicURL != "" {
		return strings.TrimSuffix(h.publicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// stateStore keeps the OAuth state in a signed cookie (go-githubapp's oauth2.StateStore).
type stateStore struct{ h *Handler }

func (st stateStore) GenerateState(w http.ResponseWriter, r *http.Request) (string, error) {
	state, err := randomHex(20)
	if err != nil {
		return "", err
	}
	v, err := st.h.sign.seal(cookieLogin, loginState{State: state, Return: safeReturn(r.URL.Query().Get("return")),
		Expires: st.h.sign.now().Add(loginTTL).Unix()})
	if err != nil {
		return "", err
	}
	st.h.setCookie(w, r, cookieLogin, v, loginTTL)
	return state, nil
}

func (st stateStore) VerifyState(r *http.Request, state string) (bool, error) {
	ls, ok := st.h.loginState(r)
	return ok && state != "" && hmac.Equal([]byte(ls.State), []byte(state)), nil
}

func (h *Handler) loginState(r *http.Request) (loginState, bool) {
	c, err := r.Cookie(cookieLogin)
	if err != nil {
		return loginState{}, false
	}
	var ls loginState
	if h.sign.open(cookieLogin, c.Value, &ls) != nil || h.sign.now().Unix() > ls.Expires {
		return loginState{}, false
	}
	return ls, true
}

// reReturn is the alphabet of the page's own paths (Path escapes nothing in them: owner and
// repository names, numbers and heads use only these characters).
var reReturn = regexp.MustCompile(`^/details/[A-Za-z0-9_.\-/]{1,1000}$`)

// safeReturn keeps a return path only when it is one of the page's own paths, so the login
// cannot be used to redirect anywhere else: only the characters of those paths (no control
// character, backslash or percent escape reaches the Location header) and a clean path (no
// "..", "." or empty segment that would lead out of /details/).
func safeReturn(p string) string {
	if !reReturn.MatchString(p) || path.Clean(p) != p {
		return ""
	}
	return p
}
