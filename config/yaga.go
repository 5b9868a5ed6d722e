package config

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// ParseYAGATOML reads a YAGA policy file: a .yaga.toml with an [agent-review] table, or, when the
// base name of filename is pyproject.toml, the [tool.yaga.agent-review] table. Lens order is
// document order. Validation follows YAGA exactly and stops at the first problem, whose message
// is YAGA's (filename is quoted as given, so pass the resolved absolute path).
func ParseYAGATOML(filename string, data []byte) (Policy, error) {
	fail := func(msg string) (Policy, error) {
		return Policy{}, Problems{{File: filename, Message: msg}}
	}
	if len(data) > MaxPolicyFileBytes {
		return fail(fmt.Sprintf("Agent review policy exceeds %d bytes: %s", MaxPolicyFileBytes, filename))
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	if !utf8.Valid(data) {
		return fail(fmt.Sprintf("Agent review policy is not valid UTF-8: %s", filename))
	}
	var doc map[string]any
	md, err := toml.Decode(string(data), &doc)
	if err != nil {
		return fail(fmt.Sprintf("invalid Agent review policy TOML in %s: %s", filename, tomlErrText(err)))
	}
	order := keyOrder(md.Keys())
	root := tomlNode(doc, nil, order)
	if filepath.Base(filename) == "pyproject.toml" {
		tool, ok := root.get("tool")
		var yaga entry
		if ok {
			yaga, ok = tool.val.get("yaga")
		}
		if !ok || yaga.val.kind != kMap {
			return fail(fmt.Sprintf("%s has no [tool.yaga] table", filename))
		}
		root = yaga.val
	}
	ar, ok := root.get("agent-review")
	if !ok || ar.val.kind != kMap {
		return fail(fmt.Sprintf("%s has no [agent-review] table", filename))
	}
	c := &policyCtx{file: filename, prefix: "agent-review", sfx: " in " + filename}
	p := decodePolicy(c, ar.val, 0, 0)
	if len(c.probs) > 0 {
		return Policy{}, c.probs
	}
	return p, nil
}

// tomlErrText gives the decoder's one-line message without the position prefix noise.
func tomlErrText(err error) string {
	if pe, ok := err.(toml.ParseError); ok {
		return fmt.Sprintf("%s (at line %d, column %d)", pe.Message, pe.Position.Line, pe.Position.Col)
	}
	return err.Error()
}

// keyOrder maps each table's key path to its child keys in document order.
func keyOrder(keys []toml.Key) map[string][]string {
	order := map[string][]string{}
	seen := map[string]bool{}
	// Dotted keys (agents.zeta.preset) do not list their implicit tables, so every prefix of a
	// key registers its table at first sight.
	for _, k := range keys {
		for i := 1; i <= len(k); i++ {
			parent := strings.Join(k[:i-1], "\x00")
			child := k[i-1]
			if id := parent + "\x01" + child; !seen[id] {
				seen[id] = true
				order[parent] = append(order[parent], child)
			}
		}
	}
	return order
}

// tomlNode converts a decoded TOML value into a node, ordering table keys as in the document.
func tomlNode(v any, path []string, order map[string][]string) *node {
	switch x := v.(type) {
	case map[string]any:
		n := &node{kind: kMap}
		seen := map[string]bool{}
		for _, k := range order[strings.Join(path, "\x00")] {
			if val, ok := x[k]; ok && !seen[k] {
				seen[k] = true
				n.entries = append(n.entries, entry{key: k, val: tomlNode(val, append(slices.Clip(path), k), order)})
			}
		}
		// Keys the metadata did not order (tables inside arrays): sorted, for determinism.
		var rest []string
		for k := range x {
			if !seen[k] {
				rest = append(rest, k)
			}
		}
		slices.Sort(rest)
		for _, k := range rest {
			n.entries = append(n.entries, entry{key: k, val: tomlNode(x[k], append(slices.Clip(path), k), order)})
		}
		return n
	case []map[string]any:
		n := &node{kind: kList}
		for _, it := range x {
			n.items = append(n.items, tomlNode(it, path, order))
		}
		return n
	case []any:
		n := &node{kind: kList}
		for _, it := range x {
			n.items = append(n.items, tomlNode(it, path, order))
		}
		return n
	case string:
		return &node{kind: kString, str: x}
	case int64:
		return &node{kind: kInt, i: x}
	case float64:
		return &node{kind: kFloat}
	case bool:
		return &node{kind: kBool, b: x}
	}
	return &node{kind: kOther}
}
