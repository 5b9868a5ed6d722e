package details_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/modelctx"
)

// contextReviewer is plantedReviewer with a context manifest, as a review whose model lenses
// were given instruction files, code and a linked issue.
type contextReviewer struct{ plantedReviewer }

func (c contextReviewer) Review(ctx context.Context, s *review.Subject, cfg *config.Repo) (*review.Decision, error) {
	d, err := c.plantedReviewer.Review(ctx, s, cfg)
	if err != nil {
		return nil, err
	}
	m := &modelctx.Manifest{}
	m.Add(&modelctx.Context{
		Rules:  []modelctx.Rule{{Path: "AGENTS.md", Commit: strings.Repeat("b", 40), SHA256: strings.Repeat("1", 64)}},
		Code:   []modelctx.Code{{Path: "src/<b>x</b>.go", Commit: fixtureHead, Start: 10, End: 42, Kind: modelctx.SpanFunction, SHA256: strings.Repeat("2", 64)}},
		Issues: []modelctx.Issue{{Number: 7, SHA256: strings.Repeat("3", 64)}},
	})
	dg, err := m.Digest()
	if err != nil {
		return nil, err
	}
	d.Context, d.ContextDigest, d.ChangedInstructions = m, dg, []string{"AGENTS.md"}
	for i := range d.Runs {
		d.Runs[i].ContextDigest = dg
	}
	return d, nil
}

// TestPageListsTheModelContext: the details page lists every instruction file, code range and
// linked issue of the context manifest with its digest, the manifest's digest (which the
// receipt binds), and the instruction files the pull request changes, all escaped.
func TestPageListsTheModelContext(t *testing.T) {
	st := newStack(t, stackOptions{reviewer: contextReviewer{}})
	st.review(stackOptions{reviewer: contextReviewer{}})
	cl := st.client()
	st.login(cl, reader)
	_, body, _ := get(t, cl, st.pageURL(""))
	i := strings.Index(body, `id="context-h"`)
	if i < 0 {
		t.Fatalf("no context section:\n%s", body)
	}
	sec := body[i:]
	sec = sec[:strings.Index(sec, "</section>")]
	for _, want := range []string{`<code id="context-digest">sha256:`, "AGENTS.md", strings.Repeat("1", 64), "src/&lt;b&gt;x&lt;/b&gt;.go",
		"10-42", strings.Repeat("2", 64), "linked issue #7", strings.Repeat("3", 64), `id="context-changed"`} {
		if !strings.Contains(sec, want) {
			t.Errorf("the context section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(sec, "<b>x</b>") {
		t.Error("a path is not escaped")
	}
}
