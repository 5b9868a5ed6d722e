package builtin

import (
	"strings"

	gitleaks "github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// gitleaksGenericRule is gitleaks' rule for credentials judged by a key name and entropy.
const gitleaksGenericRule = "generic-api-key"

// lensgateGeneric are lensgate's own rules that find what generic-api-key finds, and more.
var lensgateGeneric = map[string]bool{"credential-literal": true, "credential-assignment": true}

// newGenericDetector is gitleaks' generic-api-key rule alone, with the rule set's global
// allowlists, from the compiled rule set base.
func newGenericDetector(base *detect.Detector) *detect.Detector {
	r := base.Config.Rules[gitleaksGenericRule]
	kw := map[string]struct{}{}
	for _, k := range r.Keywords {
		kw[k] = struct{}{}
	}
	d := detect.NewDetector(gitleaks.Config{
		Rules: map[string]gitleaks.Rule{r.RuleID: r}, Keywords: kw, OrderedRules: []string{r.RuleID},
		Allowlists: base.Config.Allowlists,
	})
	d.MaxDecodeDepth = 0
	return d
}

// nameAsGitleaks names a finding of lensgate's credential rules generic-api-key when gitleaks'
// own rule finds the same secret on the same line. In one rule set gitleaks keeps a specific
// rule's finding over a generic one's for the same secret, and lensgate's rules are not named
// generic, so without this the secret would carry lensgate's name where gitleaks reports
// generic-api-key. A finding gitleaks would not report keeps lensgate's name.
func (s *SecretRules) nameAsGitleaks(f *diff.File, fs []runtime.Finding) {
	lines := map[int]bool{}
	for _, fd := range fs {
		if lensgateGeneric[fd.Rule] {
			lines[fd.Line] = true
		}
	}
	if len(lines) == 0 {
		return
	}
	path := f.Path()
	added, text := addedText(f)
	newLine := func(i int) int {
		if i < 0 || i >= len(added) {
			return -1
		}
		return added[i].New
	}
	generic := map[int][]string{}
	for _, g := range s.generic.Detect(detect.Fragment{Raw: text, FilePath: path}) {
		if l := newLine(g.StartLine); lines[l] {
			generic[l] = append(generic[l], g.Secret)
		}
	}
	if len(generic) == 0 {
		return
	}
	renamed := map[lineRule]bool{}
	for _, c := range s.detect(path, text) {
		l := newLine(c.StartLine)
		if !lensgateGeneric[c.RuleID] || len(generic[l]) == 0 {
			continue
		}
		for _, s := range generic[l] {
			if strings.Contains(c.Secret, s) { // gitleaks' own test of one secret
				renamed[lineRule{l, c.RuleID}] = true
			}
		}
	}
	for i := range fs {
		if renamed[lineRule{fs[i].Line, fs[i].Rule}] {
			fs[i].Rule = gitleaksGenericRule
		}
	}
}
