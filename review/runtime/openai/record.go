package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/lensgate/lensgate/review/runtime"
)

// recordTransport hands the exact request and response bodies of every attempt to the call's
// recorder, when the pipeline put one in the request's context. It sits outside the size
// limit, so it sees the bytes the limit let through, and reads the model names and the token
// counts from those bytes itself rather than from what the client library made of them.
type recordTransport struct {
	next http.RoundTripper
}

func (t *recordTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := runtime.RecorderFrom(req.Context())
	if rec == nil {
		return t.next.RoundTrip(req)
	}
	var sent []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		sent = b
		req.Body = io.NopCloser(bytes.NewReader(sent))
	}
	var named struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(sent, &named)
	rec.Models(named.Model, "")
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		rec.HTTP(sent, nil, false, 0)
		return nil, err
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		// Cut off (for example, over the size limit): no complete response was received.
		rec.HTTP(sent, nil, false, resp.StatusCode)
		return nil, err
	}
	rec.HTTP(sent, got, true, resp.StatusCode)
	if resp.StatusCode/100 == 2 {
		var answer struct {
			Model string `json:"model"`
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(got, &answer) == nil {
			rec.Models("", answer.Model)
			if answer.Usage != nil && answer.Usage.Prompt >= 0 && answer.Usage.Completion >= 0 {
				rec.Tokens(runtime.Tokens{PromptTokens: answer.Usage.Prompt, CompletionTokens: answer.Usage.Completion})
			}
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(got))
	resp.ContentLength = int64(len(got))
	return resp, nil
}
