package builtin

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/viper"
	gitleaks "github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// lensgateRules extends gitleaks' default rule set; see the file for what each rule adds.
//
//go:embed secrets.toml
var lensgateRules string

// SecretRules is gitleaks' default rule set with lensgate's rules appended, compiled: the one
// rule set the secrets lens and the redaction before any model call use. It is read-only once
// built (detection keeps no state but a byte counter), so reviews share it.
type SecretRules struct {
	// cfg is the compiled rule set; split detects with it, scanning less text
	// (gitleakslines.go).
	cfg   gitleaks.Config
	split *splitDetector
	// stop are the stop words taken out of cfg's allowlists (gitleaksstopwords.go).
	stop map[string][]*stopWords
}

// loadSecretRules builds the rule set once per process: compiling some two hundred expressions
// and the allowlists' keyword tries costs tens of milliseconds and about 15 MiB.
var loadSecretRules = sync.OnceValues(func() (*SecretRules, error) { return buildSecretRules(lensgateRules) })

// LoadSecretRules returns the rule set, built on the first call. The error, the same on every
// call, says why the embedded rules do not build.
func LoadSecretRules() (*SecretRules, error) { return loadSecretRules() }

// buildSecretRules compiles gitleaks' default rules followed by extra (rules in gitleaks'
// configuration format).
func buildSecretRules(extra string) (*SecretRules, error) {
	cfg, err := gitleaksConfig(extra)
	if err != nil {
		return nil, err
	}
	stop := compactStopWords(&cfg)
	return &SecretRules{cfg: cfg, stop: stop, split: newSplitDetector(cfg, stop)}, nil
}

// gitleaksConfig compiles gitleaks' default rules followed by extra, as gitleaks does.
func gitleaksConfig(extra string) (cfg gitleaks.Config, err error) {
	// gitleaks compiles a rule's expressions with regexp.MustCompile: a bad expression panics
	// inside Translate. It is an error here, never a panic reaching a review.
	defer func() {
		if p := recover(); p != nil {
			cfg, err = gitleaks.Config{}, fmt.Errorf("secret rules: %v", p)
		}
	}()
	v := viper.New() // not viper's global instance, which gitleaks' own constructor uses
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(gitleaks.DefaultConfig + "\n" + extra)); err != nil {
		return cfg, fmt.Errorf("secret rules: read: %w", err)
	}
	var vc gitleaks.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return cfg, fmt.Errorf("secret rules: decode: %w", err)
	}
	if cfg, err = vc.Translate(); err != nil {
		return cfg, fmt.Errorf("secret rules: %w", err)
	}
	return cfg, nil
}

// redactOnly are rules whose matches are withheld from a model but are not findings: a body of
// base64 lines is a key only in context a hunk may not show, and certificates look the same.
var redactOnly = map[string]bool{"private-key-body": true}

// detect runs the rule set over text (lines joined by "\n"; path may be "").
func (s *SecretRules) detect(path, text string) []report.Finding {
	fs, _ := s.split.detect(detect.Fragment{Raw: text, FilePath: path})
	return sortGitleaks(fs)
}

// sortGitleaks orders gitleaks findings of one fragment.
func sortGitleaks(fs []report.Finding) []report.Finding {
	// A stable order, rules for a token's format before generic ones, whatever order the rule
	// set keeps its rules in: one secret is always named by the same rule.
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		switch {
		case a.StartLine != b.StartLine:
			return a.StartLine < b.StartLine
		case genericRules[a.RuleID] != genericRules[b.RuleID]:
			return !genericRules[a.RuleID]
		case a.StartColumn != b.StartColumn:
			return a.StartColumn < b.StartColumn
		}
		return a.RuleID < b.RuleID
	})
	return fs
}

// secretKind is how the secrets lens reports a rule: its severity and title.
type secretKind struct {
	severity string
	title    string
}

// secretKinds names the rules whose severity is not the default (high). Provider tokens and
// private keys are critical; rules that judge by a key name, a neighbouring line and entropy,
// not by a token's format, are medium: they flag for a human, they do not fail a gate alone.
var secretKinds = map[string]secretKind{
	"private-key":             {runtime.SeverityCritical, "Private key committed"},
	"putty-private-key":       {runtime.SeverityCritical, "PuTTY private key committed"},
	"aws-access-token":        {runtime.SeverityCritical, "AWS access key id committed"},
	"aws-secret-access-key":   {runtime.SeverityCritical, "AWS secret access key committed"},
	"github-pat":              {runtime.SeverityCritical, "GitHub token committed"},
	"github-oauth":            {runtime.SeverityCritical, "GitHub token committed"},
	"github-app-token":        {runtime.SeverityCritical, "GitHub token committed"},
	"github-refresh-token":    {runtime.SeverityCritical, "GitHub token committed"},
	"github-fine-grained-pat": {runtime.SeverityCritical, "GitHub fine-grained token committed"},
	"stripe-access-token":     {runtime.SeverityCritical, "Stripe key committed"},
	"openai-api-key":          {runtime.SeverityCritical, "OpenAI API key committed"},
	"anthropic-api-key":       {runtime.SeverityCritical, "Anthropic API key committed"},
	"generic-api-key":         {runtime.SeverityMedium, "Hard-coded credential"},
	"credential-assignment":   {runtime.SeverityMedium, "Hard-coded credential"},
	"credential-literal":      {runtime.SeverityMedium, "Hard-coded credential"},
	"google-api-key":          {runtime.SeverityHigh, "Google API key committed"},
	"gcp-api-key":             {runtime.SeverityHigh, "Google API key committed"},
	"jwt":                     {runtime.SeverityMedium, "JSON Web Token committed"},
	"kubernetes-secret-data":  {runtime.SeverityMedium, "Kubernetes Secret value committed"},
	"kubernetes-secret-yaml":  {runtime.SeverityHigh, "Kubernetes Secret value committed"},
	"url-credentials":         {runtime.SeverityHigh, "Password in a connection URL"},
}

func kindOf(f report.Finding) secretKind {
	if k, ok := secretKinds[f.RuleID]; ok {
		return k
	}
	title := strings.TrimSpace(f.Description)
	if i := strings.IndexAny(title, ",."); i > 0 {
		title = title[:i]
	}
	return secretKind{runtime.SeverityHigh, "Secret committed (" + f.RuleID + "): " + title}
}

// publicMarker matches the leading part of a token that only names its kind ("AKIA", "ghp_",
// "sk_live_", "xoxb-", "github_pat_"); a finding may show it, never the rest.
var publicMarker = regexp.MustCompile(`^(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9]|AIza|github_pat_|SG\.|[a-z]{2,6}[_-](?:[a-z]{2,6}[_-])?)`)

func markerLen(secret string) int {
	return len(publicMarker.FindString(secret))
}

// notFindings are rules the secrets lens does not report: redaction-only rules, gitleaks' own
// private key rule (the PEM check in lines.go reports keys, telling real ones from stubs) and its
// Kubernetes Secret rule (kubernetes-secret-data reports every value, not only the first).
var notFindings = map[string]bool{"private-key": true, "kubernetes-secret-yaml": true}

// generic rules judge by a key name and entropy: like gitleaks, a generic finding is not reported
// when a rule for a specific token format reported a secret on the same line that contains its
// secret, so one token is one finding (and a second token on the line is still found).
var genericRules = map[string]bool{"generic-api-key": true, "credential-assignment": true, "credential-literal": true, "google-api-key": true}

// findings runs the rule set over a file's added lines, as one text so that rules spanning
// lines see them together, and reports each secret on the added line it is on.
func (s *SecretRules) findings(path string, added []diff.Line) ([]runtime.Finding, *secretScan) {
	if len(added) == 0 {
		return nil, nil
	}
	var text strings.Builder
	n := len(added) - 1
	for _, l := range added {
		n += min(len(l.Text), maxScanLine)
	}
	text.Grow(n)
	for i, l := range added {
		if i > 0 {
			text.WriteByte('\n')
		}
		t := l.Text
		if len(t) > maxScanLine {
			t = t[:maxScanLine]
		}
		text.Write(t)
	}
	var out []runtime.Finding
	specific := map[int][]string{} // secrets of specific rules, by line
	found, generic := s.split.detect(detect.Fragment{Raw: text.String(), FilePath: path})
	found = sortGitleaks(found)
	scan := &secretScan{added: added, text: text.String(), found: found, generic: generic}
	// Specific rules first, so a generic match on the same line is known to repeat one.
	fs := slices.Clone(found)
	sort.SliceStable(fs, func(i, j int) bool { return !genericRules[fs[i].RuleID] && genericRules[fs[j].RuleID] })
	for _, f := range fs {
		if redactOnly[f.RuleID] || notFindings[f.RuleID] || f.StartLine < 0 || f.StartLine >= len(added) {
			continue
		}
		if genericRules[f.RuleID] && slices.ContainsFunc(specific[f.StartLine], func(s string) bool { return strings.Contains(s, f.Secret) }) {
			continue
		}
		if !genericRules[f.RuleID] {
			specific[f.StartLine] = append(specific[f.StartLine], f.Secret)
		}
		k := kindOf(f)
		secret := []byte(f.Secret)
		out = append(out, runtime.Finding{
			Rule: f.RuleID, Severity: k.severity, Path: path, Line: added[f.StartLine].New, Title: k.title,
			Message: "A credential (" + redact(secret, markerLen(f.Secret)) + ") is added in this change. Remove it, " +
				"rotate it now (it is in the history), and load it from a secret store instead.",
			Key: lineKey(secret),
		})
	}
	return out, scan
}

// secretScan is one file's detection, which the repository's allowlists and gitleaks' names
// read again (finish).
type secretScan struct {
	// added are the file's added lines, text what was scanned: added joined by "\n".
	added []diff.Line
	text  string
	// found are the rule set's findings; generic are those of gitleaks' generic-api-key rule
	// alone, before gitleaks drops the ones another rule repeats.
	found, generic []report.Finding
}

// newLine is the line in the new file of line i of the scanned text, or -1.
func (sc *secretScan) newLine(i int) int {
	if i < 0 || i >= len(sc.added) {
		return -1
	}
	return sc.added[i].New
}

// fixtureFinding lowers a secret found under a test or fixture path to low severity: keys and
// tokens there are fixtures far more often than leaks, so they are shown and never block.
func fixtureFinding(f *runtime.Finding) {
	f.Severity = runtime.SeverityLow
	f.Message += " It is under a test or fixture path, so it is reported at low severity and does not block the gate; " +
		"if it is a real credential, it still needs rotating."
}
