package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lensgate/lensgate/review/runtime"
)

// Model servers whose context settings a cause can name.
const (
	serverUnknown = ""
	serverOllama  = "Ollama"
	serverVLLM    = "vLLM"
	serverLlama   = "llama.cpp"
)

// contextInfo is what a model server said about a model's context window.
type contextInfo struct {
	// server is the kind of server that answered ("" when none of the known ones did).
	server string
	// tokens is the context length the server runs the model with (0 when it did not say).
	tokens int
	// again is set when the server may say more later: Ollama reports a model's context only
	// once the model is loaded.
	again bool
}

// raise says which setting makes a model's context larger on a server.
func (c contextInfo) raise() string {
	switch c.server {
	case serverOllama:
		return "raise Ollama's context (OLLAMA_CONTEXT_LENGTH on the server, or PARAMETER num_ctx in the model's Modelfile)"
	case serverVLLM:
		return "raise vLLM's --max-model-len"
	case serverLlama:
		return "raise llama-server's context (-c / --ctx-size, divided among --parallel slots)"
	}
	return "raise the model server's context (Ollama: OLLAMA_CONTEXT_LENGTH or num_ctx; vLLM: --max-model-len; llama.cpp: -c)"
}

// ollamaDefaultContexts are context lengths Ollama runs a model with when nothing else is set
// (older releases 2,048, later 4,096, some 8,192). On an Ollama that does not report its
// context, a prompt count equal to one of them is the trace its silent truncation leaves.
var ollamaDefaultContexts = []int{2048, 4096, 8192}

// ErrPromptTruncated marks a call whose prompt the server did not read whole.
var ErrPromptTruncated = errors.New("the model server read less than the whole prompt")

// checkPromptRead reports a prompt the server cut: it counted far fewer tokens than lensgate's
// estimate of what was sent (fewer than a third: real tokenizers count code and prose at two
// to five bytes a token, so about as many tokens as the estimate of one per four bytes, never
// a third of it), or exactly a context length the server runs the model with, which is what a
// prompt cut to fit the context counts. The answer to a
// cut prompt was written without the instructions at its start, so it is not used.
func checkPromptRead(rp reply, estimate int, info contextInfo) error {
	if !rp.hasUsage || rp.prompt <= 0 {
		return nil
	}
	atLimit := rp.prompt == info.tokens
	if info.server == serverOllama && info.tokens == 0 {
		// An Ollama that does not say its context (a release without it in /api/ps) runs one
		// of its defaults unless told otherwise.
		for _, n := range ollamaDefaultContexts {
			atLimit = atLimit || rp.prompt == n
		}
	}
	if rp.prompt*3 >= estimate && !atLimit {
		return nil
	}
	return fmt.Errorf("%w: it counted %d prompt tokens for a prompt of about %d, so the instructions at its start were cut; %s, "+
		"or lower review.max_diff_lines", ErrPromptTruncated, rp.prompt, estimate, info.raise())
}

// probeTimeout bounds each request that asks a server about a model.
const probeTimeout = 5 * time.Second

// learnContext asks the server which context length it runs the model with, where it says:
// vLLM's /v1/models (max_model_len), llama.cpp's /props (n_ctx), Ollama's /api/ps (the
// context of a loaded model) and /api/show (a num_ctx parameter). Whatever is not answered is
// unknown. The answers are not part of the review's record, so they go without its recorder.
func (r *Runtime) learnContext(ctx context.Context, model string) contextInfo {
	ctx = runtime.WithRecorder(ctx, nil)
	root := strings.TrimSuffix(r.base, "/v1")
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if r.probe(ctx, http.MethodGet, r.base+"/models", nil, &models) {
		for _, m := range models.Data {
			if m.ID == model && m.MaxModelLen > 0 {
				return contextInfo{server: serverVLLM, tokens: m.MaxModelLen}
			}
		}
	}
	if info, ok := r.learnOllama(ctx, root, model); ok {
		return info
	}
	var props struct {
		NCtx     int `json:"n_ctx"`
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if r.probe(ctx, http.MethodGet, root+"/props", nil, &props) && (props.NCtx > 0 || props.Settings.NCtx > 0) {
		return contextInfo{server: serverLlama, tokens: max(props.Settings.NCtx, props.NCtx)}
	}
	return contextInfo{}
}

var numCtxRE = regexp.MustCompile(`(?m)^\s*num_ctx\s+(\d+)\s*$`)

// learnOllama reads an Ollama server: the context of the model when it is loaded, else a
// num_ctx its Modelfile sets. ok is false when the server is not Ollama.
func (r *Runtime) learnOllama(ctx context.Context, root, model string) (contextInfo, bool) {
	var show struct {
		Parameters string          `json:"parameters"`
		ModelInfo  json.RawMessage `json:"model_info"`
		Details    json.RawMessage `json:"details"`
	}
	body, _ := json.Marshal(map[string]string{"model": model})
	if !r.probe(ctx, http.MethodPost, root+"/api/show", body, &show) || len(show.ModelInfo) == 0 && len(show.Details) == 0 {
		return contextInfo{}, false
	}
	info := contextInfo{server: serverOllama}
	var ps struct {
		Models []struct {
			Name          string `json:"name"`
			Model         string `json:"model"`
			ContextLength int    `json:"context_length"`
		} `json:"models"`
	}
	info.again = true
	if r.probe(ctx, http.MethodGet, root+"/api/ps", nil, &ps) {
		for _, m := range ps.Models {
			if m.Name == model || m.Model == model {
				info.tokens, info.again = m.ContextLength, false
			}
		}
	}
	if m := numCtxRE.FindStringSubmatch(show.Parameters); m != nil && info.tokens == 0 {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			info.tokens, info.again = n, false
		}
	}
	return info, true
}

// probe sends one request about the model and decodes a 200 JSON answer into out.
func (r *Runtime) probe(ctx context.Context, method, url string, body []byte, out any) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return false
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.opts.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK && json.Unmarshal(data, out) == nil
}

// contextOf is the context information of an endpoint and model, learned once.
func (r *Runtime) contextOf(ctx context.Context, key, model string) contextInfo {
	if !r.opts.LearnContext {
		return contextInfo{}
	}
	r.mu.Lock()
	st := r.states[key]
	r.mu.Unlock()
	if st.probed {
		return st.context
	}
	lctx, cancel := context.WithTimeout(ctx, 2*probeTimeout)
	info := r.learnContext(lctx, model)
	cancel()
	r.mu.Lock()
	st = r.states[key]
	st.probed, st.context = !info.again, info
	r.states[key] = st
	r.mu.Unlock()
	if info.tokens > 0 {
		r.opts.Logger.Info().Str("runtime", Name).Str("model", model).Str("server", info.server).Int("context_tokens", info.tokens).
			Msg("model server reports the model's context length")
	}
	return info
}
