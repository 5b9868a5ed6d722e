package conformance

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// maxInput bounds one case input file.
const maxInput = 64 << 20

// TestSeed returns the public conformance seed: the bytes 0x00..0x1f. Never trust its key
// outside tests.
func TestSeed() []byte {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return seed
}

// Result is the outcome of one case.
type Result struct {
	CaseID   string `json:"caseId"`
	Passed   bool   `json:"passed"`
	Got      any    `json:"got"`
	Expected any    `json:"expected"`
	Detail   string `json:"detail,omitempty"`
}

// CaseError marks a case that is not usable input (a corpus error, not a failed expectation).
type CaseError struct {
	CaseID string
	Err    error
}

func (e *CaseError) Error() string { return fmt.Sprintf("case %s: %v", e.CaseID, e.Err) }
func (e *CaseError) Unwrap() error { return e.Err }

type caseFile struct {
	CaseID           string
	Input            string
	PredicateVersion string
	Expected         map[string]any
	Params           map[string]any
}

// Runner holds the keys used for a corpus.
type Runner struct {
	signer    disclosure.Signer
	testPub   ed25519.PublicKey
	corpusPub ed25519.PublicKey
}

// NewRunner prepares a runner for the corpus directory dir.
func NewRunner(dir string) (*Runner, error) {
	priv := ed25519.NewKeyFromSeed(TestSeed())
	pub := priv.Public().(ed25519.PublicKey)
	r := &Runner{signer: disclosure.Signer{Key: priv}, testPub: pub, corpusPub: pub}
	if raw, err := os.ReadFile(filepath.Join(dir, "publickey.hex")); err == nil {
		k, err := disclosure.ParsePublicKey(raw)
		if err != nil {
			return nil, fmt.Errorf("corpus publickey.hex: %w", err)
		}
		r.corpusPub = k
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("corpus publickey.hex: %w", err)
	}
	return r, nil
}

// Run runs every case directory under dir, in name order. Cases that are unusable input are
// reported as failed results and returned joined in the error.
func Run(ctx context.Context, dir string) ([]Result, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	r, err := NewRunner(dir)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "case.json")); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("conformance: no case directories under %s", dir)
	}
	sort.Strings(names)
	var results []Result
	var errs []error
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		res, err := r.RunCase(filepath.Join(dir, n))
		if err != nil {
			errs = append(errs, err)
		}
		results = append(results, res)
	}
	return results, errors.Join(errs...)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxInput {
		return nil, fmt.Errorf("%s exceeds %d bytes", path, maxInput)
	}
	return b, nil
}

func loadCase(caseDir string) (*caseFile, error) {
	raw, err := readLimited(filepath.Join(caseDir, "case.json"))
	if err != nil {
		return nil, err
	}
	v, err := jcs.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("case.json: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("case.json is not an object")
	}
	c := &caseFile{}
	c.CaseID, _ = m["caseId"].(string)
	c.Input, _ = m["input"].(string)
	c.PredicateVersion, _ = m["predicateVersion"].(string)
	c.Expected, _ = m["expected"].(map[string]any)
	c.Params, _ = m["params"].(map[string]any)
	if c.CaseID == "" {
		c.CaseID = filepath.Base(caseDir)
	}
	if len(c.Expected) != 1 {
		return c, fmt.Errorf("expected must hold exactly one axis, has %d", len(c.Expected))
	}
	if !slices.Contains([]string{"envelope.json", "predicate.json", "chain.json", "bodies.json", "body.json"}, c.Input) {
		return c, fmt.Errorf("unknown input %q", c.Input)
	}
	return c, nil
}

// RunCase runs one case directory.
func (r *Runner) RunCase(caseDir string) (Result, error) {
	c, err := loadCase(caseDir)
	if err != nil {
		id := filepath.Base(caseDir)
		if c != nil {
			id = c.CaseID
		}
		ce := &CaseError{CaseID: id, Err: err}
		return Result{CaseID: id, Detail: "unusable case: " + err.Error()}, ce
	}
	var axis string
	var want any
	for k, v := range c.Expected {
		axis, want = k, v
	}
	res := Result{CaseID: c.CaseID, Expected: map[string]any{axis: jsonish(want)}}
	input, err := readLimited(filepath.Join(caseDir, c.Input))
	if err != nil {
		res.Detail = "unusable case: " + err.Error()
		return res, &CaseError{CaseID: c.CaseID, Err: err}
	}
	got, detail, err := r.evaluate(c, caseDir, axis, want, input)
	if err != nil {
		res.Detail = "unusable case: " + err.Error()
		return res, &CaseError{CaseID: c.CaseID, Err: err}
	}
	res.Got = map[string]any{axis: got}
	res.Passed = detail == "" && equalJSON(got, jsonish(want))
	if !equalJSON(got, jsonish(want)) && detail == "" {
		detail = fmt.Sprintf("%s: got %v, expected %v", axis, got, jsonish(want))
	}
	res.Detail = detail
	return res, nil
}

// jsonish turns parsed JSON scalars into plain Go values for output and comparison.
func jsonish(v any) any {
	if n, ok := v.(jcs.Number); ok {
		if i, ok := n.Int64(); ok {
			return i
		}
		return string(n)
	}
	return v
}

func equalJSON(a, b any) bool {
	x, err1 := jcs.Canonical(normalize(a))
	y, err2 := jcs.Canonical(normalize(b))
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func normalize(v any) any {
	switch x := v.(type) {
	case *string:
		if x == nil {
			return nil
		}
		return *x
	case int64:
		return x
	}
	return v
}

func (r *Runner) evaluate(c *caseFile, caseDir, axis string, want any, input []byte) (got any, detail string, err error) {
	doc, err := jcs.Parse(input)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", c.Input, err)
	}
	switch axis {
	case "classification":
		return r.classify(c, doc, input)
	case "bodyCoreStable":
		m, _ := doc.(map[string]any)
		before, ok1 := m["bodyBefore"].(string)
		after, ok2 := m["bodyAfter"].(string)
		if !ok1 || !ok2 {
			return nil, "", errors.New("bodies.json needs bodyBefore and bodyAfter strings")
		}
		d1, e1 := block.BodyCoreDigest(before)
		d2, e2 := block.BodyCoreDigest(after)
		if e1 != nil || e2 != nil {
			return false, fmt.Sprintf("body core refused: %v", errors.Join(e1, e2)), nil
		}
		return d1 == d2, "", nil
	case "subjectExpectation":
		rep := disclosure.VerifyVersion(disclosure.V01, input, disclosure.Options{PublicKey: r.corpusPub})
		if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "expected_subject_digest") }) {
			return rep.SubjectExpectation, "no warning mentions expected_subject_digest", nil
		}
		return rep.SubjectExpectation, "", nil
	case "currentReceipt", "chainIntegrity", "unverifiedSupersessionClaim":
		return r.chain(doc, axis, want)
	case "versionStatus":
		return r.versionStatus(c, input)
	case "policyDecision":
		return r.policyDecision(c, caseDir, doc)
	}
	return nil, "", fmt.Errorf("unknown expectation axis %q", axis)
}

func (r *Runner) expected(c *caseFile) string {
	s, _ := c.Params["expectedSubjectDigest"].(string)
	return s
}

func (r *Runner) classify(c *caseFile, doc any, input []byte) (any, string, error) {
	switch c.Input {
	case "body.json":
		m, _ := doc.(map[string]any)
		body, ok := m["body"].(string)
		if !ok {
			return nil, "", errors.New("body.json needs a body string")
		}
		if _, err := block.BodyCoreDigest(body); err != nil {
			return "refused", "", nil
		}
		return "valid", "", nil
	case "envelope.json":
		rep := disclosure.VerifyVersion(disclosure.V01, input, disclosure.Options{
			PublicKey: r.corpusPub, ExpectedSubjectDigest: r.expected(c)})
		return classOf(rep.OK), "", nil
	case "predicate.json":
		v, err := caseVersion(c.PredicateVersion)
		if err != nil {
			return nil, "", err
		}
		rc, err := disclosure.EmitReference(doc, v, r.signer)
		var refused *disclosure.RefusedError
		if errors.As(err, &refused) {
			return "refused", "", nil
		}
		if err != nil {
			return nil, "", err
		}
		opts := disclosure.Options{PublicKey: r.testPub, ExpectedSubjectDigest: rc.SubjectDigest}
		if rc.Version != disclosure.V01 {
			opts.Policy = disclosure.DefaultPolicy()
		}
		rep := disclosure.VerifyVersion(rc.Version, rc.Envelope, opts)
		return classOf(rep.OK), "", nil
	}
	return nil, "", fmt.Errorf("classification cannot use input %s", c.Input)
}

func classOf(ok bool) string {
	if ok {
		return "valid"
	}
	return "invalid"
}

func caseVersion(s string) (disclosure.Version, error) {
	switch s {
	case "", "v0.1":
		return disclosure.V01, nil
	case "v0.2", "v0.3":
		return disclosure.Version(s), nil
	}
	return "", fmt.Errorf("unknown predicateVersion %q", s)
}

func (r *Runner) chain(doc any, axis string, want any) (any, string, error) {
	m, _ := doc.(map[string]any)
	envs, ok := m["envelopes"].([]any)
	if !ok {
		return nil, "", errors.New("chain.json needs an envelopes array")
	}
	verified := map[string]bool{}
	for _, e := range envs {
		o, err := dsse.Open(e)
		if err != nil || o.PayloadType != dsse.PayloadType || !o.Verify(r.corpusPub) {
			continue
		}
		if d, ok := disclosure.ReceiptDigest(e); ok {
			verified[d] = true
		}
	}
	res := disclosure.ResolveChain(envs, verified)
	switch axis {
	case "currentReceipt":
		if res.Current == nil {
			return nil, "", nil
		}
		return *res.Current, "", nil
	case "chainIntegrity":
		return res.IntegrityOK, "", nil
	}
	d, _ := want.(string)
	if !slices.Contains(res.UnverifiedSupersessionClaims, d) {
		return res.UnverifiedSupersessionClaims, "digest not among the unverified supersession claims", nil
	}
	if len(res.Corrected) != 0 {
		return d, fmt.Sprintf("claims were honoured: corrected %v", res.Corrected), nil
	}
	return d, "", nil
}

func (r *Runner) versionStatus(c *caseFile, input []byte) (any, string, error) {
	opts := disclosure.Options{PublicKey: r.corpusPub, ExpectedSubjectDigest: r.expected(c)}
	rep := disclosure.Verify(input, opts)
	got := rep.PredicateVersionStatus
	legacy := slices.Contains(rep.AdvisoryCodes, disclosure.AdvisoryLegacyV01)
	switch got {
	case disclosure.VersionLegacy:
		direct := disclosure.VerifyVersion(disclosure.V01, input, opts)
		if !legacy {
			return got, "legacy result lacks AGENT_REVIEW_LEGACY_V01", nil
		}
		if direct.OK != rep.OK {
			return got, "dispatcher changed the v0.1 verdict", nil
		}
	case disclosure.VersionCurrent:
		if legacy {
			return got, "current result carries AGENT_REVIEW_LEGACY_V01", nil
		}
	case disclosure.VersionUnknown:
		if rep.OK || !slices.Contains(rep.ReasonCodes, disclosure.CodePredicateTypeUnknown) {
			return got, "unknown result needs ok=false and AGENT_REVIEW_PREDICATE_TYPE_UNKNOWN", nil
		}
	}
	return got, "", nil
}

func (r *Runner) policyDecision(c *caseFile, caseDir string, doc any) (any, string, error) {
	var policy *disclosure.Policy
	switch name, _ := c.Params["policy"].(string); name {
	case "", "default":
		policy = disclosure.DefaultPolicy()
	case "none":
	default:
		if name != filepath.Base(name) || strings.HasPrefix(name, ".") {
			return nil, "", fmt.Errorf("policy %q must be a file name in the case directory", name)
		}
		raw, err := readLimited(filepath.Join(caseDir, name))
		if err != nil {
			return nil, "", err
		}
		policy = disclosure.ParsePolicy(raw)
	}
	v, err := caseVersion(c.PredicateVersion)
	if err != nil {
		return nil, "", err
	}
	if v == disclosure.V01 {
		v = disclosure.V02
	}
	rc, err := disclosure.EmitReference(doc, v, r.signer)
	if err != nil {
		return nil, "emitter refused: " + err.Error(), nil
	}
	rep := disclosure.VerifyVersion(rc.Version, rc.Envelope, disclosure.Options{
		PublicKey: r.testPub, ExpectedSubjectDigest: rc.SubjectDigest, Policy: policy})
	if rep.PolicyDecision == nil {
		if !slices.Contains(rep.AdvisoryCodes, disclosure.AdvisoryPolicyNotEvaluated) {
			return nil, "null decision without POLICY_NOT_EVALUATED", nil
		}
		return nil, "", nil
	}
	d := *rep.PolicyDecision
	switch {
	case rep.PolicyDigest == nil || !strings.HasPrefix(*rep.PolicyDigest, "sha256:"):
		return d, "decision without a sha256 policy digest", nil
	case d == disclosure.DecisionAccept && !rep.OK:
		return d, "accept with ok=false", nil
	case d != disclosure.DecisionAccept && rep.OK:
		return d, d + " with ok=true", nil
	}
	return d, "", nil
}
