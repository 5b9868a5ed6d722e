package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/lensgate/lensgate/review/runtime/asdd"
)

// schema is the subset of JSON Schema that OpenAI's strict structured outputs accept and that
// lensgate needs: objects whose every property is required and no other allowed, arrays,
// strings, string enums and patterns. The same value is sent to the endpoint and checked in
// Go, so an answer is held to one definition whichever response format the server honoured.
//
// Properties keep the order they are declared in, and the schema is encoded in that order:
// servers that turn a schema into a grammar make the model write the keys in schema order, so
// the order is part of the prompt. A review answer names its lens first, then the findings
// (where, how bad, what), and only then the verdict, so the verdict follows the reasoning.
type schema struct {
	Type    string
	Enum    []string
	Pattern *regexp.Regexp
	// Properties are an object's keys, in the order the model is to write them.
	Properties           []property
	AdditionalProperties *bool
	Items                *schema
	// Nullable lets the value be null, and an answer checked in Go leave the key out: the way
	// strict structured outputs express an optional field.
	Nullable bool
}

// property is one key of an object schema.
type property struct {
	Name   string
	Schema *schema
}

// prop returns the schema of an object's key, or nil.
func (s *schema) prop(name string) *schema {
	for _, p := range s.Properties {
		if p.Name == name {
			return p.Schema
		}
	}
	return nil
}

// MarshalJSON writes the schema with its keys in a fixed order and its properties in their
// declared order (encoding/json sorts map keys, which would lose it). A nullable schema's type
// is [type, "null"].
func (s *schema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	field := func(name string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteByte(':')
		enc, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(enc)
		return nil
	}
	var typ any = s.Type
	if s.Nullable {
		typ = []string{s.Type, "null"}
	}
	if err := field("type", typ); err != nil {
		return nil, err
	}
	if len(s.Enum) > 0 {
		if err := field("enum", s.Enum); err != nil {
			return nil, err
		}
	}
	if s.Pattern != nil {
		if err := field("pattern", s.Pattern.String()); err != nil {
			return nil, err
		}
	}
	if len(s.Properties) > 0 {
		if err := field("properties", orderedProps(s.Properties)); err != nil {
			return nil, err
		}
		req := make([]string, len(s.Properties))
		for i, p := range s.Properties {
			req[i] = p.Name
		}
		if err := field("required", req); err != nil {
			return nil, err
		}
	}
	if s.AdditionalProperties != nil {
		if err := field("additionalProperties", *s.AdditionalProperties); err != nil {
			return nil, err
		}
	}
	if s.Items != nil {
		if err := field("items", s.Items); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// orderedProps encodes properties as one JSON object in their declared order.
type orderedProps []property

func (ps orderedProps) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.Name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(p.Schema)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func str(enum ...string) *schema { return &schema{Type: "string", Enum: enum} }

// object is a closed object: every property required, in the order given, nothing else allowed.
func object(props ...property) *schema {
	no := false
	return &schema{Type: "object", Properties: props, AdditionalProperties: &no}
}

func array(items *schema) *schema { return &schema{Type: "array", Items: items} }

// Model verdicts and severities. skipped is not offered: a model that cannot judge a lens
// says so with concerns, and a lens it leaves out is pending.
var (
	answerVerdicts   = []string{"ok", "concerns", "request-changes"}
	answerSeverities = []string{"note", "warn", "block"}
)

// linesPattern is what a suggestion's lines must be: "N" or "N-M", line numbers from 1.
var linesPattern = regexp.MustCompile(`^[1-9][0-9]{0,6}(-[1-9][0-9]{0,6})?$`)

// reviewSchema is the schema of a review answer whose lens names are exactly the lenses asked.
// Keys are in the order the model is to write them: the lens, the findings (path, severity,
// title, message, then an optional suggestion), the lens summary and last the verdict.
func reviewSchema(lenses []string) *schema {
	lines := str()
	lines.Pattern = linesPattern
	suggestion := object(property{"lines", lines}, property{"replacement", str()})
	suggestion.Nullable = true
	finding := object(
		property{"path", str()}, property{"severity", str(answerSeverities...)}, property{"title", str()},
		property{"message", str()}, property{"suggestion", suggestion},
	)
	lens := object(
		property{"lens", str(lenses...)}, property{"findings", array(finding)}, property{"summary", str()},
		property{"verdict", str(answerVerdicts...)},
	)
	return object(
		property{"schema", str(asdd.ReviewSchema)}, property{"lenses", array(lens)}, property{"summary", str()},
		property{"recommendation", str("comment", "request-changes")},
	)
}

// triageSchema is the schema of a triage answer. Labels are free strings: the pipeline keeps
// only those in triage_labels, so a model's invented label is dropped rather than failing the
// whole triage.
func triageSchema() *schema {
	return object(property{"schema", str(asdd.TriageSchema)}, property{"labels", array(str())}, property{"comment", str()})
}

// encode is the schema as compact JSON (keys in declared order, so the same lenses give the
// same bytes).
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
		for _, p := range s.Properties {
			if _, ok := m[p.Name]; !ok && !p.Schema.Nullable {
				return fmt.Errorf("%s has no %q", at, p.Name)
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub := s.prop(k)
			if sub == nil {
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
		if s.Pattern != nil && !s.Pattern.MatchString(str) {
			return fmt.Errorf("%s is %q, which does not match %s", at, bounded(str, 40), s.Pattern)
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
