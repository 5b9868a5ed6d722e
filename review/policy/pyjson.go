package policy

import (
	"slices"
	"strconv"
	"strings"
)

// The plan digest and every JSON document of the policy commands must be byte-identical to
// Python's json.dumps(ensure_ascii=False), which encoding/json cannot produce: it escapes <, >, &
// and U+2028/U+2029, and reorders map keys. This small encoder writes exactly Python's form.

// obj is a JSON object whose keys keep insertion order.
type obj []kv

type kv struct {
	k string
	v any // string, int, bool, nil, *string, []string, []any, obj
}

// writeString appends s as a JSON string with Python's escaping: the two mandatory escapes, the
// five short control escapes, \u00xx for other C0 controls, and everything else raw.
func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			const hex = "0123456789abcdef"
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
		start = i + 1
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// writeCompact writes v like json.dumps(v, sort_keys=True, separators=(",", ":")).
func writeCompact(b *strings.Builder, v any) {
	switch x := v.(type) {
	case obj:
		sorted := slices.Clone(x)
		slices.SortFunc(sorted, func(a, c kv) int { return strings.Compare(a.k, c.k) })
		b.WriteByte('{')
		for i, e := range sorted {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, e.k)
			b.WriteByte(':')
			writeCompact(b, e.v)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCompact(b, e)
		}
		b.WriteByte(']')
	default:
		writeScalar(b, v)
	}
}

// writeIndent writes v like json.dumps(v, indent=2) with keys in insertion order.
func writeIndent(b *strings.Builder, v any, depth int) {
	nl := func(d int) {
		b.WriteByte('\n')
		for range d {
			b.WriteString("  ")
		}
	}
	switch x := v.(type) {
	case obj:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			writeString(b, e.k)
			b.WriteString(": ")
			writeIndent(b, e.v, depth+1)
		}
		nl(depth)
		b.WriteByte('}')
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			writeIndent(b, e, depth+1)
		}
		nl(depth)
		b.WriteByte(']')
	case []string:
		items := make([]any, len(x))
		for i, s := range x {
			items[i] = s
		}
		writeIndent(b, items, depth)
	default:
		writeScalar(b, v)
	}
}

func writeScalar(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		writeString(b, x)
	case *string:
		if x == nil {
			b.WriteString("null")
		} else {
			writeString(b, *x)
		}
	case int:
		b.WriteString(strconv.Itoa(x))
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	case []string:
		items := make([]any, len(x))
		for i, s := range x {
			items[i] = s
		}
		writeCompact(b, items)
	default:
		// Only the types above are ever built by this package.
		b.WriteString("null")
	}
}

// indentJSON renders v as an indented document followed by a newline.
func indentJSON(v any) string {
	var b strings.Builder
	writeIndent(&b, v, 0)
	b.WriteByte('\n')
	return b.String()
}
