// Package builtin is lensgate's deterministic, offline reviewer. It needs no network and no
// model: each lens runs a fixed set of checks over the diff (committed secrets and private
// keys, merge-conflict markers, risky CI workflow changes, protected paths, large binaries,
// code changed without tests, a missing spec where one is required).
package builtin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/lensgate/lensgate/review/pathglob"
	"github.com/lensgate/lensgate/review/runtime"
)

// Name is the runtime's name in .asdd.yml and presets.
const Name = "builtin"

// Check groups. A lens is reviewed by the groups its preset (or, for preset "builtin", its
// name) selects.
const (
	GroupSecrets   = "secrets"
	GroupWorkflows = "workflows"
	GroupUnicode   = "unicode"
	GroupUnsafe    = "unsafe-code"
	GroupProtected = "protected"
	GroupConflicts = "conflicts"
	GroupBinaries  = "binaries"
	GroupTests     = "tests"
	GroupSpec      = "spec"
)

// groupsFor maps a preset or lens name to its check groups.
var groupsFor = map[string][]string{
	"security":    {GroupSecrets, GroupWorkflows, GroupUnicode, GroupUnsafe, GroupProtected},
	"secrets":     {GroupSecrets},
	"ci":          {GroupWorkflows},
	"workflows":   {GroupWorkflows},
	"governance":  {GroupProtected},
	"correctness": {GroupConflicts, GroupBinaries, GroupSpec},
	"code":        {GroupConflicts, GroupBinaries, GroupSpec},
	"tests":       {GroupTests},
	"spec":        {GroupSpec},
}

// Groups returns the check groups for a lens, or nil when the builtin runtime has none.
func Groups(l runtime.Lens) []string {
	key := l.Preset
	if key == Name || key == "" {
		key = l.Name
	}
	if g, ok := groupsFor[key]; ok {
		return g
	}
	return groupsFor[l.Name]
}

// Options tune the reviewer.
type Options struct {
	// LargeFileBytes is the size above which an added or changed binary is reported
	// (default 1 MiB).
	LargeFileBytes int64
}

// Runtime is the builtin reviewer.
type Runtime struct {
	opts Options
}

// New returns the builtin reviewer.
func New(opts Options) *Runtime {
	if opts.LargeFileBytes <= 0 {
		opts.LargeFileBytes = 1 << 20
	}
	return &Runtime{opts: opts}
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
				Lens:    l.Name,
				Verdict: runtime.VerdictSkipped,
				Cause: fmt.Sprintf("the builtin runtime has no checks for preset %q; choose an enabled runtime "+
					"for this lens", l.Preset),
			})
			continue
		}
		var fs []runtime.Finding
		for _, g := range groups {
			fs = append(fs, byGroup[g]...)
		}
		sortFindings(fs)
		res.Lenses = append(res.Lenses, runtime.LensReport{
			Lens:     l.Name,
			Verdict:  verdict(fs),
			Summary:  summary(groups, fs),
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

var groupTitles = map[string]string{
	GroupSecrets:   "secrets",
	GroupWorkflows: "CI workflows",
	GroupUnicode:   "hidden Unicode",
	GroupUnsafe:    "disabled protections",
	GroupProtected: "protected paths",
	GroupConflicts: "conflict markers",
	GroupBinaries:  "large binaries",
	GroupTests:     "test changes",
	GroupSpec:      "spec",
}

func summary(groups []string, fs []runtime.Finding) string {
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = groupTitles[g]
	}
	checked := strings.Join(names, ", ")
	if len(fs) == 0 {
		return "Checked " + checked + ": nothing found."
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
	return fmt.Sprintf("Checked %s: %d finding(s) (%s).", checked, len(fs), strings.Join(parts, ", "))
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

// scan runs every needed check group once over the request.
func (r *Runtime) scan(ctx context.Context, req *runtime.Request, needed map[string]bool) (map[string][]runtime.Finding, error) {
	out := map[string][]runtime.Finding{}
	ignore := pathglob.Compile(req.Settings.IgnorePaths)
	protected := pathglob.Compile(req.Settings.ProtectedPaths)

	heads := map[string][]byte{}
	for _, c := range req.Changed {
		if c.HeadContent != nil {
			heads[c.Path] = c.HeadContent
		}
	}
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
			scanLines(f, needed, out)
		}
		if needed[GroupWorkflows] && isWorkflow(path) {
			out[GroupWorkflows] = append(out[GroupWorkflows], scanWorkflow(f, heads[path])...)
		}
	}
	for _, c := range req.Changed {
		path := c.Path
		if needed[GroupProtected] && (protected.Match(path) || (c.PreviousPath != "" && protected.Match(c.PreviousPath))) {
			out[GroupProtected] = append(out[GroupProtected], runtime.Finding{
				Rule:     "protected-path",
				Severity: runtime.SeverityInfo,
				Path:     path,
				Title:    "Change under a protected path",
				Message: "This path is listed in protected_paths: a named human must approve the change " +
					"whatever the review says.",
				Key: path,
			})
		}
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
