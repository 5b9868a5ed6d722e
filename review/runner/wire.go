// Package runner is the runner of a split-role deployment: a process of its own that holds
// the witness key, runs the review runtimes (builtin, exec adapters, an OpenAI-compatible
// endpoint) on what a worker sends it, keeps its own record of every call, and signs a
// review-run observation only for a receipt whose declaration matches that record. The
// worker that composes and signs the receipt never holds the witness key.
//
// The protocol is JSON over HTTP/1.1 on a unix socket or TCP, every request and response
// authenticated with a shared token (see auth.go and docs/review-run.md):
//
//	GET  /v1/info     the runtimes the runner serves, its presets and its witness public key
//	POST /v1/calls    run one runtime call; the first call of a review opens a run
//	POST /v1/observe  sign the observation of a receipt against the run's record
package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/modelctx"
	"github.com/lensgate/lensgate/review/runtime"
)

// Bounds of the protocol.
const (
	// DefaultMaxRequestBytes bounds a request body the runner reads.
	DefaultMaxRequestBytes = 64 << 20
	// MaxHeaderBytes bounds a request's headers (the server's MaxHeaderBytes): the protocol's
	// are a few hundred bytes, and they are all an unauthenticated sender gets read.
	MaxHeaderBytes = 8 << 10
	// MaxResponseBytes bounds a response body the worker reads.
	MaxResponseBytes = 16 << 20
	maxLenses        = 64
	maxWorkFiles     = 10000
	maxFiles         = 20000
	maxPrior         = 4
	maxName          = 256
	maxRunID         = 64
)

// Paths of the protocol.
const (
	PathInfo    = "/v1/info"
	PathCalls   = "/v1/calls"
	PathObserve = "/v1/observe"
)

// Info is what GET /v1/info answers.
type Info struct {
	Version  string            `json:"version"`
	Runtimes []string          `json:"runtimes"`
	Presets  map[string]string `json:"presets"`
	// WitnessPublicKey is the hex Ed25519 public key the runner signs observations with.
	WitnessPublicKey string `json:"witnessPublicKey"`
}

// CallRequest is one runtime call a worker asks for.
type CallRequest struct {
	// Run is the run id the runner answered for an earlier call of the same review; "" opens
	// a run.
	Run     string `json:"run,omitempty"`
	Runtime string `json:"runtime"`
	// DiffDigest and PlanDigest are what the review declares before its first call; every
	// call of a run must declare the same.
	DiffDigest string            `json:"diffDigest"`
	PlanDigest string            `json:"planDigest,omitempty"`
	Blobs      map[string]string `json:"blobs,omitempty"`
	// Budget is the tokens the call may spend on models (absent: no cap); Refused is why the
	// worker could not grant any (every reservation is then refused with it).
	Budget  *int    `json:"budget,omitempty"`
	Refused string  `json:"refused,omitempty"`
	Request Request `json:"request"`
	// WorkDir holds the files of the worker's work directory, which the runner lays out in a
	// directory of its own for an exec adapter.
	WorkDir []WorkFile `json:"workDir,omitempty"`
}

// Request is a runtime.Request on the wire.
type Request struct {
	Kind       string              `json:"kind"`
	Lenses     []runtime.Lens      `json:"lenses"`
	Subject    runtime.Subject     `json:"subject"`
	Diff       []byte              `json:"diff,omitempty"`
	Files      []File              `json:"files,omitempty"`
	Changed    []runtime.Changed   `json:"changed,omitempty"`
	Settings   runtime.Settings    `json:"settings"`
	Delegation *runtime.Delegation `json:"delegation,omitempty"`
	Since      string              `json:"since,omitempty"`
	Chunk      int                 `json:"chunk,omitempty"`
	Chunks     int                 `json:"chunks,omitempty"`
	Context    *modelctx.Context   `json:"context,omitempty"`
}

// File is a diff.File on the wire.
type File struct {
	OldPath string `json:"oldPath,omitempty"`
	NewPath string `json:"newPath,omitempty"`
	Status  string `json:"status,omitempty"`
	Binary  bool   `json:"binary,omitempty"`
	Raw     []byte `json:"raw,omitempty"`
	Offset  int    `json:"offset,omitempty"`
	Lines   int    `json:"lines,omitempty"`
	Added   int    `json:"added,omitempty"`
	Deleted int    `json:"deleted,omitempty"`
}

// WorkFile is one file of a work directory: a clean relative path and its bytes.
type WorkFile struct {
	Path    string `json:"path"`
	Content []byte `json:"content"`
}

// CallResponse is the runner's answer to a call.
type CallResponse struct {
	Run    string          `json:"run"`
	Result *runtime.Result `json:"result,omitempty"`
	// Error is the runtime's operational failure ("" when it answered).
	Error string `json:"error,omitempty"`
	// TokensUsed is what the call's model requests cost, as the runner settled them.
	TokensUsed int `json:"tokensUsed"`
}

// ObserveRequest asks the runner to sign the observation of a receipt.
type ObserveRequest struct {
	Run string `json:"run"`
	// Receipt is the DSSE envelope the worker composed and signed.
	Receipt []byte `json:"receipt"`
	// Prior are observations this runner published beside earlier receipts of the same
	// subject: findings they list may stand in the receipt without being derived again.
	Prior [][]byte `json:"prior,omitempty"`
	// MaxBytes bounds the envelope (0: the format's limit).
	MaxBytes int `json:"maxBytes,omitempty"`
}

// ObserveResponse is the signed observation.
type ObserveResponse struct {
	Envelope []byte `json:"envelope"`
	Digest   string `json:"digest"`
}

// ErrorResponse is the body of every refused request.
type ErrorResponse struct {
	Error string `json:"error"`
}

// decodeStrict decodes exactly one JSON value with no unknown member.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// ParseCallRequest reads and validates a call request. Every failure is an error naming the
// rule; nothing panics.
func ParseCallRequest(data []byte) (*CallRequest, error) {
	var c CallRequest
	if err := decodeStrict(data, &c); err != nil {
		return nil, fmt.Errorf("call request: %w", err)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("call request: %w", err)
	}
	return &c, nil
}

func (c *CallRequest) validate() error {
	if len(c.Run) > maxRunID || !printable(c.Run) {
		return errors.New("run: not a run id")
	}
	if c.Runtime == "" || len(c.Runtime) > 64 || !printable(c.Runtime) {
		return errors.New("runtime: want a runtime name")
	}
	if !isHex64(c.DiffDigest) {
		return errors.New("diffDigest: want 64 lowercase hex characters")
	}
	if len(c.PlanDigest) > maxName || !printable(c.PlanDigest) {
		return errors.New("planDigest: not a digest")
	}
	if c.Budget != nil && *c.Budget < 0 {
		return errors.New("budget: must not be negative")
	}
	if len(c.Refused) > 1000 || !utf8.ValidString(c.Refused) {
		return errors.New("refused: too long or not UTF-8")
	}
	r := &c.Request
	if r.Kind != runtime.KindReview && r.Kind != runtime.KindTriage {
		return fmt.Errorf("request.kind: want %s or %s", runtime.KindReview, runtime.KindTriage)
	}
	if len(r.Lenses) > maxLenses {
		return fmt.Errorf("request.lenses: more than %d", maxLenses)
	}
	for i, l := range r.Lenses {
		if l.Name == "" || len(l.Name) > maxName || !printable(l.Name) {
			return fmt.Errorf("request.lenses[%d].name: want a lens name", i)
		}
	}
	if len(r.Files) > maxFiles || len(r.Changed) > maxFiles || len(c.Blobs) > maxFiles {
		return fmt.Errorf("request: more than %d files", maxFiles)
	}
	if r.Chunk < 0 || r.Chunks < 0 || r.Chunk > r.Chunks {
		return errors.New("request.chunk: not a part of the change")
	}
	if len(c.WorkDir) > maxWorkFiles {
		return fmt.Errorf("workDir: more than %d files", maxWorkFiles)
	}
	seen := map[string]bool{}
	for i, f := range c.WorkDir {
		if !cleanRelative(f.Path) {
			return fmt.Errorf("workDir[%d].path: want a clean relative path", i)
		}
		if seen[f.Path] {
			return fmt.Errorf("workDir[%d].path: repeated", i)
		}
		seen[f.Path] = true
	}
	for p := range seen {
		// A file cannot also be a directory of another file.
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if seen[d] {
				return fmt.Errorf("workDir: %q is both a file and a directory", d)
			}
		}
	}
	return nil
}

// ParseObserveRequest reads and validates an observe request.
func ParseObserveRequest(data []byte) (*ObserveRequest, error) {
	var o ObserveRequest
	if err := decodeStrict(data, &o); err != nil {
		return nil, fmt.Errorf("observe request: %w", err)
	}
	switch {
	case o.Run == "" || len(o.Run) > maxRunID || !printable(o.Run):
		return nil, errors.New("observe request: run: want a run id")
	case len(o.Receipt) == 0:
		return nil, errors.New("observe request: receipt: empty")
	case len(o.Prior) > maxPrior:
		return nil, fmt.Errorf("observe request: prior: more than %d", maxPrior)
	case o.MaxBytes < 0:
		return nil, errors.New("observe request: maxBytes: must not be negative")
	}
	return &o, nil
}

// runtimeRequest turns the wire request into the runtime's.
func (r *Request) runtimeRequest() *runtime.Request {
	req := &runtime.Request{
		Kind: r.Kind, Lenses: r.Lenses, Subject: r.Subject, Diff: r.Diff, Changed: r.Changed, Settings: r.Settings,
		Delegation: r.Delegation, Since: r.Since, Chunk: r.Chunk, Chunks: r.Chunks, Context: r.Context,
	}
	for _, f := range r.Files {
		req.Files = append(req.Files, diff.File{OldPath: f.OldPath, NewPath: f.NewPath, Status: f.Status, Binary: f.Binary,
			Raw: f.Raw, Offset: f.Offset, Lines: f.Lines, Added: f.Added, Deleted: f.Deleted})
	}
	return req
}

// wireRequest is the wire form of a runtime request (without its work directory and budget).
func wireRequest(req *runtime.Request) Request {
	r := Request{
		Kind: req.Kind, Lenses: req.Lenses, Subject: req.Subject, Diff: req.Diff, Changed: req.Changed, Settings: req.Settings,
		Delegation: req.Delegation, Since: req.Since, Chunk: req.Chunk, Chunks: req.Chunks, Context: req.Context,
	}
	for _, f := range req.Files {
		r.Files = append(r.Files, File{OldPath: f.OldPath, NewPath: f.NewPath, Status: f.Status, Binary: f.Binary,
			Raw: f.Raw, Offset: f.Offset, Lines: f.Lines, Added: f.Added, Deleted: f.Deleted})
	}
	return r
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// cleanRelative reports whether p is a clean relative slash path inside its root.
func cleanRelative(p string) bool {
	return p != "" && len(p) <= 1024 && printable(p) && !strings.HasPrefix(p, "/") && !strings.Contains(p, "\\") &&
		path.Clean(p) == p && p != "." && p != ".." && !strings.HasPrefix(p, "../")
}
