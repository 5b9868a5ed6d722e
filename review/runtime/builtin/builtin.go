// Package builtin is lensgate's deterministic, offline reviewer. It needs no network and no
// model: each lens runs a fixed set of checks over the diff (committed secrets and private
// keys, merge-conflict markers, changed CI workflows linted with actionlint and the
// workflow-security rules, disabled TLS verification, protected paths, large binaries, code
// changed without tests, a missing spec where one is required). Each lens summary names the
// checks that ran; none of them reviews what the code does.
package builtin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/pathglob"
	"github.com/lensgate/lensgate/review/runtime"
)

// Name is the runtime's name in .asdd.yml and presets.
const Name = "builtin"

// Check groups. A lens is reviewed by the groups its preset (or, for preset "builtin", its
// name) selects.
const (
	GroupSecrets      = "secrets"
	GroupWorkflows    = "workflows"
	GroupWorkflowLint = "workflow-lint"
	GroupUnicode      = "unicode"
	GroupUnsafe       = "unsafe-code"
	GroupProtected    = "protected"
	GroupConflicts    = "conflicts"
	GroupBinaries     = "binaries"
	GroupTests        = "tests"
	GroupSpec         = "spec"
)

// groupsFor maps a preset or lens name to its check groups. "correctness" is mechanical only
// (conflict markers, workflow validity, large binaries, a required spec): its summary says that
// the logic of the change was not reviewed.
var groupsFor = map[string][]string{
	"security":    {GroupSecrets, GroupWorkflows, GroupUnicode, GroupUnsafe, GroupProtected},
	"secrets":     {GroupSecrets},
	"ci":          {GroupWorkflows, GroupWorkflowLint},
	"workflows":   {GroupWorkflows, GroupWorkflowLint},
	"governance":  {GroupProtected},
	"correctness": {GroupConflicts, GroupWorkflowLint, GroupBinaries, GroupSpec},
	"code":        {GroupConflicts, GroupWorkflowLint, GroupBinaries, GroupSpec},
	"tests":       {GroupTests},
	"spec":        {GroupSpec},
}

// groupTitles say, in the lens summary, what each group checks.
var groupTitles = map[string]string{
	GroupSecrets:      "committed secrets and private keys",
	GroupWorkflows:    "CI workflow security (untrusted input in scripts, pull_request_target, unpinned actions, permissions)",
	GroupWorkflowLint: "CI workflow validity (actionlint)",
	GroupUnicode:      "hidden Unicode",
	GroupUnsafe:       "disabled TLS verification and remote scripts piped to a shell",
	GroupProtected:    "protected paths",
	GroupConflicts:    "merge-conflict markers",
	GroupBinaries:     "large binaries",
	GroupTests:        "whether tests changed with the code",
	GroupSpec:         "a required spec",
}

// mechanical presets check properties of the change, not what its code does; their summary
// says so, so that "passed" is not read as a review of the logic.
var mechanical = map[string]bool{"correctness": true, "code": true}

// Presets lists the presets (and, for preset "builtin", lens names) the builtin runtime has
// checks for, sorted.
func Presets() []string {
	out := make([]string, 0, len(groupsFor))
	for k := range groupsFor {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Describe says what the builtin runtime checks for a preset ("" when it has no checks).
func Describe(preset string) string {
	groups := groupsFor[preset]
	if len(groups) == 0 {
		return ""
	}
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = groupTitles[g]
	}
	return strings.Join(names, "; ")
}

// Groups returns the check groups for a lens, or nil when the builtin runtime has none.
func Groups(l runtime.Lens) []string {
	return groupsFor[checksKey(l)]
}

// checksKey is what selects a lens's checks: its preset, or its name when the preset names the
// runtime itself or is one the builtin runtime does not know (an operator-defined preset mapped
// to the builtin runtime, such as --preset deep=builtin on a lens named security).
func checksKey(l runtime.Lens) string {
	if _, ok := groupsFor[l.Preset]; ok {
		return l.Preset
	}
	if _, ok := groupsFor[l.Name]; ok || l.Preset == Name || l.Preset == "" {
		return l.Name
	}
	return l.Preset
}

// NoChecks explains that the builtin runtime has nothing for a preset, with the nearest known
// preset when the name looks like a typo of one.
func NoChecks(preset string) string {
	msg := fmt.Sprintf("the built-in runtime has no checks for preset %q; use a model runtime or one of: %s",
		preset, strings.Join(Presets(), ", "))
	if s := nearestPreset(preset); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

func nearestPreset(preset string) string { return config.Nearest(preset, Presets()) }

// Options tune the reviewer.
type Options struct {
	// LargeFileBytes is the size above which an added or changed binary is reported
	// (default 1 MiB).
	LargeFileBytes int64
}

// Runtime is the builtin reviewer.
type Runtime struct {
	opts Options
	// secrets is the secret rule set, or why it did not build (secretsErr): a review that
	// needs it then ends with that error.
	secrets    *SecretRules
	secretsErr error
}

// New returns the builtin reviewer. It loads the secret rule set (once per process), so that
// its cost falls on start-up and not on the first review.
func New(opts Options) *Runtime {
	if opts.LargeFileBytes <= 0 {
		opts.LargeFileBytes = 1 << 20
	}
	secrets, err := LoadSecretRules()
	return &Runtime{opts: opts, secrets: secrets, secretsErr: err}
}

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return Name }

// Identity implements runtime.Identified: the builtin runtime is lensgate itself, so the
// observation names lensgate's version and the digest of the running binary.
func (r *Runtime) Identity() runtime.Identity { return runtime.Identity{Kind: runtime.IdentityBuiltin} }

// Review implements runtime.Runtime.
func (r *Runtime) Review(ctx context.Context, req *runtime.Request) (*runtime.Result, error) {
	if req.Kind == runtime.KindTriage {
		return &runtime.Result{Triage: triage(req)}, nil
	}
	needed := map[string]bool{}
	for _, l := range req.Lenses {
		for _, g := range Groups(l) {
			needed[g] = true
		}
	}
	byGroup, err := r.scan(ctx, req, needed)
	if err != nil {
		return nil, err
	}
	res := &runtime.Result{}
	for _, l := range req.Lenses {
		groups := Groups(l)
		if len(groups) == 0 {
			res.Lenses = append(res.Lenses, runtime.LensReport{
				Lens: l.Name, Verdict: runtime.VerdictSkipped, Cause: NoChecks(checksKey(l)),
			})
			continue
		}
		var fs []runtime.Finding
		for _, g := range groups {
			fs = append(fs, byGroup[g]...)
		}
		fs = mergeByRuleAndFile(fs)
		res.Lenses = append(res.Lenses, runtime.LensReport{
			Lens:     l.Name,
			Verdict:  verdict(fs),
			Summary:  summary(checksKey(l), groups, fs),
			Findings: fs,
		})
	}
	return res, nil
}

func verdict(fs []runtime.Finding) string {
	v := runtime.VerdictOK
	for _, f := range fs {
		switch f.Severity {
		case runtime.SeverityCritical, runtime.SeverityHigh:
			return runtime.VerdictRequestChanges
		case runtime.SeverityMedium:
			v = runtime.VerdictConcerns
		}
	}
	return v
}

// summary counts the findings as they are listed, then names what was checked. The result
// comes first: the check run's lens table shows only the start of a summary.
func summary(preset string, groups []string, fs []runtime.Finding) string {
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = groupTitles[g]
	}
	checked := "Checked: " + strings.Join(names, "; ") + "."
	if mechanical[preset] {
		checked = "Mechanical checks only, the logic of the change was not reviewed (that needs a model runtime). " + checked
	}
	if len(fs) == 0 {
		return "Nothing found. " + checked
	}
	counts := map[string]int{}
	for _, f := range fs {
		counts[f.Severity]++
	}
	var parts []string
	for _, s := range []string{runtime.SeverityCritical, runtime.SeverityHigh, runtime.SeverityMedium,
		runtime.SeverityLow, runtime.SeverityInfo} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	return fmt.Sprintf("%d finding(s) (%s). %s", len(fs), strings.Join(parts, ", "), checked)
}

func sortFindings(fs []runtime.Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Path != fs[j].Path {
			return fs[i].Path < fs[j].Path
		}
		if fs[i].Line != fs[j].Line {
			return fs[i].Line < fs[j].Line
		}
		return fs[i].Rule < fs[j].Rule
	})
}

// maxListedLines bounds the line numbers named in one merged finding.
const maxListedLines = 50

// mergeByRuleAndFile makes one finding per rule and file: the first line is the finding's
// line, and the message names every line (with each line's own message when they differ), so
// nothing reported is lost and the counts match what is listed. The merged finding's key is
// the rule and file alone, so its id stays the same when more lines are found.
func mergeByRuleAndFile(fs []runtime.Finding) []runtime.Finding {
	sortFindings(fs)
	type group struct{ items []runtime.Finding }
	byKey := map[[2]string]*group{}
	var order [][2]string
	for _, f := range fs {
		k := [2]string{f.Rule, f.Path}
		g, ok := byKey[k]
		if !ok {
			g = &group{}
			byKey[k] = g
			order = append(order, k)
		}
		g.items = append(g.items, f)
	}
	out := make([]runtime.Finding, 0, len(order))
	for _, k := range order {
		items := byKey[k].items
		if len(items) == 1 {
			out = append(out, items[0])
			continue
		}
		out = append(out, merge(items))
	}
	return out
}

func merge(items []runtime.Finding) runtime.Finding {
	m := items[0]
	m.Key = "rule-and-file"
	m.Suggestion = nil
	same := true
	var lines []string
	seen := map[int]bool{}
	for _, f := range items {
		if rank(f.Severity) > rank(m.Severity) {
			m.Severity = f.Severity
		}
		if f.Message != items[0].Message {
			same = false
		}
		if f.Line > 0 && !seen[f.Line] {
			seen[f.Line] = true
			lines = append(lines, itoa(f.Line))
		}
	}
	more := ""
	if len(lines) > maxListedLines {
		more = fmt.Sprintf(" and %d more", len(lines)-maxListedLines)
		lines = lines[:maxListedLines]
	}
	if same {
		m.Message = fmt.Sprintf("%s (%d places: lines %s%s.)", m.Message, len(items), strings.Join(lines, ", "), more)
		return m
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d places:", len(items))
	for i, f := range items {
		if i == maxListedLines {
			fmt.Fprintf(&b, " … and %d more.", len(items)-i)
			break
		}
		if f.Line > 0 {
			fmt.Fprintf(&b, " Line %d: %s", f.Line, strings.TrimSpace(f.Message))
		} else {
			b.WriteString(" " + strings.TrimSpace(f.Message))
		}
	}
	m.Message = b.String()
	return m
}

// scan runs every needed check group once over the request.
func (r *Runtime) scan(ctx context.Context, req *runtime.Request, needed map[string]bool) (map[string][]runtime.Finding, error) {
	out := map[string][]runtime.Finding{}
	ignore := pathglob.Compile(req.Settings.IgnorePaths)
	classes := newPathClasses(req.Settings)
	var (
		secrets *SecretRules
		repo    *repoSecrets
	)
	if needed[GroupSecrets] {
		if r.secretsErr != nil {
			return nil, fmt.Errorf("builtin review: %w", r.secretsErr)
		}
		secrets = r.secrets
		var err error
		if repo, err = newRepoSecrets(req.Settings, secrets); err != nil {
			return nil, err
		}
		out[GroupSecrets] = repo.problemFinding()
	}

	heads := map[string][]byte{}
	for _, c := range req.Changed {
		if c.HeadContent != nil {
			heads[c.Path] = c.HeadContent
		}
	}
	var added []diff.Line
	for i := range req.Files {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("builtin review interrupted: %w", err)
			}
		}
		f := &req.Files[i]
		path := f.Path()
		if ignore.Match(path) {
			continue
		}
		if needed[GroupSecrets] || needed[GroupConflicts] || needed[GroupUnicode] || needed[GroupUnsafe] {
			n := len(out[GroupSecrets])
			var scan *secretScan
			added, scan = scanLines(f, needed, secrets, out, added)
			out[GroupSecrets] = append(out[GroupSecrets][:n], secrets.finish(f, scan, out[GroupSecrets][n:], repo, classes)...)
		}
		if (needed[GroupWorkflows] || needed[GroupWorkflowLint]) && isWorkflow(path) {
			sec, lint := checkWorkflow(f, heads[path])
			out[GroupWorkflows] = append(out[GroupWorkflows], sec...)
			out[GroupWorkflowLint] = append(out[GroupWorkflowLint], lint...)
		}
	}
	out[GroupUnsafe] = classes.lowerVendored(classes.lowerInTests(out[GroupUnsafe]))
	out[GroupSecrets] = classes.lowerVendored(out[GroupSecrets])
	if needed[GroupProtected] {
		out[GroupProtected] = protectedPaths(req)
	}
	for _, c := range req.Changed {
		path := c.Path
		if ignore.Match(path) {
			continue
		}
		if needed[GroupBinaries] && c.Binary && c.Status != "removed" && c.SizeBytes > r.opts.LargeFileBytes {
			out[GroupBinaries] = append(out[GroupBinaries], runtime.Finding{
				Rule:     "large-binary",
				Severity: runtime.SeverityMedium,
				Path:     path,
				Title:    "Large binary file committed",
				Message: fmt.Sprintf("A %s binary file is added to the repository history for good. "+
					"Consider Git LFS or a release artifact.", humanBytes(c.SizeBytes)),
				Key: path,
			})
		}
	}
	if needed[GroupTests] {
		out[GroupTests] = checkTests(req, ignore)
	}
	if needed[GroupSpec] {
		out[GroupSpec] = checkSpec(req)
	}
	return out, nil
}

// maxListedPaths bounds the files named in one protected-paths note.
const maxListedPaths = 10

// protectedPaths notes the changed files under each protected_paths pattern, one note per
// pattern. The note itself never blocks: it says the change is advisory, or, when the policy
// requires code-owner approval, that the gate (not this runtime) requires it.
func protectedPaths(req *runtime.Request) []runtime.Finding {
	var out []runtime.Finding
	for _, pat := range req.Settings.ProtectedPaths {
		set := pathglob.Compile([]string{pat})
		var hits []string
		for _, c := range req.Changed {
			if set.Match(c.Path) || (c.PreviousPath != "" && set.Match(c.PreviousPath)) {
				hits = append(hits, c.Path)
			}
		}
		if len(hits) == 0 {
			continue
		}
		listed := hits
		more := ""
		if len(listed) > maxListedPaths {
			more = fmt.Sprintf(" and %d more", len(listed)-maxListedPaths)
			listed = listed[:maxListedPaths]
		}
		what := "Advisory: give these a careful human review; this check does not require or verify anyone's approval."
		if req.Settings.ProtectedRequireOwner {
			what = "The gate requires an approving review of the head by a code owner (CODEOWNERS on the base branch) of each of these files."
		}
		f := runtime.Finding{
			Rule: "protected-path", Severity: runtime.SeverityInfo,
			Title:   fmt.Sprintf("protected paths: %d file(s) under %s", len(hits), pat),
			Message: fmt.Sprintf("Changed under the protected_paths pattern %s: %s%s. %s", pat, strings.Join(listed, ", "), more, what),
			Key:     pat,
		}
		if len(hits) == 1 {
			f.Path = hits[0]
		}
		out = append(out, f)
	}
	return out
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// rank orders severities, critical highest.
func rank(s string) int {
	switch s {
	case runtime.SeverityCritical:
		return 4
	case runtime.SeverityHigh:
		return 3
	case runtime.SeverityMedium:
		return 2
	case runtime.SeverityLow:
		return 1
	}
	return 0
}
