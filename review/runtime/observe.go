package runtime

import (
	"context"
	"sync"

	"github.com/lensgate/lensgate/internal/digest"
)

// Runtime kinds, as a review-run observation names them.
const (
	IdentityBuiltin = "builtin"
	IdentityExec    = "exec"
	IdentityOpenAI  = "openai"
	IdentityOther   = "other"
)

// Identity is what a runtime is, as far as lensgate can tell without asking the model.
type Identity struct {
	Kind string
	// Version is the lensgate version of an in-process runtime.
	Version string
	// EndpointHost is the host of an HTTP endpoint.
	EndpointHost string
}

// Identified is implemented by a runtime that can say what kind it is. A runtime that does not
// is observed as kind "other" under its name.
type Identified interface {
	Identity() Identity
}

// Recorder collects what lensgate's own code saw during one runtime call: the exact bytes its
// HTTP client sent and received, the bytes of an adapter's output file, the digest of the
// adapter file it started and how that exited. The pipeline creates one recorder per call,
// puts it in the call's context and reads it afterwards; a runtime only feeds it from the
// points where bytes cross lensgate's boundary, so what a model or an adapter says about
// itself never reaches it. A nil *Recorder ignores everything.
type Recorder struct {
	mu         sync.Mutex
	exchanges  []Exchange
	request    *Digest
	output     *Digest
	executable string
	interp     [2]string // path, sha256
	exit       *int
	requested  string
	responded  string
	tokens     *Tokens
}

// Digest is the SHA-256 and the length of exact bytes.
type Digest struct {
	SHA256 string
	Size   int64
}

// Exchange is one HTTP request body sent and the response body received.
type Exchange struct {
	Request  Digest
	Response *Digest // nil when no response arrived
	Status   int
}

// Observed is a snapshot of a recorder.
type Observed struct {
	Exchanges []Exchange
	// Request is the digest of what a runtime without a wire of its own was handed, when it
	// recorded it (an adapter's work manifest).
	Request          *Digest
	Output           *Digest
	ExecutableSHA256 string
	// InterpreterPath and InterpreterSHA256 name the program a "#!" line starts.
	InterpreterPath   string
	InterpreterSHA256 string
	ExitStatus        *int
	ModelRequested    string
	ModelResponded    string
	// Tokens are the counts the endpoint reported in the response bodies (never an estimate).
	Tokens *Tokens
}

// DigestOf is the digest of b.
func DigestOf(b []byte) Digest {
	return Digest{SHA256: digest.SHA256Hex(b), Size: int64(len(b))}
}

type recorderKey struct{}

// WithRecorder returns a context that carries rec to the runtime.
func WithRecorder(ctx context.Context, rec *Recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, rec)
}

// RecorderFrom returns the recorder of a call, or nil.
func RecorderFrom(ctx context.Context) *Recorder {
	rec, _ := ctx.Value(recorderKey{}).(*Recorder)
	return rec
}

// HTTP records one exchange: the request body as sent, the response body as received (nil
// when none arrived) and the HTTP status.
func (r *Recorder) HTTP(request, response []byte, gotResponse bool, status int) {
	if r == nil {
		return
	}
	e := Exchange{Request: DigestOf(request), Status: status}
	if gotResponse {
		d := DigestOf(response)
		e.Response = &d
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exchanges = append(r.exchanges, e)
}

// Request records the bytes that stand for what a runtime without a wire was handed.
func (r *Recorder) Request(b []byte) {
	if r == nil {
		return
	}
	d := DigestOf(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.request = &d
}

// Output records the bytes of an adapter's output file as read.
func (r *Recorder) Output(b []byte) {
	if r == nil {
		return
	}
	d := DigestOf(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.output = &d
}

// Executable records the digest of the file about to be started.
func (r *Recorder) Executable(sha256Hex string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.executable = sha256Hex
}

// Interpreter records the program a script's "#!" line starts, resolved, and its digest.
func (r *Recorder) Interpreter(path, sha256Hex string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.interp = [2]string{path, sha256Hex}
}

// Exit records the exit status of a process that exited on its own.
func (r *Recorder) Exit(code int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exit = &code
}

// Models records the model named in a request sent and in the response received ("" leaves
// a value unchanged).
func (r *Recorder) Models(requested, responded string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if requested != "" {
		r.requested = requested
	}
	if responded != "" {
		r.responded = responded
	}
}

// Tokens adds the token counts one response body reported.
func (r *Recorder) Tokens(u Tokens) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tokens == nil {
		r.tokens = &Tokens{}
	}
	*r.tokens = r.tokens.Add(u)
}

// Merge adds the exchanges, model names and tokens another recorder saw, after what r holds
// (the digests of an adapter are not merged): a runtime that makes calls at once
// records each in a recorder of its own and merges them in a fixed order, so the exchanges are
// listed in the same order whichever call answered first.
func (r *Recorder) Merge(o Observed) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exchanges = append(r.exchanges, o.Exchanges...)
	if o.ModelRequested != "" {
		r.requested = o.ModelRequested
	}
	if o.ModelResponded != "" {
		r.responded = o.ModelResponded
	}
	if o.Tokens != nil {
		if r.tokens == nil {
			r.tokens = &Tokens{}
		}
		*r.tokens = r.tokens.Add(*o.Tokens)
	}
}

// Snapshot returns what was recorded so far.
func (r *Recorder) Snapshot() Observed {
	if r == nil {
		return Observed{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	o := Observed{
		Exchanges: append([]Exchange(nil), r.exchanges...), ExecutableSHA256: r.executable,
		InterpreterPath: r.interp[0], InterpreterSHA256: r.interp[1],
		ModelRequested: r.requested, ModelResponded: r.responded,
	}
	if r.output != nil {
		d := *r.output
		o.Output = &d
	}
	if r.request != nil {
		d := *r.request
		o.Request = &d
	}
	if r.exit != nil {
		e := *r.exit
		o.ExitStatus = &e
	}
	if r.tokens != nil {
		t := *r.tokens
		o.Tokens = &t
	}
	return o
}
