package runner

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
)

// Defaults of Options.
const (
	DefaultMaxRuns       = 256
	DefaultRunTTL        = 30 * time.Minute
	DefaultMaxConcurrent = 4
	// maxObservesPerRun bounds the receipts one run's record can be signed for (a publisher
	// signs again when the body changed while it wrote).
	maxObservesPerRun = 8
	// bodyTimeout bounds how long a request's body may take to arrive.
	bodyTimeout = 2 * time.Minute
	// maxLingering, lingerTime and lingerBytes bound the wait for a refused sender to read its
	// answer (see closeRefused).
	maxLingering = 64
	lingerTime   = 500 * time.Millisecond
	lingerBytes  = 4 << 10
)

// Options configure a Server.
type Options struct {
	// Runtimes are the runtimes the runner serves.
	Runtimes *runtime.Registry
	// Witness signs observations; the worker never holds it.
	Witness observation.Signer
	// PreviousWitnessKeys are retired witness public keys: an earlier observation signed with
	// one still vouches for the findings it lists.
	PreviousWitnessKeys []ed25519.PublicKey
	// Token is the shared token (see LoadToken).
	Token   []byte
	Version string
	Logger  zerolog.Logger
	// Now is the runner's clock (default time.Now): the clock of every observation.
	Now func() time.Time
	// MaxRuns bounds the runs kept at once; RunTTL is how long a run's record is kept after
	// its first call.
	MaxRuns int
	RunTTL  time.Duration
	// MaxRequestBytes bounds a request body; MaxConcurrent the calls that run at once.
	MaxRequestBytes int64
	MaxConcurrent   int
	// WorkRoot is where work directories are laid out ("" for the system temporary directory).
	WorkRoot string
}

// Server is the runner's HTTP handler.
type Server struct {
	opts      Options
	pipe      *review.Pipeline
	pub       ed25519.PublicKey
	sem       chan struct{}
	lingering chan struct{}
	nonces    nonceCache
	refusals  *refusalLog
	mu        sync.Mutex
	runs      map[string]*run
}

// run is the runner's own record of one review: what it was told before the first call, and
// every call as it ran it.
type run struct {
	mu                    sync.Mutex
	id                    string
	started, expires      time.Time
	head, base            string
	diffDigest, plan      string
	subjectOwner, subRepo string
	number                int
	calls                 []observation.Call
	lenses                []string
	lensRuntime           map[string]string
	reports               map[string][]*runtime.LensReport
	failed                map[string]bool
	observed              int
}

// NewServer returns a runner.
func NewServer(o Options) (*Server, error) {
	if len(o.Witness.Key) != ed25519.PrivateKeySize {
		return nil, errors.New("runner: no witness key")
	}
	if len(o.Token) < MinTokenBytes {
		return nil, fmt.Errorf("runner: the token must have at least %d bytes", MinTokenBytes)
	}
	if o.Runtimes == nil {
		return nil, errors.New("runner: no runtimes")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxRuns <= 0 {
		o.MaxRuns = DefaultMaxRuns
	}
	if o.RunTTL <= 0 {
		o.RunTTL = DefaultRunTTL
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := &Server{
		opts: o, pub: o.Witness.Key.Public().(ed25519.PublicKey), sem: make(chan struct{}, o.MaxConcurrent),
		runs: map[string]*run{}, refusals: newRefusalLog(o.Logger), lingering: make(chan struct{}, maxLingering),
		pipe: review.NewPipeline(review.Options{Runtimes: o.Runtimes, Logger: o.Logger, Version: o.Version, Now: o.Now, WorkRoot: o.WorkRoot}),
	}
	return s, nil
}

// WitnessPublicKey is the key observations are signed with.
func (s *Server) WitnessPublicKey() ed25519.PublicKey { return s.pub }

// ServeHTTP authenticates the request from its headers, then reads its body and answers it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	nonce := r.Header.Get(HeaderNonce)
	reply := func(status int, v any) {
		body, err := json.Marshal(v)
		if err != nil {
			status, body = http.StatusInternalServerError, []byte(`{"error":"the answer could not be encoded"}`)
		}
		w.Header().Set("Content-Type", "application/json")
		// An explicit length: a refusal's answer is flushed before the connection is taken
		// over, and must not be sent chunked.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if len(nonce) == 32 && isHexN(nonce) {
			w.Header().Set(HeaderMAC, responseMAC(s.opts.Token, nonce, status, body))
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
	body, ok := s.authenticated(w, r, reply)
	if !ok {
		return
	}
	refuse := func(status int, kind, msg string) {
		s.refusals.note(true, r.URL.Path, kind, msg)
		reply(status, ErrorResponse{Error: msg})
	}
	switch r.URL.Path {
	case PathInfo:
		reply(http.StatusOK, Info{Version: s.opts.Version, Runtimes: s.opts.Runtimes.Names(), Presets: s.opts.Runtimes.Presets(),
			WitnessPublicKey: hex.EncodeToString(s.pub)})
	case PathCalls:
		req, err := ParseCallRequest(body)
		if err != nil {
			refuse(http.StatusBadRequest, "malformed", err.Error())
			return
		}
		resp, status, err := s.call(r.Context(), req)
		if err != nil {
			refuse(status, "call", err.Error())
			return
		}
		reply(http.StatusOK, resp)
	case PathObserve:
		req, err := ParseObserveRequest(body)
		if err != nil {
			refuse(http.StatusBadRequest, "malformed", err.Error())
			return
		}
		resp, status, err := s.observe(req)
		if err != nil {
			refuse(status, "observe", err.Error())
			return
		}
		reply(http.StatusOK, resp)
	}
}

// closeRefused ends the connection of a request refused before its body was read. The HTTP
// server would keep every such connection open for half a second after the answer (so that
// the sender reads it before a reset), which under a flood of refused requests holds
// thousands of connections. Here at most maxLingering wait, up to lingerTime and reading at
// most lingerBytes of what the sender still sends; the others are closed at once.
func (s *Server) closeRefused(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		return // the server closes it (Connection: close)
	}
	select {
	case s.lingering <- struct{}{}:
	default:
		_ = conn.Close()
		return
	}
	go func() {
		defer func() { <-s.lingering }()
		defer conn.Close()
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_ = conn.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.CopyN(io.Discard, conn, lingerBytes)
	}()
}

// authenticated checks the route and the request's authentication from its headers, and only
// then reads the body to its declared length and checks its digest. A request refused before
// its body is read is answered with "Connection: close", so that the HTTP server does not read
// the body either: an unauthenticated sender costs the runner its headers and one buffer.
func (s *Server) authenticated(w http.ResponseWriter, r *http.Request, reply func(int, any)) ([]byte, bool) {
	authed := false // logged each once the sender is authenticated, with a rate limit before
	refuse := func(status int, kind, msg string) ([]byte, bool) {
		w.Header().Set("Connection", "close")
		s.refusals.note(authed, r.URL.Path, kind, msg)
		reply(status, ErrorResponse{Error: msg})
		s.closeRefused(w)
		return nil, false
	}
	var routeMethod string
	switch r.URL.Path {
	case PathInfo:
		routeMethod = http.MethodGet
	case PathCalls, PathObserve:
		routeMethod = http.MethodPost
	default:
		return refuse(http.StatusNotFound, "path", "no such endpoint")
	}
	if r.Method != routeMethod {
		return refuse(http.StatusMethodNotAllowed, "method", "want "+routeMethod)
	}
	h := authHeaders{method: r.Method, path: r.URL.Path, date: r.Header.Get(HeaderDate), nonce: r.Header.Get(HeaderNonce),
		mac: r.Header.Get(HeaderMAC), digest: strings.ToLower(r.Header.Get(HeaderDigest)), length: r.ContentLength}
	if err := s.nonces.check(s.opts.Token, s.opts.Now(), h); err != nil {
		return refuse(http.StatusUnauthorized, "auth", err.Error())
	}
	authed = true
	if h.length > s.opts.MaxRequestBytes {
		return refuse(http.StatusRequestEntityTooLarge, "size", fmt.Sprintf("the request exceeds %d bytes", s.opts.MaxRequestBytes))
	}
	// The body must arrive within bodyTimeout; the deadline is lifted before the call runs,
	// so that a long call is not cut off.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyTimeout))
	body := make([]byte, h.length)
	_, err := io.ReadFull(r.Body, body)
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		return refuse(http.StatusBadRequest, "read", "the request body could not be read to its declared length")
	}
	if bodyDigest(body) != h.digest {
		return refuse(http.StatusBadRequest, "digest", "the request body does not have the declared digest")
	}
	return body, true
}

// call runs one runtime call and records it in its run.
func (s *Server) call(ctx context.Context, c *CallRequest) (*CallResponse, int, error) {
	rt, ok := s.opts.Runtimes.Get(c.Runtime)
	if !ok {
		return nil, http.StatusUnprocessableEntity, fmt.Errorf("runtime %q is not enabled on the runner (enabled: %v)", c.Runtime, s.opts.Runtimes.Names())
	}
	req := c.Request.runtimeRequest()
	rn, status, err := s.runFor(c, req)
	if err != nil {
		return nil, status, err
	}
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	case <-ctx.Done():
		return nil, http.StatusServiceUnavailable, errors.New("the runner is busy and the caller gave up")
	}
	if len(c.WorkDir) > 0 {
		dir, err := s.layWorkDir(c.WorkDir)
		if err != nil {
			return nil, http.StatusInternalServerError, err
		}
		defer os.RemoveAll(dir)
		req.WorkDir = dir
	}
	var grant *grantBudget
	if c.Budget != nil {
		grant = &grantBudget{left: *c.Budget, refused: c.Refused}
		req.Budget = grant
	}
	res, callErr, obs := s.pipe.RunObserved(ctx, rt, req, c.Blobs)

	rn.mu.Lock()
	defer rn.mu.Unlock()
	if len(rn.calls) >= observation.MaxCalls {
		return nil, http.StatusConflict, fmt.Errorf("run %s already has %d calls", rn.id, observation.MaxCalls)
	}
	rn.calls = append(rn.calls, obs)
	for _, l := range req.Lenses {
		if _, ok := rn.lensRuntime[l.Name]; !ok {
			rn.lenses = append(rn.lenses, l.Name)
			rn.lensRuntime[l.Name] = c.Runtime
		}
		if callErr != nil {
			rn.failed[l.Name] = true
			continue
		}
		var rep *runtime.LensReport
		for j := range res.Lenses {
			if res.Lenses[j].Lens == l.Name {
				rep = &res.Lenses[j]
				break
			}
		}
		rn.reports[l.Name] = append(rn.reports[l.Name], rep)
	}
	out := &CallResponse{Run: rn.id, Result: res}
	if callErr != nil {
		out.Result, out.Error = nil, callErr.Error()
	}
	if grant != nil {
		out.TokensUsed = grant.used()
	}
	return out, http.StatusOK, nil
}

// runFor returns the run of a call: a new one for a first call, else the one named, which must
// be about the same change.
func (s *Server) runFor(c *CallRequest, req *runtime.Request) (*run, int, error) {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, r := range s.runs {
		if now.After(r.expires) {
			delete(s.runs, id)
		}
	}
	if c.Run == "" {
		if len(s.runs) >= s.opts.MaxRuns {
			return nil, http.StatusServiceUnavailable, fmt.Errorf("the runner keeps %d open runs, its limit; try again when one expires", len(s.runs))
		}
		rn := &run{
			id: newRunID(), started: now, expires: now.Add(s.opts.RunTTL), head: req.Subject.HeadSHA, base: req.Subject.BaseSHA,
			diffDigest: c.DiffDigest, plan: c.PlanDigest, subjectOwner: req.Subject.Owner, subRepo: req.Subject.Repo, number: req.Subject.Number,
			lensRuntime: map[string]string{}, reports: map[string][]*runtime.LensReport{}, failed: map[string]bool{},
		}
		s.runs[rn.id] = rn
		return rn, 0, nil
	}
	rn, ok := s.runs[c.Run]
	if !ok {
		return nil, http.StatusNotFound, errors.New("unknown or expired run " + c.Run)
	}
	if rn.head != req.Subject.HeadSHA || rn.base != req.Subject.BaseSHA || rn.diffDigest != c.DiffDigest || rn.plan != c.PlanDigest ||
		rn.subjectOwner != req.Subject.Owner || rn.subRepo != req.Subject.Repo || rn.number != req.Subject.Number {
		return nil, http.StatusConflict, errors.New("the call is about another change than run " + rn.id + " (head, base, diff, plan or subject differ)")
	}
	return rn, 0, nil
}

func newRunID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// layWorkDir writes the worker's work directory files into a fresh private directory.
func (s *Server) layWorkDir(files []WorkFile) (string, error) {
	dir, err := os.MkdirTemp(s.opts.WorkRoot, "lensgate-runner-work-")
	if err != nil {
		return "", fmt.Errorf("create work directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("restrict work directory: %w", err)
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("work directory: %w", err)
		}
		if err := os.WriteFile(p, f.Content, 0o600); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("work directory: %w", err)
		}
	}
	return dir, nil
}

// observe checks a receipt against the run's record and signs the observation when the
// receipt declares what the runner saw: the same change, the same plan, times inside the
// runner's window, every finding the runner derived, and no finding it did not see (in this
// run or, carried from an earlier head, in an observation it signed before).
func (s *Server) observe(o *ObserveRequest) (*ObserveResponse, int, error) {
	s.mu.Lock()
	rn, ok := s.runs[o.Run]
	s.mu.Unlock()
	now := s.opts.Now()
	if !ok || now.After(rn.expires) {
		return nil, http.StatusNotFound, errors.New("unknown or expired run " + o.Run)
	}
	rc, err := observation.ReadReceipt(o.Receipt)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.observed >= maxObservesPerRun {
		return nil, http.StatusConflict, fmt.Errorf("run %s was observed %d times already", rn.id, rn.observed)
	}
	if err := rn.sameReview(rc, now); err != nil {
		return nil, http.StatusConflict, err
	}
	derived, outcome := rn.derive()
	listed, err := matchFindings(rc, derived, s.vouched(o.Prior, rc.SubjectName))
	if err != nil {
		return nil, http.StatusConflict, err
	}

	st := &observation.Statement{
		SubjectName: rc.SubjectName, SubjectDigest: rc.SubjectDigest,
		Runner:        observation.Runner{ID: review.ProducerID, Version: s.opts.Version},
		ReceiptDigest: rc.Digest, ReviewedDiffDigest: rc.ReviewedDiff, PlanDigest: rc.Plan,
		Started: rn.started.UTC(), Finished: now.UTC(),
		Findings: listed, FindingsTotal: len(listed), FindingsRoot: observation.FindingsRoot(listed),
	}
	for _, c := range rn.calls {
		c.Outcomes = nil
		for _, l := range c.Lenses {
			o := outcome[l]
			if o == "" {
				o = string(review.OutcomePending)
			}
			c.Outcomes = append(c.Outcomes, observation.Outcome{Lens: l, Outcome: o})
		}
		st.Calls = append(st.Calls, c)
	}
	if len(st.Findings) > observation.MaxFindings {
		st.Findings = st.Findings[:observation.MaxFindings]
	}
	maxBytes := o.MaxBytes
	if maxBytes <= 0 || maxBytes > observation.MaxEnvelopeBytes {
		maxBytes = observation.MaxEnvelopeBytes
	}
	if _, err := st.Bound(maxBytes); err != nil {
		return nil, http.StatusInternalServerError, err
	}
	signed, err := observation.Sign(st, s.opts.Witness)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	rn.observed++
	s.opts.Logger.Info().Str("run", rn.id).Str("observation", signed.Digest).Int("calls", len(st.Calls)).
		Int("findings", st.FindingsTotal).Msg("observation signed")
	return &ObserveResponse{Envelope: signed.Envelope, Digest: signed.Digest}, http.StatusOK, nil
}

// refused is why the runner does not observe a receipt.
func refused(format string, args ...any) error {
	return fmt.Errorf("not observed: "+format, args...)
}

// sameReview checks that the receipt is about what the run reviewed: the same head, base,
// diff and plan, every finding listed, and completion claimed inside the run's window.
func (rn *run) sameReview(rc *observation.ReceiptFacts, now time.Time) error {
	switch {
	case rc.HeadSHA != rn.head || rc.BaseSHA != rn.base:
		return refused("the receipt is about head %s and base %s, the run reviewed head %s and base %s",
			short(rc.HeadSHA), short(rc.BaseSHA), short(rn.head), short(rn.base))
	case rc.ReviewedDiff != rn.diffDigest:
		return refused("the receipt's reviewedDiffDigest is not the diff declared for the run")
	case rc.Plan != rn.plan && !(rc.Plan == "" && !isHex64(rn.plan)):
		return refused("the receipt's planRef is not the plan declared for the run")
	case len(rc.Findings) != rc.Total:
		return refused("the receipt lists %d of its %d findings; the runner observes only receipts that list all of them", len(rc.Findings), rc.Total)
	}
	for _, claim := range rc.Completed {
		t, err := time.Parse(time.RFC3339Nano, claim)
		if err != nil || t.Before(rn.started.Truncate(time.Second)) || t.After(now) {
			return refused("the receipt's reviewCompleted %q lies outside the runner's window %s .. %s",
				claim, rn.started.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}

// derive is what the runner derived from the responses it saw, lens by lens: the findings by
// id and each lens's outcome.
func (rn *run) derive() (map[string]observation.Finding, map[string]string) {
	derived := map[string]observation.Finding{}
	outcome := map[string]string{}
	for _, l := range rn.lenses {
		if rn.failed[l] {
			outcome[l] = string(review.OutcomePending)
			continue
		}
		d := review.DeriveLens(l, rn.lensRuntime[l], rn.reports[l])
		outcome[l] = string(d.Outcome)
		for _, f := range d.Findings {
			derived[f.ID] = f
		}
	}
	return derived, outcome
}

// vouched is what earlier observations of the subject, signed by this runner, list.
func (s *Server) vouched(prior [][]byte, subject string) map[string]observation.Finding {
	out := map[string]observation.Finding{}
	for i, env := range prior {
		p, err := observation.Parse(env)
		if err != nil || !s.ownKey(p) || p.Statement.SubjectName != subject {
			s.opts.Logger.Info().Int("prior", i).Msg("an earlier observation given with the receipt is not this runner's own of this subject; ignored")
			continue
		}
		for _, f := range p.Statement.Findings {
			out[f.ID] = f
		}
	}
	return out
}

// matchFindings returns the receipt's findings as the runner saw them: each one derived in
// this run or listed by an earlier observation, with the same severity, and no derived finding
// left out.
func matchFindings(rc *observation.ReceiptFacts, derived, vouched map[string]observation.Finding) ([]observation.Finding, error) {
	inReceipt := map[string]string{}
	var listed []observation.Finding
	for _, f := range rc.Findings {
		if _, dup := inReceipt[f.ID]; dup {
			return nil, refused("the receipt lists finding %s twice", bounded(f.ID))
		}
		inReceipt[f.ID] = f.Severity
		switch d, ok := derived[f.ID]; {
		case ok && d.Severity == f.Severity:
			listed = append(listed, d)
		case ok:
			return nil, refused("the receipt gives finding %s severity %s, the runner derived %s", bounded(f.ID), bounded(f.Severity), d.Severity)
		default:
			v, ok := vouched[f.ID]
			if !ok || v.Severity != f.Severity {
				return nil, refused("the receipt lists finding %s (%s), which the runner did not derive in this run and no earlier observation of this subject lists",
					bounded(f.ID), bounded(f.Severity))
			}
			listed = append(listed, v)
		}
	}
	ids := make([]string, 0, len(derived))
	for id := range derived {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if _, ok := inReceipt[id]; !ok {
			return nil, refused("the receipt leaves out finding %s (%s) that the runner derived for lens %s", id, derived[id].Severity, bounded(derived[id].Lens))
		}
	}
	return listed, nil
}

// ownKey reports whether an observation is signed by this runner's witness key, current or
// retired.
func (s *Server) ownKey(p *observation.Parsed) bool {
	if p.SignedBy(s.pub) {
		return true
	}
	for _, k := range s.opts.PreviousWitnessKeys {
		if p.SignedBy(k) {
			return true
		}
	}
	return false
}

// grantBudget is the token grant of one call: every reservation within it is allowed.
type grantBudget struct {
	mu      sync.Mutex
	left    int
	spent   int
	refused string
}

func (g *grantBudget) Reserve(_ context.Context, n int) (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refused != "" {
		return false, g.refused
	}
	if n > g.left {
		return false, "the tokens the worker granted this call (" + strconv.Itoa(g.left+g.spent) + ") would be exceeded: the next request may use up to " + strconv.Itoa(n)
	}
	g.left -= n
	g.spent += n
	return true, ""
}

func (g *grantBudget) Settle(_ context.Context, reserved, used int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.left += reserved - used
	g.spent += used - reserved
}

func (g *grantBudget) used() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(g.spent, 0)
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func bounded(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	b, _ := json.Marshal(s)
	return string(bytes.Trim(b, `"`))
}
