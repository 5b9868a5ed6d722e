package builtin

import (
	"regexp"
	"strings"

	"github.com/lensgate/lensgate/review/pathglob"
	"github.com/lensgate/lensgate/review/runtime"
)

// codeExts are source files whose behaviour tests are expected to cover.
var codeExts = map[string]bool{
	".go": true, ".py": true, ".js": true, ".jsx": true, ".ts": true, ".tsx": true, ".java": true,
	".kt": true, ".rs": true, ".rb": true, ".php": true, ".cs": true, ".c": true, ".cc": true,
	".cpp": true, ".h": true, ".hpp": true, ".swift": true, ".scala": true, ".ex": true, ".exs": true,
}

func ext(path string) string {
	base := path[strings.LastIndexByte(path, '/')+1:]
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return strings.ToLower(base[i:])
	}
	return ""
}

// isTestPath recognises the test-file conventions of the common ecosystems.
func isTestPath(path string) bool {
	lower := strings.ToLower(path)
	base := lower[strings.LastIndexByte(lower, '/')+1:]
	switch {
	case strings.HasSuffix(base, "_test.go"),
		strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".py"),
		strings.HasSuffix(base, "_test.py"),
		strings.Contains(base, ".test."), strings.Contains(base, ".spec."),
		strings.HasSuffix(base, "test.java"), strings.HasSuffix(base, "tests.java"),
		strings.HasSuffix(base, "_spec.rb"), strings.HasSuffix(base, "_test.rb"),
		strings.HasSuffix(base, "tests.cs"), strings.HasSuffix(base, "test.kt"):
		return true
	}
	for _, seg := range strings.Split(lower, "/") {
		switch seg {
		case "test", "tests", "__tests__", "spec", "testdata", "testing":
			return true
		}
	}
	return false
}

// checkTests reports code that changed while no test changed.
func checkTests(req *runtime.Request, ignore *pathglob.Set) []runtime.Finding {
	var code []string
	for _, c := range req.Changed {
		if c.Status == "removed" || ignore.Match(c.Path) {
			continue
		}
		if isTestPath(c.Path) {
			return nil
		}
		if codeExts[ext(c.Path)] {
			code = append(code, c.Path)
		}
	}
	if len(code) == 0 {
		return nil
	}
	msg := "Code changed in " + code[0]
	if len(code) > 1 {
		msg += " and " + itoa(len(code)-1) + " other file(s)"
	}
	msg += " but no test file changed. Add or update a test that exercises the new behaviour."
	return []runtime.Finding{{
		Rule: "code-without-tests", Severity: runtime.SeverityLow, Path: code[0],
		Title: "Code changed without tests", Message: msg, Key: "tests",
	}}
}

var pathToken = regexp.MustCompile(`[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)+`)

// HasSpec reports whether a change adds or modifies a spec file, or whether its body names one.
// The body mention is accepted as written; whether the file exists is the reviewer's question.
func HasSpec(specPaths []string, changed []runtime.Changed, body string) bool {
	specs := pathglob.Compile(specPaths)
	for _, c := range changed {
		if c.Status != "removed" && specs.Match(c.Path) {
			return true
		}
	}
	for _, tok := range pathToken.FindAllString(body, 200) {
		if !strings.Contains(tok, "..") && specs.Match(tok) {
			return true
		}
	}
	return false
}

func checkSpec(req *runtime.Request) []runtime.Finding {
	if !req.Settings.RequireSpec {
		return nil
	}
	for _, l := range req.Subject.Labels {
		if l == "chore" {
			return nil
		}
	}
	if HasSpec(req.Settings.SpecPaths, req.Changed, req.Subject.Body) {
		return nil
	}
	return []runtime.Finding{{
		Rule: "missing-spec", Severity: runtime.SeverityHigh,
		Title: "No spec for this change",
		Message: "This repository requires a spec (require_spec): add one under " +
			strings.Join(req.Settings.SpecPaths, ", ") + " in this change, or name an existing spec path in the description.",
		Key: "spec",
	}}
}

// triageRules pick labels from keywords of the title and body; only configured triage
// labels are ever returned.
var triageRules = []struct {
	label string
	re    *regexp.Regexp
}{
	{"security", regexp.MustCompile(`(?i)\b(vulnerab\w*|security|exploit\w*|cve-\d+|xss|injection|leak\w*)\b`)},
	{"bug", regexp.MustCompile(`(?i)\b(bug|crash\w*|error|panic\w*|broken|fails?|regression|exception)\b`)},
	{"documentation", regexp.MustCompile(`(?i)\b(docs?|documentation|readme|typo)\b`)},
	{"enhancement", regexp.MustCompile(`(?i)\b(feature|enhancement|support for|would be nice|proposal|add (a|an|support))\b`)},
}

func triage(req *runtime.Request) *runtime.Triage {
	allowed := map[string]bool{}
	for _, l := range req.Settings.TriageLabels {
		allowed[l] = true
	}
	text := req.Subject.Title + "\n" + req.Subject.Body
	if len(text) > 64<<10 {
		text = text[:64<<10]
	}
	var labels []string
	for _, r := range triageRules {
		if allowed[r.label] && r.re.MatchString(text) {
			labels = append(labels, r.label)
		}
	}
	if len(labels) == 0 && allowed["needs-triage"] {
		labels = append(labels, "needs-triage")
	}
	comment := "Thanks for the report. This is an automated triage: a maintainer will take it from here."
	for _, l := range labels {
		if l == "security" {
			comment = "Thanks for the report. This is an automated triage. If this is a vulnerability, please " +
				"do not discuss details here; report it privately through the repository's security advisories."
		}
	}
	return &runtime.Triage{Labels: labels, Comment: comment}
}
