package disclosure

import (
	"errors"
	"fmt"
	"time"

	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/internal/digest"
)

// Predicate is what the review pipeline knows about one review. Tree turns it into the signed
// agent-review predicate (v0.2): every assurance is selfDeclared, observations are empty,
// anchoredAt and observedAt are null, and findingsRoot and limitationCodes are derived, never
// typed, so the builder cannot express a claim the emitter would have to refuse.
type Predicate struct {
	ReviewID      string
	Subject       SubjectContext
	Authoring     []AssuredItem // who wrote the change (as declared)
	ReviewRuns    []AssuredItem // one per lens run
	Findings      []Finding
	FindingsTotal int // findings recorded; more than len(Findings) needs a coverage gap
	NonClaims     []string
	TimeClaims    []TimeClaim
	Coverage      Coverage
	Limitations   []string
	DeclaredAt    time.Time
	SignedAt      time.Time // zero leaves signedAt null
	Supersession  *Supersession
	Producer      *Producer
	PlanDigest    string // sha256 hex of the review plan; empty for none
}

// SubjectContext binds the receipt to one pull request (KindPullRequest) or issue (KindIssue).
type SubjectContext struct {
	Kind                     string
	Forge                    string // "github.com"
	RepositoryID             string // GraphQL node id
	PullRequestNodeID        string
	IssueNodeID              string
	CommentNodeID            string
	HeadSHA, BaseSHA         string // 40 hex
	ReviewedDiffDigest       string // sha256 hex of the exact diff bytes reviewed
	BodyCoreDigest           string // BodyCoreDigest of the prepared body
	DisclosureCoreDigest     string // DisclosureCoreDigest of the rendered block
	RenderedDisclosureDigest string
	RevisedAt                string // issues: when the body was last revised
	HumanRef                 string // e.g. "github-pr:owner/repo#12"; names the subject
}

// AssuredItem is a self-declared statement of who did something. It has no observer: naming
// one would be an observation claim that nothing here can witness.
type AssuredItem struct {
	AssertedBy     string
	EvidenceSHA256 string
}

// Finding is one review finding as disclosed.
type Finding struct {
	ID, Severity, Title, Disposition string
	FixCommit                        string // full 40-hex commit id, required when fixed
	Reason                           string // required when dismissed
	EvidenceSHA256                   string
}

// TimeClaim is a self-declared time (kind reviewCompleted, receiptCreated, reviewStarted or
// evidenceCollected).
type TimeClaim struct {
	Kind, Value, AssertedBy string
}

// Coverage says how much of the subject was reviewed. Strata switch on the CAP-1 profile.
type Coverage struct {
	Status            string // COMPLETE, PARTIAL or UNKNOWN
	Window            string
	Sources           []string
	ObservedRuns      *int
	ExpectedRuns      *int
	KnownGaps         []string
	CollectionMethod  string
	Strata            []Stratum
	Integrity         *Integrity
	AbsenceAssertions []AbsenceAssertion
}

// Stratum is one CAP-1 stratum.
type Stratum struct {
	ID         string
	Basis      Basis
	Eligible   int
	Examined   int
	Unexamined []Unexamined
	Supports   []string
}

// Basis says how a stratum's units were counted.
type Basis struct {
	Kind              string // catalogue, enumeration or declared
	CatalogueDigest   string
	EnumerationMethod string
}

// Unexamined is a unit of a stratum that was not examined, and why.
type Unexamined struct {
	Unit, Disposition, WithheldDigest string
}

// Integrity is the CAP-1 completeness claim.
type Integrity struct {
	Complete  bool
	CappedTo  string
	Statement string
}

// AbsenceAssertion claims that a stratum has no findings.
type AbsenceAssertion struct {
	Stratum string
}

// Supersession names earlier receipts by their receipt digest.
type Supersession struct {
	Supersedes, Corrects, Withdraws []Relation
}

// Relation cites a prior receipt digest with a reason.
type Relation struct {
	PriorDigest string
	Reason      string
}

// Producer names the emitting service.
type Producer struct {
	ID, KeyID string
}

const timeFormat = "2006-01-02T15:04:05Z"

func setIf(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func digestRef(h string) any {
	if h == "" {
		return nil
	}
	return map[string]any{"sha256": h}
}

func strs(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Tree returns the predicate as the JSON tree the emitter signs.
func (p *Predicate) Tree() (map[string]any, error) {
	if p.DeclaredAt.IsZero() {
		return nil, errors.New("predicate: DeclaredAt is required")
	}
	sc := map[string]any{"kind": p.Subject.Kind, "disclosureCoreDigest": p.Subject.DisclosureCoreDigest}
	s := p.Subject
	for k, v := range map[string]string{"forge": s.Forge, "repositoryId": s.RepositoryID,
		"pullRequestNodeId": s.PullRequestNodeID, "issueNodeId": s.IssueNodeID, "commentNodeId": s.CommentNodeID,
		"headSha": s.HeadSHA, "baseSha": s.BaseSHA, "reviewedDiffDigest": s.ReviewedDiffDigest,
		"bodyCoreDigest": s.BodyCoreDigest, "renderedDisclosureDigest": s.RenderedDisclosureDigest,
		"revisedAt": s.RevisedAt, "humanRef": s.HumanRef} {
		setIf(sc, k, v)
	}
	assured := func(items []AssuredItem) []any {
		out := make([]any, 0, len(items))
		for _, it := range items {
			m := map[string]any{"assertedBy": it.AssertedBy, "assurance": SelfDeclared}
			if it.EvidenceSHA256 != "" {
				m["evidenceRef"] = digestRef(it.EvidenceSHA256)
			}
			out = append(out, m)
		}
		return out
	}
	findings := make([]any, 0, len(p.Findings))
	for _, f := range p.Findings {
		m := map[string]any{"id": f.ID, "severity": f.Severity, "title": f.Title, "disposition": f.Disposition}
		setIf(m, "fixCommit", f.FixCommit)
		setIf(m, "reason", f.Reason)
		if f.EvidenceSHA256 != "" {
			m["evidenceRef"] = digestRef(f.EvidenceSHA256)
		}
		findings = append(findings, m)
	}
	total := p.FindingsTotal
	if total < len(findings) {
		total = len(findings)
	}
	decl := map[string]any{
		"authoring":     assured(p.Authoring),
		"reviewRuns":    assured(p.ReviewRuns),
		"findings":      findings,
		"findingsTotal": jcs.Number(fmt.Sprint(total)),
		"nonClaims":     strs(p.NonClaims),
	}
	if len(findings) > 0 {
		root, err := FindingsRoot(findings)
		if err != nil {
			return nil, err
		}
		decl["findingsRoot"] = root
	}
	if len(p.TimeClaims) > 0 {
		tcs := make([]any, 0, len(p.TimeClaims))
		for _, tc := range p.TimeClaims {
			tcs = append(tcs, map[string]any{"kind": tc.Kind, "value": tc.Value,
				"assertedBy": tc.AssertedBy, "assurance": SelfDeclared})
		}
		decl["timeClaims"] = tcs
	}
	times := map[string]any{"declaredAt": p.DeclaredAt.UTC().Format(timeFormat),
		"observedAt": nil, "signedAt": nil, "anchoredAt": nil}
	if !p.SignedAt.IsZero() {
		times["signedAt"] = p.SignedAt.UTC().Format(timeFormat)
	}
	out := map[string]any{
		"schemaVersion":  SchemaVersion,
		"reviewId":       p.ReviewID,
		"subjectContext": sc,
		"declaration":    decl,
		"coverage":       p.Coverage.tree(),
		"times":          times,
		"limitations":    strs(p.Limitations),
	}
	if p.Supersession != nil {
		rel := func(rs []Relation) []any {
			out := make([]any, 0, len(rs))
			for _, r := range rs {
				out = append(out, map[string]any{"priorDigest": digestRef(r.PriorDigest), "reason": r.Reason})
			}
			return out
		}
		sup := map[string]any{}
		for k, rs := range map[string][]Relation{"supersedes": p.Supersession.Supersedes,
			"corrects": p.Supersession.Corrects, "withdraws": p.Supersession.Withdraws} {
			if len(rs) > 0 {
				sup[k] = rel(rs)
			}
		}
		out["supersession"] = sup
	}
	if p.Producer != nil {
		prod := map[string]any{}
		setIf(prod, "id", p.Producer.ID)
		setIf(prod, "keyId", p.Producer.KeyID)
		out["producer"] = prod
	}
	if p.PlanDigest != "" {
		out["planRef"] = digestRef(p.PlanDigest)
	}
	out["limitationCodes"] = strs(LimitationCodes(out))
	return out, nil
}

func (c Coverage) tree() map[string]any {
	m := map[string]any{"status": c.Status}
	setIf(m, "window", c.Window)
	setIf(m, "collectionMethod", c.CollectionMethod)
	if c.Sources != nil {
		m["sources"] = strs(c.Sources)
	}
	if c.KnownGaps != nil {
		m["knownGaps"] = strs(c.KnownGaps)
	}
	if c.ObservedRuns != nil {
		m["observedRuns"] = jcs.Number(fmt.Sprint(*c.ObservedRuns))
	}
	if c.ExpectedRuns != nil {
		m["expectedRuns"] = jcs.Number(fmt.Sprint(*c.ExpectedRuns))
	}
	if len(c.Strata) == 0 && c.Integrity == nil {
		return m
	}
	strata := make([]any, 0, len(c.Strata))
	for _, s := range c.Strata {
		basis := map[string]any{"kind": s.Basis.Kind}
		setIf(basis, "catalogue_digest", s.Basis.CatalogueDigest)
		setIf(basis, "enumeration_method", s.Basis.EnumerationMethod)
		un := make([]any, 0, len(s.Unexamined))
		for _, u := range s.Unexamined {
			um := map[string]any{"unit": u.Unit, "disposition": u.Disposition}
			setIf(um, "withheld_digest", u.WithheldDigest)
			un = append(un, um)
		}
		sm := map[string]any{"id": s.ID, "basis": basis, "eligible": jcs.Number(fmt.Sprint(s.Eligible)),
			"examined": jcs.Number(fmt.Sprint(s.Examined)), "unexamined": un}
		if s.Supports != nil {
			sm["supports"] = strs(s.Supports)
		}
		strata = append(strata, sm)
	}
	m["strata"] = strata
	if c.Integrity != nil {
		im := map[string]any{"complete": c.Integrity.Complete}
		setIf(im, "capped_to", c.Integrity.CappedTo)
		setIf(im, "statement", c.Integrity.Statement)
		m["integrity"] = im
	}
	if c.AbsenceAssertions != nil {
		aa := make([]any, 0, len(c.AbsenceAssertions))
		for _, a := range c.AbsenceAssertions {
			aa = append(aa, map[string]any{"stratum": a.Stratum})
		}
		m["absenceAssertions"] = aa
	}
	return m
}

// JSON returns the predicate as canonical JSON (what `lensgate receipt emit` reads).
func (p *Predicate) JSON() ([]byte, error) {
	t, err := p.Tree()
	if err != nil {
		return nil, err
	}
	return jcs.Canonical(t)
}

// Emit signs a predicate built in Go; it is always v0.2.
func Emit(p *Predicate, s Signer) (*Receipt, error) {
	t, err := p.Tree()
	if err != nil {
		return nil, err
	}
	return EmitTree(t, V02, s)
}

// Disclosure is the result of Disclose: the signed receipt, the block to show, and the body
// with that block spliced in.
type Disclosure struct {
	Receipt *Receipt
	Block   string
	Body    string
}

// Disclose runs the whole producer workflow on a body: prepare it, bind bodyCoreDigest and
// disclosureCoreDigest into p.Subject, sign, render the block with a Receipt line carrying the
// sha256 of the envelope file, and splice it into the prepared body. p.Subject's two digests are
// overwritten.
func Disclose(body string, p *Predicate, s Signer) (*Disclosure, error) {
	prepared, err := block.Prepare(body)
	if err != nil {
		return nil, fmt.Errorf("disclose: %w", err)
	}
	if p.Subject.BodyCoreDigest, err = block.BodyCoreDigest(prepared); err != nil {
		return nil, fmt.Errorf("disclose: %w", err)
	}
	tree, err := p.Tree()
	if err != nil {
		return nil, fmt.Errorf("disclose: %w", err)
	}
	// Any 64-hex placeholder gives the same disclosure core: the digest is masked.
	draft, err := block.Render(withReceipt(blockFields(tree), EmptyFindingsRoot))
	if err != nil {
		return nil, fmt.Errorf("disclose: %w", err)
	}
	if p.Subject.DisclosureCoreDigest, err = block.DisclosureCoreDigest(draft); err != nil {
		return nil, fmt.Errorf("disclose: %w", err)
	}
	rc, err := Emit(p, s)
	if err != nil {
		return nil, fmt.Errorf("disclose: %w", err)
	}
	signed, err := signedPredicateJSON(rc)
	if err != nil {
		return nil, fmt.Errorf("disclose: %w", err)
	}
	final, err := RenderBlockJSON(signed, digest.SHA256Hex(rc.Envelope))
	if err != nil {
		return nil, fmt.Errorf("disclose: %w", err)
	}
	out, err := block.Splice(prepared, final)
	if err != nil {
		return nil, fmt.Errorf("disclose: %w", err)
	}
	return &Disclosure{Receipt: rc, Block: final, Body: out}, nil
}

func withReceipt(f block.Fields, digest string) block.Fields {
	f.Receipt = digest
	return f
}

// signedPredicateJSON re-reads the signed predicate from the envelope, so the block shows
// exactly what was signed.
func signedPredicateJSON(rc *Receipt) ([]byte, error) {
	env, err := jcs.Parse(rc.Envelope)
	if err != nil {
		return nil, err
	}
	st, _, err := readStatement(env)
	if err != nil {
		return nil, err
	}
	return jcs.Canonical(st["predicate"])
}
