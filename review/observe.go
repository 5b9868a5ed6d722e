package review

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

var reHex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Observed is what the pipeline itself saw while it reviewed: its own clock around the whole
// review and around every runtime call, and per call the runtime's identity and the digests of
// the bytes that crossed lensgate's boundary. A runtime never writes it.
type Observed struct {
	Started, Finished time.Time
	Calls             []observation.Call
}

// selfDigest hashes the running binary once per pipeline: the builtin runtime's identity.
type selfDigest struct {
	once sync.Once
	sum  string
}

func (s *selfDigest) get() string {
	s.once.Do(func() {
		path, err := os.Executable()
		if err != nil {
			return
		}
		f, err := os.Open(path)
		if err != nil {
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err == nil {
			s.sum = hex.EncodeToString(h.Sum(nil))
		}
	})
	return s.sum
}

// requestDocument is the canonical form of what a runtime call is given, as the pipeline built
// it: the lenses with the digests of their instructions, the diff and the files. It stands as
// the request bytes of runtimes that have no wire of their own (builtin, adapters).
func requestDocument(req *runtime.Request, filesDigest string) []byte {
	lenses := make([]any, 0, len(req.Lenses))
	for _, l := range req.Lenses {
		lenses = append(lenses, map[string]any{
			"name": clean(l.Name), "preset": clean(l.Preset), "instructionSha256": digest.SHA256Hex([]byte(l.Instruction)),
		})
	}
	doc := map[string]any{
		"kind": req.Kind, "lenses": lenses, "diffSha256": digest.SHA256Hex(req.Diff), "files": filesDigest,
		"headSha": clean(req.Subject.HeadSHA), "baseSha": clean(req.Subject.BaseSHA), "model": clean(req.Settings.Model),
	}
	b, _ := jcs.Canonical(doc) // strings and arrays only
	return b
}

// reviewDocument is the canonical form of a parsed review: every lens report with its verdict
// and findings as the runtime returned them, before the pipeline bounds or maps them.
func reviewDocument(res *runtime.Result) []byte {
	lenses := make([]any, 0, len(res.Lenses))
	for _, l := range res.Lenses {
		fs := make([]any, 0, len(l.Findings))
		for _, f := range l.Findings {
			fs = append(fs, map[string]any{
				"rule": clean(f.Rule), "severity": clean(f.Severity), "path": clean(f.Path), "line": int64(f.Line),
				"title": clean(f.Title), "message": clean(f.Message), "key": clean(f.Key),
			})
		}
		lenses = append(lenses, map[string]any{
			"lens": clean(l.Lens), "verdict": clean(l.Verdict), "summary": clean(l.Summary), "cause": clean(l.Cause), "findings": fs,
		})
	}
	b, err := jcs.Canonical(map[string]any{"model": clean(res.Model), "lenses": lenses})
	if err != nil {
		// Only an out-of-range line number can fail; say so rather than hash nothing.
		b = []byte(fmt.Sprintf("unrepresentable review: %v", err))
	}
	return b
}

// clean makes a runtime-supplied string representable in canonical JSON.
func clean(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// field is a string member of the observation: clean, without NUL and within the format's
// bound, so that an odd model name or cause cannot make the statement unsignable.
func field(s string, max int) string {
	return boundText(strings.ReplaceAll(s, "\x00", ""), max-4)
}

// filesGiven is the files digest of one call: each file's path with its git blob SHA at the
// head when the forge reported one, else the digest of its diff section.
func filesGiven(files []diff.File, blobs map[string]string) observation.Files {
	entries := make(map[string]string, len(files))
	for i := range files {
		p := clean(files[i].Path())
		if b := blobs[files[i].Path()]; b != "" {
			entries[p] = b
			continue
		}
		entries[p] = "sha256:" + digest.SHA256Hex(files[i].Raw)
	}
	return observation.Files{Digest: observation.FilesDigest(entries), Count: len(entries)}
}

// observeCall turns one call's recorder and the pipeline's clock into an observation entry.
func (p *Pipeline) observeCall(rt runtime.Runtime, req *runtime.Request, files observation.Files, rec observedRec) observation.Call {
	id := runtime.Identity{Kind: runtime.IdentityOther}
	if idf, ok := rt.(runtime.Identified); ok {
		id = idf.Identity()
	}
	c := observation.Call{Started: rec.start.UTC(), Finished: rec.end.UTC(), Files: files}
	for _, l := range req.Lenses {
		c.Lenses = append(c.Lenses, field(l.Name, 256))
	}
	name := field(rt.Name(), 64)
	o := rec.obs
	reqDoc := requestDocument(req, files.Digest)
	var review []byte
	if rec.err == nil {
		review = reviewDocument(rec.res)
		c.ReviewDigest = digest.SHA256Hex(review)
	} else {
		c.Error = field(rec.err.Error(), observation.MaxErrorBytes)
		if c.Error == "" {
			c.Error = "runtime failed"
		}
	}
	local := func(response []byte, out *runtime.Digest) {
		e := observation.Exchange{Request: blob(runtime.DigestOf(reqDoc))}
		if o.Request != nil && id.Kind == runtime.IdentityExec {
			// The adapter recorded the literal files and settings it was handed.
			e.Request = blob(*o.Request)
		}
		switch {
		case out != nil:
			b := blob(*out)
			e.Response = &b
		case response != nil:
			b := blob(runtime.DigestOf(response))
			e.Response = &b
		}
		c.Exchanges = append(c.Exchanges, e)
	}
	c.Runtime = observation.Runtime{Kind: observation.KindOther, Name: name}
	switch id.Kind {
	case runtime.IdentityBuiltin:
		if sum := p.self.get(); sum != "" {
			c.Runtime = observation.Runtime{Kind: observation.KindBuiltin, Name: name, Version: field(p.opts.Version, 128), ExecutableSHA256: sum}
		}
		local(review, nil)
	case runtime.IdentityExec:
		if o.ExecutableSHA256 != "" {
			c.Runtime = observation.Runtime{Kind: observation.KindExec, Name: name, ExecutableSHA256: o.ExecutableSHA256, ExitStatus: o.ExitStatus}
			if reHex64.MatchString(o.InterpreterSHA256) && strings.HasPrefix(o.InterpreterPath, "/") && len(o.InterpreterPath) <= observation.MaxStringBytes {
				c.Runtime.InterpreterPath, c.Runtime.InterpreterSHA256 = clean(o.InterpreterPath), o.InterpreterSHA256
			}
		}
		local(nil, o.Output)
	case runtime.IdentityOpenAI:
		if id.EndpointHost != "" && o.ModelRequested != "" {
			c.Runtime = observation.Runtime{Kind: observation.KindOpenAI, Name: name, EndpointHost: field(id.EndpointHost, 255),
				ModelRequested: field(o.ModelRequested, 256), ModelResponded: field(o.ModelResponded, 256)}
		}
		for _, x := range o.Exchanges {
			e := observation.Exchange{Request: blob(x.Request), Status: x.Status}
			if x.Status < 100 || x.Status > 599 {
				e.Status = 0
			}
			if x.Response != nil {
				b := blob(*x.Response)
				e.Response = &b
			}
			c.Exchanges = append(c.Exchanges, e)
		}
	default:
		local(review, nil)
	}
	if len(c.Exchanges) > observation.MaxExchanges {
		c.Exchanges = c.Exchanges[:observation.MaxExchanges]
	}
	if o.Tokens != nil {
		c.Tokens = &observation.Tokens{Input: int64(o.Tokens.PromptTokens), Output: int64(o.Tokens.CompletionTokens)}
	}
	return c
}

// observedRec is one call as the pipeline timed it.
type observedRec struct {
	start, end time.Time
	obs        runtime.Observed
	res        *runtime.Result
	err        error
}

func blob(d runtime.Digest) observation.Blob { return observation.Blob{SHA256: d.SHA256, Size: d.Size} }

// ObservationStatement is the review-run statement of a decision, bound to the receipt it
// accompanies. It is nil when the pipeline observed nothing (a decision not made by Review).
func (d *Decision) ObservationStatement(rc *disclosure.Receipt, runnerVersion string) *observation.Statement {
	if d.Observed == nil || rc == nil {
		return nil
	}
	if runnerVersion == "" {
		runnerVersion = "dev"
	}
	s := &observation.Statement{
		SubjectName: rc.SubjectName, SubjectDigest: rc.SubjectDigest,
		Runner:        observation.Runner{ID: ProducerID, Version: field(runnerVersion, 128)},
		ReceiptDigest: rc.ReceiptDigest, ReviewedDiffDigest: d.Subject.ReviewedDiffDigest,
		Started: d.Observed.Started.UTC(), Finished: d.Observed.Finished.UTC(),
	}
	if reHex64.MatchString(d.PlanDigest) {
		s.PlanDigest = d.PlanDigest
	}
	outcome := map[string]string{}
	for _, l := range d.Lenses {
		outcome[l.Name] = string(l.Outcome)
	}
	for _, c := range d.Observed.Calls {
		c.Outcomes = nil
		for _, l := range c.Lenses {
			o := outcome[l]
			if o == "" {
				o = string(OutcomePending)
			}
			c.Outcomes = append(c.Outcomes, observation.Outcome{Lens: l, Outcome: o})
		}
		s.Calls = append(s.Calls, c)
	}
	for _, f := range d.Findings {
		s.Findings = append(s.Findings, observation.Finding{ID: f.ID, Lens: f.Lens, Severity: string(f.Severity)})
	}
	s.FindingsTotal = len(s.Findings)
	s.FindingsRoot = observation.FindingsRoot(s.Findings)
	if len(s.Findings) > observation.MaxFindings {
		s.Findings = s.Findings[:observation.MaxFindings]
	}
	return s
}

// SignObservation builds the decision's review-run statement for the receipt rc, keeps its
// envelope within maxBytes (0 for the format's limit) by listing fewer findings, and signs it
// with the witness key.
func SignObservation(d *Decision, rc *disclosure.Receipt, runnerVersion string, witness observation.Signer, maxBytes int) (*observation.Signed, error) {
	st := d.ObservationStatement(rc, runnerVersion)
	if st == nil {
		return nil, fmt.Errorf("observation: the decision has no observed runtime calls")
	}
	if maxBytes <= 0 || maxBytes > observation.MaxEnvelopeBytes {
		maxBytes = observation.MaxEnvelopeBytes
	}
	if _, err := st.Bound(maxBytes); err != nil {
		return nil, err
	}
	return observation.Sign(st, witness)
}

// runCall runs one runtime call as the pipeline observes it: its own clock around the call, a
// recorder that only lensgate's own wire code writes to (what the observation says does not
// come from the runtime's answer), an overall deadline and panics turned into errors.
func (p *Pipeline) runCall(ctx context.Context, rt runtime.Runtime, req *runtime.Request, files observation.Files) (*runtime.Result, error, observation.Call) {
	rec := &runtime.Recorder{}
	start := p.opts.Now()
	res, err := safeReview(runtime.WithRecorder(ctx, rec), rt, req, req.Settings.TimeoutSeconds)
	call := p.observeCall(rt, req, files, observedRec{start: start, end: p.opts.Now(), obs: rec.Snapshot(), res: res, err: err})
	return res, err, call
}

// RunObserved runs one runtime call the way the pipeline does and returns what it saw of it:
// the entry of the call in a review-run observation. blobs gives the git blob SHA of each
// file, by path, when the forge reported one. A runner in another process uses it to run the
// calls it is sent.
func (p *Pipeline) RunObserved(ctx context.Context, rt runtime.Runtime, req *runtime.Request, blobs map[string]string) (*runtime.Result, error, observation.Call) {
	return p.runCall(ctx, rt, req, filesGiven(req.Files, blobs))
}

// DerivedLens is what the pipeline derives for one lens from the reports its runtime returned
// across the calls of a review (one per part of the change, nil where a part had none).
type DerivedLens struct {
	Outcome  Outcome
	Findings []observation.Finding
}

// DeriveLens maps a lens's reports exactly as the pipeline does before it merges in what an
// earlier review knew: the same findings with the same ids and severities, and the outcome.
func DeriveLens(lens, runtimeName string, reports []*runtime.LensReport) DerivedLens {
	lr := mapReport(LensResult{Name: lens, Runtime: runtimeName, Outcome: OutcomePending}, mergeReports(reports))
	out := DerivedLens{Outcome: lr.Outcome}
	for _, f := range lr.Findings {
		out.Findings = append(out.Findings, observation.Finding{ID: f.ID, Lens: f.Lens, Severity: string(f.Severity)})
	}
	return out
}
