package openai_test

import (
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/internal/modelfake"
)

// quirky starts a model server of that kind serving reviewer-model-7 with a context of context
// tokens, with the habits real ones have (see modelfake: its own token count, Ollama's silent
// cut or the others' 400 for a prompt over the context, 404 for a model it does not serve, the
// context told where the real server tells it), answering as quirkyAnswer; opts add habits.
func quirky(t *testing.T, kind modelfake.Kind, context int, opts ...modelfake.Option) *modelfake.Server {
	return quirkyWith(t, kind, context, quirkyAnswer, opts...)
}

func quirkyWith(t *testing.T, kind modelfake.Kind, context int, answer func(modelfake.Request) modelfake.Reply, opts ...modelfake.Option) *modelfake.Server {
	opts = append([]modelfake.Option{modelfake.WithKind(kind), modelfake.WithModels("reviewer-model-7"), modelfake.WithContext(context)}, opts...)
	s := modelfake.New("sk-test-secret-token", answer, opts...)
	t.Cleanup(s.Close)
	return s
}

var (
	quirkyDefectRE = regexp.MustCompile(`(?m)^-\s*if p == "" \{ return nil \}$`)
	quirkyFileRE   = regexp.MustCompile(`(?m)^diff --git a/\S+ b/(\S+)$`)
)

// quirkyAnswer is the model's review: honest at temperature 0 (request-changes on the removed
// nil check, on its file), sampled at any other (without a temperature it samples at 1.0, as
// Ollama does, so the same request gets different verdicts), every lens ok when the server cut
// the instructions. It reports the server's own prompt token count.
func quirkyAnswer(req modelfake.Request) modelfake.Reply {
	lenses := req.Lenses() // a malformed schema leaves no lens to answer for
	verdict, file := "ok", ""
	if loc := quirkyDefectRE.FindStringIndex(req.User); loc != nil {
		verdict = "request-changes"
		if files := quirkyFileRE.FindAllStringSubmatch(req.User[:loc[0]], -1); len(files) > 0 {
			file = files[len(files)-1][1]
		}
	}
	temperature := 1.0 // Ollama's default when a request names none
	if req.Temperature != nil {
		temperature = *req.Temperature
	}
	if temperature > 0 {
		// Sampling: reproducible for a seed and a prompt, different from request to request
		// without a seed.
		choices := []string{"ok", "concerns", "request-changes"}
		if req.Seed != nil {
			h := fnv.New64a()
			_, _ = io.WriteString(h, req.System+req.User)
			verdict = choices[rand.New(rand.NewPCG(uint64(*req.Seed), h.Sum64())).IntN(3)]
		} else {
			verdict = choices[req.N%3]
		}
	}
	var entries []string
	for _, l := range lenses {
		v, findings := verdict, `[]`
		if req.Truncated {
			v = "ok"
		} else if v == "request-changes" && file != "" {
			findings = fmt.Sprintf(`[{"path":"%s:2","severity":"block","title":"Nil check removed","message":"Load panics on an empty path.","suggestion":null}]`, file)
		}
		entries = append(entries, fmt.Sprintf(`{"lens":%q,"findings":%s,"summary":"Reviewed.","verdict":%q}`, l, findings, v))
	}
	content := `{"schema":"asdd/review/v0.1","lenses":[` + strings.Join(entries, ",") + `],"summary":"Reviewed.","recommendation":"comment"}`
	return modelfake.Reply{Content: content, PromptTokens: req.PromptTokens, CompletionTokens: len(content)/3 + 1}
}

// repeatGuard is quirkyAnswer stopped midway by Ollama's repeat guard: finish_reason null and
// zero usage.
func repeatGuard(req modelfake.Request) modelfake.Reply {
	rep := quirkyAnswer(req)
	return modelfake.Reply{Content: rep.Content[:len(rep.Content)/2], NullFinish: true}
}
