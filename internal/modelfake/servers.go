package modelfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Kind is the server the fake imitates: the paths it answers besides chat completions, the
// shape of its errors and what it does with a prompt longer than its context.
type Kind int

const (
	// OpenAI is api.openai.com: /v1/models, errors as {"error":{message,type,param,code}}, a
	// prompt over the context refused with 400 context_length_exceeded.
	OpenAI Kind = iota
	// Ollama's OpenAI-compatible endpoint: /api/show and /api/ps too, and a prompt over the
	// context cut silently (the start is lost; usage.prompt_tokens equals the context).
	Ollama
	// VLLM is vLLM's OpenAI-compatible server: max_model_len in /v1/models, errors as
	// {"object":"error",…}, a prompt over the context refused with 400.
	VLLM
	// LlamaCpp is llama.cpp's llama-server: /props with n_ctx, a prompt over the context
	// refused with 400 exceed_context_size_error.
	LlamaCpp
)

func (k Kind) String() string {
	switch k {
	case Ollama:
		return "ollama"
	case VLLM:
		return "vllm"
	case LlamaCpp:
		return "llamacpp"
	}
	return "openai"
}

// quirks are the habits of the imitated server, set by options.
type quirks struct {
	kind          Kind
	models        []string // served models; nil serves any name
	context       int      // 0: no limit
	unsupported   []string
	schemaRefused string
	numCtxParam   bool // Ollama: the Modelfile sets num_ctx (shown by /api/show)
	psNoContext   bool // Ollama: /api/ps lists a loaded model without context_length
}

// WithKind makes the fake imitate that server (OpenAI by default).
func WithKind(k Kind) Option { return func(s *Server) { s.quirks.kind = k } }

// WithModels makes the fake serve only these models: a request for another is a 404 naming it,
// in the server's words, and /v1/models lists them. Without it any model name is served.
func WithModels(names ...string) Option { return func(s *Server) { s.quirks.models = names } }

// WithContext runs every model with a context of tokens (counted as Request.PromptTokens): a
// longer prompt is refused with the server's 400, or, on Ollama, cut to it. vLLM's /v1/models,
// llama.cpp's /props and Ollama's /api/ps (once a model is loaded) say it.
func WithContext(tokens int) Option { return func(s *Server) { s.quirks.context = tokens } }

// WithUnsupported refuses a request naming any of these parameters with a 400 naming it, as
// servers do for sampling parameters they do not take.
func WithUnsupported(params ...string) Option {
	return func(s *Server) { s.quirks.unsupported = params }
}

// WithSchemaRefused answers a 500 to a json_schema holding word, as a server whose grammar
// converter cannot take it does.
func WithSchemaRefused(word string) Option { return func(s *Server) { s.quirks.schemaRefused = word } }

// WithNumCtxParameter makes Ollama's /api/show list a num_ctx parameter equal to the context,
// as for a model made from a Modelfile that sets it.
func WithNumCtxParameter() Option { return func(s *Server) { s.quirks.numCtxParam = true } }

// WithoutPSContext makes Ollama's /api/ps list a loaded model without its context_length, as
// older releases do.
func WithoutPSContext() Option { return func(s *Server) { s.quirks.psNoContext = true } }

// accepts applies the server's habits to a well-formed request: it answers and reports false
// when the server would refuse it, and cuts the prompt where the server would.
func (s *Server) accepts(w http.ResponseWriter, req *Request) bool {
	q := s.quirks
	if q.kind == OpenAI && !s.openAIParams(w, req) {
		return false
	}
	for _, p := range q.unsupported {
		if req.Has(p) {
			s.errorBody(w, http.StatusBadRequest, "invalid_request_error", p, "unsupported_parameter",
				fmt.Sprintf("Unsupported parameter: '%s' is not supported with this model.", p))
			return false
		}
	}
	if q.models != nil && !slices.Contains(q.models, req.Model) {
		s.modelNotFound(w, req.Model)
		return false
	}
	if q.schemaRefused != "" && strings.Contains(string(req.Schema), q.schemaRefused) {
		s.apiError(w, http.StatusInternalServerError, "api_error", "invalid JSON schema in format")
		return false
	}
	if q.context > 0 && req.PromptTokens > q.context && !s.overContext(w, req) {
		return false
	}
	s.mu.Lock()
	s.loaded = true
	s.requests[req.N-1] = *req
	s.mu.Unlock()
	return true
}

// openAIChatParams are the request fields OpenAI's chat completions take; it refuses others
// (the compatible servers ignore them).
var openAIChatParams = []string{"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "seed",
	"response_format", "stop", "n", "stream", "stream_options", "presence_penalty", "frequency_penalty", "logit_bias",
	"logprobs", "top_logprobs", "user", "tools", "tool_choice", "parallel_tool_calls", "metadata", "store",
	"reasoning_effort", "service_tier", "modalities", "audio", "prediction", "web_search_options"}

// openAIParams answers OpenAI's 400 for a field it does not know and for a json_schema format
// without its required name.
func (s *Server) openAIParams(w http.ResponseWriter, req *Request) bool {
	var top map[string]json.RawMessage
	_ = json.Unmarshal(req.Body, &top)
	for k := range top {
		if !slices.Contains(openAIChatParams, k) {
			s.errorBody(w, http.StatusBadRequest, "invalid_request_error", nil, nil, "Unrecognized request argument supplied: "+k)
			return false
		}
	}
	if req.Format == "json_schema" && req.SchemaName == "" {
		s.errorBody(w, http.StatusBadRequest, "invalid_request_error", "response_format.json_schema.name", "missing_required_parameter",
			"Missing required parameter: 'response_format.json_schema.name'.")
		return false
	}
	if req.Strict {
		var schema any
		if err := json.Unmarshal(req.Schema, &schema); err != nil {
			s.errorBody(w, http.StatusBadRequest, "invalid_request_error", "response_format", nil, "Invalid schema: "+err.Error())
			return false
		}
		if msg := strictProblem(schema, "schema"); msg != "" {
			s.errorBody(w, http.StatusBadRequest, "invalid_request_error", "response_format", nil,
				fmt.Sprintf("Invalid schema for response_format '%s': In context=(%s), %s.", req.SchemaName, "'"+req.SchemaName+"'", msg))
			return false
		}
	}
	return true
}

// strictProblem is what OpenAI's strict structured outputs refuse in a schema ("" for nothing):
// an object must set additionalProperties to false and require every one of its properties.
func strictProblem(node any, at string) string {
	switch n := node.(type) {
	case map[string]any:
		if props, ok := n["properties"].(map[string]any); ok {
			if n["additionalProperties"] != false {
				return at + ": 'additionalProperties' is required to be supplied and to be false"
			}
			required, _ := n["required"].([]any)
			for name := range props {
				if !slices.Contains(required, any(name)) {
					return fmt.Sprintf("%s: 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'", at, name)
				}
			}
		}
		for k, v := range n {
			if msg := strictProblem(v, at+"."+k); msg != "" {
				return msg
			}
		}
	case []any:
		for i, v := range n {
			if msg := strictProblem(v, fmt.Sprintf("%s[%d]", at, i)); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// modelNotFound is the 404 for a model the server does not serve, in its words.
func (s *Server) modelNotFound(w http.ResponseWriter, model string) {
	switch s.quirks.kind {
	case Ollama:
		s.errorBody(w, http.StatusNotFound, "api_error", nil, nil, fmt.Sprintf("model '%s' not found", model))
	case VLLM:
		s.errorBody(w, http.StatusNotFound, "NotFoundError", nil, nil, fmt.Sprintf("The model `%s` does not exist.", model))
	default:
		s.errorBody(w, http.StatusNotFound, "invalid_request_error", nil, "model_not_found",
			fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model))
	}
}

// overContext refuses a prompt longer than the context, or, like Ollama, cuts it: Ollama keeps
// the first few tokens and the tail, so the system message's instructions are what is lost.
func (s *Server) overContext(w http.ResponseWriter, req *Request) bool {
	q := s.quirks
	switch q.kind {
	case Ollama:
		cut := min((req.PromptTokens-q.context)*3, len(req.System))
		req.System, req.Truncated, req.PromptTokens = req.System[cut:], true, q.context
		return true
	case VLLM:
		s.raw(w, http.StatusBadRequest, map[string]any{"object": "error", "type": "BadRequestError", "param": nil, "code": 400,
			"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the messages, Please reduce the length of the messages.", q.context, req.PromptTokens)})
	case LlamaCpp:
		s.raw(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400, "type": "exceed_context_size_error",
			"message":         fmt.Sprintf("the request exceeds the available context size (%d tokens), try increasing it", q.context),
			"n_prompt_tokens": req.PromptTokens, "n_ctx": q.context}})
	default:
		s.errorBody(w, http.StatusBadRequest, "invalid_request_error", "messages", "context_length_exceeded",
			fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", q.context, req.PromptTokens))
	}
	return false
}

// probe answers the requests other than chat completions that the imitated server answers:
// /v1/models everywhere, /api/show and /api/ps on Ollama, /props on llama.cpp; 404 elsewhere.
func (s *Server) probe(w http.ResponseWriter, r *http.Request, body []byte) {
	route := r.Method + " " + r.URL.Path
	s.mu.Lock()
	s.probes = append(s.probes, route)
	loaded := s.loaded
	s.mu.Unlock()
	q := s.quirks
	switch {
	case route == "GET /v1/models":
		if s.authorized(w, r) {
			s.raw(w, http.StatusOK, map[string]any{"object": "list", "data": s.modelList()})
		}
	case q.kind == Ollama && route == "POST /api/show":
		s.ollamaShow(w, body)
	case q.kind == Ollama && route == "GET /api/ps":
		models := []any{}
		if loaded && len(q.models) > 0 {
			m := map[string]any{"name": q.models[0], "model": q.models[0], "size": 5137025024, "context_length": q.context}
			if q.psNoContext || q.context == 0 {
				delete(m, "context_length")
			}
			models = append(models, m)
		}
		s.raw(w, http.StatusOK, map[string]any{"models": models})
	case q.kind == LlamaCpp && route == "GET /props":
		s.raw(w, http.StatusOK, map[string]any{"default_generation_settings": map[string]any{"n_ctx": q.context}, "total_slots": 1})
	case r.URL.Path == "/v1/models" || (q.kind == Ollama && (r.URL.Path == "/api/show" || r.URL.Path == "/api/ps")):
		s.apiError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed")
	default:
		s.apiError(w, http.StatusNotFound, "not_found", "unknown path "+r.URL.Path)
	}
}

// modelList is /v1/models' data in the imitated server's shape.
func (s *Server) modelList() []any {
	data := []any{}
	for _, m := range s.quirks.models {
		e := map[string]any{"id": m, "object": "model", "created": 1764892800}
		switch s.quirks.kind {
		case Ollama:
			e["owned_by"] = "library"
		case VLLM:
			e["owned_by"], e["root"] = "vllm", m
			if s.quirks.context > 0 {
				e["max_model_len"] = s.quirks.context
			}
		case LlamaCpp:
			e["owned_by"], e["meta"] = "llamacpp", map[string]any{"n_ctx_train": 131072}
		default:
			e["owned_by"] = "system"
		}
		data = append(data, e)
	}
	return data
}

// ollamaShow answers Ollama's /api/show for a served model, with a num_ctx parameter when the
// Modelfile sets one.
func (s *Server) ollamaShow(w http.ResponseWriter, body []byte) {
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &req)
	if !slices.Contains(s.quirks.models, req.Model) {
		s.raw(w, http.StatusNotFound, map[string]any{"error": fmt.Sprintf("model '%s' not found", req.Model)})
		return
	}
	params := "temperature 0.7\nstop \"<|eot_id|>\""
	if s.quirks.numCtxParam {
		params += fmt.Sprintf("\nnum_ctx                        %d", s.quirks.context)
	}
	s.raw(w, http.StatusOK, map[string]any{"parameters": params, "details": map[string]any{"family": "llama"},
		"model_info": map[string]any{"llama.context_length": 131072}})
}

// apiError writes an error without a parameter or code of its own.
func (s *Server) apiError(w http.ResponseWriter, status int, typ, msg string) {
	s.errorBody(w, status, typ, nil, typ, msg)
}

// errorBody writes an error in the imitated server's shape: vLLM's {"object":"error",…} or
// the {"error":{…}} of OpenAI, Ollama and llama.cpp.
func (s *Server) errorBody(w http.ResponseWriter, status int, typ string, param, code any, msg string) {
	if s.quirks.kind == VLLM {
		s.raw(w, status, map[string]any{"object": "error", "message": msg, "type": typ, "param": param, "code": status})
		return
	}
	s.raw(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": param, "code": code}})
}

func (s *Server) raw(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
