package builtin

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/viper"
	gitleaks "github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// repoSecrets applies a repository's own gitleaks settings from its base branch to the secrets
// lens, through gitleaks' own mechanisms: the allowlists of .gitleaks.toml join the rule set of
// a detector made for the review (gitleaks evaluates them as it detects), and .gitleaksignore's
// fingerprints are loaded with gitleaks' reader and checked as gitleaks adds a finding.
type repoSecrets struct {
	// rules is the shared rule set the repository's settings apply to.
	rules *SecretRules
	// allow is the rule set with the repository's allowlists; nil when it has none.
	allow *splitDetector
	// ignore holds .gitleaksignore; nil without one. Its finding list grows with the review.
	ignore *detect.Detector
	// problems says what could not be applied.
	problems []string
}

// newRepoSecrets reads the repository's gitleaks files; nil when there are none.
func newRepoSecrets(s runtime.Settings, rules *SecretRules) (*repoSecrets, error) {
	if len(s.SecretsIgnore) == 0 && len(s.SecretsConfig) == 0 && s.SecretsProblems == "" {
		return nil, nil
	}
	base := rules.cfg
	var err error
	rs := &repoSecrets{rules: rules}
	if s.SecretsProblems != "" {
		rs.problems = append(rs.problems, s.SecretsProblems)
	}
	if len(s.SecretsConfig) > 0 {
		global, perRule, err := repoAllowlists(s.SecretsConfig, base.Rules)
		if err != nil {
			rs.problems = append(rs.problems, ".gitleaks.toml not applied: "+err.Error())
		} else if len(global)+len(perRule) > 0 {
			rs.allow = withAllowlists(base, rules.stop, global, perRule)
		}
	}
	if len(s.SecretsIgnore) > 0 {
		rs.ignore, err = ignoreDetector(s.SecretsIgnore)
		if err != nil {
			rs.problems = append(rs.problems, ".gitleaksignore not applied: "+err.Error())
		}
	}
	return rs, nil
}

// withAllowlists is a detector of the rule set cfg with the repository's allowlists added, global
// and per rule. The compiled rules are shared; only the lists differ.
func withAllowlists(cfg gitleaks.Config, stop map[string][]*stopWords, global []*gitleaks.Allowlist, perRule map[string][]*gitleaks.Allowlist) *splitDetector {
	cfg.Allowlists = append(slices.Clone(cfg.Allowlists), global...)
	cfg.Rules = maps.Clone(cfg.Rules)
	for id, als := range perRule {
		r := cfg.Rules[id]
		r.Allowlists = append(slices.Clone(r.Allowlists), als...)
		cfg.Rules[id] = r
	}
	return newSplitDetector(cfg, stop)
}

// ignoreDetector loads .gitleaksignore with gitleaks' own reader, which takes a file path. The
// detector only checks fingerprints as findings are added, so it needs no rules.
func ignoreDetector(data []byte) (*detect.Detector, error) {
	f, err := os.CreateTemp("", "lensgate-gitleaksignore-*")
	if err != nil {
		return nil, fmt.Errorf("stage the file: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("stage the file: %w", werr)
	}
	d := detect.NewDetector(gitleaks.Config{})
	if err := d.AddGitleaksIgnore(f.Name()); err != nil {
		return nil, err
	}
	return d, nil
}

// repoAllowlists decodes the allowlists of a repository's .gitleaks.toml: the global ones
// ([[allowlists]], the older [allowlist]; with targetRules they apply to those rules only) and
// those of [[rules]] whose id is a rule of the rule set. The rest of the file (its own rules,
// [extend]) does not apply: the rule set is lensgate's. gitleaks' own Translate is not used on
// the file because it reads [extend]'s path from the server's disk, keeps package-level state
// and panics on a bad expression; the allowlists it builds are gitleaks' type, checked by its
// Validate, and evaluated by its detector.
func repoAllowlists(data []byte, rules map[string]gitleaks.Rule) ([]*gitleaks.Allowlist, map[string][]*gitleaks.Allowlist, error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(string(data))); err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	var vc gitleaks.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, nil, fmt.Errorf("decode: %w", err)
	}
	var global []*gitleaks.Allowlist
	perRule := map[string][]*gitleaks.Allowlist{}
	globals := vc.Allowlists
	if vc.AllowList != nil {
		globals = append(globals, vc.AllowList)
	}
	for _, a := range globals {
		al, err := allowlist(a.Description, a.Condition, a.RegexTarget, a.Commits, a.Paths, a.Regexes, a.StopWords)
		if err != nil {
			return nil, nil, fmt.Errorf("[[allowlists]] %w", err)
		}
		if len(a.TargetRules) == 0 {
			global = append(global, al)
		}
		for _, id := range a.TargetRules {
			if _, ok := rules[id]; ok {
				perRule[id] = append(perRule[id], al)
			}
		}
	}
	for _, r := range vc.Rules {
		if _, ok := rules[r.ID]; !ok {
			continue
		}
		als := r.Allowlists
		if r.AllowList != nil {
			als = append(als, r.AllowList)
		}
		for _, a := range als {
			al, err := allowlist(a.Description, a.Condition, a.RegexTarget, a.Commits, a.Paths, a.Regexes, a.StopWords)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: [[rules.allowlists]] %w", r.ID, err)
			}
			perRule[r.ID] = append(perRule[r.ID], al)
		}
	}
	return global, perRule, nil
}

// allowlist builds one gitleaks allowlist the way gitleaks' configuration reader does, but
// with a bad expression an error instead of a panic.
func allowlist(desc, condition, target string, commits, paths, regexes, stopWords []string) (*gitleaks.Allowlist, error) {
	a := &gitleaks.Allowlist{Description: desc, Commits: commits, StopWords: stopWords}
	switch strings.ToUpper(condition) {
	case "AND", "&&":
		a.MatchCondition = gitleaks.AllowlistMatchAnd
	case "", "OR", "||":
		a.MatchCondition = gitleaks.AllowlistMatchOr
	default:
		return nil, fmt.Errorf("unknown condition %q (expected and, or)", condition)
	}
	switch target {
	case "", "secret":
	case "match", "line":
		a.RegexTarget = target
	default:
		return nil, fmt.Errorf("unknown regexTarget %q (expected match, line)", target)
	}
	for _, list := range []struct {
		src []string
		dst *[]*regexp.Regexp
	}{{regexes, &a.Regexes}, {paths, &a.Paths}} {
		for _, s := range list.src {
			re, err := regexp.Compile(s)
			if err != nil {
				return nil, fmt.Errorf("expression %q: %w", s, err)
			}
			*list.dst = append(*list.dst, re)
		}
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return a, nil
}

// allowed drops the secrets findings of one file that the repository's allowlists allow. A
// finding is dropped only when the shared rule set reports its rule on its line and the
// repository's does not, so a finding the allowlists never saw (a private key found by the PEM
// check on another line) is kept.
func (rs *repoSecrets) allowed(f *diff.File, scan *secretScan, fs []runtime.Finding) []runtime.Finding {
	if rs == nil || rs.allow == nil || len(fs) == 0 || scan == nil {
		return fs
	}
	dropped := map[lineRule]bool{}
	for _, g := range scan.found {
		if l := scan.newLine(g.StartLine); l >= 0 {
			dropped[lineRule{l, g.RuleID}] = true
		}
	}
	kept, _ := rs.allow.detect(detect.Fragment{Raw: scan.text, FilePath: f.Path()})
	for _, g := range kept {
		if l := scan.newLine(g.StartLine); l >= 0 {
			delete(dropped, lineRule{l, g.RuleID})
		}
	}
	out := fs[:0:0]
	for _, fd := range fs {
		if !dropped[lineRule{fd.Line, fd.Rule}] {
			out = append(out, fd)
		}
	}
	return out
}

// unignored drops the findings whose fingerprint .gitleaksignore holds (file:rule-id:line, the
// line of the new file as gitleaks numbers a file's lines): gitleaks is asked to add each one,
// and skips those it ignores.
func (rs *repoSecrets) unignored(path string, fs []runtime.Finding) []runtime.Finding {
	if rs == nil || rs.ignore == nil || len(fs) == 0 {
		return fs
	}
	out := fs[:0:0]
	for _, fd := range fs {
		n := len(rs.ignore.Findings())
		rs.ignore.AddFinding(report.Finding{File: path, RuleID: fd.Rule, StartLine: fd.Line})
		if len(rs.ignore.Findings()) > n {
			out = append(out, fd)
		}
	}
	return out
}

type lineRule struct {
	line int
	rule string
}

// problemFinding tells the reader that the repository's gitleaks settings were not all applied.
func (rs *repoSecrets) problemFinding() []runtime.Finding {
	if rs == nil || len(rs.problems) == 0 {
		return nil
	}
	return []runtime.Finding{{
		Rule: "gitleaks-settings", Severity: runtime.SeverityInfo, Key: "gitleaks-settings",
		Title:   "Repository gitleaks settings not fully applied",
		Message: strings.Join(rs.problems, "; ") + ". Findings they would allow or ignore are reported.",
	}}
}
