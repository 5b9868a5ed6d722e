package observation

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// The runner_observation axis.
const (
	Match    = "MATCH"
	Mismatch = "MISMATCH"
	Absent   = "ABSENT"
)

// Reason codes of a MISMATCH, in the order they are checked.
const (
	CodeMalformed       = "OBSERVATION_MALFORMED"
	CodeSignature       = "OBSERVATION_SIGNATURE_INVALID"
	CodeWrongWitnessKey = "OBSERVATION_WRONG_WITNESS_KEY"
	CodeReceiptMissing  = "OBSERVATION_RECEIPT_UNREADABLE"
	CodeSubjectDiffers  = "OBSERVATION_SUBJECT_DIFFERS"
	CodeEnvelopeDiffers = "OBSERVATION_ENVELOPE_DIGEST_DIFFERS"
	CodePlanDiffers     = "OBSERVATION_PLAN_DIGEST_DIFFERS"
	CodeFindingsDiffer  = "OBSERVATION_FINDINGS_ROOT_DIFFERS"
	CodeTimeOutside     = "OBSERVATION_TIME_OUTSIDE_WINDOW"
	CodeRuntimeDiffers  = "OBSERVATION_RUNTIME_IDENTITY_DIFFERS"
)

// Expectation is a runtime identity the reader expects: every call by the runtime called Name
// must show each non-empty member.
type Expectation struct {
	Name             string
	ExecutableSHA256 string
	Version          string
	EndpointHost     string
	ModelResponded   string
	// InterpreterSHA256 is the digest of the program an exec adapter's "#!" line starts.
	InterpreterSHA256 string
}

// Options are what the reader brings: the keys it trusts, the receipt the observation claims
// to accompany, and optionally the runtime identities it expects.
type Options struct {
	// WitnessKey is the runner's public key, taken from the operator, never from the envelope.
	WitnessKey ed25519.PublicKey
	// ReceiptKey is the receipt's public key. When given, an observation that verifies under it
	// but not under WitnessKey is reported as signed with the wrong key; a WitnessKey equal to
	// it is refused, because then the observation is one more self-declaration.
	ReceiptKey ed25519.PublicKey
	// Receipt is the agent-review envelope the observation sits beside.
	Receipt  []byte
	Expected []Expectation
}

// Result is the runner_observation axis. It is never folded into the receipt's ok.
type Result struct {
	RunnerObservation string   `json:"runner_observation"`
	ReasonCodes       []string `json:"reason_codes"`
	Errors            []string `json:"errors"`
	ObservationDigest string   `json:"observation_digest,omitempty"`
	// Window and Calls summarise what was observed, for a report.
	WindowStarted  string        `json:"window_started,omitempty"`
	WindowFinished string        `json:"window_finished,omitempty"`
	Calls          []CallSummary `json:"calls,omitempty"`
	// Statement is the parsed observation (nil when it could not be read).
	Statement *Statement `json:"-"`
}

// CallSummary is one call, as a report shows it.
type CallSummary struct {
	Lenses   []string `json:"lenses"`
	Runtime  string   `json:"runtime"`
	Identity string   `json:"identity"`
	Started  string   `json:"started"`
	Finished string   `json:"finished"`
	Error    string   `json:"error,omitempty"`
}

// Verify checks an observation against the reader's keys and the receipt beside it. A nil or
// empty envelope is ABSENT. It never panics: input it cannot read is a MISMATCH with
// OBSERVATION_MALFORMED and the parser's error.
func Verify(envelope []byte, opts Options) (res *Result) {
	res = &Result{RunnerObservation: Absent, ReasonCodes: []string{}, Errors: []string{}}
	if len(bytes.TrimSpace(envelope)) == 0 {
		return res
	}
	res.RunnerObservation = Mismatch
	defer func() {
		if r := recover(); r != nil {
			res.RunnerObservation = Mismatch
			res.add(CodeMalformed, fmt.Sprintf("internal error: %v", r))
		}
	}()
	p, err := Parse(envelope)
	if err != nil {
		res.add(CodeMalformed, err.Error())
		return res
	}
	s := p.Statement
	res.Statement = s
	res.ObservationDigest = p.Digest
	res.WindowStarted, res.WindowFinished = s.started, s.finished
	res.Calls = sized[CallSummary](len(s.Calls))
	for _, c := range s.Calls {
		res.Calls = append(res.Calls, CallSummary{Lenses: c.Lenses, Runtime: c.Runtime.Name, Identity: c.Runtime.Describe(),
			Started: c.started, Finished: c.finished, Error: c.Error})
	}

	// Signature and role.
	switch {
	case dsse.CheckPublicKey(opts.WitnessKey) != nil:
		res.add(CodeSignature, "no usable witness public key was given")
	case opts.ReceiptKey != nil && bytes.Equal(opts.WitnessKey, opts.ReceiptKey):
		res.add(CodeWrongWitnessKey, "the witness key is the receipt key: an observation signed by the composer of the receipt witnesses nothing")
	case p.opened.Verify(opts.WitnessKey):
	case opts.ReceiptKey != nil && p.opened.Verify(opts.ReceiptKey):
		res.add(CodeWrongWitnessKey, "the observation is signed with the receipt key, not the witness key")
	default:
		res.add(CodeSignature, "no signature verifies under the witness key")
	}

	rc, err := readReceipt(opts.Receipt)
	if err != nil {
		res.add(CodeReceiptMissing, err.Error())
		return res
	}
	if rc.subjectName != s.SubjectName || rc.subjectDigest != s.SubjectDigest {
		res.add(CodeSubjectDiffers, fmt.Sprintf("the receipt is about %s (%s), the observation about %s (%s)",
			bound(rc.subjectName), short(rc.subjectDigest), bound(s.SubjectName), short(s.SubjectDigest)))
	}
	if rc.reviewedDiff != s.ReviewedDiffDigest {
		res.add(CodeSubjectDiffers, "the receipt's reviewedDiffDigest is not the diff the runner reviewed")
	}
	if rc.digest != s.ReceiptDigest {
		res.add(CodeEnvelopeDiffers, fmt.Sprintf("the observation binds receipt %s, this receipt is %s", short(s.ReceiptDigest), short(rc.digest)))
	}
	if rc.plan != s.PlanDigest {
		res.add(CodePlanDiffers, "the receipt's planRef is not the plan the runner ran")
	}
	checkFindings(res, rc, s)
	for _, claim := range rc.completed {
		t, err := time.Parse(time.RFC3339Nano, claim)
		switch {
		case err != nil:
			res.add(CodeTimeOutside, "reviewCompleted "+bound(claim)+" is not a time")
		case t.Before(s.Started.Truncate(time.Second)) || t.After(s.Finished):
			res.add(CodeTimeOutside, fmt.Sprintf("reviewCompleted %s lies outside the observed window %s .. %s",
				claim, formatTime(s.Started), formatTime(s.Finished)))
		}
	}
	for _, e := range opts.Expected {
		for i, c := range s.Calls {
			if c.Runtime.Name != e.Name {
				continue
			}
			if msg := e.differs(c.Runtime); msg != "" {
				res.add(CodeRuntimeDiffers, fmt.Sprintf("calls[%d] (%s): %s", i, bound(c.Runtime.Name), msg))
			}
		}
	}
	if len(res.ReasonCodes) == 0 {
		res.RunnerObservation = Match
	}
	return res
}

func (r *Result) add(code, msg string) {
	if !contains(r.ReasonCodes, code) {
		r.ReasonCodes = append(r.ReasonCodes, code)
	}
	r.Errors = append(r.Errors, msg)
}

func (e Expectation) differs(rt Runtime) string {
	var out []string
	cmp := func(what, want, got string) {
		if want != "" && want != got {
			out = append(out, fmt.Sprintf("%s is %s, expected %s", what, nonEmpty(bound(got)), bound(want)))
		}
	}
	cmp("executable digest", e.ExecutableSHA256, rt.ExecutableSHA256)
	cmp("version", e.Version, rt.Version)
	cmp("endpoint host", e.EndpointHost, rt.EndpointHost)
	cmp("responding model", e.ModelResponded, rt.ModelResponded)
	cmp("interpreter digest", e.InterpreterSHA256, rt.InterpreterSHA256)
	return strings.Join(out, "; ")
}

// checkFindings compares the receipt's findings with the ones the runner derived. A receipt
// that lists all its findings must have the same root over {id, severity}; one that lists
// fewer (a bounded receipt) must count the same total and list only observed findings.
func checkFindings(res *Result, rc *receipt, s *Statement) {
	if rc.total != s.FindingsTotal {
		res.add(CodeFindingsDiffer, fmt.Sprintf("the receipt counts %d finding(s), the runner derived %d", rc.total, s.FindingsTotal))
		return
	}
	if len(rc.findings) == rc.total {
		if got := FindingsRoot(rc.findings); got != s.FindingsRoot {
			res.add(CodeFindingsDiffer, fmt.Sprintf("the receipt's findings have root %s, the runner derived %s from the observed responses", short(got), short(s.FindingsRoot)))
		}
		return
	}
	if len(s.Findings) < s.FindingsTotal {
		// Both sides are bounded: only findings both list can be compared.
		seen := map[string]string{}
		for _, f := range s.Findings {
			seen[f.ID] = f.Severity
		}
		for _, f := range rc.findings {
			if sev, ok := seen[f.ID]; ok && sev != f.Severity {
				res.add(CodeFindingsDiffer, "finding "+bound(f.ID)+" has another severity than the runner derived")
			}
		}
		return
	}
	seen := map[string]int{}
	for _, f := range s.Findings {
		seen[f.ID+"\x00"+f.Severity]++
	}
	for _, f := range rc.findings {
		k := f.ID + "\x00" + f.Severity
		if seen[k] == 0 {
			res.add(CodeFindingsDiffer, "the receipt lists finding "+bound(f.ID)+" ("+bound(f.Severity)+"), which the runner did not derive")
			return
		}
		seen[k]--
	}
}

// receipt is what the observation is checked against. The receipt's own verification (its
// signature, its rules) is the agent-review verifier's job and a separate axis.
type receipt struct {
	digest, subjectName, subjectDigest, reviewedDiff, plan string
	headSHA, baseSHA                                       string
	findings                                               []Finding
	total                                                  int
	completed                                              []string
}

func readReceipt(env []byte) (*receipt, error) {
	if len(env) == 0 {
		return nil, fmt.Errorf("no receipt was given to check the observation against")
	}
	if len(env) > dsse.MaxPayload {
		return nil, fmt.Errorf("the receipt exceeds %d bytes", dsse.MaxPayload)
	}
	tree, err := jcs.Parse(env)
	if err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	op, err := dsse.Open(tree)
	if err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	st, _, err := jcs.ParseCanonicalWith(op.Payload, jcs.Options{Objects: true})
	if err != nil {
		return nil, fmt.Errorf("receipt payload: %w", err)
	}
	sum := sha256.Sum256(op.Payload)
	rc := &receipt{digest: hex.EncodeToString(sum[:])}
	m, _ := st.(jcs.Object)
	if subj, _ := get(m, "subject").([]any); len(subj) == 1 {
		sm, _ := subj[0].(jcs.Object)
		rc.subjectName, _ = get(sm, "name").(string)
		dm, _ := get(sm, "digest").(jcs.Object)
		rc.subjectDigest, _ = get(dm, "sha256").(string)
	}
	pred, _ := get(m, "predicate").(jcs.Object)
	sc, _ := get(pred, "subjectContext").(jcs.Object)
	rc.reviewedDiff, _ = get(sc, "reviewedDiffDigest").(string)
	rc.headSHA, _ = get(sc, "headSha").(string)
	rc.baseSHA, _ = get(sc, "baseSha").(string)
	if pr, ok := get(pred, "planRef").(jcs.Object); ok {
		rc.plan, _ = get(pr, "sha256").(string)
	}
	decl, _ := get(pred, "declaration").(jcs.Object)
	fs, _ := get(decl, "findings").([]any)
	for _, fv := range fs {
		fm, _ := fv.(jcs.Object)
		id, _ := get(fm, "id").(string)
		sev, _ := get(fm, "severity").(string)
		rc.findings = append(rc.findings, Finding{ID: id, Severity: sev})
	}
	rc.total = len(rc.findings)
	if n, ok := get(decl, "findingsTotal").(jcs.Number); ok {
		if v, ok := n.Int64(); ok && v >= int64(rc.total) && v < 1<<31 {
			rc.total = int(v)
		}
	}
	tcs, _ := get(decl, "timeClaims").([]any)
	for _, tv := range tcs {
		tm, _ := tv.(jcs.Object)
		if get(tm, "kind") == "reviewCompleted" {
			v, _ := get(tm, "value").(string)
			rc.completed = append(rc.completed, v)
		}
	}
	if rc.subjectDigest == "" {
		return nil, fmt.Errorf("the receipt has no subject")
	}
	return rc, nil
}

// Describe is a runtime identity in one line.
func (rt Runtime) Describe() string {
	var b strings.Builder
	// part adds one comma-separated part made of pieces.
	part := func(pieces ...string) {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		for _, p := range pieces {
			b.WriteString(p)
		}
	}
	switch rt.Kind {
	case KindBuiltin:
		part("lensgate ", rt.Version)
		part("binary sha256:", rt.ExecutableSHA256)
	case KindExec:
		part("adapter ", rt.Name)
		part("executable sha256:", rt.ExecutableSHA256)
		if rt.InterpreterSHA256 != "" {
			part("interpreter ", rt.InterpreterPath, " sha256:", rt.InterpreterSHA256)
		}
		if rt.ExitStatus != nil {
			part("exit status ", strconv.Itoa(*rt.ExitStatus))
		} else {
			part("no exit status")
		}
	case KindOpenAI:
		part("endpoint ", rt.EndpointHost)
		part("model requested ", rt.ModelRequested)
		if rt.ModelResponded != "" {
			part("model answered ", rt.ModelResponded)
		}
	default:
		part(rt.Kind, " ", rt.Name)
		if rt.Version != "" {
			part(rt.Version)
		}
	}
	return b.String()
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16] + "…"
	}
	return h
}

func nonEmpty(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
