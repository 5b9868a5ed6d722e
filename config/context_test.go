package config

import (
	"slices"
	"strings"
	"testing"
)

func TestContextSection(t *testing.T) {
	r, probs := CheckRepo(".asdd.yml", []byte("runtime: builtin\n"))
	if d := DefaultContext(); len(probs) != 0 || r.Context.Instructions != d.Instructions || !r.Context.EnclosingCode || !r.Context.LinkedIssues || r.Context.MaxTokens != d.MaxTokens {
		t.Fatalf("default context: %+v %v", r.Context, probs)
	}
	r, probs = CheckRepo(".asdd.yml", []byte("context:\n  instructions: off\n  enclosing_code: false\n  linked_issues: false\n  max_tokens: 100\n"))
	if len(probs) != 0 || r.Context.Instructions != ContextInstructionsOff || r.Context.EnclosingCode || r.Context.LinkedIssues || r.Context.MaxTokens != 100 {
		t.Fatalf("context: %+v %v", r.Context, probs)
	}
	r, probs = CheckRepo(".asdd.yml", []byte("context:\n  instructions: [docs/REVIEWING.md, AGENTS.md]\n"))
	if len(probs) != 0 || !slices.Equal(r.Context.InstructionPaths, []string{"docs/REVIEWING.md", "AGENTS.md"}) {
		t.Fatalf("listed paths: %+v %v", r.Context, probs)
	}
	for _, bad := range []string{"context:\n  instructions: sometimes\n", "context:\n  instructions: ['../x.md']\n",
		"context:\n  instructions: ['docs/*.md']\n", "context:\n  instructions: 3\n", "context:\n  max_tokens: -1\n"} {
		if _, probs := CheckRepo(".asdd.yml", []byte(bad)); len(probs) == 0 || !strings.Contains(probs[0].Key, "context.") {
			t.Errorf("%q: want a problem of a context key, got %v", bad, probs)
		}
	}
}
