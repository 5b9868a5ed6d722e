package openai

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// maxParts bounds the calls one request is split into to fit a model's context.
const maxParts = 8

// promptLimit is how many tokens, as lensgate estimates them, a prompt may have to fit a
// context of ctxTokens: room is left for the answer (a quarter of the context at most), and
// the estimate of one token per four bytes is held to three quarters of what is left, since
// real tokenizers count code at about three bytes a token.
func (r *Runtime) promptLimit(ctxTokens int) int {
	answer := min(r.opts.MaxTokens, ctxTokens/4)
	return (ctxTokens - answer) * 3 / 4
}

// fitParts splits a request whose prompt would not fit the model's context into requests of
// whole files that each do, in diff order. A context that is unknown, or a prompt that fits,
// gives the request itself. fixed is the estimated prompt without any diff.
func (r *Runtime) fitParts(req *runtime.Request, whole, fixed int, info contextInfo) ([]*runtime.Request, error) {
	if info.tokens <= 0 {
		return []*runtime.Request{req}, nil
	}
	limit := r.promptLimit(info.tokens)
	if whole <= limit {
		return []*runtime.Request{req}, nil
	}
	room := limit - fixed
	if room <= 0 {
		return nil, fmt.Errorf("the model's context (%d tokens) does not hold the review instructions (about %d tokens) and an answer; %s",
			info.tokens, fixed, info.raise())
	}
	var groups [][]diff.File
	used := 0
	for i := range req.Files {
		f := req.Files[i]
		n := runtime.EstimateTokens(len(f.Raw))
		if n > room {
			return nil, fmt.Errorf("%q alone (about %d tokens of diff) does not fit the model's context of %d tokens; %s, or lower review.max_diff_lines",
				bounded(f.Path(), 120), n, info.tokens, info.raise())
		}
		if len(groups) == 0 || used+n > room {
			groups = append(groups, nil)
			used = 0
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], f)
		used += n
	}
	if len(groups) > maxParts {
		return nil, fmt.Errorf("the change needs %d calls of the model's context of %d tokens (at most %d are made); %s, or lower review.max_diff_lines",
			len(groups), info.tokens, maxParts, info.raise())
	}
	out := make([]*runtime.Request, len(groups))
	for i, g := range groups {
		sub := *req
		var b bytes.Buffer
		in := map[string]bool{}
		for _, f := range g {
			b.Write(f.Raw)
			in[f.NewPath] = true
		}
		sub.Diff, sub.Files, sub.Chunk, sub.Chunks = b.Bytes(), g, i+1, len(groups)
		sub.Context = req.Context.Only(in)
		out[i] = &sub
	}
	return out, nil
}

// mergeParts joins one lens's reports from the parts of a split request: a part that left
// the lens unjudged leaves it unjudged; otherwise the strictest verdict, every finding, and
// the summaries in order.
func mergeParts(parts [][]runtime.LensReport, lenses []runtime.Lens) []runtime.LensReport {
	rank := map[string]int{runtime.VerdictOK: 0, runtime.VerdictConcerns: 1, runtime.VerdictRequestChanges: 2}
	out := make([]runtime.LensReport, len(lenses))
	for i, l := range lenses {
		merged := runtime.LensReport{Lens: l.Name, Verdict: runtime.VerdictOK}
		var summaries []string
		for p, reps := range parts {
			rep := reps[i]
			if rep.Verdict == runtime.VerdictSkipped {
				merged = skipped(l.Name, fmt.Sprintf("part %d of %d: %s", p+1, len(parts), rep.Cause))
				break
			}
			if rank[rep.Verdict] > rank[merged.Verdict] {
				merged.Verdict = rep.Verdict
			}
			merged.Findings = append(merged.Findings, rep.Findings...)
			summaries = append(summaries, fmt.Sprintf("Part %d of %d: %s", p+1, len(parts), strings.TrimSpace(rep.Summary)))
		}
		if merged.Verdict != runtime.VerdictSkipped {
			merged.Summary = strings.Join(summaries, " ")
		}
		out[i] = merged
	}
	return out
}
