package review

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

// yagaExampleDigest is the digest YAGA's documentation gives for its example policy.
const yagaExampleDigest = "8fab465b0b8ea9bf25e0c993387673ddde272405e885573f2094e09611c02cf0"

// A policy whose lenses use the codex preset runs them on the delegate runtime, and its plan is
// the same plan YAGA computes for the same file.
func TestDelegatedLensesInThePlan(t *testing.T) {
	path := filepath.Join("policy", "testdata", "yaga", "examples", "agent-review-policy.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := config.ParseYAGATOML(path, data)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultRepo()
	cfg.Policy, cfg.PolicyDefaulted = pol, false
	dl, err := delegate.New()
	if err != nil {
		t.Fatal(err)
	}
	reg := runtime.NewRegistry(builtin.New(builtin.Options{}), dl)
	if err := reg.AddPreset(delegate.CodexPreset, delegate.Name); err != nil {
		t.Fatal(err)
	}
	p := NewPipeline(Options{Runtimes: reg})

	subj := prSubject()
	b := delegate.Binding{Preset: delegate.CodexPreset, Repo: "o/r", Number: subj.Number, Head: subj.HeadSHA, Base: subj.BaseSHA}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	codexBot := runtime.Actor{Login: "chatgpt-codex-connector[bot]", ID: 199175422}
	obs := &runtime.Delegation{
		Now:      t0.Add(5 * time.Minute),
		Requests: []runtime.DelegateRequest{{Preset: b.Preset, Repo: b.Repo, Number: b.Number, Head: b.Head, Base: b.Base, ID: b.ID(), CommentID: 1, At: t0}},
	}

	t.Run("waiting", func(t *testing.T) {
		s := prSubject()
		s.Delegation = obs
		d, err := p.Review(context.Background(), s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d.PlanDigest != yagaExampleDigest {
			t.Fatalf("plan digest %s, want YAGA's %s", d.PlanDigest, yagaExampleDigest)
		}
		for _, name := range []string{"correctness", "security"} {
			l := lensByName(d, name)
			if l.Runtime != delegate.Name || l.Outcome != OutcomePending || !strings.Contains(l.Cause, "waiting for chatgpt-codex-connector[bot]") {
				t.Errorf("%s: %+v", name, l)
			}
		}
		if d.Gate.State != OutcomePending {
			t.Errorf("gate %s", d.Gate.State)
		}
	})

	t.Run("findings review", func(t *testing.T) {
		s := prSubject()
		o := *obs
		o.Reviews = []runtime.BotReview{{ID: 9, User: codexBot, State: "COMMENTED", CommitID: s.HeadSHA, SubmittedAt: t0.Add(time.Minute),
			Body:     "### 💡 Codex Review\n\nHere are some automated review suggestions for this pull request.\n\n**Reviewed commit:** `" + s.HeadSHA[:10] + "`",
			Comments: []runtime.BotReviewComment{{ID: 77, Path: "README.md", Line: 2, Body: "Say what the line is for."}}}}
		s.Delegation = &o
		d, err := p.Review(context.Background(), s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if l := lensByName(d, "correctness"); l.Outcome != OutcomeFailed || len(l.Findings) != 1 || l.Findings[0].Rule != codexBot.Login {
			t.Fatalf("correctness %+v", l)
		}
		if d.Gate.State != OutcomeFailed || d.PlanDigest != yagaExampleDigest {
			t.Fatalf("gate %s digest %s", d.Gate.State, d.PlanDigest)
		}
		if len(d.Inline) == 0 {
			t.Error("the bot's finding on a changed line is not an inline comment")
		}
	})

	t.Run("clean comment", func(t *testing.T) {
		s := prSubject()
		o := *obs
		o.Comments = []runtime.BotComment{{ID: 8, User: codexBot, AppID: 1144995, AppSlug: "chatgpt-codex-connector", CreatedAt: t0.Add(time.Minute),
			Body: "Codex Review: Didn't find any major issues.\n\n**Reviewed commit:** `" + s.HeadSHA + "`"}}
		s.Delegation = &o
		d, err := p.Review(context.Background(), s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d.Gate.State != OutcomePassed {
			t.Fatalf("gate %s: %s", d.Gate.State, d.Gate.Reason)
		}
	})
}
