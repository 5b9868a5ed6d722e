package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/lensgate/lensgate/review/runtime/asdd"
)

// schema is the subset of JSON Schema that OpenAI's strict structured outputs accept and that
// lensgate needs: objects whose every property is required and no other allowed, arrays,
// strings and string enums. The same value is sent to the endpoint and checked in Go, so an
// answer is held to one definition whichever response format the server honoured.
type schema struct {
	Type                 string             `json:"type"`
	Enum                 []string           `json:"enum,omitempty"`
	Properties           map[string]*schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *bool              `json:"additionalProperties,omitempty"`
	Items                *schema            `json:"items,omitempty"`
	// Nullable lets the value be null, and an answer checked in Go leave the key out: the way
	// strict structured outputs express an optional field.
	Nullable bool `json:"-"`
}

// MarshalJSON writes a nullable schema's type as [type, "null"].
func (s *schema) MarshalJSON() ([]byte, error) {
	type plain schema
	if !s.Nullable {
		return json.Marshal((*plain)(s))
	}
	return json.Marshal(struct {
		Type []string `json:"type"`
		*plain
	}{[]string{s.Type, "null"}, (*plain)(s)})
}

func str(enum ...string) *schema { return &schema{Type: "string", Enum: enum} }

// object is a closed object: every property required, nothing else allowed.
func object(props map[string]*schema) *schema {
	no := false
	req := make([]string, 0, len(props))
	for k := range props {
		req = append(req, k)
	}
	sort.Strings(req)
	return &schema{Type: "object", Properties: props, Required: req, AdditionalProperties: &no}
}

func array(items *schema) *schema { return &schema{Type: "array", Items: items} }

// Model verdicts and severities. skipped is not offered: a model that cannot judge a lens
// says so with concerns, and a lens it leaves out is pending.
var (
	answerVerdicts   = []string{"ok", "concerns", "request-changes"}
	answerSeverities = []string{"note", "warn", "block"}
)

// reviewSchema is the schema of a review answer whose lens names are exactly the lenses asked.
func reviewSchema(lenses []string) *schema {
	suggestion := object(map[string]*schema{"lines": str(), "replacement": str()})
	suggestion.Nullable = true
	finding := object(map[string]*schema{
		"severity": str(answerSeverities...), "title": str(), "message": str(), "path": str(),
		"suggestion": suggestion,
	})
	lens := object(map[string]*schema{
		"lens": str(lenses...), "verdict": str(answerVerdicts...), "summary": str(), "findings": array(finding),
	})
	return object(map[string]*schema{
		"schema": str(asdd.ReviewSchema), "recommendation": str("comment", "request-changes"),
		"summary": str(), "lenses": array(lens),
	})
}

// triageSchema is the schema of a triage answer. Labels are free strings: the pipeline keeps
// only those in triage_labels, so a model's invented label is dropped rather than failing the
// whole triage.
func triageSchema() *schema {
	return object(map[string]*schema{"schema": str(asdd.TriageSchema), "labels": array(str()), "comment": str()})
}

// encode is the schema as compact JSON (sorted keys, so the same lenses give the same bytes).
func (s *schema) encode() json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // the schema is built from plain values; this cannot fail
	}
	return b
}

// validate checks a decoded JSON value (json.Number for numbers) against the schema and names
// the first place that does not match.
func (s *schema) validate(v any) error {
	if err := s.check(v, "answer"); err != nil {
		return fmt.Errorf("%w: %s", ErrSchema, err)
	}
	return nil
}

func (s *schema) check(v any, at string) error {
	if v == nil && s.Nullable {
		return nil
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object", at)
		}
		for _, k := range s.Required {
			if _, ok := m[k]; !ok && !s.Properties[k].Nullable {
				return fmt.Errorf("%s has no %q", at, k)
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, ok := s.Properties[k]
			if !ok {
				if s.AdditionalProperties != nil && !*s.AdditionalProperties {
					return fmt.Errorf("%s has an unexpected key %q", at, bounded(k, 40))
				}
				continue
			}
			if err := sub.check(m[k], at+"."+k); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s is not an array", at)
		}
		for i, e := range a {
			if err := s.Items.check(e, at+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s is not a string", at)
		}
		if len(s.Enum) > 0 && !contains(s.Enum, str) {
			return fmt.Errorf("%s is %q, not one of %s", at, bounded(str, 40), strings.Join(s.Enum, ", "))
		}
	default:
		return fmt.Errorf("%s: unsupported schema type %q", at, s.Type)
	}
	return nil
}

// decodeValue decodes one JSON document for validation, keeping numbers exact.
func decodeValue(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidJSON, shortJSONError(err))
	}
	return v, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
