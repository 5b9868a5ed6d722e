package openai

import (
	"errors"
	"strings"
	"testing"
)

// FuzzExtractAnswer: any answer text is either one JSON object or an error naming a cause, and
// never a panic. An accepted object is the whole answer less a <think> block and one fence.
func FuzzExtractAnswer(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, "```json\n{\"a\":1}\n```", "<think>{}</think>{\"a\":1}", "prose {\"a\":1}", `{"a":1}{"b":2}`,
		"```\n{}\n```\n{}", "<think>", "\xff{}", `{"a":[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]}`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		obj, err := ExtractAnswer(s)
		if err != nil {
			if obj != nil {
				t.Fatal("an object with an error")
			}
			return
		}
		if len(obj) == 0 || obj[0] != '{' || obj[len(obj)-1] != '}' {
			t.Fatalf("accepted %q from %q", obj, s)
		}
		if !strings.Contains(s, string(obj)) {
			t.Fatalf("accepted object %q is not in the answer", obj)
		}
	})
}

// FuzzParseCompletion: any response body ends in text or a named cause, never a panic.
func FuzzParseCompletion(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":[{"type":"text","text":"x"}]}}]}`,
		`{"error":{"type":"x"}}`, `{"choices":[]}`, `[]`, `{"choices":[{"message":null}]}`,
		`{"choices":[{"message":{"content":null,"reasoning_content":"{}"}}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rp, err := parseCompletion(b)
		if err == nil && strings.TrimSpace(rp.text) == "" {
			t.Fatal("an empty answer without a cause")
		}
		if err != nil && errors.Unwrap(err) == nil && err.Error() == "" {
			t.Fatal("an error without a cause")
		}
		if rp.prompt < 0 || rp.complete < 0 {
			t.Fatal("negative usage")
		}
	})
}
