package repoconfig

import (
	"context"
	"testing"

	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/review/modelctx"
)

// TestContextSourcesTrustTheBaseAndTheOrganisation: instruction files come from the base
// commit, never the head; the organisation repository's default branch is the fallback only
// when the loader has one, and never for that repository itself.
func TestContextSourcesTrustTheBaseAndTheOrganisation(t *testing.T) {
	gh := githubfake.New(t)
	gh.AddRepo(githubfake.Repo{Owner: "acme", Name: "widgets"})
	gh.AddRepo(githubfake.Repo{Owner: "acme", Name: ".github"})
	gh.SetFile("acme/widgets", "b1", "AGENTS.md", "## Code Review Rules\nbase\n")
	gh.SetFile("acme/widgets", "h1", "AGENTS.md", "## Code Review Rules\nhead\n")
	gh.SetFile("acme/.github", "main", "AGENTS.md", "org rules\n")
	f := pull.Fetcher{Attempts: 1}
	src := NewConfigLoader(".github", nil, nil, nil).ContextSources(f, gh.TokenClient(), "acme", "widgets", "b1", "h1")
	if src.OrgName != "acme/.github" || src.Org == nil {
		t.Fatalf("organisation fallback: %+v", src)
	}
	m := modelctx.Gather(context.Background(), *src, modelctx.Request{Changed: []modelctx.ChangedFile{{Path: "x.go"}},
		Settings: modelctx.Settings{Instructions: modelctx.InstructionsAuto}})
	if len(m.Instructions) != 1 || m.Instructions[0].Text != "## Code Review Rules\nbase" || m.Instructions[0].Commit != "b1" {
		t.Fatalf("instructions: %+v", m.Instructions)
	}
	gh.DeleteFile("acme/widgets", "b1", "AGENTS.md")
	m = modelctx.Gather(context.Background(), *src, modelctx.Request{Changed: []modelctx.ChangedFile{{Path: "x.go"}},
		Settings: modelctx.Settings{Instructions: modelctx.InstructionsAuto}})
	if len(m.Instructions) != 1 || m.Instructions[0].Repository != "acme/.github" || m.Instructions[0].Text != "org rules" {
		t.Fatalf("organisation instructions: %+v", m.Instructions)
	}
	if s := NewConfigLoader("", nil, nil, nil).ContextSources(f, gh.TokenClient(), "acme", "widgets", "b1", "h1"); s.Org != nil {
		t.Error("no organisation repository configured, no fallback")
	}
	if s := NewConfigLoader(".github", nil, nil, nil).ContextSources(f, gh.TokenClient(), "acme", ".github", "b1", "h1"); s.Org != nil {
		t.Error("the organisation repository does not fall back on itself")
	}
}
