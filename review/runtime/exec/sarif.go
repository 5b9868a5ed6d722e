package exec

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// isSARIF reports whether an adapter's output is a SARIF log rather than an ASDD review: a
// JSON object with version "2.1.0" and a runs array.
func isSARIF(data []byte) bool {
	var head struct {
		Version string          `json:"version"`
		Runs    json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return false
	}
	return head.Version == "2.1.0" && len(head.Runs) > 0 && head.Runs[0] == '['
}

// maxSARIFResults bounds the results read from one log.
const maxSARIFResults = 5000

// sarifReports turns a SARIF 2.1.0 log (golangci-lint, semgrep, ruff… run by an adapter) into a
// report for every lens of the request: a linter has no lenses, so each lens the adapter was
// asked for gets its results. As reviewdog filters a linter's output to the diff, a result is
// kept only on a line the change adds (or, without a line, on a changed file); the summary
// counts the ones dropped.
func sarifReports(data []byte, req *runtime.Request) ([]runtime.LensReport, error) {
	log, err := sarif.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("parse SARIF: %w", err)
	}
	inDiff := addedLines(req.Files)
	var fs []runtime.Finding
	var tools []string
	total, dropped := 0, 0
	for _, run := range log.Runs {
		if run == nil {
			continue
		}
		rules := map[string]*sarif.ReportingDescriptor{}
		name := "SARIF tool"
		if run.Tool != nil && run.Tool.Driver != nil {
			if run.Tool.Driver.Name != nil {
				name = *run.Tool.Driver.Name
			}
			for _, r := range run.Tool.Driver.Rules {
				if r != nil && r.ID != nil {
					rules[*r.ID] = r
				}
			}
		}
		tools = append(tools, name)
		for _, res := range run.Results {
			if res == nil {
				continue
			}
			total++
			if total > maxSARIFResults {
				return nil, fmt.Errorf("SARIF log has more than %d results", maxSARIFResults)
			}
			f, ok := sarifFinding(res, rules, inDiff)
			if !ok {
				dropped++
				continue
			}
			fs = append(fs, f)
		}
	}
	verdict := runtime.VerdictOK
	for _, f := range fs {
		switch f.Severity {
		case runtime.SeverityCritical, runtime.SeverityHigh:
			verdict = runtime.VerdictRequestChanges
		case runtime.SeverityMedium:
			if verdict == runtime.VerdictOK {
				verdict = runtime.VerdictConcerns
			}
		}
	}
	summary := fmt.Sprintf("%s reported %d result(s) on the changed lines", strings.Join(tools, ", "), len(fs))
	if dropped > 0 {
		summary += fmt.Sprintf("; %d outside the diff were dropped", dropped)
	}
	summary += "."
	out := make([]runtime.LensReport, 0, len(req.Lenses))
	for _, l := range req.Lenses {
		out = append(out, runtime.LensReport{Lens: l.Name, Verdict: verdict, Summary: summary,
			Findings: append([]runtime.Finding(nil), fs...)})
	}
	return out, nil
}

// sarifFinding maps one result; ok is false when it lies outside the diff.
func sarifFinding(res *sarif.Result, rules map[string]*sarif.ReportingDescriptor, inDiff map[string]map[int]bool) (runtime.Finding, bool) {
	ruleID := ""
	if res.RuleID != nil {
		ruleID = *res.RuleID
	}
	rule := rules[ruleID]
	path, line := "", 0
	for _, loc := range res.Locations {
		if loc == nil || loc.PhysicalLocation == nil || loc.PhysicalLocation.ArtifactLocation == nil ||
			loc.PhysicalLocation.ArtifactLocation.URI == nil {
			continue
		}
		path = matchPath(*loc.PhysicalLocation.ArtifactLocation.URI, inDiff)
		if r := loc.PhysicalLocation.Region; r != nil && r.StartLine != nil {
			line = *r.StartLine
		}
		break
	}
	lines, changed := inDiff[path]
	if path == "" || !changed || (line > 0 && !lines[line]) {
		return runtime.Finding{}, false
	}
	msg := ""
	if res.Message != nil && res.Message.Text != nil {
		msg = *res.Message.Text
	}
	title := ruleID
	if rule != nil && rule.ShortDescription != nil && rule.ShortDescription.Text != nil {
		title = *rule.ShortDescription.Text
	}
	if title == "" {
		title = msg
	}
	if rule != nil && rule.Help != nil && rule.Help.Text != nil && *rule.Help.Text != "" && *rule.Help.Text != msg {
		msg += " Fix: " + *rule.Help.Text
	}
	return runtime.Finding{
		Rule: ruleID, Severity: sarifSeverity(res, rule), Path: path, Line: line, Title: title, Message: msg,
		Key: msg,
	}, true
}

// sarifSeverity maps a result's level (or its rule's default level; "warning" when neither
// says, as SARIF defines) onto lensgate's scale. A numeric "security-severity" property, the
// CVSS-like score GitHub code scanning reads, takes precedence: 9.0 and up is critical, 7.0
// high, 4.0 medium, anything above 0 low.
func sarifSeverity(res *sarif.Result, rule *sarif.ReportingDescriptor) string {
	for _, bag := range []*sarif.PropertyBag{res.Properties, ruleProps(rule)} {
		if bag == nil {
			continue
		}
		if s, ok := securitySeverity(bag.Properties["security-severity"]); ok {
			switch {
			case s >= 9:
				return runtime.SeverityCritical
			case s >= 7:
				return runtime.SeverityHigh
			case s >= 4:
				return runtime.SeverityMedium
			case s > 0:
				return runtime.SeverityLow
			}
		}
	}
	level := res.Level
	if level == "" && rule != nil && rule.DefaultConfiguration != nil {
		level = rule.DefaultConfiguration.Level
	}
	switch level {
	case "error":
		return runtime.SeverityHigh
	case "note":
		return runtime.SeverityLow
	case "none":
		return runtime.SeverityInfo
	}
	return runtime.SeverityMedium
}

func ruleProps(rule *sarif.ReportingDescriptor) *sarif.PropertyBag {
	if rule == nil {
		return nil
	}
	return rule.Properties
}

func securitySeverity(v any) (float64, bool) {
	switch x := v.(type) {
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	case float64:
		return x, true
	}
	return 0, false
}

// addedLines lists, per changed file, the lines the diff adds.
func addedLines(files []diff.File) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	for i := range files {
		f := &files[i]
		if f.NewPath == "" {
			continue
		}
		lines := map[int]bool{}
		f.Walk(func(l diff.Line) bool {
			if l.Kind == '+' {
				lines[l.New] = true
			}
			return true
		})
		out[f.NewPath] = lines
	}
	return out
}

// matchPath maps a result's artifact URI (relative, "./"-prefixed, or an absolute file: URI
// or path of the checkout the tool ran in) onto a changed file's path; "" when none matches.
func matchPath(uri string, inDiff map[string]map[int]bool) string {
	p := uri
	if u, err := url.Parse(uri); err == nil && (u.Scheme == "file" || u.Scheme == "") {
		p = u.Path
	}
	p = strings.TrimPrefix(p, "./")
	if _, ok := inDiff[p]; ok {
		return p
	}
	best := ""
	for changed := range inDiff {
		if strings.HasSuffix(p, "/"+changed) && len(changed) > len(best) {
			best = changed
		}
	}
	return best
}
