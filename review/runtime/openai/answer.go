package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Causes of a rejected answer. Each names what was wrong, so a pending lens tells the operator
// whether to look at the model, the server or the change.
var (
	ErrNoChoices     = errors.New("the response has no choices")
	ErrErrorBody     = errors.New("the endpoint answered HTTP 200 with an error body")
	ErrNotCompletion = errors.New("the response is not a chat completion")
	ErrTruncated     = errors.New("the answer was cut off (finish_reason length): raise the model's output limit or shrink the change")
	ErrFiltered      = errors.New("the answer was stopped by the server's content filter")
	ErrRefused       = errors.New("the model refused to answer")
	ErrToolCall      = errors.New("the model answered with a tool call instead of content")
	ErrReasoningOnly = errors.New("the answer is only in the reasoning field, not in the message content")
	ErrEmpty         = errors.New("the answer is empty")
	ErrInvalidUTF8   = errors.New("the answer is not valid UTF-8")
	ErrNotObject     = errors.New("the answer is not a JSON object")
	ErrProse         = errors.New("the answer has text around its JSON object")
	ErrTwoObjects    = errors.New("the answer holds more than one JSON value")
	ErrBadFence      = errors.New("the answer's code fence is not the whole answer")
	ErrInvalidJSON   = errors.New("the answer is not valid JSON")
	ErrSchema        = errors.New("the answer does not match the schema")
	ErrStoppedEarly  = errors.New("the server ended the answer early without a finish reason or token counts " +
		"(Ollama does this when its repeat guard sees the model repeating itself)")
)

// completion is the part of a chat completion response lensgate reads. Content stays raw: a
// string on most servers, an array of parts on some, null with a refusal or a tool call.
type completion struct {
	Error   json.RawMessage `json:"error"`
	Choices []struct {
		FinishReason *string `json:"finish_reason"`
		Message      *struct {
			Content          json.RawMessage `json:"content"`
			Refusal          *string         `json:"refusal"`
			ReasoningContent *string         `json:"reasoning_content"`
			Reasoning        *string         `json:"reasoning"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     *int `json:"prompt_tokens"`
		CompletionTokens *int `json:"completion_tokens"`
		// PromptTokensDetails is OpenAI's breakdown of the prompt; servers that cache
		// prefixes say there how much came from the cache. Many servers send neither it nor
		// its member, or send null.
		PromptTokensDetails *struct {
			CachedTokens *int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// reply is what one response said: the answer text (not yet checked), the server's token
// counts when it sent them, and the length of text it produced (for estimates).
type reply struct {
	text             string
	prompt, complete int
	hasUsage         bool
	// cached is the prompt tokens the server read from its prefix cache (0 when it did not say).
	cached        int
	producedBytes int
	// finish is the choice's finish_reason ("" when null or absent).
	finish string
}

// explainUnparsed names why an answer that could not be read stopped where it did: a reply
// without a finish reason and without token counts was ended by the server mid-answer, not
// written badly by the model.
func (rp reply) explainUnparsed(err error) error {
	if rp.finish == "" && !rp.hasUsage {
		return fmt.Errorf("%w: the answer is incomplete (%v); try another model or a smaller change (review.max_diff_lines)", ErrStoppedEarly, err)
	}
	return err
}

// parseCompletion reads a chat completion response body. It returns the message content and
// the usage the server reported; err names why the response carries no usable answer. Usage
// is returned even with an error, so a refused or truncated answer is still counted.
func parseCompletion(body []byte) (reply, error) {
	var rp reply
	if !utf8.Valid(body) {
		return rp, ErrInvalidUTF8
	}
	var c completion
	if err := json.Unmarshal(body, &c); err != nil {
		return rp, fmt.Errorf("%w: %s", ErrNotCompletion, shortJSONError(err))
	}
	if u := c.Usage; u != nil && u.PromptTokens != nil && u.CompletionTokens != nil && *u.PromptTokens+*u.CompletionTokens > 0 {
		rp.prompt, rp.complete, rp.hasUsage = max(*u.PromptTokens, 0), max(*u.CompletionTokens, 0), true
		if d := u.PromptTokensDetails; d != nil && d.CachedTokens != nil {
			rp.cached = min(max(*d.CachedTokens, 0), rp.prompt)
		}
	}
	if len(c.Error) > 0 && !bytes.Equal(bytes.TrimSpace(c.Error), []byte("null")) {
		return rp, fmt.Errorf("%w%s", ErrErrorBody, errorKind(c.Error))
	}
	if len(c.Choices) == 0 {
		return rp, ErrNoChoices
	}
	ch := c.Choices[0]
	if ch.Message == nil {
		return rp, fmt.Errorf("%w: the first choice has no message", ErrNotCompletion)
	}
	m := ch.Message
	text, err := joinContent(m.Content)
	if err != nil {
		return rp, err
	}
	reasoning := ""
	for _, r := range []*string{m.ReasoningContent, m.Reasoning} {
		if r != nil {
			reasoning += *r
		}
	}
	rp.producedBytes = len(text) + len(reasoning)
	rp.text = text
	finish := ""
	if ch.FinishReason != nil {
		finish = *ch.FinishReason
	}
	rp.finish = finish
	switch {
	case finish == "length":
		return rp, ErrTruncated
	case finish == "content_filter":
		return rp, ErrFiltered
	case m.Refusal != nil && strings.TrimSpace(*m.Refusal) != "":
		return rp, ErrRefused
	}
	if strings.TrimSpace(text) == "" {
		switch {
		case len(m.ToolCalls) > 0 && !bytes.Equal(bytes.TrimSpace(m.ToolCalls), []byte("null")) && !bytes.Equal(bytes.TrimSpace(m.ToolCalls), []byte("[]")):
			return rp, ErrToolCall
		case strings.TrimSpace(reasoning) != "":
			// A thinking model that put its verdict in the reasoning field: that text is the
			// model's scratchpad, never its answer.
			return rp, ErrReasoningOnly
		}
		return rp, ErrEmpty
	}
	return rp, nil
}

// joinContent turns message content into text: a string as it is, an array of parts joined
// (text parts only; a refusal part is a refusal, any other part is not an answer).
func joinContent(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: %s", ErrNotCompletion, shortJSONError(err))
		}
		return s, nil
	case '[':
		var parts []struct {
			Type    string  `json:"type"`
			Text    *string `json:"text"`
			Refusal *string `json:"refusal"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", fmt.Errorf("%w: content parts: %s", ErrNotCompletion, shortJSONError(err))
		}
		var b strings.Builder
		for i, p := range parts {
			switch {
			case p.Type == "refusal" || p.Refusal != nil && strings.TrimSpace(*p.Refusal) != "":
				return "", ErrRefused
			case (p.Type == "text" || p.Type == "output_text" || p.Type == "") && p.Text != nil:
				b.WriteString(*p.Text)
			default:
				return "", fmt.Errorf("%w: content part %d is of type %q, not text", ErrNotCompletion, i, bounded(p.Type, 40))
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("%w: content is neither a string nor an array of parts", ErrNotCompletion)
}

// errorKind names an error body by its type or code, never by its message (which may echo the
// request).
func errorKind(raw json.RawMessage) string {
	var e struct {
		Type string          `json:"type"`
		Code json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return ""
	}
	kind := e.Type
	if kind == "" && len(e.Code) > 0 {
		kind = strings.Trim(string(e.Code), `"`)
	}
	if kind == "" {
		return ""
	}
	return " (" + bounded(kind, 60) + ")"
}

// ExtractAnswer returns the one JSON object that a model's answer consists of. The whole text,
// once a leading <think>…</think> block is removed and one surrounding Markdown code fence is
// opened, must be exactly one JSON object. Prose before or after it, a second value, a fence
// with text outside it: each is an error naming what was wrong. The first object found is
// never taken on its own, because a change under review can plant one for the model to quote.
func ExtractAnswer(text string) ([]byte, error) {
	if !utf8.ValidString(text) {
		return nil, ErrInvalidUTF8
	}
	s := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(s, "<think>"); ok {
		end := strings.Index(rest, "</think>")
		if end < 0 {
			return nil, fmt.Errorf("%w: an unclosed <think> block", ErrNotObject)
		}
		s = strings.TrimSpace(rest[end+len("</think>"):])
	}
	if s == "" {
		return nil, ErrEmpty
	}
	if strings.HasPrefix(s, "```") {
		inner, err := unfence(s)
		if err != nil {
			return nil, err
		}
		s = inner
	}
	if !strings.HasPrefix(s, "{") {
		if strings.Contains(s, "{") {
			return nil, fmt.Errorf("%w: text before the object", ErrProse)
		}
		return nil, ErrNotObject
	}
	dec := json.NewDecoder(strings.NewReader(s))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidJSON, shortJSONError(err))
	}
	rest := strings.TrimSpace(s[dec.InputOffset():])
	switch {
	case rest == "":
		return raw, nil
	case strings.HasPrefix(rest, "{") || strings.HasPrefix(rest, "["):
		return nil, ErrTwoObjects
	}
	return nil, fmt.Errorf("%w: text after the object", ErrProse)
}

// unfence opens one Markdown code fence that must span the whole text: an opening line of
// backticks with an optional "json" tag, the body, and a closing line of backticks at the end.
func unfence(s string) (string, error) {
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return "", ErrBadFence
	}
	tag := strings.TrimSpace(strings.TrimLeft(s[:nl], "`"))
	if tag != "" && !strings.EqualFold(tag, "json") {
		return "", fmt.Errorf("%w: the fence is tagged %q", ErrBadFence, bounded(tag, 20))
	}
	body := s[nl+1:]
	end := strings.LastIndex(body, "```")
	if end < 0 || strings.TrimSpace(body[end:]) != "```" && strings.Trim(strings.TrimSpace(body[end:]), "`") != "" {
		return "", fmt.Errorf("%w: text after the closing fence", ErrBadFence)
	}
	inner := strings.TrimSpace(body[:end])
	inner = strings.TrimRight(inner, "`")
	if strings.Contains(inner, "```") {
		return "", fmt.Errorf("%w: more than one code fence", ErrBadFence)
	}
	return strings.TrimSpace(inner), nil
}

// shortJSONError keeps a decoder error to its first line and a bounded length; it may quote
// a few bytes of the answer, never the request.
func shortJSONError(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return bounded(msg, 160)
}

// bounded cuts s to n bytes on a rune boundary and drops invalid UTF-8 and line breaks.
func bounded(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
