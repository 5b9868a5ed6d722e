package runner

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review/runtime"
)

// DefaultGrant is the tokens a call may spend when the review has no per-review cap.
const DefaultGrant = 200000

// expectContinue is how long the worker waits for the runner's go-ahead (or refusal) before
// it sends a body anyway.
const expectContinue = 5 * time.Second

// Client is a worker's connection to its runner.
type Client struct {
	base  string
	hc    *http.Client
	token []byte
	// pub is the runner's witness public key once Info has been read, or as pinned.
	mu  sync.Mutex
	pub ed25519.PublicKey
	// maxRequest bounds what the worker sends (the runner's own limit is the one that counts).
	maxRequest int64
}

// NewClient returns a client of the runner at addr: "unix:///path/to/runner.sock" or
// "http://host:port". pinned, when set, is the witness public key the runner must have.
func NewClient(addr string, token []byte, pinned ed25519.PublicKey) (*Client, error) {
	if len(token) < MinTokenBytes {
		return nil, fmt.Errorf("runner: the token must have at least %d bytes", MinTokenBytes)
	}
	c := &Client{token: token, pub: pinned, maxRequest: DefaultMaxRequestBytes}
	switch {
	case strings.HasPrefix(addr, "unix://"):
		sock := strings.TrimPrefix(addr, "unix://")
		if !filepath.IsAbs(sock) {
			return nil, fmt.Errorf("runner url %q: want unix:///absolute/path.sock", addr)
		}
		c.base = "http://runner"
		c.hc = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
			MaxIdleConns: 8, IdleConnTimeout: 90 * time.Second, ExpectContinueTimeout: expectContinue,
		}}
	default:
		u, err := url.Parse(addr)
		if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("runner url %q: want unix:///path.sock or http://host:port", addr)
		}
		c.base = "http://" + u.Host
		c.hc = &http.Client{Transport: &http.Transport{MaxIdleConns: 8, IdleConnTimeout: 90 * time.Second, ExpectContinueTimeout: expectContinue}}
	}
	return c, nil
}

// post sends an authenticated request and checks that the answer is authenticated too.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("runner: encode the request: %w", err)
		}
		if int64(len(body)) > c.maxRequest {
			return fmt.Errorf("runner: the request has %d bytes, more than the %d the runner takes", len(body), c.maxRequest)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	date, nonce := strconv.FormatInt(time.Now().Unix(), 10), newNonce()
	req.Header.Set(HeaderDate, date)
	req.Header.Set(HeaderNonce, nonce)
	digest := bodyDigest(body)
	req.Header.Set(HeaderDigest, digest)
	req.Header.Set(HeaderMAC, requestMAC(c.token, method, path, date, nonce, int64(len(body)), digest))
	req.Header.Set("Content-Type", "application/json")
	if len(body) > 0 {
		// The runner authenticates from the headers: a refusal (a wrong token, a request over
		// its max_request_bytes) comes before the body is sent, as an answer instead of a
		// broken pipe.
		req.Header.Set("Expect", "100-continue")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("runner unreachable: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("runner: read the answer: %w", err)
	}
	if len(data) > MaxResponseBytes {
		return fmt.Errorf("runner: the answer exceeds %d bytes", MaxResponseBytes)
	}
	if !hmac.Equal([]byte(resp.Header.Get(HeaderMAC)), []byte(responseMAC(c.token, nonce, resp.StatusCode, data))) {
		return fmt.Errorf("runner: the answer (HTTP %d) is not authenticated with the shared token: another process, or another token", resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorResponse
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("runner refused (HTTP %d): %s", resp.StatusCode, e.Error)
		}
		return fmt.Errorf("runner refused (HTTP %d)", resp.StatusCode)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("runner: decode the answer: %w", err)
	}
	return nil
}

// Info reads what the runner serves. A witness key pinned in NewClient must be the runner's.
func (c *Client) Info(ctx context.Context) (*Info, error) {
	var info Info
	if err := c.do(ctx, http.MethodGet, PathInfo, nil, &info); err != nil {
		return nil, err
	}
	b, err := hex.DecodeString(info.WitnessPublicKey)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("runner: its witness public key is malformed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pub != nil && !c.pub.Equal(ed25519.PublicKey(b)) {
		return nil, errors.New("runner: its witness public key is not the pinned runner.witness_public_key")
	}
	c.pub = ed25519.PublicKey(b)
	return &info, nil
}

// WitnessPublicKey is the runner's witness key (nil before Info, unless pinned).
func (c *Client) WitnessPublicKey() ed25519.PublicKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pub
}

// Registry reads the runner's runtimes and presets and returns a registry whose runtimes
// send every call to the runner.
func (c *Client) Registry(ctx context.Context) (*runtime.Registry, *Info, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return nil, nil, err
	}
	var rts []runtime.Runtime
	for _, n := range info.Runtimes {
		rts = append(rts, &Remote{c: c, name: n})
	}
	reg := runtime.NewRegistry(rts...)
	for p, rt := range info.Presets {
		if err := reg.AddPreset(p, rt); err != nil {
			return nil, nil, fmt.Errorf("runner: %w", err)
		}
	}
	return reg, info, nil
}

// Remote is a runtime that the runner runs.
type Remote struct {
	c    *Client
	name string
}

// Name implements runtime.Runtime.
func (r *Remote) Name() string { return r.name }

type runKey struct{}

// Review implements runtime.Runtime: it sends the call to the runner within the review's run.
func (r *Remote) Review(ctx context.Context, req *runtime.Request) (*runtime.Result, error) {
	sess := runtime.SessionFrom(ctx)
	if sess == nil {
		sess = &runtime.Session{DiffDigest: digest.SHA256Hex(req.Diff)}
	}
	rn := sess.Value(runKey{}, func() any { return &Run{c: r.c, turn: make(chan struct{}, 1)} }).(*Run)
	return rn.call(ctx, r.name, req, sess)
}

// Run is the worker's side of one review's run on the runner.
type Run struct {
	c *Client
	// turn makes the review's calls one at a time: the first opens the run the others are
	// recorded in, and each is granted what is left of the review's token budget.
	turn chan struct{}
	mu   sync.Mutex
	id   string
}

// RunOf returns the run a review's calls opened on the runner, or nil when none was sent.
func RunOf(sess *runtime.Session) *Run {
	rn, _ := sess.Lookup(runKey{}).(*Run)
	return rn
}

func (rn *Run) call(ctx context.Context, name string, req *runtime.Request, sess *runtime.Session) (*runtime.Result, error) {
	select {
	case rn.turn <- struct{}{}:
		defer func() { <-rn.turn }()
	case <-ctx.Done():
		return nil, fmt.Errorf("runner: waiting for the review's earlier call: %w", ctx.Err())
	}
	rn.mu.Lock()
	id := rn.id
	rn.mu.Unlock()
	cr := &CallRequest{Run: id, Runtime: name, DiffDigest: sess.DiffDigest, PlanDigest: sess.PlanDigest, Request: wireRequest(req)}
	if len(sess.Blobs) > 0 {
		cr.Blobs = map[string]string{}
		for _, f := range req.Files {
			if b, ok := sess.Blobs[f.Path()]; ok {
				cr.Blobs[f.Path()] = b
			}
		}
	}
	if req.WorkDir != "" {
		files, err := readWorkDir(req.WorkDir, rn.c.maxRequest)
		if err != nil {
			return nil, err
		}
		cr.WorkDir = files
	}
	grant := -1
	if req.Budget != nil {
		grant = DefaultGrant
		if rem, ok := req.Budget.(runtime.Remaining); ok && rem.Remaining() >= 0 {
			grant = rem.Remaining()
		}
		if ok, cause := req.Budget.Reserve(ctx, grant); !ok {
			cr.Refused, grant = cause, 0
		}
		g := grant
		cr.Budget = &g
	}
	var resp CallResponse
	err := rn.c.do(ctx, http.MethodPost, PathCalls, cr, &resp)
	if grant > 0 {
		used := grant // an unanswered call stays counted at its grant
		if err == nil {
			used = min(resp.TokensUsed, grant)
		}
		req.Budget.Settle(ctx, grant, used)
	}
	if err != nil {
		return nil, err
	}
	rn.mu.Lock()
	if rn.id == "" {
		rn.id = resp.Run
	}
	same := rn.id == resp.Run
	rn.mu.Unlock()
	if !same {
		return nil, errors.New("runner: the call was recorded in another run")
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	if resp.Result == nil {
		return nil, errors.New("runner: the answer holds no result")
	}
	return resp.Result, nil
}

// Observe asks the runner to sign the observation of a receipt composed from this run's
// results. prior are observations published beside earlier receipts of the same subject.
func (rn *Run) Observe(ctx context.Context, receipt []byte, prior [][]byte, maxBytes int) (*observation.Signed, error) {
	rn.mu.Lock()
	id := rn.id
	rn.mu.Unlock()
	if id == "" {
		return nil, errors.New("no runtime call of this review reached the runner, so it observed nothing")
	}
	var resp ObserveResponse
	if err := rn.c.do(ctx, http.MethodPost, PathObserve, &ObserveRequest{Run: id, Receipt: receipt, Prior: prior, MaxBytes: maxBytes}, &resp); err != nil {
		return nil, err
	}
	p, err := observation.Parse(resp.Envelope)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if pub := rn.c.WitnessPublicKey(); pub == nil || !p.SignedBy(pub) {
		return nil, errors.New("runner: the observation is not signed with the runner's witness key")
	}
	return &observation.Signed{Envelope: resp.Envelope, Digest: p.Digest}, nil
}

// readWorkDir reads the regular files of a work directory, within max bytes in all.
func readWorkDir(root string, max int64) ([]WorkFile, error) {
	var out []WorkFile
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", d.Name())
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += int64(len(b))
		if total > max || len(out) >= maxWorkFiles {
			return fmt.Errorf("the work directory exceeds what the runner takes (%d bytes, %d files)", max, maxWorkFiles)
		}
		out = append(out, WorkFile{Path: filepath.ToSlash(rel), Content: b})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("runner: work directory: %w", err)
	}
	return out, nil
}
