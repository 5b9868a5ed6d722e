package details

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// RecordSchema names the version of Record.
const RecordSchema = "lensgate/details/v1"

// Hidden markers of what the publisher writes into the gate check run's text. The check run is
// the App's own (no other App or user can change it), so the page reads it back as the App's
// statement of one reviewed head.
const (
	markerRecord  = "<!-- lensgate:details "
	markerReceipt = "<!-- lensgate:receipt -->"
	// markerObservation precedes the runner's signed observation beside the receipt.
	markerObservation = "<!-- lensgate:observation -->"
	markerEnd         = " -->"
)

// Bounds of a record: it shares the check-run text (65,535 characters) with the signed receipt
// and the findings list.
const (
	MaxRecordBytes   = 16 << 10
	maxRecordFinding = 200
	maxRecordGaps    = 100
	maxRecordProblem = 50
	maxRecordHeld    = 100
)

// Record is what the page shows of one reviewed head beyond the signed receipt: the lenses as
// the pipeline ran them, the findings with their lines, the coverage gaps and the policy used.
type Record struct {
	Schema     string    `json:"schema"`
	Head       string    `json:"head"`
	Base       string    `json:"base"`
	ReviewedAt time.Time `json:"reviewedAt"`
	Gate       Gate      `json:"gate"`
	Lenses     []Lens    `json:"lenses"`
	Findings   []Finding `json:"findings"`
	// FindingsTotal counts every finding; Findings may list fewer to fit the bound.
	FindingsTotal int      `json:"findingsTotal"`
	Coverage      Coverage `json:"coverage"`
	Policy        Policy   `json:"policy"`
	Intake        []Intake `json:"intake,omitempty"`
	// Prose is what a model wrote beside the review: the walkthrough and answers.
	Prose []Prose `json:"prose,omitempty"`
	// Tokens is the review's whole model spend (nil when no model was called).
	Tokens *Tokens `json:"tokens,omitempty"`
	// Context is what the model calls were given besides the diff (nil when nothing).
	Context *Context `json:"context,omitempty"`
	// Held are findings that were not published: withdrawn on verification or suppressed by
	// earlier feedback on the repository. HeldTotal counts them all; Held may list fewer.
	Held      []Held `json:"held,omitempty"`
	HeldTotal int    `json:"heldTotal,omitempty"`
}

// Why a finding was held back.
const (
	HeldWithdrawn  = "withdrawn"
	HeldSuppressed = "suppressed"
)

// Held is one finding that was not published, and why.
type Held struct {
	ID       string `json:"id"`
	Lens     string `json:"lens"`
	Severity string `json:"severity"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
	Title    string `json:"title"`
	// Kind is HeldWithdrawn or HeldSuppressed; Check names the verification that failed.
	Kind   string `json:"kind"`
	Check  string `json:"check,omitempty"`
	Reason string `json:"reason"`
}

// Tokens counts model tokens; Estimated is set when some of it is an estimate because the
// model server reported no usage.
type Tokens struct {
	Prompt     int  `json:"prompt"`
	Completion int  `json:"completion"`
	Total      int  `json:"total"`
	Estimated  bool `json:"estimated,omitempty"`
}

// Gate is the aggregated outcome.
type Gate struct {
	State          string `json:"state"`
	Reason         string `json:"reason,omitempty"`
	Recommendation string `json:"recommendation,omitempty"`
}

// Lens is one lens run.
type Lens struct {
	Name        string `json:"name"`
	Required    bool   `json:"required"`
	Publication string `json:"publication,omitempty"`
	Outcome     string `json:"outcome"`
	Summary     string `json:"summary,omitempty"`
	Runtime     string `json:"runtime,omitempty"`
	Model       string `json:"model,omitempty"`
	Cause       string `json:"cause,omitempty"`
	Findings    int    `json:"findings"`
	// Tokens is the lens's share of the model calls that judged it (nil when no model did).
	Tokens   *Tokens   `json:"tokens,omitempty"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
}

// Finding is one finding with where it points and what became of it.
type Finding struct {
	ID          string `json:"id"`
	Lens        string `json:"lens"`
	Severity    string `json:"severity"`
	Path        string `json:"path,omitempty"`
	Line        int    `json:"line,omitempty"`
	Title       string `json:"title"`
	Body        string `json:"body,omitempty"`
	Disposition string `json:"disposition"`
	// Placement is "inline" (a review comment on its line) or "summary".
	Placement string `json:"placement,omitempty"`
}

// Coverage is what was and was not reviewed.
type Coverage struct {
	Status        string `json:"status"`
	FilesTotal    int    `json:"filesTotal"`
	FilesReviewed int    `json:"filesReviewed"`
	Gaps          []Gap  `json:"gaps"`
	GapsTotal     int    `json:"gapsTotal"`
}

// Gap is one named part that was not reviewed.
type Gap struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Policy says which policy decided and what is wrong with it or with a proposed change to it.
type Policy struct {
	Origin     string   `json:"origin,omitempty"`
	Source     string   `json:"source,omitempty"` // owner/repo@ref
	Path       string   `json:"path,omitempty"`
	PlanDigest string   `json:"planDigest,omitempty"`
	Problems   []string `json:"problems,omitempty"`
	// Proposed is set when the pull request changes the policy file (validated, not applied).
	Proposed *Proposed `json:"proposed,omitempty"`
}

// Proposed is a policy file changed by the pull request.
type Proposed struct {
	Path     string   `json:"path"`
	Problems []string `json:"problems,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// Intake is one failed intake check.
type Intake struct {
	Check   string `json:"check"`
	Passed  bool   `json:"passed"`
	Message string `json:"message"`
}

// EncodeRecord renders the hidden marker line carrying r, within MaxRecordBytes: long texts are
// cut and, if still too large, the findings list is shortened (FindingsTotal keeps the count).
func EncodeRecord(r Record) (string, error) {
	r.Schema = RecordSchema
	r.FindingsTotal = max(r.FindingsTotal, len(r.Findings))
	r.Coverage.GapsTotal = max(r.Coverage.GapsTotal, len(r.Coverage.Gaps))
	r.Gate.Reason = cut(r.Gate.Reason, 2000)
	for i := range r.Lenses {
		l := &r.Lenses[i]
		l.Summary, l.Cause = cut(l.Summary, 500), cut(l.Cause, 500)
		l.Name, l.Runtime, l.Model = cut(l.Name, 64), cut(l.Runtime, 128), cut(l.Model, 128)
	}
	r.Findings = r.Findings[:min(len(r.Findings), maxRecordFinding)]
	for i := range r.Findings {
		f := &r.Findings[i]
		f.Title, f.Body, f.Path, f.ID = cut(f.Title, 300), cut(f.Body, 600), cut(f.Path, 400), cut(f.ID, 128)
	}
	r.HeldTotal = max(r.HeldTotal, len(r.Held))
	r.Held = r.Held[:min(len(r.Held), maxRecordHeld)]
	for i := range r.Held {
		h := &r.Held[i]
		h.Title, h.Reason, h.Path, h.ID, h.Lens = cut(h.Title, 300), cut(h.Reason, 300), cut(h.Path, 400), cut(h.ID, 128), cut(h.Lens, 64)
	}
	r.Coverage.Gaps = r.Coverage.Gaps[:min(len(r.Coverage.Gaps), maxRecordGaps)]
	for i := range r.Coverage.Gaps {
		g := &r.Coverage.Gaps[i]
		g.Path, g.Reason = cut(g.Path, 300), cut(g.Reason, 200)
	}
	r.Policy.Problems = cutList(r.Policy.Problems)
	r.Prose = boundProse(r.Prose)
	if p := r.Policy.Proposed; p != nil {
		p.Problems, p.Error = cutList(p.Problems), cut(p.Error, 300)
	}
	boundContext(r.Context)
	for {
		raw, err := json.Marshal(r)
		if err != nil {
			return "", fmt.Errorf("details record: %w", err)
		}
		line := markerRecord + base64.StdEncoding.EncodeToString(raw) + markerEnd + "\n"
		if len(line) <= MaxRecordBytes {
			return line, nil
		}
		// The context's code ranges give way first (the digest still covers them all), then
		// the longer of the findings and the gaps, so both stay listed.
		switch {
		case r.Context != nil && len(r.Context.Code) > 0:
			r.Context.Code = r.Context.Code[:len(r.Context.Code)/2]
		case len(r.Held) > len(r.Findings) && len(r.Held) >= len(r.Coverage.Gaps):
			r.Held = r.Held[:len(r.Held)/2]
		case len(r.Findings) > 0 && len(r.Findings) >= len(r.Coverage.Gaps):
			r.Findings = r.Findings[:len(r.Findings)/2]
		case len(r.Coverage.Gaps) > 0:
			r.Coverage.Gaps = r.Coverage.Gaps[:len(r.Coverage.Gaps)/2]
		case len(r.Prose) > 0:
			r.Prose = r.Prose[:len(r.Prose)-1]
		default:
			return "", errors.New("details record: too large even without findings and gaps")
		}
	}
}

func cutList(ps []string) []string {
	ps = ps[:min(len(ps), maxRecordProblem)]
	for i := range ps {
		ps[i] = cut(ps[i], 300)
	}
	return ps
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// ErrNoRecord says a text carries no details record.
var ErrNoRecord = errors.New("no details record")

// ParseRecord reads the details record from a check run's text.
func ParseRecord(text string) (*Record, error) {
	i := strings.Index(text, markerRecord)
	if i < 0 {
		return nil, ErrNoRecord
	}
	rest := text[i+len(markerRecord):]
	j := strings.Index(rest, markerEnd)
	if j < 0 || j > MaxRecordBytes {
		return nil, errors.New("details record: unterminated")
	}
	raw, err := base64.StdEncoding.DecodeString(rest[:j])
	if err != nil {
		return nil, fmt.Errorf("details record: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var r Record
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("details record: %w", err)
	}
	if r.Schema != RecordSchema {
		return nil, fmt.Errorf("details record: schema %q is not %s", cut(r.Schema, 64), RecordSchema)
	}
	return &r, nil
}

// ExtractEnvelope reads the signed receipt back from a text lensgate wrote (the gate check
// run's text or the advisory comment): the exact envelope bytes, with their trailing newline.
func ExtractEnvelope(text string) []byte { return jsonAfter(text, markerReceipt) }

// ExtractObservation reads the runner's observation back from a text lensgate wrote: the exact
// envelope bytes after its marker.
func ExtractObservation(text string) []byte { return jsonAfter(text, markerObservation) }

// jsonAfter is the first fenced JSON block after marker, with its trailing newline.
func jsonAfter(text, marker string) []byte {
	i := strings.Index(text, marker)
	if i < 0 {
		return nil
	}
	rest := text[i:]
	j := strings.Index(rest, "```json\n")
	if j < 0 {
		return nil
	}
	rest = rest[j+len("```json\n"):]
	k := strings.Index(rest, "\n```")
	if k < 0 {
		return nil
	}
	return []byte(rest[:k] + "\n")
}
