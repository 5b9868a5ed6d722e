package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// TestModelReviewThroughTheApp: a signed webhook, the real dispatcher and worker, the openai
// runtime against a local OpenAI-compatible server that sends no usage, and the publisher
// against the fake GitHub. The secret in the pull request body never reaches the model; the
// gate check and the advisory comment say it was replaced and what the model calls cost
// (estimated); the audit record that concludes the gate carries the same tokens.
func TestModelReviewThroughTheApp(t *testing.T) {
	secret := "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
	srv := modelfake.New("model-token", func(req modelfake.Request) modelfake.Reply {
		var lenses []string
		for _, m := range regexp.MustCompile(`(?m)^LENS ([a-z-]+):$`).FindAllStringSubmatch(req.System, -1) {
			lenses = append(lenses, `{"lens":"`+m[1]+`","verdict":"ok","summary":"Nothing found.","findings":[]}`)
		}
		answer := `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"fine","lenses":[` + strings.Join(lenses, ",") + `]}`
		return modelfake.Reply{Content: answer, NoUsage: true}
	})
	defer srv.Close()
	rt, err := openai.New(openai.Options{BaseURL: srv.URL, Token: srv.Token, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt, builtin.New(builtin.Options{})),
		Logger: zerolog.Nop(), WorkRoot: t.TempDir()})
	st := newStack(t, p, e2eDiff1)
	st.gh.SetFile(e2eRepo, "master", ".asdd.yml", "runtime: openai\nmodels:\n  reviewer: m\nwalkthrough:\n  enabled: false\n")
	st.gh.SetPullBody(e2eRepo, e2ePR, st.gh.PullBody(e2eRepo, e2ePR)+"\n- [x] human\n\nold token "+secret+"\n")
	if _, _, err := st.gh.TokenClient().Issues.AddLabelsToIssue(context.Background(), "Codertocat", "Hello-World", e2ePR, []string{"fix"}); err != nil {
		t.Fatal(err)
	}
	st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	d := st.decisions.last()
	var sent []string
	for _, r := range srv.Requests() {
		sent = append(sent, string(r.Body))
	}
	// The default policy's three lenses run in one call: none needs the independent pass.
	if len(sent) != 1 || len(d.Tokens.Calls) != 1 || !d.Tokens.Estimated || d.Tokens.Total <= 0 {
		t.Fatalf("%d requests, tokens %+v", len(sent), d.Tokens)
	}
	if strings.Contains(sent[0], secret[4:16]) || !strings.Contains(sent[0], "[redacted github-pat]") {
		t.Fatal("the secret of the pull request body reached the model")
	}
	line := review.TokensLine(d)
	if !strings.Contains(line, "estimated") {
		t.Fatalf("tokens line %q", line)
	}
	g := gatesOf(st.gh, e2eHead1)
	if len(g) != 1 || !strings.Contains(g[0].Summary, line) || !strings.Contains(g[0].Summary, "1 secret value(s) replaced") {
		t.Fatalf("gate check summary lacks the model section: %+v", g)
	}
	if c := botComments(st.gh); len(c) != 1 || !strings.Contains(c[0].Body, line) {
		t.Fatalf("advisory comment lacks the tokens line")
	}
	f, err := os.Open(st.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := pdp.Verify(f); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(st.ledger)
	if err != nil {
		t.Fatal(err)
	}
	var with []pdp.Record
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var r pdp.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.Payload.Tokens != nil {
			with = append(with, r)
		}
	}
	if len(with) != 1 || with[0].Payload.Tokens.Total != d.Tokens.Total || !with[0].Payload.Tokens.Estimated || with[0].Payload.Tokens.Calls != 1 {
		t.Fatalf("audit records with tokens: %+v", with)
	}
}
