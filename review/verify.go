package review

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// Check names the verification a withdrawn finding failed.
type Check string

// The checks, in the order they run.
const (
	// CheckLocation: the path is a file of the change and the line is on the new side of its diff.
	CheckLocation Check = "location"
	// CheckQuote: code the finding quotes is in the file's diff.
	CheckQuote Check = "quote"
	// CheckDuplicate: no other lens reported the same thing on the same lines.
	CheckDuplicate Check = "duplicate"
	// CheckModel: a second, independent model call confirmed it.
	CheckModel Check = "model"
)

// Withdrawal is a model lens's finding that verification withdrew: it is not published, and
// the details page and the receipt say why.
type Withdrawal struct {
	Finding Finding `json:"finding"`
	Check   Check   `json:"check"`
	Reason  string  `json:"reason"`
}

// Verification is what happened to the candidate findings of a review between the lenses and
// publication: which were withdrawn on verification and which were suppressed by earlier
// feedback on the repository.
type Verification struct {
	// Mode is review.verify: off, deterministic or model.
	Mode string `json:"mode"`
	// Checked counts the model lenses' findings that were verified.
	Checked int `json:"checked"`
	// ModelChecked counts those a verifying model call judged.
	ModelChecked int `json:"modelChecked,omitempty"`
	// ModelCause says why the verifying model call judged fewer than it was asked ("" when it
	// judged every one, or was not asked).
	ModelCause string        `json:"modelCause,omitempty"`
	Withdrawn  []Withdrawal  `json:"withdrawn"`
	Suppressed []Suppression `json:"suppressed"`
}

// held is the set of ids of the findings withdrawn or suppressed in this review.
func (v Verification) held() map[string]bool {
	out := map[string]bool{}
	for _, w := range v.Withdrawn {
		out[w.Finding.ID] = true
	}
	for _, s := range v.Suppressed {
		out[s.Finding.ID] = true
	}
	return out
}

// Bounds of verification.
const (
	// minQuoteBytes is the shortest code span taken as a quote: shorter ones are names, not code.
	minQuoteBytes = 8
	// duplicateLines is how far apart two findings' lines may be and still be one finding.
	duplicateLines = 3
	// duplicateSimilarity is the least word overlap of two findings taken as the same.
	duplicateSimilarity = 0.5
	// maxVerifyCandidates bounds the findings one verifying model call is asked about.
	maxVerifyCandidates = 40
)

// diffIndex is what verification reads of a diff: for each file the new-side line numbers and
// the text of every line its hunks show, on both sides, with whitespace collapsed.
type diffIndex struct {
	newLines map[string]map[int]bool
	text     map[string]string
}

func indexDiffs(contents map[string][]byte, diffs ...[]diff.File) diffIndex {
	ix := diffIndex{newLines: map[string]map[int]bool{}, text: map[string]string{}}
	var b strings.Builder
	for _, files := range diffs {
		for i := range files {
			f := &files[i]
			p := f.Path()
			if ix.newLines[p] == nil {
				ix.newLines[p] = map[int]bool{}
			}
			b.Reset()
			f.Walk(func(l diff.Line) bool {
				if l.Kind != '-' {
					ix.newLines[p][l.New] = true
				}
				b.WriteString(collapse(string(l.Text)))
				b.WriteByte('\n')
				return true
			})
			ix.text[p] += b.String()
		}
	}
	for p, c := range contents {
		var lines []string
		for _, l := range strings.Split(string(c), "\n") {
			lines = append(lines, collapse(l))
		}
		ix.text[p] += strings.Join(lines, "\n")
	}
	return ix
}

// collapse trims s and collapses its runs of white space to one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

var (
	reFence      = regexp.MustCompile("(?s)```[^\n]*\n(.*?)```")
	reInlineCode = regexp.MustCompile("`([^`\n]+)`")
)

// quotes are the code spans a finding's text quotes: the lines of fenced blocks and inline code
// spans, whitespace collapsed, of at least minQuoteBytes.
func quotes(text string) []string {
	var out []string
	add := func(s string) {
		if s = collapse(s); len(s) >= minQuoteBytes {
			out = append(out, s)
		}
	}
	for _, m := range reFence.FindAllStringSubmatch(text, -1) {
		for _, l := range strings.Split(m[1], "\n") {
			add(l)
		}
	}
	for _, m := range reInlineCode.FindAllStringSubmatch(reFence.ReplaceAllString(text, ""), -1) {
		add(m[1])
	}
	return out
}

// locate checks where a finding points and what it quotes. It returns the failed check and
// why, or "" when the finding passes.
func (ix diffIndex) locate(f Finding) (Check, string) {
	if f.Path != "" {
		lines, ok := ix.newLines[f.Path]
		switch {
		case !ok:
			return CheckLocation, fmt.Sprintf("%s is not a file of the change", DisplayPath(f.Path))
		case f.Line > 0 && !lines[f.Line]:
			return CheckLocation, fmt.Sprintf("line %d of %s is not on the new side of the diff", f.Line, DisplayPath(f.Path))
		}
	}
	qs := quotes(f.Title + "\n" + f.Body)
	if len(qs) == 0 {
		return "", ""
	}
	for _, q := range qs {
		if f.Path != "" && strings.Contains(ix.text[f.Path], q) {
			return "", ""
		}
		if f.Path == "" {
			for _, t := range ix.text {
				if strings.Contains(t, q) {
					return "", ""
				}
			}
		}
	}
	where := "the diff"
	if f.Path != "" {
		where = DisplayPath(f.Path)
	}
	return CheckQuote, fmt.Sprintf("the code it quotes (%s) is not in %s", boundText(qs[0], 80), where)
}

// sameFinding reports whether two findings of different lenses say the same thing about the
// same lines.
func sameFinding(a, b Finding) bool {
	if a.Lens == b.Lens || a.Path != b.Path || abs(a.Line-b.Line) > duplicateLines {
		return false
	}
	return similarity(a.Title+" "+a.Body, b.Title+" "+b.Body) >= duplicateSimilarity
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// verifiable reports whether lens i's findings were reported by a model in this review (not
// carried, not reused) and so are verified.
func (r *reviewRun) verifiable(i int, lr LensResult) bool {
	l := r.lenses[i]
	g := l.group
	return l.cause == "" && g != nil && !r.p.free[l.runtime] && !g.key.reused && !g.unchanged && !g.outOfScope &&
		lr.Outcome != OutcomePending
}

// verify runs review.verify over the lenses' fresh findings and removes the withdrawn ones
// from results. Findings of free runtimes are never withdrawn; a model finding that repeats
// one of theirs is.
func (r *reviewRun) verify(ctx context.Context, results []LensResult) Verification {
	v := Verification{Mode: r.cfg.Review.Quality.VerifyMode(), Withdrawn: []Withdrawal{}, Suppressed: []Suppression{}}
	if v.Mode == config.VerifyOff {
		return v
	}
	// Only model findings are verified: a review without any builds no index of its diff, which
	// for a large diff would hold a second copy of it.
	candidates := false
	for i := range results {
		candidates = candidates || (r.verifiable(i, results[i]) && len(results[i].Findings) > 0)
	}
	if !candidates {
		return v
	}
	contents := map[string][]byte{}
	for _, f := range r.subj.Files {
		if len(f.HeadContent) > 0 {
			contents[f.Path] = f.HeadContent
		}
	}
	ix := indexDiffs(contents, r.files, r.sc.files)
	out := map[string]Withdrawal{} // by lens and id
	key := func(f Finding) string { return f.Lens + "\x00" + f.ID }
	withdraw := func(f Finding, c Check, why string) { out[key(f)] = Withdrawal{Finding: f, Check: c, Reason: why} }
	type kept struct {
		f          Finding
		verifiable bool
	}
	var accepted []kept
	for i := range results {
		if !r.verifiable(i, results[i]) {
			for _, f := range results[i].Findings {
				accepted = append(accepted, kept{f: f})
			}
		}
	}
	for i := range results {
		if !r.verifiable(i, results[i]) {
			continue
		}
		for _, f := range results[i].Findings {
			v.Checked++
			if c, why := ix.locate(f); c != "" {
				withdraw(f, c, why)
				continue
			}
			dup := slices.IndexFunc(accepted, func(k kept) bool { return sameFinding(k.f, f) })
			switch {
			case dup < 0:
				accepted = append(accepted, kept{f: f, verifiable: true})
			case accepted[dup].verifiable && f.Severity.Rank() > accepted[dup].f.Severity.Rank():
				// The more severe report of the same thing stands.
				a := accepted[dup].f
				withdraw(a, CheckDuplicate, fmt.Sprintf("the same as lens %s's finding %s", f.Lens, f.ID))
				accepted[dup] = kept{f: f, verifiable: true}
			default:
				a := accepted[dup].f
				withdraw(f, CheckDuplicate, fmt.Sprintf("the same as lens %s's finding %s", a.Lens, a.ID))
			}
		}
	}
	if v.Mode == config.VerifyModel {
		var cands []Finding
		for _, k := range accepted {
			if k.verifiable {
				cands = append(cands, k.f)
			}
		}
		r.verifyByModel(ctx, cands, &v, withdraw)
	}
	for i := range results {
		lr := &results[i]
		keep := lr.Findings[:0:0]
		for _, f := range lr.Findings {
			if w, ok := out[key(f)]; ok {
				v.Withdrawn = append(v.Withdrawn, w)
				continue
			}
			keep = append(keep, f)
		}
		lr.Findings = keep
	}
	return v
}

// verifyByModel asks a verifying model call of each candidate's runtime to confirm it, and
// withdraws what it does not confirm. A call that fails judges nothing: the candidates stand
// on the deterministic checks and the cause is recorded.
func (r *reviewRun) verifyByModel(ctx context.Context, cands []Finding, v *Verification, withdraw func(Finding, Check, string)) {
	byRuntime := map[string][]Finding{}
	var order []string
	lensRuntime := map[string]string{}
	for _, l := range r.lenses {
		lensRuntime[l.item.Name] = l.runtime
	}
	for _, f := range cands {
		rt := lensRuntime[f.Lens]
		if _, ok := byRuntime[rt]; !ok {
			order = append(order, rt)
		}
		byRuntime[rt] = append(byRuntime[rt], f)
	}
	var causes []string
	for _, name := range order {
		fs := byRuntime[name]
		rt, _ := r.p.opts.Runtimes.Get(name)
		ver, ok := rt.(runtime.Verifier)
		if !ok {
			causes = append(causes, "runtime "+name+" cannot verify findings")
			continue
		}
		if len(fs) > maxVerifyCandidates {
			causes = append(causes, fmt.Sprintf("%d finding(s) beyond the %d one call verifies were not asked about", len(fs)-maxVerifyCandidates, maxVerifyCandidates))
			fs = fs[:maxVerifyCandidates]
		}
		confs, err := r.callVerifier(ctx, name, ver, fs)
		if err != nil {
			causes = append(causes, "runtime "+name+": "+boundText(err.Error(), 300))
			continue
		}
		v.ModelChecked += len(fs)
		for _, f := range fs {
			c, ok := confs[f.ID]
			switch {
			case !ok:
				withdraw(f, CheckModel, "the verifying model call did not confirm it")
			case !c.Confirmed:
				withdraw(f, CheckModel, "the verifying model call refuted it: "+boundText(PlainText(c.Reason), maxReasonBytes))
			}
		}
	}
	v.ModelCause = strings.Join(causes, "; ")
}

// callVerifier makes one verifying call with the files of the candidates, as the model view
// shows them (excluded files left out, secrets replaced), under the review's token budget and
// call slots. Its tokens are the review's.
func (r *reviewRun) callVerifier(ctx context.Context, name string, ver runtime.Verifier, fs []Finding) (map[string]runtime.Confirmation, error) {
	paths := map[string]bool{}
	cands := make([]runtime.Candidate, 0, len(fs))
	var lenses []string
	for _, f := range fs {
		paths[f.Path] = true
		cands = append(cands, runtime.Candidate{ID: f.ID, Lens: f.Lens, Path: f.Path, Line: f.Line, Title: f.Title, Message: f.Body})
		if !slices.Contains(lenses, f.Lens) {
			lenses = append(lenses, f.Lens)
		}
	}
	var files []diff.File
	for _, f := range r.files {
		if paths[f.Path()] {
			files = append(files, f)
		}
	}
	pv := newModelView(r.secretRules, r.subj, r.rtSubj, r.diffBytes, files, r.changed, r.cfg.Models.ExcludePaths)
	req := &runtime.Request{Kind: runtime.KindReview, Subject: pv.subject, Files: pv.files, Diff: pv.diff, Changed: pv.changed,
		Settings: r.settings, Budget: r.spend, Slots: r.slots}
	timeout := time.Duration(max(r.cfg.Review.TimeoutSeconds, config.DefaultTimeoutSeconds))*2*time.Second + 30*time.Second
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	confs, call, err := safeVerify(cctx, ver, req, cands)
	// Every verifying call is the review's, sent or stopped by a cap (its cause says which), so
	// the review's token figures and call metrics count it.
	call.Lenses = lenses
	if err != nil && call.Cause == "" {
		call.Cause = err.Error()
	}
	r.calls = append(r.calls, ModelCall{Runtime: name, Call: call})
	r.sentToModel = r.sentToModel || call.Attempts > 0
	if err != nil {
		return nil, err
	}
	out := map[string]runtime.Confirmation{}
	for _, c := range confs {
		out[c.ID] = c
	}
	return out, nil
}

// safeVerify turns a verifier's panic into an error, as safeReview does for a review.
func safeVerify(ctx context.Context, ver runtime.Verifier, req *runtime.Request, cands []runtime.Candidate) (confs []runtime.Confirmation, call runtime.Call, err error) {
	defer func() {
		if p := recover(); p != nil {
			confs, err = nil, fmt.Errorf("verifier crashed: %v", p)
		}
	}()
	return ver.Verify(ctx, req, cands)
}
