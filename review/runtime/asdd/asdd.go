// Package asdd reads the documents of the ASDD runtime adapter contract: review.json
// (asdd/review/v0.1) and triage output (asdd/triage/v0.1). Parsing is strict and bounded:
// anything unexpected is an error, so that the pipeline fails closed instead of guessing.
package asdd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/review/runtime"
)

// Schema identifiers.
const (
	ReviewSchema = "asdd/review/v0.1"
	TriageSchema = "asdd/triage/v0.1"
)

// Bounds of an adapter's output.
const (
	MaxBytes          = 1 << 20
	MaxDepth          = 16
	MaxLenses         = 32
	MaxFindings       = 500
	MaxMessageBytes   = 8 << 10
	MaxSummaryBytes   = 8 << 10
	MaxLensNameBytes  = 64
	MaxPathBytes      = 1024
	MaxTriageLabels   = 20
	MaxTriageComment  = 4 << 10
	maxRecommendation = 32
)

// Review is a validated asdd/review/v0.1 document. pr_number, head_sha and mode are kept for
// the record but never trusted: the pipeline owns the subject binding.
type Review struct {
	Schema         string          `json:"schema"`
	PRNumber       json.Number     `json:"pr_number,omitempty"`
	HeadSHA        string          `json:"head_sha,omitempty"`
	Mode           string          `json:"mode,omitempty"`
	Recommendation string          `json:"recommendation"`
	Summary        string          `json:"summary"`
	Lenses         []Lens          `json:"lenses"`
	Stats          json.RawMessage `json:"stats,omitempty"`
}

// Lens is one lens entry of a review.
type Lens struct {
	Lens     string    `json:"lens"`
	Verdict  string    `json:"verdict"`
	Summary  string    `json:"summary,omitempty"`
	Findings []Finding `json:"findings"`
}

// Finding is one finding of a lens entry. Path is "file" or "file:line".
type Finding struct {
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Path     string `json:"path,omitempty"`
	Title    string `json:"title,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Line     int    `json:"line,omitempty"`
	// Suggestion is lensgate's optional extension: replacement text for lines of the new file.
	Suggestion *Suggestion `json:"suggestion,omitempty"`
}

// Suggestion is replacement text for lines of the new file: start_line..end_line, or "lines"
// as "10-12" or "10" (the form a model's string-only answer schema uses). A suggestion with
// neither lines nor replacement is no suggestion.
type Suggestion struct {
	StartLine   int    `json:"start_line,omitempty"`
	EndLine     int    `json:"end_line,omitempty"`
	Lines       string `json:"lines,omitempty"`
	Replacement string `json:"replacement"`
}

// Range is the suggestion's line range; ok is false when it names none or a malformed one.
func (s *Suggestion) Range() (start, end int, ok bool) {
	if s == nil {
		return 0, 0, false
	}
	start, end = s.StartLine, s.EndLine
	if l := strings.TrimSpace(s.Lines); l != "" {
		a, b, found := strings.Cut(l, "-")
		var err1, err2 error
		start, err1 = strconv.Atoi(strings.TrimSpace(a))
		end, err2 = start, nil
		if found {
			end, err2 = strconv.Atoi(strings.TrimSpace(b))
		}
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
	}
	if end == 0 {
		end = start
	}
	return start, end, start >= 1 && end >= start
}

// empty reports a suggestion that suggests nothing (a model filling the key it must answer).
func (s *Suggestion) empty() bool {
	return s == nil || s.StartLine == 0 && s.EndLine == 0 && strings.TrimSpace(s.Lines) == "" && s.Replacement == ""
}

// ParseReview validates a review.json document.
func ParseReview(b []byte) (*Review, error) {
	if err := CheckJSON(b); err != nil {
		return nil, err
	}
	var r Review
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("review.json: %w", err)
	}
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("review.json: %w", err)
	}
	return &r, nil
}

func (r *Review) validate() error {
	if r.Schema != ReviewSchema {
		return fmt.Errorf("schema is %q, want %q", bounded(r.Schema), ReviewSchema)
	}
	switch r.Recommendation {
	case "comment", "request-changes", "approve-advisory":
	default:
		return fmt.Errorf("recommendation %q is not comment, request-changes or approve-advisory", bounded(r.Recommendation))
	}
	if len(r.Summary) > MaxSummaryBytes {
		return errors.New("summary is too long")
	}
	if r.Lenses == nil {
		return errors.New("lenses is missing")
	}
	if len(r.Lenses) > MaxLenses {
		return fmt.Errorf("more than %d lenses", MaxLenses)
	}
	seen := map[string]bool{}
	total := 0
	for i := range r.Lenses {
		l := &r.Lenses[i]
		if l.Lens == "" || len(l.Lens) > MaxLensNameBytes || strings.ContainsAny(l.Lens, "\x00\n\r") {
			return fmt.Errorf("lens %d has an invalid name", i)
		}
		if seen[l.Lens] {
			return fmt.Errorf("lens %q appears twice", l.Lens)
		}
		seen[l.Lens] = true
		if !runtime.ValidVerdict(l.Verdict) {
			return fmt.Errorf("lens %q has verdict %q, want ok, concerns, request-changes or skipped", l.Lens, bounded(l.Verdict))
		}
		if len(l.Summary) > MaxSummaryBytes {
			return fmt.Errorf("lens %q: summary is too long", l.Lens)
		}
		total += len(l.Findings)
		if total > MaxFindings {
			return fmt.Errorf("more than %d findings", MaxFindings)
		}
		for j := range l.Findings {
			f := &l.Findings[j]
			if _, ok := runtime.FromASDDSeverity(f.Severity); !ok {
				return fmt.Errorf("lens %q finding %d: severity %q is not note, warn or block", l.Lens, j, bounded(f.Severity))
			}
			if strings.TrimSpace(f.Message) == "" || len(f.Message) > MaxMessageBytes {
				return fmt.Errorf("lens %q finding %d: message is empty or too long", l.Lens, j)
			}
			if len(f.Path) > MaxPathBytes || len(f.Title) > MaxMessageBytes || len(f.Rule) > 128 || len(f.Tool) > 128 {
				return fmt.Errorf("lens %q finding %d: a field is too long", l.Lens, j)
			}
			if f.Line < 0 {
				return fmt.Errorf("lens %q finding %d: negative line", l.Lens, j)
			}
			if sg := f.Suggestion; !sg.empty() {
				if _, _, ok := sg.Range(); !ok || len(sg.Replacement) > MaxMessageBytes {
					return fmt.Errorf("lens %q finding %d: suggestion needs lines \"N\" or \"N-M\" (1 <= N <= M) and a replacement under %d bytes", l.Lens, j, MaxMessageBytes+1)
				}
			}
		}
	}
	return nil
}

// Reports converts the review's lens entries to runtime reports. ASDD severities map as
// block → high, warn → medium, note → info.
func (r *Review) Reports() []runtime.LensReport {
	out := make([]runtime.LensReport, 0, len(r.Lenses))
	for _, l := range r.Lenses {
		rep := runtime.LensReport{Lens: l.Lens, Verdict: l.Verdict, Summary: l.Summary}
		if rep.Summary == "" {
			rep.Summary = fmt.Sprintf("Verdict %s with %d finding(s).", l.Verdict, len(l.Findings))
		}
		if l.Verdict == runtime.VerdictSkipped {
			rep.Cause = "the runtime skipped this lens"
			if r.Mode != "" {
				rep.Cause += " (mode " + bounded(r.Mode) + ")"
			}
		}
		for _, f := range l.Findings {
			sev, _ := runtime.FromASDDSeverity(f.Severity)
			path, line := SplitPath(f.Path)
			if f.Line > 0 {
				line = f.Line
			}
			rf := runtime.Finding{
				Rule: f.Rule, Severity: sev, Path: path, Line: line, Title: f.Title, Message: f.Message,
			}
			if sg := f.Suggestion; !sg.empty() {
				if start, end, ok := sg.Range(); ok {
					rf.Suggestion = &runtime.Suggestion{StartLine: start, EndLine: end, Replacement: sg.Replacement}
				}
			}
			rep.Findings = append(rep.Findings, rf)
		}
		out = append(out, rep)
	}
	return out
}

// SplitPath splits ASDD's "file:line" into its parts. A path without a numeric suffix has
// line 0.
func SplitPath(p string) (string, int) {
	i := strings.LastIndexByte(p, ':')
	if i <= 0 || i == len(p)-1 {
		return p, 0
	}
	n, err := strconv.Atoi(p[i+1:])
	if err != nil || n < 0 {
		return p, 0
	}
	return p[:i], n
}

// Triage is a validated asdd/triage/v0.1 document.
type Triage struct {
	Schema      string      `json:"schema"`
	IssueNumber json.Number `json:"issue_number,omitempty"`
	Mode        string      `json:"mode,omitempty"`
	Labels      []string    `json:"labels"`
	Welcome     bool        `json:"welcome,omitempty"`
	Comment     string      `json:"comment"`
}

// ParseTriage validates a triage document.
func ParseTriage(b []byte) (*Triage, error) {
	if err := CheckJSON(b); err != nil {
		return nil, err
	}
	var t Triage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("triage: %w", err)
	}
	if t.Schema != TriageSchema {
		return nil, fmt.Errorf("triage: schema is %q, want %q", bounded(t.Schema), TriageSchema)
	}
	if len(t.Labels) > MaxTriageLabels || len(t.Comment) > MaxTriageComment {
		return nil, errors.New("triage: too many labels or comment too long")
	}
	return &t, nil
}

// CheckJSON enforces what encoding/json lets through: size, UTF-8, a single top-level
// object, nesting depth and duplicate keys. It parses with the strict reader of signed
// payloads under encoding/json's own tolerances (long integers, lone surrogates).
func CheckJSON(b []byte) error {
	if len(b) > MaxBytes {
		return fmt.Errorf("output is %d bytes, over the %d byte limit", len(b), MaxBytes)
	}
	if !utf8.Valid(b) {
		return errors.New("output is not valid UTF-8")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return errors.New("output is empty")
	}
	v, err := jcs.ParseWith(b, jcs.Options{MaxDepth: MaxDepth, MaxNodes: -1, MaxIntDigits: MaxBytes, LoneSurrogates: true})
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New("output is not a JSON object")
	}
	return nil
}

func bounded(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
