package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The server and runner files are decoded by yaml.v3 into their structs. yaml.v3 stops at the
// first unknown key and words its type errors in Go terms ("field worker not found in type
// config.ServerQueue", "cannot unmarshal !!str `many` into int"), so before decoding the
// document is checked against the struct's yaml tags: every unknown key and every value of the
// wrong form becomes a Problem in the configuration's own words, and is dropped, so the rest
// still decodes and the remaining settings are validated in the same pass.

var durationType = reflect.TypeFor[time.Duration]()

// yamlChecker collects the problems of one YAML file.
type yamlChecker struct {
	file  string
	root  reflect.Type
	probs Problems
	lines map[string]int // dotted key → line, for the keys the file sets
}

// decodeCheckedYAML decodes data into out (a pointer to a struct with yaml tags), reporting
// every unknown key and every value out's fields cannot take, with its line. The lines map
// gives the line of each key the file sets.
func decodeCheckedYAML(file string, data []byte, out any) (Problems, map[string]int) {
	c := &yamlChecker{file: file, root: reflect.TypeOf(out).Elem(), lines: map[string]int{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, c.lines
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		c.syntaxError(err)
		return c.probs, c.lines
	}
	if len(doc.Content) == 0 {
		return nil, c.lines
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		if top.ShortTag() != "!!null" {
			c.add(top.Line, "", "the file must be a mapping of keys to values", "write one key: value per line")
		}
		return c.probs, c.lines
	}
	c.mapping(top, c.root, "")
	if err := doc.Decode(out); err != nil {
		c.decodeError(err)
	}
	return c.probs, c.lines
}

func (c *yamlChecker) add(line int, key, msg, hint string) {
	c.probs = append(c.probs, Problem{File: c.file, Line: line, Key: key, Message: msg, Hint: hint})
}

// syntaxError turns yaml.v3's "yaml: line N: …" into a problem at that line.
func (c *yamlChecker) syntaxError(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, serr := fmt.Sscanf(msg, "line %d:", &line); serr == nil {
		_, msg, _ = strings.Cut(msg, ": ")
	}
	c.add(line, "", "YAML syntax error: "+msg, "check the indentation (spaces, not tabs) and the quoting around this line")
}

// decodeError reports what yaml.v3 still refuses after the check (a repeated key, say).
func (c *yamlChecker) decodeError(err error) {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		c.add(0, "", strings.TrimPrefix(err.Error(), "yaml: "), "")
		return
	}
	for _, m := range te.Errors {
		var line int
		if _, serr := fmt.Sscanf(m, "line %d:", &line); serr == nil {
			_, m, _ = strings.Cut(m, ": ")
		}
		c.add(line, "", m, "")
	}
}

// mapping checks the keys of n against struct type t and drops the ones in error.
func (c *yamlChecker) mapping(n *yaml.Node, t reflect.Type, prefix string) {
	names, types := yamlFields(t)
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.ShortTag() == "!!merge" {
			kept = append(kept, k, v) // "<<: *defaults": yaml.v3 merges it; its keys are not checked
			continue
		}
		key := joinKey(prefix, k.Value)
		ft, ok := types[k.Value]
		if !ok {
			c.add(k.Line, key, "unknown key", c.unknownHint(prefix, k.Value, names))
			continue
		}
		c.lines[key] = k.Line
		if !c.value(v, ft, key) {
			continue
		}
		kept = append(kept, k, v)
	}
	n.Content = kept
}

// value checks that v fits type t, descending into mappings; it reports whether v is kept.
func (c *yamlChecker) value(v *yaml.Node, t reflect.Type, key string) bool {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if v.ShortTag() == "!!null" {
		return true
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && t != durationType:
		if v.Kind != yaml.MappingNode {
			c.wrongForm(v, key, t)
			return false
		}
		c.mapping(v, t, key)
		return true
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Struct:
		if v.Kind != yaml.MappingNode {
			c.wrongForm(v, key, t)
			return false
		}
		kept := v.Content[:0]
		for i := 0; i+1 < len(v.Content); i += 2 {
			if c.value(v.Content[i+1], t.Elem(), joinKey(key, v.Content[i].Value)) {
				kept = append(kept, v.Content[i], v.Content[i+1])
			}
		}
		v.Content = kept
		return true
	}
	if v.Decode(reflect.New(t).Interface()) != nil {
		c.wrongForm(v, key, t)
		return false
	}
	return true
}

// wrongForm reports a value that type t cannot take, saying what was found and what is wanted;
// the value itself is not repeated, as it may be a secret.
func (c *yamlChecker) wrongForm(v *yaml.Node, key string, t reflect.Type) {
	form, hint := valueForm(t)
	quoted := v.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0
	switch {
	case t == durationType && v.ShortTag() == "!!int":
		hint = fmt.Sprintf("a duration needs a unit: %ss, %sm or %sh", v.Value, v.Value, v.Value)
	case quoted && (t.Kind() == reflect.Bool || isNumber(t)):
		hint = "write it without quotes"
	}
	c.add(v.Line, key, fmt.Sprintf("must be %s, found %s", form, nodeForm(v)), hint)
}

// valueForm describes in words what a key of type t takes, and how to write it.
func valueForm(t reflect.Type) (string, string) {
	switch {
	case t == durationType:
		return "a duration", "write a number with a unit, such as 30s, 10m or 1h30m"
	case t.Kind() == reflect.Bool:
		return "true or false", ""
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number", ""
	case isNumber(t):
		return "a whole number", ""
	case t.Kind() == reflect.String:
		return "a string", "quote the value"
	case t.Kind() == reflect.Slice:
		return "a list", "write [a, b] or one \"- item\" per line under the key"
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Struct:
		return "a mapping of names to settings", "write each name on its own line under the key, its settings indented under it"
	case t.Kind() == reflect.Map:
		return "a mapping", "write one \"name: value\" per line, indented under the key"
	}
	return "a mapping", "write its keys indented under it"
}

func isNumber(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// nodeForm describes what a YAML value is, in the words valueForm uses.
func nodeForm(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch v.ShortTag() {
	case "!!int":
		return "a whole number"
	case "!!float":
		return "a number"
	case "!!bool":
		return "true or false"
	case "!!str":
		return "a string"
	}
	return "another kind of value"
}

// unknownHint suggests the nearest key at this level, or the same key at another level, else
// lists the keys of this level.
func (c *yamlChecker) unknownHint(prefix, key string, names []string) string {
	if s := Nearest(key, names); s != "" {
		return fmt.Sprintf("did you mean %q?", joinKey(prefix, s))
	}
	var elsewhere []string
	allYAMLKeys(c.root, "", func(path string) {
		if path == key || strings.HasSuffix(path, "."+key) {
			elsewhere = append(elsewhere, path)
		}
	})
	if len(elsewhere) > 0 {
		return fmt.Sprintf("did you mean %q? (it belongs under another key)", elsewhere[0])
	}
	where := "at the top level"
	if prefix != "" {
		where = "under " + prefix
	}
	return "remove it; the keys " + where + " are " + strings.Join(names, ", ")
}

// yamlFields lists the yaml keys of struct type t, in declaration order, with their types.
func yamlFields(t reflect.Type) ([]string, map[string]reflect.Type) {
	var names []string
	types := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		names = append(names, tag)
		types[tag] = f.Type
	}
	return names, types
}

// allYAMLKeys calls fn with the dotted path of every key of struct type t.
func allYAMLKeys(t reflect.Type, prefix string, fn func(string)) {
	names, types := yamlFields(t)
	for _, n := range names {
		path := joinKey(prefix, n)
		fn(path)
		ft := types[n]
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != durationType {
			allYAMLKeys(ft, path, fn)
		}
	}
}

func joinKey(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// keyProblems is every problem of a server or runner configuration, one per line: where it was
// set (the file and line; an environment variable is named beside its key), the key, what is
// wrong, and how to fix it.
type keyProblems struct {
	what  string // "server config"
	probs Problems
	name  func(key string) string // "key (ENV)"
}

func (k keyProblems) Error() string {
	var b strings.Builder
	b.WriteString(k.what)
	b.WriteString(":")
	for _, p := range k.probs {
		b.WriteString("\n  ")
		if p.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: ", p.File, p.Line)
		} else if p.File != "" && p.Key == "" {
			b.WriteString(p.File + ": ")
		}
		if p.Key != "" {
			b.WriteString(k.name(p.Key) + ": ")
		}
		b.WriteString(p.Message)
		if p.Hint != "" {
			b.WriteString(" (hint: " + p.Hint + ")")
		}
	}
	return b.String()
}
