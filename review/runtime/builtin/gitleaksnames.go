package builtin

import (
	"strings"

	"github.com/lensgate/lensgate/review/runtime"
)

// gitleaksGenericRule is gitleaks' rule for credentials judged by a key name and entropy.
const gitleaksGenericRule = "generic-api-key"

// lensgateGeneric are lensgate's own rules that find what generic-api-key finds, and more.
var lensgateGeneric = map[string]bool{"credential-literal": true, "credential-assignment": true}

// nameAsGitleaks names a finding of lensgate's credential rules generic-api-key when gitleaks'
// own rule finds the same secret on the same line. In one rule set gitleaks keeps a specific
// rule's finding over a generic one's for the same secret, and lensgate's rules are not named
// generic, so without this the secret would carry lensgate's name where gitleaks reports
// generic-api-key. A finding gitleaks would not report keeps lensgate's name. scan is the
// file's detection, which holds generic-api-key's own findings.
func nameAsGitleaks(scan *secretScan, fs []runtime.Finding) {
	lines := map[int]bool{}
	for _, fd := range fs {
		if lensgateGeneric[fd.Rule] {
			lines[fd.Line] = true
		}
	}
	if len(lines) == 0 || scan == nil {
		return
	}
	generic := map[int][]string{}
	for _, g := range scan.generic {
		if l := scan.newLine(g.StartLine); lines[l] {
			generic[l] = append(generic[l], g.Secret)
		}
	}
	if len(generic) == 0 {
		return
	}
	renamed := map[lineRule]bool{}
	for _, c := range scan.found {
		l := scan.newLine(c.StartLine)
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
