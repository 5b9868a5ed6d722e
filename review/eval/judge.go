package eval

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// Judge decides whether a reported finding describes a known defect.
type Judge interface {
	SameDefect(ctx context.Context, known, reported string) (same bool, usage runtime.Tokens, err error)
	// Model names the judge in reports.
	Model() string
}

// ModelJudge is a judge behind an OpenAI-compatible endpoint: the openai runtime's client, with
// its retries, response-format fallback and deadlines.
type ModelJudge struct {
	Runtime *openai.Runtime
	// Name is the judge model ("" : the runtime's default model).
	Name string
}

// SameDefect implements Judge.
func (m ModelJudge) SameDefect(ctx context.Context, known, reported string) (bool, runtime.Tokens, error) {
	same, call, err := m.Runtime.SameDefect(ctx, m.Name, known, reported)
	return same, call.Usage, err
}

// Model implements Judge.
func (m ModelJudge) Model() string { return m.Name }

// judging asks the judge once per pair of a case's golden finding and reported finding (the
// overall and the per-lens scores ask about the same pairs), and counts what it spent.
type judging struct {
	judge Judge

	mu      sync.Mutex
	answers map[judgeKey]bool
	calls   int
	tokens  Tokens
}

type judgeKey struct {
	caseID  string
	golden  Golden
	finding string
}

func newJudging(j Judge) *judging {
	return &judging{judge: j, answers: map[judgeKey]bool{}}
}

// confirmer is the judge's confirmation for the pairs of one case; nil without a judge.
func (j *judging) confirmer(caseID string) confirmer {
	if j.judge == nil {
		return nil
	}
	return func(ctx context.Context, g Golden, f review.Finding) (bool, error) {
		reported := describeFinding(f)
		key := judgeKey{caseID: caseID, golden: g, finding: reported}
		j.mu.Lock()
		same, ok := j.answers[key]
		j.mu.Unlock()
		if ok {
			return same, nil
		}
		same, usage, err := j.judge.SameDefect(ctx, describeGolden(g), reported)
		j.mu.Lock()
		defer j.mu.Unlock()
		j.calls++
		j.tokens.add(usage.PromptTokens, usage.CompletionTokens, usage.Estimated)
		if err != nil {
			return false, fmt.Errorf("judge: %w", err)
		}
		j.answers[key] = same
		return same, nil
	}
}

// describeGolden is the text of a known defect the judge reads.
func describeGolden(g Golden) string {
	var b strings.Builder
	if g.Path != "" {
		b.WriteString("File: " + g.Path)
		if g.StartLine > 0 {
			fmt.Fprintf(&b, " lines %d-%d", g.StartLine, g.EndLine)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Severity: %s\n%s", g.Severity, g.Description)
	return b.String()
}

// describeFinding is the text of a reported finding the judge reads.
func describeFinding(f review.Finding) string {
	var b strings.Builder
	if f.Path != "" {
		b.WriteString("File: " + f.Path)
		if f.Line > 0 {
			fmt.Fprintf(&b, " line %d", f.Line)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Severity: %s\n%s\n%s", f.Severity, f.Title, f.Body)
	return b.String()
}
