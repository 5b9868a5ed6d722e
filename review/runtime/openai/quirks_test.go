package openai_test

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Kinds of model server the quirky fake imitates.
const (
	kindOllama = "ollama"
	kindVLLM   = "vllm"
	kindLlama  = "llamacpp"
)

// quirkyModel is a local model server with the habits real ones have, so that tests keep
// lensgate honest against them:
//
//   - it counts prompt tokens with its own tokenizer (three bytes a token, more than
//     lensgate's estimate), and a prompt longer than its context is, like Ollama, cut to the
//     context (usage.prompt_tokens equals the context size, the start of the system message
//     is lost and the model answers without its instructions: every lens ok), or, like vLLM
//     and llama.cpp, refused with their HTTP 400;
//   - without a temperature it samples at 1.0, so the same request gets different verdicts;
//     at temperature 0 it answers greedily (the honest verdict);
//   - it rejects parameters it does not support with a 400 naming them;
//   - a model it does not serve is a 404 "model 'x' not found";
//   - a schema its grammar converter cannot take (one holding badSchemaWord) is a 500;
//   - with repeatGuard it stops the answer midway with finish_reason null and zero usage;
//   - it says what context it runs the model with where the real server does (Ollama's
//     /api/ps once the model is loaded and /api/show for a num_ctx parameter, vLLM's
//     /v1/models, llama.cpp's /props), and answers 404 to every other path.
type quirkyModel struct {
	t             *testing.T
	kind          string
	models        []string
	context       int
	numCtxParam   bool // Ollama: the Modelfile sets num_ctx (shown by /api/show)
	psNoContext   bool // Ollama: /api/ps lists a loaded model without its context (older releases)
	refuse        []string
	badSchemaWord string
	repeatGuard   bool
	retryAfter    []int // statuses answered first, in order, each with Retry-After: 1

	mu     sync.Mutex
	chats  []quirkyRequest
	probes []string
	loaded bool
}

type quirkyRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Temperature    *float64 `json:"temperature"`
	Seed           *uint64  `json:"seed"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	raw map[string]json.RawMessage
}

func (q *quirkyModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	route := r.Method + " " + r.URL.Path
	if route == "POST /v1/chat/completions" {
		q.chat(w, body)
		return
	}
	q.mu.Lock()
	q.probes = append(q.probes, route)
	loaded := q.loaded
	q.mu.Unlock()
	var answer any
	switch {
	case route == "GET /v1/models":
		var data []any
		for _, m := range q.models {
			e := map[string]any{"id": m, "object": "model", "owned_by": q.kind}
			switch q.kind {
			case kindVLLM:
				e["max_model_len"] = q.context
			case kindLlama:
				e["meta"] = map[string]any{"n_ctx_train": 131072}
			}
			data = append(data, e)
		}
		answer = map[string]any{"object": "list", "data": data}
	case q.kind == kindOllama && route == "POST /api/show":
		var req struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &req)
		if !slices.Contains(q.models, req.Model) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = fmt.Fprintf(w, `{"error":"model '%s' not found"}`, req.Model)
			return
		}
		params := "temperature 0.7\nstop \"<|eot_id|>\""
		if q.numCtxParam {
			params += fmt.Sprintf("\nnum_ctx                        %d", q.context)
		}
		answer = map[string]any{"parameters": params, "details": map[string]any{"family": "llama"},
			"model_info": map[string]any{"llama.context_length": 131072}}
	case q.kind == kindOllama && route == "GET /api/ps":
		models := []any{}
		if loaded {
			m := map[string]any{"name": q.models[0], "model": q.models[0], "context_length": q.context}
			if q.psNoContext {
				delete(m, "context_length")
			}
			models = append(models, m)
		}
		answer = map[string]any{"models": models}
	case q.kind == kindLlama && route == "GET /props":
		answer = map[string]any{"default_generation_settings": map[string]any{"n_ctx": q.context}, "total_slots": 1}
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"message":"not found","type":"not_found_error"}}`)
		return
	}
	_ = json.NewEncoder(w).Encode(answer)
}

// fail writes an error answer.
func fail(w http.ResponseWriter, status int, body string) {
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func (q *quirkyModel) chat(w http.ResponseWriter, body []byte) {
	var req quirkyRequest
	if err := json.Unmarshal(body, &req); err != nil || json.Unmarshal(body, &req.raw) != nil {
		q.t.Errorf("chat request is not JSON: %v", err)
		fail(w, http.StatusBadRequest, `{"error":{"message":"invalid JSON"}}`)
		return
	}
	q.mu.Lock()
	q.chats = append(q.chats, req)
	n := len(q.chats)
	q.mu.Unlock()
	if n <= len(q.retryAfter) {
		w.Header().Set("Retry-After", "1")
		fail(w, q.retryAfter[n-1], `{"error":{"message":"busy","type":"server_busy"}}`)
		return
	}
	for _, p := range q.refuse {
		if _, ok := req.raw[p]; ok {
			fail(w, http.StatusBadRequest, fmt.Sprintf(`{"error":{"message":"Unsupported parameter: '%s' is not supported with this model.","type":"invalid_request_error","param":"%s","code":"unsupported_parameter"}}`, p, p))
			return
		}
	}
	if !slices.Contains(q.models, req.Model) {
		fail(w, http.StatusNotFound, fmt.Sprintf(`{"error":{"message":"model '%s' not found","type":"api_error","param":null,"code":null}}`, req.Model))
		return
	}
	var schema []byte
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		schema = rf.JSONSchema.Schema
		if q.badSchemaWord != "" && strings.Contains(string(schema), q.badSchemaWord) {
			fail(w, http.StatusInternalServerError, `{"error":{"message":"invalid JSON schema in format","type":"api_error","param":null,"code":null}}`)
			return
		}
	}
	system, user := req.Messages[0].Content, req.Messages[1].Content
	tokens := (len(system)+len(user)+len(schema))/3 + 8
	truncated := false
	if tokens > q.context {
		switch q.kind {
		case kindVLLM:
			fail(w, http.StatusBadRequest, fmt.Sprintf(`{"object":"error","message":"This model's maximum context length is %d tokens. However, you requested %d tokens in the messages, Please reduce the length of the messages.","type":"BadRequestError","param":null,"code":400}`, q.context, tokens))
			return
		case kindLlama:
			fail(w, http.StatusBadRequest, fmt.Sprintf(`{"error":{"code":400,"message":"the request exceeds the available context size (%d tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":%d,"n_ctx":%d}}`, q.context, tokens, q.context))
			return
		}
		// Ollama keeps the first few tokens and the tail: the instructions are gone.
		truncated, tokens = true, q.context
	}
	q.mu.Lock()
	q.loaded = true
	q.mu.Unlock()
	content := q.answer(req, schema, system, user, truncated, n)
	finish, usage := any("stop"), map[string]any{"prompt_tokens": tokens, "completion_tokens": len(content)/3 + 1}
	if q.repeatGuard {
		content, finish, usage = content[:len(content)/2], nil, map[string]any{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "model": req.Model, "system_fingerprint": "fp_" + q.kind,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": map[string]any{"role": "assistant", "content": content}}},
		"usage":   usage,
	})
}

var (
	quirkyLensRE   = regexp.MustCompile(`(?m)^LENS ([a-z-]+):$`)
	quirkyDefectRE = regexp.MustCompile(`(?m)^-\s*if p == "" \{ return nil \}$`)
	quirkyFileRE   = regexp.MustCompile(`(?m)^diff --git a/\S+ b/(\S+)$`)
)

// answer is the model's review: honest at temperature 0 (request-changes on the removed nil
// check, on its file), sampled at any other, every lens ok when it never saw the instructions.
func (q *quirkyModel) answer(req quirkyRequest, schema []byte, system, user string, truncated bool, n int) string {
	var lenses []string
	if schema != nil {
		lenses, _ = lensEnum(schema) // a malformed schema leaves no lens to answer for
	} else {
		for _, m := range quirkyLensRE.FindAllStringSubmatch(system, -1) {
			lenses = append(lenses, m[1])
		}
	}
	verdict, file := "ok", ""
	if loc := quirkyDefectRE.FindStringIndex(user); loc != nil {
		verdict = "request-changes"
		files := quirkyFileRE.FindAllStringSubmatch(user[:loc[0]], -1)
		file = files[len(files)-1][1]
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
			_, _ = io.WriteString(h, system+user)
			verdict = choices[rand.New(rand.NewPCG(*req.Seed, h.Sum64())).IntN(3)]
		} else {
			verdict = choices[n%3]
		}
	}
	var entries []string
	for _, l := range lenses {
		v, findings := verdict, `[]`
		if truncated {
			v = "ok"
		} else if v == "request-changes" && file != "" {
			findings = fmt.Sprintf(`[{"path":"%s:2","severity":"block","title":"Nil check removed","message":"Load panics on an empty path.","suggestion":null}]`, file)
		}
		entries = append(entries, fmt.Sprintf(`{"lens":%q,"findings":%s,"summary":"Reviewed.","verdict":%q}`, l, findings, v))
	}
	return `{"schema":"asdd/review/v0.1","lenses":[` + strings.Join(entries, ",") + `],"summary":"Reviewed.","recommendation":"comment"}`
}

func (q *quirkyModel) requests() []quirkyRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]quirkyRequest(nil), q.chats...)
}
