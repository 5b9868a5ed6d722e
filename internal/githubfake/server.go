package githubfake

import (
	"bytes"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Defaults of the fake App. Tests that need other values pass Options to New.
const (
	DefaultAppID          int64 = 4242
	DefaultAppSlug              = "lensgate"
	DefaultInstallationID int64 = 1
	DefaultWebhookSecret        = "fake-webhook-secret"
)

const tokenRoute = "POST /app/installations/{id}/access_tokens"

// apiPrefix is where the REST API is mounted, matching a GitHub Enterprise style V3APIURL.
const apiPrefix = "/api/v3"

// sharedKey is generated once per test binary: RSA generation is slow and the key is never
// mutated, so every fake App in a test run signs with the same key.
var sharedKey = sync.OnceValues(GenerateKey)

// Server is the fake GitHub. All exported methods are safe for concurrent use.
type Server struct {
	t   testing.TB
	srv *httptest.Server
	key *rsa.PrivateKey

	appID          int64
	appSlug        string
	installationID int64
	// installations are further installations of the App (AddInstallation), beside installationID.
	installations map[int64]bool
	webhookSecret string
	checkAuth     bool
	now           func() time.Time
	// readLag delays what pull request reads show after a change (WithReadLag).
	readLag time.Duration
	// contentLimit is the content-creating requests per installation and minute (WithContentLimit).
	contentLimit int
	// checkObserver sees every check-run write (WithCheckRunObserver).
	checkObserver func(CheckRun)

	mu     sync.Mutex
	nextID int64
	repos  map[string]*repoState // "owner/name"
	tokens map[string]int64      // installation token -> installation id
	calls  map[string]int        // "METHOD /route/{pattern}" -> count (304s not included)
	// notModified counts conditional GETs answered 304, by route.
	notModified map[string]int
	writes      int
	log         []Call
	unhandled   []string
	faults      map[string][]*Fault
	hooks       map[string][]func(*http.Request)
	// content holds each installation's content-creating requests of the last minute.
	content map[int64][]time.Time
	// rateUsed counts each installation's requests against the primary limit until rateReset.
	rateUsed  map[int64]int
	rateReset time.Time
	rateLimit int // each installation's hourly budget
	// stamped remembers StampPullRequestEvent's answers by the payload's digest.
	stamped map[[32]byte][]byte

	oauthCodes map[string]oauthGrant
	userTokens map[string]string // user token -> login
	// bots are other Apps' bot accounts by login; connectors script some of them.
	bots map[string]Bot
	// teams are the organisations' teams: members by team ("org/slug") and login, all lower
	// case, with their membership state ("active" or "pending").
	teams      map[string]map[string]string
	connectors []*connector
	onEvent    func(event string, payload []byte)

	deliveries   []*HookDelivery
	redeliveries []int64
	rerequests   []Rerequest
}

// Call is one request the fake answered.
type Call struct {
	Method string
	Route  string // the route pattern, e.g. "GET /repos/{owner}/{repo}/pulls/{number}"
	Path   string
	Status int
	// At is when the request arrived, by the fake's clock.
	At time.Time
	// Installation is the installation whose token made the request (0 for none).
	Installation int64
}

// Rerequest records a check run or check suite re-run request.
type Rerequest struct {
	Kind string // "check_run" or "check_suite"
	ID   int64
}

// Option configures New.
type Option func(*Server)

// WithAppSlug sets the App's slug; the bot login is slug + "[bot]".
func WithAppSlug(slug string) Option { return func(s *Server) { s.appSlug = slug } }

// WithAppID sets the App id expected as the JWT issuer.
func WithAppID(id int64) Option { return func(s *Server) { s.appID = id } }

// WithoutAuth lets requests through without an App JWT or installation token, for tests that
// use a bare go-github client.
func WithoutAuth() Option { return func(s *Server) { s.checkAuth = false } }

// WithClock sets the clock used for timestamps.
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// New starts a fake GitHub and closes it when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	key, err := sharedKey()
	if err != nil {
		t.Fatalf("githubfake: %v", err)
	}
	s := &Server{
		t:              t,
		key:            key,
		appID:          DefaultAppID,
		appSlug:        DefaultAppSlug,
		installationID: DefaultInstallationID,
		installations:  map[int64]bool{},
		webhookSecret:  DefaultWebhookSecret,
		checkAuth:      true,
		now:            time.Now,
		readLag:        DefaultReadLag,
		contentLimit:   DefaultContentLimit,
		content:        map[int64][]time.Time{},
		rateUsed:       map[int64]int{},
		rateLimit:      DefaultRateLimit,
		stamped:        map[[32]byte][]byte{},
		nextID:         1000,
		repos:          map[string]*repoState{},
		tokens:         map[string]int64{},
		calls:          map[string]int{},
		notModified:    map[string]int{},
		faults:         map[string][]*Fault{},
		hooks:          map[string][]func(*http.Request){},
		oauthCodes:     map[string]oauthGrant{},
		userTokens:     map[string]string{},
		bots:           map[string]Bot{},
		teams:          map[string]map[string]string{},
	}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	s.routes(mux)
	mux.HandleFunc("/", s.notFound)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the server's root URL (no trailing slash).
func (s *Server) URL() string { return s.srv.URL }

// APIURL is the V3 API base URL with a trailing slash, as go-githubapp's V3APIURL expects.
func (s *Server) APIURL() string { return s.srv.URL + apiPrefix + "/" }

// BotLogin is the login GitHub shows for the App's own writes.
func (s *Server) BotLogin() string { return s.appSlug + "[bot]" }

// AppID is the App id.
func (s *Server) AppID() int64 { return s.appID }

// InstallationID is the id of the App's first installation.
func (s *Server) InstallationID() int64 { return s.installationID }

// AddInstallation adds another installation of the App: its id can exchange the App's JWT for
// an installation token, and webhook payloads may name it.
func (s *Server) AddInstallation(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.installations[id] = true
}

// installed reports whether id is one of the App's installations; s.mu is held.
func (s *Server) installed(id int64) bool { return id == s.installationID || s.installations[id] }

// WebhookSecret is the secret webhooks are signed with in AppConfig.
func (s *Server) WebhookSecret() string { return s.webhookSecret }

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

// handle registers a route under the API prefix. pattern is "METHOD /path/{wildcards}"; the
// handler runs with s.mu held after faults, hooks and counters were applied.
func (s *Server) handle(mux *http.ServeMux, pattern string, auth authKind, fn func(w http.ResponseWriter, r *http.Request)) {
	method, path, _ := strings.Cut(pattern, " ")
	mux.HandleFunc(method+" "+apiPrefix+path, func(w http.ResponseWriter, r *http.Request) {
		call := s.arrived(r, pattern)
		if method == http.MethodGet {
			s.serveConditional(w, r, pattern, auth, fn, call)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		// Counted up front: the handler writes its status with s.mu held.
		rate := http.Header{}
		s.rateHeaders(rate, call.Installation, true)
		rec.before = func(code int) {
			if code < 400 { // an injected failure sends its own headers
				for k, v := range rate {
					w.Header()[k] = v
				}
			}
		}
		if s.contentLimited(rec, pattern, call.Installation) {
			s.mu.Lock()
			s.calls[pattern]++
			s.writes++
			s.mu.Unlock()
		} else {
			s.serve(rec, r, pattern, auth, fn)
		}
		call.Status = rec.status
		s.mu.Lock()
		s.log = append(s.log, call)
		s.mu.Unlock()
	})
}

// serveConditional answers a GET like GitHub: a 200 carries Cache-Control, an ETag and Vary, and
// a request whose If-None-Match names the current ETag gets 304 Not Modified without a body but
// with the same Cache-Control, ETag and Vary. GitHub does not count a 304 against the rate limit,
// so TotalCalls and X-RateLimit-Used leave them out; Calls and CallCount count every request, and
// NotModified the 304s.
func (s *Server) serveConditional(w http.ResponseWriter, r *http.Request, pattern string, auth authKind, fn func(http.ResponseWriter, *http.Request), call Call) {
	buf := &bufferedResponse{header: w.Header(), status: http.StatusOK}
	rec := &statusRecorder{ResponseWriter: buf, status: http.StatusOK}
	s.serve(rec, r, pattern, auth, fn)
	status := rec.status
	if status == http.StatusOK {
		sum := sha256.Sum256(buf.body.Bytes())
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		cacheHeaders(w.Header(), r, etag)
		if r.Header.Get("If-None-Match") == etag {
			status = http.StatusNotModified
			buf.body.Reset()
			w.Header().Del("Content-Type")
			s.mu.Lock()
			s.notModified[pattern]++
			s.mu.Unlock()
		}
	}
	if status < 400 { // an injected failure sends its own headers
		s.rateHeaders(w.Header(), call.Installation, status != http.StatusNotModified)
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.body.Bytes())
	call.Status = status
	s.mu.Lock()
	s.log = append(s.log, call)
	s.mu.Unlock()
}

// arrived starts the log entry of a request: when it came and whose token it carries.
func (s *Server) arrived(r *http.Request, pattern string) Call {
	_, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	s.mu.Lock()
	defer s.mu.Unlock()
	return Call{Method: r.Method, Route: pattern, Path: r.URL.Path, At: s.now(), Installation: s.tokens[cred]}
}

// bufferedResponse holds a response until its ETag is known.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) WriteHeader(code int)        { b.status = code }

// NotModified is the number of conditional GETs answered 304 (not in TotalCalls).
func (s *Server) NotModified() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.notModified {
		n += v
	}
	return n
}

func (s *Server) serve(w *statusRecorder, r *http.Request, route string, auth authKind, fn func(http.ResponseWriter, *http.Request)) {
	s.mu.Lock()
	s.calls[route]++
	// Token creation is authentication, not a write to GitHub's state.
	if r.Method != http.MethodGet && r.Method != http.MethodHead && route != tokenRoute {
		s.writes++
	}
	fault := s.takeFault(route)
	hooks := s.hooks[route]
	delete(s.hooks, route)
	s.mu.Unlock()

	for _, h := range hooks {
		h(r)
	}
	if fault != nil && fault.Delay > 0 {
		// Consume the body first: only then does net/http notice a client that hangs up.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 25<<20))
		if err != nil {
			writeError(w, http.StatusBadRequest, "Problems reading the body")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if fault != nil && fault.delay(r) {
		return
	}
	if fault != nil && !fault.AfterWrite && fault.fail(w) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.authorize(w, r, auth) {
		return
	}
	if fault != nil && fault.AfterWrite {
		// The write happens; the answer the client sees is the injected failure.
		fn(discardWriter{header: http.Header{}}, r)
		fault.fail(w)
		return
	}
	fn(w, r)
}

// discardWriter swallows a response.
type discardWriter struct{ header http.Header }

func (d discardWriter) Header() http.Header         { return d.header }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}

// statusRecorder remembers the status written, for the call log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	// before, when set, runs before the status is written (to add headers).
	before func(code int)
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	if r.before != nil {
		r.before(code)
	}
	r.ResponseWriter.WriteHeader(code)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.unhandled = append(s.unhandled, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	writeError(w, http.StatusNotFound, "Not Found")
}

// Calls returns a copy of the per-route call counts, keyed "METHOD /route/{pattern}".
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// CallCount returns how often one route was called.
func (s *Server) CallCount(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}

// TotalCalls is the number of requests to implemented routes that count against GitHub's rate
// limit: every request but those answered 304 Not Modified.
func (s *Server) TotalCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.calls {
		n += v
	}
	for _, v := range s.notModified {
		n -= v
	}
	return n
}

// Writes is the number of non-GET requests to implemented routes, failed ones included and
// installation token creation excluded.
func (s *Server) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// Log returns every answered request in order.
func (s *Server) Log() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.log...)
}

// Unhandled lists requests to routes the fake does not implement ("METHOD /path").
func (s *Server) Unhandled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unhandled...)
}

// ResetCalls clears counters and the call log (state is kept), to measure one phase of a test.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = map[string]int{}
	s.notModified = map[string]int{}
	s.writes = 0
	s.log = nil
	s.unhandled = nil
}

// CallSummary renders the counts sorted by route, for test logs.
func (s *Server) CallSummary() string {
	c := s.Calls()
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%4d %s\n", c[k], k)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	nm := make([]string, 0, len(s.notModified))
	for k := range s.notModified {
		nm = append(nm, k)
	}
	sort.Strings(nm)
	for _, k := range nm {
		fmt.Fprintf(&b, "%4d %s answered 304 (not counted in the total)\n", s.notModified[k], k)
	}
	return b.String()
}

// OnNext runs fn once, before the next request to route is handled (outside the state lock, so
// fn may call the Server's methods). Tests use it to simulate concurrent edits.
func (s *Server) OnNext(route string, fn func(*http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks[route] = append(s.hooks[route], fn)
}

// ghError is GitHub's error body.
type ghError struct {
	Message          string   `json:"message"`
	Errors           []string `json:"errors,omitempty"`
	DocumentationURL string   `json:"documentation_url,omitempty"`
	Status           string   `json:"status,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg string, errs ...string) {
	writeJSON(w, status, ghError{
		Message:          msg,
		Errors:           errs,
		DocumentationURL: "https://docs.github.com/rest",
		Status:           strconv.Itoa(status),
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 25<<20))
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON", err.Error())
		return false
	}
	return true
}
