package config

import (
	"bytes"
	"fmt"
	"path/filepath"
	"unicode/utf8"
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
	doc, err := parseTOML(string(data))
	if err != nil {
		te := err.(*TOMLError)
		if te.IntegerLimit {
			// Python's ValueError, which YAGA reports as it is, as an input error.
			return Policy{}, Problems{{File: filename, Line: te.Line, Column: te.Column, Message: te.Message, Input: true}}
		}
		return Policy{}, Problems{{File: filename, Line: te.Line, Column: te.Column,
			Message: fmt.Sprintf("invalid Agent review policy TOML in %s: %s", filename, te.Message)}}
	}
	root := tomlNode(doc)
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
	p := decodePolicy(c, ar.val, ar.val.line, ar.val.col)
	if len(c.probs) > 0 {
		return Policy{}, c.probs
	}
	return p, nil
}

// tomlNode converts a decoded TOML value into a node, keeping document order and positions.
func tomlNode(v *tomlValue) *node {
	n := &node{line: v.pos.line, col: v.pos.col}
	switch v.kind {
	case tomlTable:
		n.kind = kMap
		for _, k := range v.keys {
			at := v.kpos[k]
			n.entries = append(n.entries, entry{key: k, line: at.line, col: at.col, val: tomlNode(v.vals[k])})
		}
	case tomlArray:
		n.kind = kList
		for _, it := range v.arr {
			n.items = append(n.items, tomlNode(it))
		}
	case tomlString:
		n.kind, n.str = kString, v.str
	case tomlInteger:
		n.kind = kInt
		if v.num.IsInt64() {
			n.i = v.num.Int64()
		} else {
			n.big = true
		}
	case tomlFloat:
		n.kind = kFloat
	case tomlBool:
		n.kind, n.b = kBool, v.b
	default:
		n.kind = kOther
	}
	return n
}
