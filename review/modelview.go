package review

import (
	"path"
	"sort"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/pathglob"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// modelView is the change as model and adapter runtimes get it: files matching
// models.exclude_paths left out, and every secret the builtin detectors recognise replaced by
// a placeholder naming its kind, in the title, the description, the commit messages, the file
// names and the diff. The free runtimes still see the change as it is.
type modelView struct {
	subject runtime.Subject
	files   []diff.File
	diff    []byte
	changed []runtime.Changed
	// workSubject is the subject the work directory is written from.
	workSubject *Subject
	input       ModelInput
	// withheld are the excluded files, as coverage gaps of the model runtimes.
	withheld []Gap
}

// excluded reports whether a path matches one of the globs; a glob without '/' matches the
// file name in any directory, as in .gitignore.
func excluded(set *pathglob.Set, base *pathglob.Set, p string) bool {
	return p != "" && (set.Match(p) || base.Match(path.Base(p)))
}

func newModelView(rules *builtin.SecretRules, subj *Subject, rtSubj runtime.Subject, all []byte, files []diff.File, changed []runtime.Changed, excludes []string) modelView {
	var full, byName []string
	for _, g := range excludes {
		full = append(full, g)
		if !containsSlash(g) {
			byName = append(byName, g)
		}
	}
	set, base := pathglob.Compile(full), pathglob.Compile(byName)
	withheld := map[string]bool{}
	for _, c := range changed {
		if excluded(set, base, c.Path) || excluded(set, base, c.PreviousPath) {
			withheld[c.Path] = true
		}
	}
	var kept []diff.File
	for i := range files {
		f := &files[i]
		if excluded(set, base, f.NewPath) || excluded(set, base, f.OldPath) {
			withheld[f.Path()] = true
			continue
		}
		kept = append(kept, *f)
	}

	red := builtin.NewRedactor(rules)
	v := modelView{input: ModelInput{Sent: true, WithheldFiles: []string{}}}
	v.diff = red.Diff(joinFiles(all, kept))
	v.files = diff.Parse(v.diff)
	v.subject = rtSubj
	v.subject.Title = red.Text(rtSubj.Title)
	v.subject.Body = red.Text(rtSubj.Body)
	v.subject.Labels = nil
	for _, l := range rtSubj.Labels {
		v.subject.Labels = append(v.subject.Labels, red.Text(l))
	}
	v.subject.Commits = nil
	for _, c := range rtSubj.Commits {
		v.subject.Commits = append(v.subject.Commits, red.Text(c))
	}
	for _, c := range changed {
		if withheld[c.Path] {
			continue
		}
		c.Path, c.PreviousPath = red.Text(c.Path), red.Text(c.PreviousPath)
		c.HeadContent = nil // a model gets the diff, not whole files
		v.changed = append(v.changed, c)
	}
	ws := *subj
	ws.Title, ws.Body, ws.Labels = v.subject.Title, v.subject.Body, v.subject.Labels
	ws.Commits = nil
	for i, c := range subj.Commits {
		ws.Commits = append(ws.Commits, Commit{SHA: c.SHA, Message: v.subject.Commits[i]})
	}
	ws.Files = nil
	for _, f := range subj.Files {
		if withheld[f.Path] {
			continue
		}
		f.Path, f.PreviousPath, f.Patch, f.HeadContent = red.Text(f.Path), red.Text(f.PreviousPath), "", nil
		ws.Files = append(ws.Files, f)
	}
	ws.Diff = v.diff
	v.workSubject = &ws

	for p := range withheld {
		v.input.WithheldFiles = append(v.input.WithheldFiles, p)
	}
	sort.Strings(v.input.WithheldFiles)
	for _, p := range v.input.WithheldFiles {
		v.withheld = append(v.withheld, Gap{Path: p, Reason: "matches models.exclude_paths: withheld from the model reviewer"})
	}
	v.input.RedactedValues = red.Total()
	if len(red.Counts) > 0 {
		v.input.RedactedKinds = red.Counts
	}
	return v
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}
