package review

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/lensgate/lensgate/internal/digest"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// Bounds of the prose calls (the walkthrough and answers to questions).
const (
	// maxProseDiffBytes bounds the diff a prose call is given; the files beyond it are named
	// in the changed-file list only.
	maxProseDiffBytes = 96 << 10
	// MaxAnswerBytes bounds the model's answer to a question.
	MaxAnswerBytes = 3000
	// MaxQuestionBytes bounds a question as it is sent.
	MaxQuestionBytes = 2000
	// proseCallOverhead is what one lens call is counted at beyond its diff when the prose
	// calls leave room for the lenses: its fixed prompt and a full answer.
	proseCallOverhead = 8192
)

// NoModelAnswer is the reply to a question when no model runtime reviews the repository.
const NoModelAnswer = "No model is configured for this repository's review, so lensgate cannot answer questions here. " +
	"An operator enables a model runtime (runtimes.openai_base_url) and the repository chooses it (runtime: openai in .asdd.yml)."

// Question is a reviewer's `/lensgate ask` command. Text and Thread are untrusted.
type Question struct {
	CommentID int64
	// InReplyTo is the inline comment whose thread the question was asked in (0: the
	// conversation); Path and Line are the lines that thread is on.
	InReplyTo int64
	Path      string
	Line      int
	User      string
	Text      string
	// Thread are the earlier comments of the review thread, oldest first.
	Thread []string
}

// QuestionAnswer is the reply to one question. Text is the model's (untrusted) answer when
// Model is set; otherwise lensgate's own sentence saying why there is none.
type QuestionAnswer struct {
	CommentID int64  `json:"commentId"`
	InReplyTo int64  `json:"inReplyTo,omitempty"`
	User      string `json:"user"`
	Text      string `json:"text"`
	Model     string `json:"model,omitempty"`
	// Question is the question as asked (untrusted); Tokens what answering it cost.
	Question string      `json:"question"`
	Tokens   *TokenCount `json:"tokens,omitempty"`
}

// proseRun is what the prose calls of a review produced.
type proseRun struct {
	mu      sync.Mutex
	summary *WalkthroughMemo
	tokens  *TokenCount // what this run's walkthrough call cost (nil: none made)
	note    string
	answers []QuestionAnswer
	calls   []ModelCall
}

// writer is the runtime that writes the walkthrough and answers: the runtime of the first
// model lens of the plan that can write prose ("" and nil when none can). paid names the
// first model runtime of the plan when none of them can write prose ("" when there is none).
func (r *reviewRun) writer() (name string, w runtime.Writer, paid string) {
	for _, l := range r.lenses {
		if l.cause != "" || r.p.free[l.runtime] {
			continue
		}
		rt, _ := r.p.opts.Runtimes.Get(l.runtime)
		if w, ok := rt.(runtime.Writer); ok {
			return l.runtime, w, ""
		}
		if paid == "" {
			paid = l.runtime
		}
	}
	return "", nil, paid
}

// noWriterAnswer says why a question gets no model's answer.
func noWriterAnswer(paid string) string {
	if paid == "" {
		return NoModelAnswer
	}
	return "The model runtime " + paid + " of this repository's review cannot write answers (it is not an OpenAI-compatible " +
		"runtime in lensgate's own process), so lensgate cannot answer questions here."
}

// lensHeadroom is the tokens the lens calls of this review may take: the prose calls leave it
// to them, so a walkthrough or an answer never takes the tokens a lens needs (it never affects
// the gate). Each part is counted twice, for a runtime's independent pass.
func (r *reviewRun) lensHeadroom() int {
	n := 0
	for _, g := range r.groups {
		if r.p.free[g.key.runtime] || g.key.reused {
			continue
		}
		src, in := r.diffBytes, g.chunks
		if g.key.incremental {
			src = r.sc.diff
			if len(inPaths(r.sc.files, g.key.paths)) == 0 {
				continue // nothing new: no call
			}
		}
		for _, part := range in {
			n += 2 * (runtime.EstimateTokens(len(joinFiles(src, part))) + proseCallOverhead)
		}
	}
	return n
}

// startProse starts the walkthrough and the answers beside the lens calls; wg waits for them.
func (r *reviewRun) startProse(ctx context.Context, wg *sync.WaitGroup) {
	r.prose = &proseRun{}
	wantSummary := r.cfg.Walkthrough.Enabled
	if !wantSummary && len(r.subj.Questions) == 0 {
		return
	}
	name, w, paid := r.writer()
	if w == nil {
		for _, q := range r.subj.Questions {
			r.prose.answers = append(r.prose.answers, QuestionAnswer{CommentID: q.CommentID, InReplyTo: q.InReplyTo, User: q.User,
				Question: boundText(q.Text, MaxQuestionBytes), Text: noWriterAnswer(paid)})
		}
		if paid != "" && wantSummary {
			r.prose.note = "the model runtime " + paid + " cannot write a walkthrough"
		}
		return
	}
	budget := &besideLenses{b: r.spend, headroom: r.lensHeadroom()}
	if wantSummary {
		wg.Go(func() { r.writeSummary(ctx, name, w, budget) })
	}
	if len(r.subj.Questions) > 0 {
		wg.Go(func() {
			for _, q := range r.subj.Questions {
				r.answer(ctx, name, w, budget, q)
			}
		})
	}
}

// proseRequest is what a prose call shares with the lens calls: the model view of the change
// (bounded), the lens instructions and the context the lenses get.
func (r *reviewRun) proseRequest(kind string, all []byte, files []diff.File, budget runtime.Budget) *runtime.ProseRequest {
	var kept []diff.File
	size := 0
	for _, f := range files {
		if size+len(f.Raw) > maxProseDiffBytes {
			continue
		}
		size += len(f.Raw)
		kept = append(kept, f)
	}
	v := newModelView(r.secretRules, r.subj, r.rtSubj, all, kept, r.changed, r.cfg.Models.ExcludePaths)
	req := &runtime.ProseRequest{Kind: kind, Subject: v.subject, Diff: v.diff, Changed: v.changed, Settings: r.settings,
		Budget: budget, Slots: r.slots, Context: r.partContext(v.files)}
	for _, l := range r.lenses {
		req.Lenses = append(req.Lenses, runtime.Lens{Name: l.item.Name, Preset: l.item.Preset, Instruction: l.item.Instruction})
	}
	return req
}

// writeSummary writes the model's walkthrough: kept when it was written at this head, updated
// from the changes since when it was written at the head this review is incremental from,
// written anew otherwise.
func (r *reviewRun) writeSummary(ctx context.Context, name string, w runtime.Writer, budget runtime.Budget) {
	prior := (*WalkthroughMemo)(nil)
	if r.subj.Prior != nil {
		prior = r.subj.Prior.Walkthrough
	}
	if prior != nil && prior.Head == r.subj.HeadSHA {
		// Written at this head already (or failed at it): a run of the same head, for a
		// command or a settled delegate, does not pay for it again.
		r.prose.summary, r.prose.note = prior, prior.Failed
		return
	}
	if !r.intake.Passed {
		r.prose.note = "intake did not pass, so the change was not sent to a model for the walkthrough"
		return
	}
	req := r.proseRequest(runtime.ProseWalkthrough, r.diffBytes, r.files, budget)
	if prior != nil && prior.Text != "" && r.sc.incremental && r.sc.since == prior.Head {
		req = r.proseRequest(runtime.ProseWalkthrough, r.sc.diff, r.sc.files, budget)
		req.Since, req.Previous = prior.Head, prior.Text
	}
	req.MaxBytes = MaxWalkthroughSummaryBytes
	out, err := r.callWriter(ctx, name, w, req)
	r.prose.mu.Lock()
	defer r.prose.mu.Unlock()
	if err != nil {
		r.prose.note = "the walkthrough call failed: " + boundText(err.Error(), 300)
		r.prose.summary = &WalkthroughMemo{Head: r.subj.HeadSHA, Failed: r.prose.note}
		return
	}
	r.prose.summary = &WalkthroughMemo{Head: r.subj.HeadSHA, Text: boundText(out.Text, MaxWalkthroughSummaryBytes), Model: out.Model}
	r.prose.tokens = &TokenCount{}
	r.prose.tokens.add(out.Call.Usage)
}

// answer answers one question with the diff, its thread and the lenses' context.
func (r *reviewRun) answer(ctx context.Context, name string, w runtime.Writer, budget runtime.Budget, q Question) {
	all, files := r.diffBytes, r.files
	if q.Path != "" {
		// A question in a review thread is about that file first: it leads the diff.
		for i := range files {
			if files[i].Path() == q.Path {
				files = append([]diff.File{files[i]}, append(files[:i:i], files[i+1:]...)...)
				break
			}
		}
	}
	req := r.proseRequest(runtime.ProseAnswer, all, files, budget)
	red := builtin.NewRedactor(r.secretRules)
	req.Question = red.Text(boundText(q.Text, MaxQuestionBytes))
	for _, t := range q.Thread {
		req.Thread = append(req.Thread, red.Text(boundText(t, MaxQuestionBytes)))
	}
	req.Path, req.Line, req.MaxBytes = red.Text(q.Path), q.Line, MaxAnswerBytes
	a := QuestionAnswer{CommentID: q.CommentID, InReplyTo: q.InReplyTo, User: q.User, Question: boundText(q.Text, MaxQuestionBytes)}
	if !r.intake.Passed {
		// The intake is the spend gate: a change it holds back goes to no model, questions
		// included.
		a.Text = "lensgate sends this pull request to no model until its intake checks pass (" + intakeProblems(r.intake) +
			"); ask again once they do."
		r.prose.mu.Lock()
		r.prose.answers = append(r.prose.answers, a)
		r.prose.mu.Unlock()
		return
	}
	out, err := r.callWriter(ctx, name, w, req)
	if out != nil {
		a.Tokens = &TokenCount{}
		a.Tokens.add(out.Call.Usage)
	}
	if err != nil {
		a.Text = "lensgate could not answer this question: " + boundText(err.Error(), 300)
	} else {
		a.Text, a.Model = boundText(out.Text, MaxAnswerBytes), out.Model
	}
	r.prose.mu.Lock()
	r.prose.answers = append(r.prose.answers, a)
	r.prose.mu.Unlock()
}

// callWriter makes one prose call, safe from a panicking runtime, and records it with the
// review's model calls.
func (r *reviewRun) callWriter(ctx context.Context, name string, w runtime.Writer, req *runtime.ProseRequest) (out *runtime.Prose, err error) {
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, fmt.Errorf("runtime crashed: %v", v)
		}
		if out != nil {
			r.prose.mu.Lock()
			r.prose.calls = append(r.prose.calls, ModelCall{Runtime: name, Call: out.Call})
			r.prose.mu.Unlock()
		}
	}()
	out, err = w.Write(ctx, req)
	if err == nil && (out == nil || strings.TrimSpace(out.Text) == "") {
		err = errors.New("runtime returned no text")
	}
	return out, err
}

// finishProse puts what the prose calls produced into the decision: the walkthrough (when
// turned on), the answers, and their calls among the review's model calls.
func (r *reviewRun) finishProse(dec *Decision, results []LensResult) {
	if r.prose == nil {
		return
	}
	dec.Answers = r.prose.answers
	if !r.cfg.Walkthrough.Enabled {
		return
	}
	w := r.buildWalkthrough(results, dec.Findings)
	if s := r.prose.summary; s != nil {
		if s.Text != "" {
			w.Summary, w.SummaryModel, w.SummaryHead = s.Text, s.Model, s.Head
		}
		if dec.State != nil {
			dec.State.Walkthrough = s
		}
	}
	w.SummaryNote, w.SummaryTokens = r.prose.note, r.prose.tokens
	if w.Summary != "" && w.SummaryHead != r.subj.HeadSHA && w.SummaryNote == "" {
		w.SummaryNote = "written at " + digest.Short(w.SummaryHead)
	}
	dec.Walkthrough = w
}

// besideLenses is the token budget of the prose calls: the review's, less the room the lens
// calls may still need.
type besideLenses struct {
	b        *reviewBudget
	headroom int
}

func (p *besideLenses) Reserve(ctx context.Context, n int) (bool, string) {
	return p.b.reserveBeside(ctx, n, p.headroom)
}

func (p *besideLenses) Settle(ctx context.Context, reserved, used int) {
	p.b.Settle(ctx, reserved, used)
}

// reserveBeside reserves n tokens when n and headroom more fit both caps; only n stays
// reserved. Refusals are not counted as the lenses' refusals.
func (b *reviewBudget) reserveBeside(ctx context.Context, n, headroom int) (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max > 0 && b.used+n+headroom > b.max {
		return false, fmt.Sprintf("models.max_tokens_per_review (%d) leaves no room for this call (up to %d tokens) beside the lens calls (up to %d)",
			b.max, n, headroom)
	}
	if b.ledger != nil {
		res, err := b.ledger.Reserve(ctx, b.installation, n+headroom)
		if err != nil {
			b.log.Error().Err(err).Msg("daily token count not reserved")
			return false, "runtimes.max_tokens_per_installation_per_day could not be checked, so no model call was made"
		}
		if !res.Granted {
			return false, res.Cause
		}
		if headroom > 0 {
			// The headroom was only checked: it stays free for the lens calls.
			if err := b.ledger.Settle(ctx, res, n); err != nil {
				b.log.Warn().Err(err).Msg("daily token count not settled; the headroom stays counted for the day")
			} else {
				res.Tokens = n
			}
		}
		b.open = append(b.open, res)
	}
	b.used += n
	return true, ""
}

// proseCalls are the prose calls made, the walkthrough's first, whichever answered first.
func (r *reviewRun) proseCalls() []ModelCall {
	if r.prose == nil {
		return nil
	}
	calls := slices.Clone(r.prose.calls)
	slices.SortStableFunc(calls, func(a, b ModelCall) int {
		return strings.Compare(b.Lenses[0], a.Lenses[0]) // "walkthrough" before "ask"
	})
	return calls
}

// proseShare names the tokens of the prose calls among a review's calls, which no lens's share
// holds ("" when there were none).
func proseShare(calls []ModelCall) string {
	var walk, ask TokenCount
	for _, c := range calls {
		if len(c.Lenses) != 1 {
			continue
		}
		switch c.Lenses[0] {
		case runtime.ProseWalkthrough:
			walk.add(c.Usage)
		case runtime.ProseAnswer:
			ask.add(c.Usage)
		}
	}
	var parts []string
	if walk.Total > 0 {
		parts = append(parts, "walkthrough "+thousands(walk.Total))
	}
	if ask.Total > 0 {
		parts = append(parts, "answers "+thousands(ask.Total))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; beside the lenses: " + strings.Join(parts, ", ")
}
