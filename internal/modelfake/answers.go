package modelfake

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

var lensLine = regexp.MustCompile(`(?m)^LENS ([a-z0-9_-]+):$`)

// Lenses are the lens names a review request asks about, from its schema, or, for a request
// without one, from the system message's "LENS name:" lines.
func (r Request) Lenses() []string {
	if r.Schema == nil {
		var names []string
		for _, m := range lensLine.FindAllStringSubmatch(r.System, -1) {
			names = append(names, m[1])
		}
		return names
	}
	var s struct {
		Properties struct {
			Lenses struct {
				Items struct {
					Properties struct {
						Lens struct {
							Enum []string `json:"enum"`
						} `json:"lens"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"lenses"`
		} `json:"properties"`
	}
	if json.Unmarshal(r.Schema, &s) != nil {
		return nil
	}
	return s.Properties.Lenses.Items.Properties.Lens.Enum
}

// IsJudge reports whether the request is a judge call.
func (r Request) IsJudge() bool { return r.SchemaName == "lensgate_judge" }

// Diff is the diff a review request carries: the part of the fenced user message after its
// "## Diff" heading, up to the next heading (the code around the changes) or the fence.
func (r Request) Diff() string {
	rest := r.fenced("\n## Diff\n")
	if i := strings.Index(rest, "\n## "); i >= 0 { // no diff line starts with '#'
		rest = rest[:i+1]
	}
	return rest
}

// Code is the code around the changes a review request carries ("" when none).
func (r Request) Code() string { return r.fenced("\n## Code around the changes") }

// fenced is the user message after heading up to the closing fence ("" without the heading).
func (r Request) fenced(heading string) string {
	_, rest, ok := strings.Cut(r.User, heading)
	if !ok {
		return ""
	}
	if i := strings.LastIndex(rest, "\nLENSGATE_UNTRUSTED_DATA_"); i >= 0 {
		rest = rest[:i+1]
	}
	return rest
}

// Finding is one finding of a review answer.
type Finding struct {
	Path     string
	Line     int
	Severity string // note, warn or block
	Title    string
	Message  string
}

// ReviewAnswer is an asdd/review/v0.1 answer giving every lens its findings; a lens with a
// block finding asks for changes, one with other findings has concerns, one without is ok.
func ReviewAnswer(lenses []string, findings map[string][]Finding) string {
	type jf struct {
		Path       string `json:"path"`
		Severity   string `json:"severity"`
		Title      string `json:"title"`
		Message    string `json:"message"`
		Suggestion any    `json:"suggestion"`
	}
	type jl struct {
		Lens     string `json:"lens"`
		Findings []jf   `json:"findings"`
		Summary  string `json:"summary"`
		Verdict  string `json:"verdict"`
	}
	out := struct {
		Schema         string `json:"schema"`
		Lenses         []jl   `json:"lenses"`
		Summary        string `json:"summary"`
		Recommendation string `json:"recommendation"`
	}{Schema: "asdd/review/v0.1", Summary: "Reviewed.", Recommendation: "comment"}
	for _, name := range lenses {
		l := jl{Lens: name, Findings: []jf{}, Verdict: "ok"}
		for _, f := range findings[name] {
			where := f.Path
			if f.Line > 0 {
				where = fmt.Sprintf("%s:%d", f.Path, f.Line)
			}
			l.Findings = append(l.Findings, jf{Path: where, Severity: f.Severity, Title: f.Title, Message: f.Message})
			switch {
			case f.Severity == "block":
				l.Verdict = "request-changes"
			case l.Verdict == "ok":
				l.Verdict = "concerns"
			}
		}
		l.Summary = fmt.Sprintf("%d finding(s).", len(l.Findings))
		if l.Verdict == "request-changes" {
			out.Recommendation = "request-changes"
		}
		out.Lenses = append(out.Lenses, l)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// JudgeAnswer is a judge answer: same, or different.
func JudgeAnswer(same bool) string {
	verdict := "different"
	if same {
		verdict = "same"
	}
	return `{"schema":"lensgate/judge/v1","reason":"Compared.","verdict":"` + verdict + `"}`
}

// JudgeTexts splits a judge request into the known defect and the reported finding it compares.
func (r Request) JudgeTexts() (known, reported string) {
	_, rest, _ := strings.Cut(r.User, "## KNOWN defect\n")
	known, rest, _ = strings.Cut(rest, "\n\n## REPORTED finding\n")
	if i := strings.LastIndex(rest, "\nLENSGATE_UNTRUSTED_DATA_"); i >= 0 {
		rest = rest[:i]
	}
	return known, rest
}
