// Package observation is lensgate's review-run statement: what the runner itself saw while it
// ran each lens (which runtime, which executable or endpoint, when, which exact bytes went out
// and came back, which findings it derived), signed with a witness key that is not the receipt
// key, and bound to the agent-review receipt it accompanies. The receipt stays a signed
// self-declaration; the observation is a second, separately verifiable statement beside it.
//
// The format is specified in docs/review-run.md. The package needs nothing of lensgate but the
// strict JSON and DSSE layers, so another program can verify an observation without the App.
package observation

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/disclosure/severity"
	"github.com/lensgate/lensgate/internal/digest"
)

// Wire constants.
const (
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType names this format and its version; a reader refuses any other.
	PredicateType = "https://github.com/lensgate/lensgate/predicates/review-run/v0.1"
	SchemaVersion = "0.1.0"
	// PredicateTypeV02 is v0.2: v0.1 plus the interpreter of an exec runtime, and an exec
	// call's request is the digest of the work manifest (the literal files handed over). A
	// statement is written as v0.2 when it has an exec call, so every other stays v0.1.
	PredicateTypeV02 = "https://github.com/lensgate/lensgate/predicates/review-run/v0.2"
	SchemaVersionV02 = "0.2.0"
	// TimeLayout is the only accepted time form: UTC, nanoseconds, always nine digits.
	TimeLayout = "2006-01-02T15:04:05.000000000Z"
)

// Runtime kinds.
const (
	KindBuiltin = "builtin"
	KindExec    = "exec"
	KindOpenAI  = "openai"
	KindOther   = "other"
)

// Bounds of a statement. A reader refuses anything larger; a producer keeps within them.
const (
	MaxEnvelopeBytes = 256 << 10
	MaxCalls         = 64
	MaxLensesPerCall = 64
	MaxExchanges     = 32
	MaxFindings      = 2000
	MaxStringBytes   = 1024
	MaxErrorBytes    = 500
)

// Statement is one observation: the subject of the receipt beside it, the bindings, and one
// entry per runtime call.
type Statement struct {
	// SubjectName and SubjectDigest repeat the agent-review receipt's subject exactly.
	SubjectName   string
	SubjectDigest string
	Runner        Runner
	// ReceiptDigest is the SHA-256 of the receipt's decoded payload (its canonical bytes).
	ReceiptDigest      string
	PlanDigest         string // "" when the review had no plan digest
	ReviewedDiffDigest string
	// Started and Finished bound the whole review on the runner's clock.
	Started, Finished time.Time
	// started and finished are their text in a parsed statement, which is exactly
	// formatTime's, kept so that a report does not format them again.
	started, finished string
	Calls             []Call
	// Findings are the findings the runner derived from the observed responses, listed up to
	// the bound; FindingsTotal counts all of them and FindingsRoot covers all of them.
	Findings      []Finding
	FindingsTotal int
	FindingsRoot  string
}

// Runner names the program that observed.
type Runner struct {
	ID      string
	Version string
}

// Call is one runtime call: the lenses it answered, the runtime's identity as the runner
// established it, the runner's clock around it, and what passed.
type Call struct {
	Lenses            []string
	Runtime           Runtime
	Started, Finished time.Time
	started, finished string // their text in a parsed statement
	Exchanges         []Exchange
	// ReviewDigest is the SHA-256 of the RFC 8785 form of the parsed review ("" when the call
	// failed before a review could be parsed).
	ReviewDigest string
	Files        Files
	Tokens       *Tokens
	Outcomes     []Outcome
	// Error is the operational cause when the call failed.
	Error string
}

// Runtime is a runtime's identity. Which members are required depends on Kind.
type Runtime struct {
	Kind string
	Name string
	// Version is lensgate's version (builtin).
	Version string
	// ExecutableSHA256 is the digest of the running binary (builtin) or of the adapter file as
	// it was started (exec).
	ExecutableSHA256 string
	// ExitStatus is the adapter's exit status (exec), nil when it never exited on its own.
	ExitStatus *int
	// EndpointHost, ModelRequested and ModelResponded describe an OpenAI-compatible call.
	EndpointHost   string
	ModelRequested string
	ModelResponded string
	// InterpreterPath and InterpreterSHA256 name the program an exec adapter's "#!" line
	// starts, as resolved and hashed right before the start (v0.2; empty for a binary).
	InterpreterPath   string
	InterpreterSHA256 string
}

// Exchange is one request sent and the response received, by digest.
type Exchange struct {
	Request  Blob
	Response *Blob // nil when no response arrived
	// Status is the HTTP status (0 when the exchange was not HTTP).
	Status int
}

// Blob is the digest and length of exact bytes.
type Blob struct {
	SHA256 string
	Size   int64
}

// Files describes the files given to the lenses of a call.
type Files struct {
	Digest string
	Count  int
}

// Tokens are the token counts a model endpoint reported for the call.
type Tokens struct {
	Input  int64
	Output int64
}

// Outcome is the closed outcome the pipeline derived for one lens.
type Outcome struct {
	Lens    string
	Outcome string // passed, failed or pending
}

// Finding is one derived finding, by id.
type Finding struct {
	ID       string
	Lens     string
	Severity string
}

// Signer signs observations with the witness key.
type Signer struct {
	Key   ed25519.PrivateKey
	KeyID string
}

// Signed is a signed observation.
type Signed struct {
	Envelope []byte // DSSE envelope JSON, 2-space indent, trailing LF
	// Digest is the SHA-256 of the decoded payload: what a comment or a page shows.
	Digest string
}

// FindingsRoot is the root over findings: the SHA-256 of the RFC 8785 form of the array of
// {"id","severity"} objects sorted by id, then severity. The empty list has a root too.
func FindingsRoot(fs []Finding) string {
	type pair struct{ id, sev string }
	ps := make([]pair, len(fs))
	for i, f := range fs {
		ps[i] = pair{f.ID, f.Severity}
	}
	slices.SortFunc(ps, func(a, b pair) int {
		if c := jcs.CompareKeys(a.id, b.id); c != 0 {
			return c
		}
		return jcs.CompareKeys(a.sev, b.sev)
	})
	// Each element is the two-member object written in RFC 8785 form directly ("id" sorts
	// before "severity"), which is what jcs.Canonical makes of it without a map per finding.
	b := make([]byte, 0, 2+len(ps)*48)
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jcs.AppendString(b, p.id)
		b = append(b, `,"severity":`...)
		b = jcs.AppendString(b, p.sev)
		b = append(b, '}')
	}
	b = append(b, ']')
	return digest.SHA256Hex(b)
}

// FilesDigest is the digest of the files given to a lens: the SHA-256 of the RFC 8785 form of
// the array of {"path","blob"} objects sorted by path. blob is the file's git blob SHA at the
// head, or "sha256:" and the digest of the file's diff section when no blob SHA is known.
func FilesDigest(entries map[string]string) string {
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return jcs.CompareKeys(paths[i], paths[j]) < 0 })
	arr := make([]any, len(paths))
	for i, p := range paths {
		arr[i] = map[string]any{"path": p, "blob": entries[p]}
	}
	b, _ := jcs.Canonical(arr)
	return digest.SHA256Hex(b)
}

// Tree returns the in-toto statement as a JSON tree. It checks the statement first, so a
// producer cannot sign what a reader would refuse.
func (s *Statement) Tree() (map[string]any, error) {
	st, _, err := s.canonical()
	return st, err
}

// canonical returns the statement as a JSON tree and in its RFC 8785 form, once the reader
// has accepted that form.
func (s *Statement) canonical() (map[string]any, []byte, error) {
	calls := make([]any, 0, len(s.Calls))
	for _, c := range s.Calls {
		calls = append(calls, c.tree())
	}
	findings := make([]any, 0, len(s.Findings))
	for _, f := range s.Findings {
		findings = append(findings, map[string]any{"id": f.ID, "lens": f.Lens, "severity": f.Severity})
	}
	bind := map[string]any{
		"receipt":            digestRef(s.ReceiptDigest),
		"reviewedDiffDigest": s.ReviewedDiffDigest,
	}
	if s.PlanDigest != "" {
		bind["plan"] = digestRef(s.PlanDigest)
	}
	// An exec call's request is the work manifest and may name an interpreter: v0.2.
	ptype, schema := PredicateType, SchemaVersion
	for _, c := range s.Calls {
		if c.Runtime.Kind == KindExec {
			ptype, schema = PredicateTypeV02, SchemaVersionV02
		}
	}
	pred := map[string]any{
		"schemaVersion": schema,
		"runner":        map[string]any{"id": s.Runner.ID, "version": s.Runner.Version},
		"binds":         bind,
		"window":        map[string]any{"started": formatTime(s.Started), "finished": formatTime(s.Finished)},
		"calls":         calls,
		"findings": map[string]any{
			"listed": findings, "total": num(int64(s.FindingsTotal)), "root": s.FindingsRoot,
		},
	}
	st := map[string]any{
		"_type":         StatementType,
		"predicateType": ptype,
		"subject": []any{map[string]any{
			"name": s.SubjectName, "digest": map[string]any{"sha256": s.SubjectDigest},
		}},
		"predicate": pred,
	}
	payload, err := jcs.Canonical(st)
	if err != nil {
		return nil, nil, fmt.Errorf("observation: %w", err)
	}
	if _, err := parseStatementOf(payload); err != nil {
		return nil, nil, err
	}
	return st, payload, nil
}

func (c *Call) tree() map[string]any {
	rt := map[string]any{"kind": c.Runtime.Kind, "name": c.Runtime.Name}
	setIf(rt, "version", c.Runtime.Version)
	setIf(rt, "executableSha256", c.Runtime.ExecutableSHA256)
	setIf(rt, "endpointHost", c.Runtime.EndpointHost)
	setIf(rt, "modelRequested", c.Runtime.ModelRequested)
	setIf(rt, "modelResponded", c.Runtime.ModelResponded)
	if c.Runtime.ExitStatus != nil {
		rt["exitStatus"] = num(int64(*c.Runtime.ExitStatus))
	}
	if c.Runtime.InterpreterSHA256 != "" {
		rt["interpreter"] = map[string]any{"path": c.Runtime.InterpreterPath, "sha256": c.Runtime.InterpreterSHA256}
	}
	ex := make([]any, 0, len(c.Exchanges))
	for _, e := range c.Exchanges {
		m := map[string]any{"request": e.Request.tree()}
		if e.Response != nil {
			m["response"] = e.Response.tree()
		}
		if e.Status != 0 {
			m["status"] = num(int64(e.Status))
		}
		ex = append(ex, m)
	}
	lenses := make([]any, len(c.Lenses))
	for i, l := range c.Lenses {
		lenses[i] = l
	}
	outs := make([]any, 0, len(c.Outcomes))
	for _, o := range c.Outcomes {
		outs = append(outs, map[string]any{"lens": o.Lens, "outcome": o.Outcome})
	}
	m := map[string]any{
		"lenses":    lenses,
		"runtime":   rt,
		"started":   formatTime(c.Started),
		"finished":  formatTime(c.Finished),
		"exchanges": ex,
		"files":     map[string]any{"digest": c.Files.Digest, "count": num(int64(c.Files.Count))},
		"outcomes":  outs,
	}
	setIf(m, "reviewDigest", c.ReviewDigest)
	setIf(m, "error", c.Error)
	if c.Tokens != nil {
		m["tokens"] = map[string]any{"input": num(c.Tokens.Input), "output": num(c.Tokens.Output)}
	}
	return m
}

func (b Blob) tree() map[string]any {
	return map[string]any{"sha256": b.SHA256, "size": num(b.Size)}
}

// Sign canonicalises the statement (RFC 8785) and signs it in a DSSE envelope.
func Sign(s *Statement, signer Signer) (*Signed, error) {
	if len(signer.Key) != ed25519.PrivateKeySize {
		return nil, errors.New("observation: no witness key")
	}
	_, payload, err := s.canonical()
	if err != nil {
		return nil, err
	}
	keyID := signer.KeyID
	if keyID == "" {
		keyID = dsse.KeyID(signer.Key.Public().(ed25519.PublicKey))
	}
	env, err := dsse.Sign(dsse.PayloadType, payload, signer.Key, keyID)
	if err != nil {
		return nil, fmt.Errorf("observation: %w", err)
	}
	if len(env) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("observation: envelope of %d bytes exceeds %d; bound the findings first", len(env), MaxEnvelopeBytes)
	}
	sum := sha256.Sum256(payload)
	return &Signed{Envelope: env, Digest: hex.EncodeToString(sum[:])}, nil
}

// Bound keeps the statement's signed envelope within maxBytes by listing fewer findings (the
// most severe first); FindingsTotal and FindingsRoot still cover all of them. It returns how
// many findings are no longer listed.
func (s *Statement) Bound(maxBytes int) (int, error) {
	sortBySeverity(s.Findings)
	all := len(s.Findings)
	for {
		_, payload, err := s.canonical()
		if err != nil {
			return 0, err
		}
		// base64 and the envelope's frame (signature, keyid, indentation).
		size := (len(payload)+2)/3*4 + 300
		if size <= maxBytes || len(s.Findings) == 0 {
			return all - len(s.Findings), nil
		}
		keep := len(s.Findings) * maxBytes / size
		if keep >= len(s.Findings) {
			keep = len(s.Findings) - 1
		}
		s.Findings = s.Findings[:keep]
	}
}

func sortBySeverity(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool { return severity.Rank(fs[i].Severity) > severity.Rank(fs[j].Severity) })
}

func digestRef(hex string) map[string]any { return map[string]any{"sha256": hex} }

func num(n int64) jcs.Number { return jcs.Number(strconv.FormatInt(n, 10)) }

func setIf(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func formatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }
