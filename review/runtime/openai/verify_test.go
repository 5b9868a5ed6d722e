package openai_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/internal/modelfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// verifyingServer answers a review call with two findings on loader.go and a verifying call by
// refuting the finding titled "parse is never called"; it reports 1000+50 tokens per answer.
func verifyingServer(t *testing.T) (*modelfake.Server, func() []string) {
	srv := newModel(t, func(req modelfake.Request) modelfake.Reply {
		var answer string
		if strings.Contains(req.System, "You check findings") {
			var vs []string
			for _, m := range regexp.MustCompile(`(?m)^- id: (LG-[0-9a-f]+)\n  lens: .*\n  file: .*\n  title: (.*)$`).FindAllStringSubmatch(req.User, -1) {
				verdict := "confirmed"
				if m[2] == "parse is never called" {
					verdict = "refuted"
				}
				vs = append(vs, `{"id":"`+m[1]+`","verdict":"`+verdict+`","reason":"looked at line 4"}`)
			}
			answer = `{"schema":"lensgate/verify/v1","verdicts":[` + strings.Join(vs, ",") + `]}`
		} else {
			answer = `{"schema":"asdd/review/v0.1","recommendation":"comment","summary":"s","lenses":[{"lens":"correctness","findings":[` +
				`{"path":"loader.go:4","severity":"warn","title":"parse is never called","message":"m","suggestion":null},` +
				`{"path":"loader.go:4","severity":"warn","title":"nil config returned","message":"the empty path now reaches parse","suggestion":null}` +
				`],"summary":"two","verdict":"concerns"}]}`
		}
		return reply(answer)
	})
	return srv, func() []string {
		var users []string
		for _, r := range srv.Requests() {
			users = append(users, r.User)
		}
		return users
	}
}

// TestModelVerificationCall: with review.verify: model the runtime makes one verifying call with
// the candidates and their file's diff inside the fence; the refuted finding is withdrawn with
// the model's reason, and the call's tokens count against models.max_tokens_per_review: under a
// cap that leaves no room for it the call is not made and every finding stands.
func TestModelVerificationCall(t *testing.T) {
	srv, users := verifyingServer(t)
	defer srv.Close()
	cfg := repoConfig("correctness")
	cfg.Review.Quality.Verify = config.VerifyModel
	d, err := pipeline(t, srv, nil).Review(context.Background(), subject(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sent := users()
	if len(sent) != 2 || !strings.Contains(sent[1], "## Findings to verify") || !strings.Contains(sent[1], "+++ b/loader.go") {
		t.Fatalf("%d calls; verifying prompt %q", len(sent), sent[len(sent)-1])
	}
	v := d.Verification
	if v.ModelChecked != 2 || len(v.Withdrawn) != 1 || v.Withdrawn[0].Check != review.CheckModel ||
		!strings.Contains(v.Withdrawn[0].Reason, "looked at line 4") || len(d.Findings) != 1 || d.Findings[0].Title != "nil config returned" {
		t.Fatalf("verification %+v, findings %+v", v, d.Findings)
	}
	if d.Tokens.Total != 2100 || len(d.Tokens.Calls) != 2 {
		t.Fatalf("tokens %+v", d.Tokens)
	}

	// The review call fits and spends 1050; what is left cannot hold the verifying call.
	cfg.Models.MaxTokensPerReview = 1350
	d, err = pipeline(t, srv, func(o *openai.Options) { o.MaxTokens = 200 }).Review(context.Background(), subject(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(users()) != 3 || !strings.Contains(d.Verification.ModelCause, "token budget") || len(d.Findings) != 2 {
		t.Fatalf("%d calls, verification %+v, %d findings", len(users()), d.Verification, len(d.Findings))
	}
}
