package review

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/pathglob"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// Bounds of a walkthrough, so that it never crowds the review out of the advisory comment.
const (
	maxWalkthroughAreas = 25
	maxWalkthroughRisks = 6
	maxPurposeBytes     = 600
	// MaxWalkthroughSummaryBytes bounds the model's walkthrough text.
	MaxWalkthroughSummaryBytes = 3000
	// maxAreaDepth is how many directory levels name an area; a change spread over more
	// areas than maxWalkthroughAreas is grouped by its top directory instead.
	maxAreaDepth = 2
)

// Walkthrough is the account of what a pull request changes, for its human reviewers: the
// author's stated purpose, the changed areas with their size and the lenses that looked at
// them, and where to read first. With a model runtime, Summary is the model's own account.
// It never affects a lens or the gate. Title, Purpose and Summary are untrusted text.
type Walkthrough struct {
	Head    string `json:"head"`
	Title   string `json:"title"`
	Purpose string `json:"purpose,omitempty"`
	// LinkedIssues are the issue numbers the description says it closes, fixes or resolves.
	LinkedIssues []int `json:"linkedIssues,omitempty"`

	// Summary is the model's walkthrough ("" without a model); SummaryHead the head it was
	// written at (an earlier one when it was kept because nothing changed since).
	Summary      string `json:"summary,omitempty"`
	SummaryModel string `json:"summaryModel,omitempty"`
	SummaryHead  string `json:"summaryHead,omitempty"`
	// SummaryNote says why there is no model summary when a model runtime was there to write
	// one (a token cap, a failed call).
	SummaryNote string `json:"summaryNote,omitempty"`
	// SummaryTokens is what this review's walkthrough call cost (nil when none was made).
	SummaryTokens *TokenCount `json:"summaryTokens,omitempty"`

	Files   int               `json:"files"`
	Added   int               `json:"added"`
	Removed int               `json:"removed"`
	Areas   []WalkthroughArea `json:"areas"`
	// MoreAreas counts the areas beyond the ones listed.
	MoreAreas int               `json:"moreAreas,omitempty"`
	Risks     []WalkthroughRisk `json:"risks,omitempty"`
	// Protected are the changed files matching protected_paths.
	Protected []string `json:"protected,omitempty"`
	// CodeFiles and TestFiles count the changed source and test files.
	CodeFiles int `json:"codeFiles"`
	TestFiles int `json:"testFiles"`
	// Since is what changed since the last reviewed head (nil on a first review).
	Since *WalkthroughSince `json:"since,omitempty"`
}

// WalkthroughArea is one directory of the change.
type WalkthroughArea struct {
	Name    string   `json:"name"`
	Files   int      `json:"files"`
	Added   int      `json:"added"`
	Removed int      `json:"removed"`
	Lenses  []string `json:"lenses"`
}

// WalkthroughRisk is a place to read first and why.
type WalkthroughRisk struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// WalkthroughSince is what the commits since the last reviewed head change.
type WalkthroughSince struct {
	From    string   `json:"from"`
	Files   int      `json:"files"`
	Added   int      `json:"added"`
	Removed int      `json:"removed"`
	Paths   []string `json:"paths"`
}

// WalkthroughMemo is the model's walkthrough as the review state keeps it.
type WalkthroughMemo struct {
	Head  string `json:"head"`
	Text  string `json:"text,omitempty"`
	Model string `json:"model,omitempty"`
	// Failed says why no text could be written at Head: the same head is not asked again.
	Failed string `json:"failed,omitempty"`
}

// changeStat is one changed file's size.
type changeStat struct {
	path           string
	added, removed int
}

// fileStats are the changed files with their added and removed lines: the forge's counts when
// it gave them, else the diff's.
func (r *reviewRun) fileStats() []changeStat {
	byPath := map[string]*diff.File{}
	for i := range r.files {
		byPath[r.files[i].Path()] = &r.files[i]
	}
	out := make([]changeStat, 0, len(r.changed))
	listed := map[string]File{}
	for _, f := range r.subj.Files {
		listed[f.Path] = f
	}
	for _, c := range r.changed {
		st := changeStat{path: c.Path}
		if f, ok := listed[c.Path]; ok && f.Additions+f.Deletions > 0 {
			st.added, st.removed = f.Additions, f.Deletions
		} else if d := byPath[c.Path]; d != nil {
			st.added, st.removed = d.Added, d.Deleted
		}
		out = append(out, st)
	}
	return out
}

// buildWalkthrough is the deterministic walkthrough of the change: it needs no model.
func (r *reviewRun) buildWalkthrough(results []LensResult, findings []Finding) *Walkthrough {
	w := &Walkthrough{Head: r.subj.HeadSHA, Title: boundText(r.subj.Title, maxTitleBytes)}
	w.Purpose, w.LinkedIssues = purposeOf(r.subj.Body)
	stats := r.fileStats()
	looked := r.lensFiles(results)
	protected := pathglob.Compile(r.cfg.ProtectedPaths)
	for _, st := range stats {
		w.Files++
		w.Added += st.added
		w.Removed += st.removed
		switch {
		case builtin.IsTestPath(st.path):
			w.TestFiles++
		case builtin.IsCodePath(st.path):
			w.CodeFiles++
		}
		if protected.Match(st.path) {
			w.Protected = append(w.Protected, st.path)
		}
	}
	w.Areas, w.MoreAreas = areasOf(stats, looked)
	w.Risks = risksOf(stats, findings, w.Protected, w.TestFiles > 0)
	if inc := r.subj.Since; inc != nil && r.sc.incremental && r.sc.since != r.subj.HeadSHA {
		s := &WalkthroughSince{From: inc.From}
		for _, f := range inc.Files {
			s.Files++
			s.Added += f.Additions
			s.Removed += f.Deletions
			if len(s.Paths) < 20 {
				s.Paths = append(s.Paths, f.Path)
			}
		}
		w.Since = s
	}
	return w
}

// reLinkedIssue finds the issues a description closes ("Fixes #12", "closes: #3").
var reLinkedIssue = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?|refs?|part of)\b:?\s+#(\d{1,9})\b`)

// purposeOf is the description's first paragraph that is not a template heading, checkbox or
// comment, and the issues it links.
func purposeOf(body string) (string, []int) {
	var issues []int
	for _, m := range reLinkedIssue.FindAllStringSubmatch(body, 20) {
		if n, err := strconv.Atoi(m[1]); err == nil && !slices.Contains(issues, n) {
			issues = append(issues, n)
		}
	}
	for _, para := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n") {
		p := strings.TrimSpace(para)
		if p == "" || strings.HasPrefix(p, "#") || strings.HasPrefix(p, "<!--") || strings.HasPrefix(p, "- [") {
			continue
		}
		return boundText(strings.Join(strings.Fields(p), " "), maxPurposeBytes), issues
	}
	return "", issues
}

// lensFiles maps each changed file to the lenses that looked at it: a lens whose runtime
// completed and whose paths match the file, and, for a model lens, whose requests held it (a
// file over a model's budget is a gap, not looked at).
func (r *reviewRun) lensFiles(results []LensResult) map[string][]string {
	out := map[string][]string{}
	gap := map[string]bool{}
	for _, g := range r.paid.gaps {
		gap[g.Path] = true
	}
	for _, g := range r.view.withheld {
		gap[g.Path] = true
	}
	for i, l := range r.lenses {
		if l.group == nil || l.cause != "" || l.group.cause != "" || results[i].Outcome == OutcomePending {
			continue
		}
		free := r.p.free[l.runtime]
		for _, f := range inPaths(r.files, l.item.Paths) {
			if !free && gap[f.Path()] {
				continue
			}
			out[f.Path()] = append(out[f.Path()], l.item.Name)
		}
	}
	return out
}

// areasOf groups the changed files by directory, two levels deep, or by top directory when
// that gives too many areas (and more than one); the largest areas are listed first.
func areasOf(stats []changeStat, looked map[string][]string) ([]WalkthroughArea, int) {
	depth := maxAreaDepth
	group := func(d int) map[string]*WalkthroughArea {
		m := map[string]*WalkthroughArea{}
		for _, st := range stats {
			name := areaName(st.path, d)
			a := m[name]
			if a == nil {
				a = &WalkthroughArea{Name: name}
				m[name] = a
			}
			a.Files++
			a.Added += st.added
			a.Removed += st.removed
			for _, l := range looked[st.path] {
				if !slices.Contains(a.Lenses, l) {
					a.Lenses = append(a.Lenses, l)
				}
			}
		}
		return m
	}
	m := group(depth)
	if len(m) > maxWalkthroughAreas {
		// Too many directories: their top directories, unless everything is under one.
		if top := group(1); len(top) > 1 {
			m = top
		}
	}
	areas := make([]WalkthroughArea, 0, len(m))
	for _, a := range m {
		sort.Strings(a.Lenses)
		if a.Lenses == nil {
			a.Lenses = []string{}
		}
		areas = append(areas, *a)
	}
	sort.Slice(areas, func(i, j int) bool {
		si, sj := areas[i].Added+areas[i].Removed, areas[j].Added+areas[j].Removed
		if si != sj {
			return si > sj
		}
		return areas[i].Name < areas[j].Name
	})
	more := 0
	if len(areas) > maxWalkthroughAreas {
		more = len(areas) - maxWalkthroughAreas
		areas = areas[:maxWalkthroughAreas]
	}
	return areas, more
}

// areaName is the directory of p, at most depth levels deep ("." for the top level).
func areaName(p string, depth int) string {
	dir := path.Dir(p)
	if dir == "." || dir == "/" {
		return "."
	}
	parts := strings.Split(dir, "/")
	if len(parts) > depth {
		parts = parts[:depth]
	}
	return strings.Join(parts, "/")
}

// risksOf ranks the places to read first: files with blocking findings, protected paths, CI
// workflows, files with other findings, and the largest changes of code no test accompanies.
func risksOf(stats []changeStat, findings []Finding, protected []string, testsTouched bool) []WalkthroughRisk {
	type scored struct {
		WalkthroughRisk
		score int
	}
	why := map[string][]string{}
	score := map[string]int{}
	add := func(p, reason string, s int) {
		if p == "" {
			return
		}
		if !slices.Contains(why[p], reason) {
			why[p] = append(why[p], reason)
		}
		score[p] += s
	}
	for _, f := range findings {
		switch {
		case !f.Open():
		case f.Severity.Blocks():
			add(f.Path, "blocking finding of "+f.Lens, 100)
		default:
			add(f.Path, "finding of "+f.Lens, 10)
		}
	}
	for _, p := range protected {
		add(p, "protected path", 50)
	}
	for _, st := range stats {
		if runtime.IsWorkflowPath(st.path) {
			add(st.path, "CI workflow", 40)
		}
		if n := st.added + st.removed; n >= 100 && builtin.IsCodePath(st.path) && !builtin.IsTestPath(st.path) {
			add(st.path, strconv.Itoa(n)+" lines changed", min(n/20, 30))
			if !testsTouched {
				add(st.path, "no test changed", 5)
			}
		}
	}
	var all []scored
	for p, reasons := range why {
		all = append(all, scored{WalkthroughRisk{Path: p, Why: strings.Join(reasons, "; ")}, score[p]})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].Path < all[j].Path
	})
	var out []WalkthroughRisk
	for i := 0; i < len(all) && i < maxWalkthroughRisks; i++ {
		out = append(out, all[i].WalkthroughRisk)
	}
	return out
}

// renderWalkthrough is the walkthrough in the Markdown of RenderComment (lensgate review
// --format markdown). Untrusted text is escaped like every other text of that rendering; the
// model's summary is quoted line by line and named as model output.
func renderWalkthrough(w *Walkthrough) string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Walkthrough: %d file(s) in %d area(s), +%d −%d\n\n", w.Files, len(w.Areas)+w.MoreAreas, w.Added, w.Removed)
	if w.Title != "" {
		b.WriteString("**What and why** (from the description): " + mdText(w.Title))
		if w.Purpose != "" {
			b.WriteString(" — " + mdText(w.Purpose))
		}
		b.WriteString("\n\n")
	}
	if w.Summary != "" {
		fmt.Fprintf(&b, "**Summary** by the model `%s` (model output, not a review outcome):\n\n", mdCode(w.SummaryModel))
		for _, line := range strings.Split(w.Summary, "\n") {
			b.WriteString("> " + mdText(line) + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("| area | files | + | − | lenses that looked |\n|---|---:|---:|---:|---|\n")
	for _, a := range w.Areas {
		fmt.Fprintf(&b, "| `%s` | %d | +%d | −%d | %s |\n", mdCode(DisplayPath(a.Name)), a.Files, a.Added, a.Removed, mdCell(strings.Join(a.Lenses, ", ")))
	}
	if w.MoreAreas > 0 {
		fmt.Fprintf(&b, "| … %d more area(s) | | | | |\n", w.MoreAreas)
	}
	b.WriteString("\n")
	for i, r := range w.Risks {
		if i == 0 {
			b.WriteString("**Read first**\n\n")
		}
		fmt.Fprintf(&b, "- `%s`: %s\n", mdCode(DisplayPath(r.Path)), mdText(r.Why))
	}
	if len(w.Risks) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}
