package openai

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/asdd"
)

// readReview turns a decoded review answer into one report per lens asked. It holds each lens
// entry to the schema on its own: what decides an outcome (the lens name, the verdict, a
// finding's severity, the path of a blocking finding) leaves that lens pending when it is
// malformed, and only that lens; an optional field that is malformed (a title, a suggestion, a
// key the schema does not have) is dropped and the lens's summary says so.
//
// An entry naming a lens that was not asked rejects the whole answer: it is speaking for a
// lens another call (or nobody) judges, which is what an answer steered by the change under
// review looks like, so none of its verdicts are used.
func readReview(v any, lenses []runtime.Lens, paths map[string]bool) ([]runtime.LensReport, error) {
	top, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: answer is not an object", ErrSchema)
	}
	if s, _ := top["schema"].(string); s != asdd.ReviewSchema {
		return nil, fmt.Errorf("%w: answer.schema is %q, not %s", ErrSchema, bounded(fmt.Sprint(top["schema"]), 40), asdd.ReviewSchema)
	}
	entries, ok := top["lenses"].([]any)
	if !ok {
		return nil, fmt.Errorf("%w: answer.lenses is not an array", ErrSchema)
	}
	names := make([]string, len(lenses))
	for i, l := range lenses {
		names[i] = l.Name
	}
	var answerNotes notes
	for _, k := range sortedKeys(top) {
		switch k {
		case "schema", "lenses", "summary", "recommendation": // the last two are never used
		default:
			answerNotes.add("the unknown key %q", bounded(k, 40))
		}
	}
	byLens := map[string][]map[string]any{}
	for i, e := range entries {
		m, ok := e.(map[string]any)
		name, named := m["lens"].(string)
		if !ok || !named {
			answerNotes.add("lenses[%d], which names no lens", i)
			continue
		}
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("%w: answer.lenses[%d].lens is %q, not one of %s", ErrSchema, i, bounded(name, 40), strings.Join(names, ", "))
		}
		byLens[name] = append(byLens[name], m)
	}
	out := make([]runtime.LensReport, 0, len(lenses))
	for _, name := range names {
		switch got := byLens[name]; len(got) {
		case 0:
			cause := "the model's answer has no entry for this lens"
			if len(answerNotes) > 0 {
				cause += " (it dropped " + answerNotes.String() + ")"
			}
			out = append(out, skipped(name, cause))
		case 1:
			out = append(out, readLens(name, got[0], paths, answerNotes))
		default:
			out = append(out, skipped(name, fmt.Sprintf("the model's answer has %d entries for this lens", len(got))))
		}
	}
	return out, nil
}

func skipped(lens, cause string) runtime.LensReport {
	return runtime.LensReport{Lens: lens, Verdict: runtime.VerdictSkipped, Cause: cause}
}

// readLens reads one lens entry. inherited are the notes about the answer as a whole.
func readLens(name string, m map[string]any, paths map[string]bool, inherited notes) runtime.LensReport {
	verdict, _ := m["verdict"].(string)
	if !slices.Contains(answerVerdicts, verdict) {
		return skipped(name, fmt.Sprintf("the model's answer gives this lens the verdict %q, not one of %s",
			bounded(fmt.Sprint(m["verdict"]), 40), strings.Join(answerVerdicts, ", ")))
	}
	list, ok := m["findings"].([]any)
	if !ok {
		return skipped(name, "the model's answer has no list of findings for this lens")
	}
	if len(list) > asdd.MaxFindings {
		return skipped(name, fmt.Sprintf("the model's answer has more than %d findings for this lens", asdd.MaxFindings))
	}
	ns := append(notes(nil), inherited...)
	rep := runtime.LensReport{Lens: name, Verdict: verdict}
	for _, k := range sortedKeys(m) {
		switch k {
		case "lens", "verdict", "findings":
		case "summary":
			rep.Summary = optionalText(m[k], asdd.MaxSummaryBytes, "the summary", &ns)
		default:
			ns.add("the unknown key %q", bounded(k, 40))
		}
	}
	for i, e := range list {
		f, cause := readFinding(i, e, paths, &ns)
		if cause != "" {
			return skipped(name, cause)
		}
		if f != nil {
			rep.Findings = append(rep.Findings, *f)
		}
	}
	if strings.TrimSpace(rep.Summary) == "" {
		rep.Summary = fmt.Sprintf("Verdict %s with %d finding(s).", verdict, len(rep.Findings))
	}
	if len(ns) > 0 {
		rep.Summary = strings.TrimSpace(rep.Summary) + " (Dropped from the model's answer as malformed: " + ns.String() + ".)"
	}
	return rep
}

// readFinding reads finding i of a lens entry. A non-empty cause leaves the lens pending; a nil
// finding without a cause was dropped (and noted).
func readFinding(i int, e any, paths map[string]bool, ns *notes) (*runtime.Finding, string) {
	m, ok := e.(map[string]any)
	if !ok {
		return nil, fmt.Sprintf("finding %d of the model's answer is not an object", i+1)
	}
	sevText, _ := m["severity"].(string)
	sev, ok := runtime.FromASDDSeverity(sevText)
	if !ok {
		return nil, fmt.Sprintf("finding %d of the model's answer has severity %q, not one of %s", i+1,
			bounded(fmt.Sprint(m["severity"]), 40), strings.Join(answerSeverities, ", "))
	}
	blocking := sevText == "block"
	f := &runtime.Finding{Severity: sev}
	where := "finding " + strconv.Itoa(i+1)
	for _, k := range sortedKeys(m) {
		switch k {
		case "severity":
		case "path":
			p, isText := m[k].(string)
			file, line := asdd.SplitPath(p)
			switch {
			case !isText || len(p) > asdd.MaxPathBytes:
				if blocking {
					return nil, fmt.Sprintf("the blocking finding %d of the model's answer has no readable path", i+1)
				}
				ns.add("the path of %s", where)
			case file != "" && !paths[file]:
				if blocking {
					return nil, fmt.Sprintf("the model's answer has a finding on %q, which is not a file of the reviewed diff", bounded(file, 120))
				}
				ns.add("%s, on %q, which is not a file of the reviewed diff", where, bounded(file, 120))
				return nil, ""
			default:
				f.Path, f.Line = file, line
			}
		case "title":
			f.Title = optionalText(m[k], asdd.MaxMessageBytes, "the title of "+where, ns)
		case "message":
			f.Message = optionalText(m[k], asdd.MaxMessageBytes, "the message of "+where, ns)
		case "suggestion":
			f.Suggestion = readSuggestion(m[k], where, ns)
		default:
			ns.add("the unknown key %q of %s", bounded(k, 40), where)
		}
	}
	if strings.TrimSpace(f.Message) == "" {
		f.Message = f.Title
	}
	if strings.TrimSpace(f.Message) == "" {
		f.Message = "The model gave no message for this finding."
	}
	return f, ""
}

// readSuggestion reads an optional suggestion: null, or {"lines": "N" or "N-M", "replacement"}.
func readSuggestion(v any, where string, ns *notes) *runtime.Suggestion {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		ns.add("the suggestion of %s (not an object with lines and replacement)", where)
		return nil
	}
	lines, linesText := m["lines"].(string)
	repl, isText := m["replacement"].(string)
	if len(m) == 0 || len(m) == 2 && lines == "" && isText && repl == "" {
		return nil // an empty suggestion, or its keys filled with nothing, is no suggestion
	}
	if !linesText {
		ns.add("the suggestion of %s (lines is not text \"N\" or \"N-M\")", where)
		return nil
	}
	if !linesPattern.MatchString(lines) {
		ns.add("the suggestion of %s (lines %q is not \"N\" or \"N-M\")", where, bounded(fmt.Sprint(m["lines"]), 20))
		return nil
	}
	if !isText || len(repl) > asdd.MaxMessageBytes {
		ns.add("the suggestion of %s (its replacement is not text of at most %d bytes)", where, asdd.MaxMessageBytes)
		return nil
	}
	for _, k := range sortedKeys(m) {
		if k != "lines" && k != "replacement" {
			ns.add("the suggestion of %s (the unknown key %q)", where, bounded(k, 40))
			return nil
		}
	}
	sg := &asdd.Suggestion{Lines: lines, Replacement: repl}
	start, end, ok := sg.Range()
	if !ok {
		ns.add("the suggestion of %s (lines %q end before they start)", where, lines)
		return nil
	}
	return &runtime.Suggestion{StartLine: start, EndLine: end, Replacement: repl}
}

// optionalText is v when it is text within max bytes; otherwise it is dropped (or cut) with a
// note.
func optionalText(v any, max int, what string, ns *notes) string {
	s, ok := v.(string)
	switch {
	case !ok:
		ns.add("%s (not text)", what)
		return ""
	case len(s) > max:
		ns.add("the end of %s (over %d bytes)", what, max)
		return bounded(s, max)
	}
	return s
}

// notes lists what was dropped from an answer, for the lens's summary.
type notes []string

// maxNotes bounds the notes a summary lists.
const maxNotes = 5

func (n *notes) add(format string, args ...any) { *n = append(*n, fmt.Sprintf(format, args...)) }

func (n notes) String() string {
	if len(n) <= maxNotes {
		return strings.Join(n, "; ")
	}
	return strings.Join(n[:maxNotes], "; ") + fmt.Sprintf("; and %d more", len(n)-maxNotes)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
