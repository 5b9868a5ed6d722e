package details

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/internal/digest"
)

// receiptFacts is what the page reads from a receipt's payload to show it (the verification
// is separate, below).
type receiptFacts struct {
	PayloadDigest string
	FileDigest    string // sha256 of the envelope bytes, as the body's Receipt line names it
	KeyID         string
	PredicateType string
	HeadSHA       string
	BaseSHA       string
	ReviewID      string
	Coverage      string
	KnownGaps     []string
	Limitations   []string
	// LimitationCodes are derived from the predicate, as the verifier's policy derives them.
	LimitationCodes []string
	Findings        []receiptFinding
	Supersedes      []supersedeView
	SubjectCtx      any
	Bytes           int
}

type receiptFinding struct {
	ID, Severity, Title, Disposition string
}

// readReceipt decodes the payload of an envelope without trusting it.
func readReceipt(env []byte) *receiptFacts {
	f := &receiptFacts{FileDigest: digest.SHA256Hex(env), Bytes: len(env)}
	var e struct {
		Payload    string `json:"payload"`
		Signatures []struct {
			KeyID string `json:"keyid"`
		} `json:"signatures"`
	}
	if json.Unmarshal(env, &e) != nil {
		return f
	}
	if len(e.Signatures) > 0 {
		f.KeyID = e.Signatures[0].KeyID
	}
	raw, err := base64.StdEncoding.DecodeString(e.Payload)
	if err != nil {
		return f
	}
	f.PayloadDigest = digest.SHA256Hex(raw)
	var st struct {
		PredicateType string `json:"predicateType"`
		Predicate     struct {
			ReviewID       string `json:"reviewId"`
			SubjectContext struct {
				HeadSHA string `json:"headSha"`
				BaseSHA string `json:"baseSha"`
			} `json:"subjectContext"`
			Coverage struct {
				Status    string   `json:"status"`
				KnownGaps []string `json:"knownGaps"`
			} `json:"coverage"`
			Limitations []string `json:"limitations"`
			Declaration struct {
				Findings []map[string]any `json:"findings"`
			} `json:"declaration"`
			Supersession struct {
				Supersedes []struct {
					PriorDigest struct {
						SHA256 string `json:"sha256"`
					} `json:"priorDigest"`
					Reason string `json:"reason"`
				} `json:"supersedes"`
			} `json:"supersession"`
		} `json:"predicate"`
	}
	if json.Unmarshal(raw, &st) != nil {
		return f
	}
	p := st.Predicate
	f.PredicateType, f.ReviewID = st.PredicateType, p.ReviewID
	f.HeadSHA, f.BaseSHA = p.SubjectContext.HeadSHA, p.SubjectContext.BaseSHA
	f.Coverage, f.KnownGaps, f.Limitations = p.Coverage.Status, p.Coverage.KnownGaps, p.Limitations
	for _, x := range p.Declaration.Findings {
		s := func(k string) string { v, _ := x[k].(string); return v }
		f.Findings = append(f.Findings, receiptFinding{ID: s("id"), Severity: s("severity"), Title: s("title"), Disposition: s("disposition")})
	}
	for _, s := range p.Supersession.Supersedes {
		f.Supersedes = append(f.Supersedes, supersedeView{Digest: s.PriorDigest.SHA256, Reason: s.Reason})
	}
	if tree, err := jcs.Parse(raw); err == nil {
		if m, ok := tree.(map[string]any); ok {
			if pm, ok := m["predicate"].(map[string]any); ok {
				f.SubjectCtx = pm["subjectContext"]
				f.LimitationCodes = disclosure.LimitationCodes(pm)
			}
		}
	}
	return f
}

// serverVerification is the server's own verification of a receipt, axis by axis.
type serverVerification struct {
	OK            bool
	Key           string // hex of the key that verified the signature ("" when none did)
	Axes          []axis
	ReasonCodes   []string
	AdvisoryCodes []string
	Limitations   []string // the limitation codes derived from the predicate
	Errors        []string
	Warnings      []string
	// Expectation says where the expected subject digest came from.
	Expectation string
	BodyChecked bool
}

type axis struct {
	Name  string
	Value string
	State string // "ok", "fail" or "info": the template shows it as a word and a symbol
}

// verifyServer verifies an envelope with each published key (the first that verifies the
// signature decides), against a subject expectation built from what GitHub says of the pull
// request, and against the current body when the receipt is the current head's.
func (h *Handler) verifyServer(env []byte, pr *github.PullRequest, body *string) *serverVerification {
	sv := &serverVerification{BodyChecked: body != nil}
	facts := readReceipt(env)
	sv.Limitations = facts.LimitationCodes
	expected := ""
	switch {
	case facts.SubjectCtx == nil:
		sv.Expectation = "none: the payload has no readable subject context"
	default:
		var sc struct {
			RepositoryID      string `json:"repositoryId"`
			PullRequestNodeID string `json:"pullRequestNodeId"`
		}
		if b, err := json.Marshal(facts.SubjectCtx); err == nil {
			_ = json.Unmarshal(b, &sc)
		}
		repoID := pr.GetBase().GetRepo().GetNodeID()
		switch {
		case sc.PullRequestNodeID != pr.GetNodeID():
			sv.Expectation = "none: the receipt names another pull request than GitHub's " + pr.GetNodeID()
		case repoID != "" && sc.RepositoryID != repoID:
			sv.Expectation = "none: the receipt names another repository than GitHub's " + repoID
		default:
			d, err := disclosure.SubjectDigest(facts.SubjectCtx)
			if err != nil {
				sv.Expectation = "none: " + err.Error()
				break
			}
			expected = d
			sv.Expectation = "derived from the receipt's subject context after checking its repository and pull request ids against GitHub; the reviewed diff digest is the receipt's own claim"
		}
	}
	var rep *disclosure.Report
	keys := h.o.Keys
	if len(keys) == 0 {
		keys = []ed25519.PublicKey{make(ed25519.PublicKey, ed25519.PublicKeySize)}
	}
	for _, k := range keys {
		r := disclosure.Verify(env, disclosure.Options{PublicKey: k, ExpectedSubjectDigest: expected, Body: body, Policy: disclosure.DefaultPolicy()})
		if rep == nil || (r.CryptoOK != nil && *r.CryptoOK) {
			rep = r
			if r.CryptoOK != nil && *r.CryptoOK && len(h.o.Keys) > 0 {
				sv.Key = hex.EncodeToString(k)
				break
			}
		}
	}
	sv.OK = rep.OK
	b := func(name string, v *bool) {
		switch {
		case v == nil:
			sv.Axes = append(sv.Axes, axis{name, disclosure.TimeNotEvaluated, "info"})
		case *v:
			sv.Axes = append(sv.Axes, axis{name, "yes", "ok"})
		default:
			sv.Axes = append(sv.Axes, axis{name, "no", "fail"})
		}
	}
	s := func(name, v string) {
		if v == "" {
			return
		}
		st := "info"
		switch strings.ToLower(v) {
		case "match", "matched", "ok", "allow", "accept", "current":
			st = "ok"
		case "mismatch", "deny", "fail", "failed":
			st = "fail"
		}
		sv.Axes = append(sv.Axes, axis{name, v, st})
	}
	ptr := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	b("structure", rep.StructureOK)
	b("signature (crypto)", rep.CryptoOK)
	b("predicate type", rep.PredicateTypeOK)
	b("statement shape", rep.StatementShapeOK)
	b("subject binding", rep.SubjectBindingOK)
	s("expected subject match", rep.ExpectedSubjectMatch)
	b("internal subject consistency", rep.InternalSubjectConsistencyOK)
	b("internal consistency", rep.InternalConsistencyOK)
	s("body core digest", rep.BodyCoreDigestMatch)
	s("disclosure core digest", rep.DisclosureCoreDigestMatch)
	b("findings root", rep.FindingsRootOK)
	b("assurance", rep.AssuranceOK)
	s("currentness", rep.Currentness)
	s("time semantics", ptr(rep.TimeSemantics))
	s("event time", rep.EventTimeStatus)
	s("observation time", rep.ObservationTimeStatus)
	s("signature time", rep.SignatureTimeStatus)
	s("external time", rep.ExternalTimeStatus)
	if rep.TimeConsistencyOK != nil {
		b("time consistency", rep.TimeConsistencyOK)
	}
	s("policy decision", ptr(rep.PolicyDecision))
	s("predicate version", rep.PredicateVersionStatus)
	s("payload digest", rep.ReceiptDigest)
	s("subject digest", rep.SubjectDigest)
	sv.ReasonCodes, sv.AdvisoryCodes, sv.Errors, sv.Warnings = rep.ReasonCodes, rep.AdvisoryCodes, rep.Errors, rep.Warnings
	return sv
}

// Bounds of the audit section.
const (
	maxAuditShown = 200
	maxAuditBytes = 1 << 30
)

type auditView struct {
	Configured bool
	Records    []pdp.Record
	Total      int    // matching records (more than shown when over the bound)
	Chain      string // the ledger's chain verification
	ChainOK    bool
	Error      string
}

// readAudit reads this pull request's records from the local ledger's index and its chain
// verification.
func (h *Handler) readAudit(ctx context.Context, t target) auditView {
	if h.ledger == nil {
		return auditView{}
	}
	av := auditView{Configured: true}
	res, err := h.ledger.read(ctx, t.owner+"/"+t.repo, t.number, maxAuditShown)
	switch {
	case errors.Is(err, errLedgerTooLarge):
		av.Error = err.Error()
		return av
	case err != nil && ctx.Err() != nil:
		av.Error = "the audit ledger was not read: the request ended first"
		return av
	case err != nil:
		// The reason stays in the log: it names paths of this host.
		zerolog.Ctx(ctx).Warn().Err(err).Msg("details page: audit ledger not read")
		av.Error = "the audit ledger could not be read on this replica"
		return av
	}
	av.Total, av.Records = res.total, res.records
	if res.broken != nil {
		av.Chain = "broken: " + res.broken.Error()
	} else {
		av.ChainOK = true
		av.Chain = fmt.Sprintf("intact: %d records, last %s", res.chain, res.last)
	}
	// Newest first.
	for i, j := 0, len(av.Records)-1; i < j; i, j = i+1, j-1 {
		av.Records[i], av.Records[j] = av.Records[j], av.Records[i]
	}
	return av
}

// ChainState is "ok" or "broken", for the template's status badge.
func (a auditView) ChainState() string {
	if a.ChainOK {
		return "ok"
	}
	return "broken"
}

// observationView is the server's verification of the runner's observation: its own axis
// (runner_observation), never folded into the receipt's result.
type observationView struct {
	Digest      string
	Bytes       int
	Verdict     string // MATCH, MISMATCH or ABSENT
	Key         string // hex of the witness key it verified under
	ReasonCodes []string
	Errors      []string
	Window      string
	Calls       []observation.CallSummary
}

// verifyObservation checks the observation with each published witness key against the
// receipt beside it; the first key that gives MATCH decides, else the first key's answer.
func (h *Handler) verifyObservation(env, receipt []byte, sv *serverVerification) *observationView {
	ov := &observationView{Bytes: len(env)}
	var receiptKey ed25519.PublicKey
	if sv != nil && sv.Key != "" {
		if b, err := hex.DecodeString(sv.Key); err == nil {
			receiptKey = b
		}
	}
	keys := h.o.WitnessKeys
	if len(keys) == 0 {
		keys = []ed25519.PublicKey{nil}
	}
	var res *observation.Result
	for _, k := range keys {
		r := observation.Verify(env, observation.Options{WitnessKey: k, ReceiptKey: receiptKey, Receipt: receipt})
		if res == nil || r.RunnerObservation == observation.Match {
			res = r
			if r.RunnerObservation == observation.Match && k != nil {
				ov.Key = hex.EncodeToString(k)
				break
			}
		}
	}
	ov.Verdict, ov.ReasonCodes, ov.Errors, ov.Calls = res.RunnerObservation, res.ReasonCodes, res.Errors, res.Calls
	ov.Digest = res.ObservationDigest
	if ov.Digest == "" {
		ov.Digest = readReceipt(env).PayloadDigest
	}
	if res.WindowStarted != "" {
		ov.Window = res.WindowStarted + " to " + res.WindowFinished
	}
	if len(h.o.WitnessKeys) == 0 {
		ov.Errors = append(ov.Errors, "this server publishes no witness key")
	}
	return ov
}
