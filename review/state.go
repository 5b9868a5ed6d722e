package review

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
)

// Finding dispositions, as the agent-review predicate names them.
const (
	DispositionOpen      = "open"
	DispositionFixed     = "fixed"
	DispositionDismissed = "dismissed"
)

// StateVersion is the version of the review state format.
const StateVersion = 1

// Bounds of a review state, so that it fits in the hidden part of one comment.
const (
	maxStateBytes    = 512 << 10 // decompressed
	maxStateFindings = 400
	maxClosedKept    = 200
)

// State is what one review of a pull request remembers for the next one: the head each lens
// last completed on, the base and plan it was reviewed under, every finding with its
// disposition, and at which head each file was last reviewed by the model lenses. The
// publisher keeps it in the hidden part of the advisory comment; it is read back from the
// App's own comment only.
type State struct {
	Version    int    `json:"v"`
	BaseSHA    string `json:"base"`
	PlanDigest string `json:"plan"`
	// Lenses maps a lens to the head it last completed on (passed or failed, not pending).
	Lenses map[string]string `json:"lenses"`
	// Findings are the open findings of the last review and the closed (fixed, dismissed)
	// ones of earlier reviews of this pull request. Bodies are not kept.
	Findings []Finding `json:"findings"`
	// FilesHead is the head at which the model lenses reviewed every file not in FilesAt.
	FilesHead string `json:"filesHead,omitempty"`
	// FilesAt maps a file to the head its model review happened at, when that is not FilesHead.
	FilesAt map[string]string `json:"filesAt,omitempty"`
	// Reuse records what the paid lenses concluded at the head of this review, so that a
	// review of the same head that runs only because a delegated lens settled does not send
	// the change to the models again.
	Reuse *Reuse `json:"reuse,omitempty"`
	// Walkthrough is the model's walkthrough summary and the head it was written at, so that
	// the next review of the same head keeps it and a push only updates it.
	Walkthrough *WalkthroughMemo `json:"walkthrough,omitempty"`
}

// Reuse is the record of the paid lenses of one review of one head.
type Reuse struct {
	Head string `json:"head"`
	// Config is the digest of the repository configuration the review ran under: any change
	// of it (models, outcome settings, paths) makes the record untrustworthy.
	Config string `json:"config"`
	// Scope, Since and Chunks are the model review's coverage at that head.
	Scope  string `json:"scope,omitempty"`
	Since  string `json:"since,omitempty"`
	Chunks int    `json:"chunks,omitempty"`
	// Lenses are the paid lenses that completed (passed or failed) at Head.
	Lenses map[string]LensRecord `json:"lenses"`
}

// LensRecord is what one paid lens concluded; its findings are the state's findings.
type LensRecord struct {
	Runtime        string      `json:"runtime"`
	Outcome        Outcome     `json:"outcome"`
	Summary        string      `json:"summary,omitempty"`
	RequestChanges bool        `json:"rc,omitempty"`
	Tokens         *TokenCount `json:"tokens,omitempty"`
}

// Head is the newest head any lens completed on ("" when none did).
func (s *State) Head() string {
	if s == nil {
		return ""
	}
	// Every lens that completed in the last run has the same head; older heads belong to
	// lenses that were pending since. The most common head wins, ties by name order.
	count := map[string]int{}
	for _, h := range s.Lenses {
		count[h]++
	}
	best := ""
	for h, n := range count {
		if n > count[best] || n == count[best] && h < best {
			best = h
		}
	}
	return best
}

// FileHead is the head at which path was last reviewed by the model lenses ("" if unknown).
func (s *State) FileHead(path string) string {
	if s == nil {
		return ""
	}
	if h, ok := s.FilesAt[path]; ok {
		return h
	}
	return s.FilesHead
}

// Finding returns the state's finding with id.
func (s *State) Finding(id string) (Finding, bool) {
	if s == nil {
		return Finding{}, false
	}
	for _, f := range s.Findings {
		if f.ID == id {
			return f, true
		}
	}
	return Finding{}, false
}

var (
	reSHA       = regexp.MustCompile(`^[0-9a-f]{40}$`)
	reFindingID = regexp.MustCompile(`^LG-[0-9a-f]{12}$`)
)

// ValidFindingID reports whether id has the form of a finding id (LG- and 12 hex digits).
func ValidFindingID(id string) bool { return reFindingID.MatchString(id) }

// EncodeState renders a state as compact text for a hidden marker: gzip-compressed JSON in
// base64 (URL alphabet, no padding, so it contains no comment delimiter).
func EncodeState(s *State) (string, error) {
	if s == nil {
		return "", errors.New("no state")
	}
	c := *s
	c.Version = StateVersion
	c.Findings = boundFindings(c.Findings)
	raw, err := json.Marshal(&c)
	if err != nil {
		return "", fmt.Errorf("encode review state: %w", err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(raw); err != nil {
		return "", fmt.Errorf("compress review state: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("compress review state: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(buf.Bytes()), nil
}

// DecodeState reads a state written by EncodeState. Anything malformed, oversized or of
// another version is an error: the next review is then a full one.
func DecodeState(text string) (*State, error) {
	if len(text) > maxStateBytes {
		return nil, errors.New("review state: too large")
	}
	z, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("review state: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("review state: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxStateBytes+1))
	if err != nil {
		return nil, fmt.Errorf("review state: %w", err)
	}
	if len(raw) > maxStateBytes {
		return nil, errors.New("review state: too large")
	}
	var s State
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("review state: %w", err)
	}
	if s.Version != StateVersion {
		return nil, fmt.Errorf("review state: version %d, want %d", s.Version, StateVersion)
	}
	if len(s.Findings) > maxStateFindings {
		return nil, errors.New("review state: too many findings")
	}
	for _, h := range []string{s.BaseSHA, s.FilesHead} {
		if h != "" && !reSHA.MatchString(h) {
			return nil, errors.New("review state: malformed commit id")
		}
	}
	for _, h := range s.Lenses {
		if !reSHA.MatchString(h) {
			return nil, errors.New("review state: malformed lens head")
		}
	}
	for _, h := range s.FilesAt {
		if !reSHA.MatchString(h) {
			return nil, errors.New("review state: malformed file head")
		}
	}
	if r := s.Reuse; r != nil {
		if !reSHA.MatchString(r.Head) || r.Since != "" && !reSHA.MatchString(r.Since) || r.Chunks < 0 {
			return nil, errors.New("review state: malformed reuse record")
		}
		if len(r.Lenses) > maxStateFindings {
			return nil, errors.New("review state: too many reused lenses")
		}
		for name, l := range r.Lenses {
			if name == "" || l.Outcome != OutcomePassed && l.Outcome != OutcomeFailed {
				return nil, errors.New("review state: malformed reused lens")
			}
			if t := l.Tokens; t != nil && (t.Prompt < 0 || t.Completion < 0 || t.Total != t.Prompt+t.Completion) {
				return nil, errors.New("review state: malformed reused tokens")
			}
			l.Summary = boundText(l.Summary, maxSummaryBytes)
			r.Lenses[name] = l
		}
	}
	for i := range s.Findings {
		f := &s.Findings[i]
		if !ValidFindingID(f.ID) || Severity(f.Severity).Rank() < 0 {
			return nil, errors.New("review state: malformed finding")
		}
		switch f.Disposition {
		case DispositionOpen, DispositionFixed, DispositionDismissed:
		default:
			return nil, fmt.Errorf("review state: disposition %q", f.Disposition)
		}
		if f.Disposition == DispositionFixed && !reSHA.MatchString(f.FixCommit) {
			return nil, errors.New("review state: fixed finding without a full fix commit")
		}
		if f.Disposition == DispositionDismissed && f.Reason == "" {
			return nil, errors.New("review state: dismissed finding without a reason")
		}
		f.Title = boundText(f.Title, maxTitleBytes)
		f.Reason = boundText(f.Reason, maxReasonBytes)
		f.Path = cleanPath(f.Path)
	}
	return &s, nil
}

// boundFindings keeps the state within its bounds: every open finding first (they decide the
// next review), then the most recent closed ones; bodies and suggestions are dropped.
func boundFindings(in []Finding) []Finding {
	var open, closed []Finding
	for _, f := range in {
		f.Body, f.Suggestion = "", nil
		if f.Disposition == "" {
			f.Disposition = DispositionOpen
		}
		if f.Disposition == DispositionOpen {
			open = append(open, f)
		} else {
			closed = append(closed, f)
		}
	}
	if len(closed) > maxClosedKept {
		closed = closed[len(closed)-maxClosedKept:]
	}
	out := append(open, closed...)
	if len(out) > maxStateFindings {
		out = out[:maxStateFindings]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
