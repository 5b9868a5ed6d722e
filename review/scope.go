package review

import (
	"fmt"
	"sort"

	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/policy"
	"github.com/lensgate/lensgate/review/runtime"
)

// DefaultChunkTokens is the default per-call budget of one chunk of a large change, in
// estimated tokens (bytes / 4).
const DefaultChunkTokens = 24_000

// Scopes of a model review.
const (
	ScopeFull        = "full"
	ScopeIncremental = "incremental"
)

// scope is what the model lenses of this review are sent.
type scope struct {
	incremental bool
	since       string // the earlier reviewed head
	reason      string // why the review is full
	files       []diff.File
	diff        []byte
	// touched holds every path (new and old) the changes since the earlier head touch.
	touched map[string]bool
}

// scopeOf decides between an incremental and a full model review. Incremental needs a prior
// review under the same plan and base whose head is an ancestor of this head.
func scopeOf(subj *Subject, plan policy.Plan) scope {
	pr := subj.Prior
	switch {
	case pr == nil:
		return scope{reason: "no earlier review of this pull request"}
	case pr.Head() == "":
		return scope{reason: "no lens completed in the earlier review"}
	case pr.PlanDigest != plan.Digest():
		return scope{reason: "the review policy changed since the last review (plan digest " + digest.Short(pr.PlanDigest) + " -> " + digest.Short(plan.Digest()) + ")"}
	case pr.BaseSHA != subj.BaseSHA:
		return scope{reason: "the base moved since the last review (" + digest.Short(pr.BaseSHA) + " -> " + digest.Short(subj.BaseSHA) + ")"}
	case pr.Head() == subj.HeadSHA:
		return scope{incremental: true, since: subj.HeadSHA, touched: map[string]bool{}}
	case subj.Since == nil || subj.Since.From != pr.Head():
		return scope{reason: "the last reviewed head " + digest.Short(pr.Head()) + " is not an ancestor of this head (force-push or rebase)"}
	case subj.Since.Truncated:
		return scope{reason: "the changes since " + digest.Short(pr.Head()) + " are too many to list"}
	}
	sc := scope{incremental: true, since: pr.Head(), touched: map[string]bool{}}
	sc.diff = subj.Since.Diff
	if len(sc.diff) == 0 {
		sc.diff = patchesToDiff(subj.Since.Files)
	}
	sc.files = diff.Parse(sc.diff)
	for _, f := range subj.Since.Files {
		sc.touched[f.Path] = true
		if f.PreviousPath != "" {
			sc.touched[f.PreviousPath] = true
		}
	}
	for i := range sc.files {
		sc.touched[sc.files[i].Path()] = true
		if sc.files[i].OldPath != "" {
			sc.touched[sc.files[i].OldPath] = true
		}
	}
	return sc
}

// chunkFiles groups files in diff order into at most maxChunks chunks that each fit maxLines
// diff lines (0: no line bound) and maxTokens estimated tokens. A file too large for one
// chunk, or left when every chunk is full, is a named gap; a smaller later file still fills
// room left in the last chunk.
func chunkFiles(files []diff.File, maxLines, maxTokens, maxChunks int) ([][]diff.File, []Gap) {
	if maxChunks <= 0 {
		maxChunks = 1
	}
	var chunks [][]diff.File
	var gaps []Gap
	lines, tokens := 0, 0
	for i := range files {
		f := files[i]
		fl, ft := f.Lines, estimateTokens(len(f.Raw))
		if maxLines > 0 && fl > maxLines {
			gaps = append(gaps, Gap{Path: f.Path(), Reason: fmt.Sprintf(
				"larger on its own (%d diff lines) than review.max_diff_lines (%d): not sent to the model reviewer", fl, maxLines)})
			continue
		}
		if maxTokens > 0 && ft > maxTokens {
			gaps = append(gaps, Gap{Path: f.Path(), Reason: fmt.Sprintf(
				"larger on its own (about %d tokens) than one model call's budget (%d): not sent to the model reviewer", ft, maxTokens)})
			continue
		}
		fits := len(chunks) > 0 && (maxLines <= 0 || lines+fl <= maxLines) && (maxTokens <= 0 || tokens+ft <= maxTokens)
		switch {
		case fits:
		case len(chunks) < maxChunks:
			chunks = append(chunks, nil)
			lines, tokens = 0, 0
		default:
			gaps = append(gaps, Gap{Path: f.Path(), Reason: fmt.Sprintf(
				"beyond review.max_chunks (%d model calls of up to %d diff lines): not sent to the model reviewer", maxChunks, maxLines)})
			continue
		}
		chunks[len(chunks)-1] = append(chunks[len(chunks)-1], f)
		lines += fl
		tokens += ft
	}
	return chunks, gaps
}

func estimateTokens(n int) int { return (n + 3) / 4 }

// mergeReports joins one lens's reports from the chunks of a large change: the strictest
// verdict, every finding (deduplicated later by fingerprint), the summaries in order.
func mergeReports(reps []*runtime.LensReport) *runtime.LensReport {
	if len(reps) == 0 {
		return nil
	}
	if len(reps) == 1 {
		return reps[0]
	}
	rank := map[string]int{runtime.VerdictOK: 0, runtime.VerdictConcerns: 1, runtime.VerdictSkipped: 2, runtime.VerdictRequestChanges: 3}
	out := &runtime.LensReport{Lens: reps[0].Lens, Verdict: runtime.VerdictOK}
	var summaries []string
	for _, r := range reps {
		if r == nil {
			return nil // a chunk without a report leaves the lens pending
		}
		if !runtime.ValidVerdict(r.Verdict) {
			return r
		}
		if rank[r.Verdict] > rank[out.Verdict] {
			out.Verdict, out.Cause = r.Verdict, r.Cause
		}
		out.Findings = append(out.Findings, r.Findings...)
		if r.Summary != "" {
			summaries = append(summaries, r.Summary)
		}
	}
	for i, s := range summaries {
		if i > 0 {
			out.Summary += " | "
		}
		out.Summary += s
	}
	return out
}

// carry applies what the earlier review knew to this one's findings, lens by lens: findings
// on files untouched since the earlier head are carried forward (for lenses reviewed
// incrementally), findings gone on a file the push changed become fixed at this head, and
// dismissals stick to their fingerprint. A finding reported again but held back this time
// (held: withdrawn on verification or suppressed by earlier feedback) is not fixed: it leaves
// the record unpublished.
func carry(subj *Subject, sc scope, results []LensResult, incremental map[string]bool, pending map[string]bool, held map[string]bool) {
	prior := subj.Prior
	dismissed := map[string]Dismissal{}
	if prior != nil {
		for _, f := range prior.Findings {
			if f.Disposition == DispositionDismissed {
				dismissed[f.ID] = Dismissal{ID: f.ID, Reason: f.Reason, By: f.DismissedBy}
			}
		}
	}
	for _, d := range subj.Dismissals {
		dismissed[d.ID] = d
	}
	for i := range results {
		lr := &results[i]
		now := map[string]bool{}
		for j := range lr.Findings {
			lr.Findings[j].Head = subj.HeadSHA
			now[lr.Findings[j].ID] = true
		}
		if prior != nil {
			for _, pf := range prior.Findings {
				if pf.Lens != lr.Name || now[pf.ID] {
					continue
				}
				switch {
				case held[pf.ID] && pf.Open():
					// Reported again but withdrawn or suppressed this time: not fixed, not published.
					continue
				case !pf.Open():
					// A closed finding stays in the record of this pull request.
				case pending[lr.Name]:
					// The lens did not complete: what it found before still stands.
				case incremental[lr.Name] && !sc.touched[pf.Path]:
					// Carried forward: the file did not change since the finding's head.
				case sc.touched[pf.Path]:
					pf.Disposition, pf.FixCommit = DispositionFixed, subj.HeadSHA
				default:
					continue // reviewed again in full and not found: gone with the rewrite
				}
				lr.Findings = append(lr.Findings, pf)
				now[pf.ID] = true
			}
		}
		for j := range lr.Findings {
			f := &lr.Findings[j]
			if d, ok := dismissed[f.ID]; ok && f.Disposition != DispositionFixed {
				f.Disposition, f.Reason, f.DismissedBy, f.FixCommit = DispositionDismissed, d.Reason, d.By, ""
			}
			if f.Disposition == "" {
				f.Disposition = DispositionOpen
			}
		}
		sort.SliceStable(lr.Findings, func(a, b int) bool {
			fa, fb := lr.Findings[a], lr.Findings[b]
			if fa.Open() != fb.Open() {
				return fa.Open()
			}
			return fa.Severity.Rank() > fb.Severity.Rank()
		})
	}
}

// reoutcome recomputes a completed lens's outcome once dispositions are known: it fails on
// an open blocking finding, or on a request-changes verdict unless every finding behind it
// was dismissed or fixed.
func reoutcome(lr *LensResult, requestChanges bool) {
	if lr.Outcome == OutcomePending {
		return
	}
	open, any := false, len(lr.Findings) > 0
	blocking := false
	for _, f := range lr.Findings {
		if f.Open() {
			open = true
			if f.Severity.Blocks() {
				blocking = true
			}
		}
	}
	if blocking || requestChanges && (open || !any) {
		lr.Outcome = OutcomeFailed
	} else {
		lr.Outcome = OutcomePassed
	}
}

// nextState is the state this review leaves for the next one.
func nextState(subj *Subject, sc scope, plan policy.Plan, results []LensResult, findings []Finding, changed []runtime.Changed, modelIncremental, modelRan bool) *State {
	st := &State{BaseSHA: subj.BaseSHA, PlanDigest: plan.Digest(), Lenses: map[string]string{}}
	for _, lr := range results {
		if lr.Outcome != OutcomePending {
			st.Lenses[lr.Name] = subj.HeadSHA
		} else if subj.Prior != nil && subj.Prior.PlanDigest == plan.Digest() {
			if h, ok := subj.Prior.Lenses[lr.Name]; ok {
				st.Lenses[lr.Name] = h
			}
		}
	}
	st.Findings = findings
	st.FilesHead = subj.HeadSHA
	if modelIncremental && subj.Prior != nil {
		// Files untouched since the earlier head keep the head they were reviewed at.
		st.FilesAt = map[string]string{}
		for _, f := range changed {
			if sc.touched[f.Path] {
				continue
			}
			if h := subj.Prior.FileHead(f.Path); h != "" && h != subj.HeadSHA {
				st.FilesAt[f.Path] = h
			}
		}
		if len(st.FilesAt) == 0 {
			st.FilesAt = nil
		}
	}
	if !modelRan && subj.Prior != nil && subj.Prior.FilesHead != "" {
		st.FilesHead, st.FilesAt = subj.Prior.FilesHead, subj.Prior.FilesAt
	}
	return st
}

// headCoverage lists at which head the model lenses reviewed each changed file.
func headCoverage(subj *Subject, st *State, changed []runtime.Changed) []HeadFiles {
	if st == nil || len(changed) == 0 {
		return nil
	}
	byHead := map[string][]string{}
	for _, c := range changed {
		h := st.FileHead(c.Path)
		if h == "" {
			h = subj.HeadSHA
		}
		byHead[h] = append(byHead[h], c.Path)
	}
	var out []HeadFiles
	for h, paths := range byHead {
		hf := HeadFiles{Head: h, Files: len(paths)}
		if h != subj.HeadSHA {
			hf.Paths = paths
		}
		out = append(out, hf)
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].Head == subj.HeadSHA) != (out[j].Head == subj.HeadSHA) {
			return out[i].Head == subj.HeadSHA
		}
		return out[i].Head < out[j].Head
	})
	return out
}
