package policy

import (
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A strict JSON reader for receipts. encoding/json cannot be used: it keeps the last of
// duplicate keys and silently turns lone surrogate escapes into U+FFFD, and both must be
// detected to match YAGA (a duplicate key is invalid JSON; a lone surrogate in a summary has its
// own error).

// maxJSONDepth bounds nesting where Python's decoder stops with a RecursionError (about 1,000
// levels), which YAGA reports as invalid JSON; anything shallower is parsed, so that YAGA's
// structural error (a root that is not an object, a version that is not 1) is reported instead.
const maxJSONDepth = 1000

// maxIntDigits is Python's limit on the digits of a decimal integer it converts: json.loads
// raises ValueError beyond it, which YAGA reports as invalid JSON.
const maxIntDigits = 4300

type jkind int

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

type jval struct {
	kind jkind
	b    bool
	num  string // the number's source text
	str  string // lone surrogates are replaced by U+FFFD and flagged in badUTF
	// badUTF marks a string holding a lone surrogate escape, which has no UTF-8 encoding.
	badUTF bool
	arr    []*jval
	keys   []string
	vals   []*jval
}

func (v *jval) get(key string) (*jval, bool) {
	for i, k := range v.keys {
		if k == key {
			return v.vals[i], true
		}
	}
	return nil, false
}

var errBadJSON = errors.New("invalid JSON")

type jparser struct {
	s   string
	pos int
}

// parseStrictJSON parses one JSON document from s (already valid UTF-8). It rejects duplicate
// keys, NaN and Infinity, raw control characters in strings, trailing data and deep nesting.
func parseStrictJSON(s string) (*jval, error) {
	p := &jparser{s: s}
	p.ws()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.pos != len(p.s) {
		return nil, errBadJSON
	}
	return v, nil
}

func (p *jparser) ws() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jparser) value(depth int) (*jval, error) {
	if p.pos >= len(p.s) {
		return nil, errBadJSON
	}
	switch c := p.s[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		str, bad, err := p.str()
		if err != nil {
			return nil, err
		}
		return &jval{kind: jString, str: str, badUTF: bad}, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case strings.HasPrefix(p.s[p.pos:], "true"):
		p.pos += 4
		return &jval{kind: jBool, b: true}, nil
	case strings.HasPrefix(p.s[p.pos:], "false"):
		p.pos += 5
		return &jval{kind: jBool}, nil
	case strings.HasPrefix(p.s[p.pos:], "null"):
		p.pos += 4
		return &jval{kind: jNull}, nil
	}
	return nil, errBadJSON
}

func (p *jparser) object(depth int) (*jval, error) {
	if depth > maxJSONDepth {
		return nil, errBadJSON
	}
	p.pos++ // {
	v := &jval{kind: jObject}
	p.ws()
	if p.pos < len(p.s) && p.s[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		p.ws()
		if p.pos >= len(p.s) || p.s[p.pos] != '"' {
			return nil, errBadJSON
		}
		k, _, err := p.str()
		if err != nil {
			return nil, err
		}
		for _, seen := range v.keys {
			if seen == k {
				return nil, errBadJSON
			}
		}
		p.ws()
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			return nil, errBadJSON
		}
		p.pos++
		p.ws()
		val, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		v.keys = append(v.keys, k)
		v.vals = append(v.vals, val)
		done, err := p.separator('}')
		if err != nil {
			return nil, err
		}
		if done {
			return v, nil
		}
	}
}

func (p *jparser) array(depth int) (*jval, error) {
	if depth > maxJSONDepth {
		return nil, errBadJSON
	}
	p.pos++ // [
	v := &jval{kind: jArray}
	p.ws()
	if p.pos < len(p.s) && p.s[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.ws()
		it, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		v.arr = append(v.arr, it)
		done, err := p.separator(']')
		if err != nil {
			return nil, err
		}
		if done {
			return v, nil
		}
	}
}

// number accepts exactly JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jparser) number() (*jval, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.s[p.pos] == '-' {
		p.pos++
	}
	intDigits := 1
	if p.pos < len(p.s) && p.s[p.pos] == '0' {
		p.pos++
	} else if intDigits = digits(); intDigits == 0 {
		return nil, errBadJSON
	}
	isInt := true
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		isInt = false
		if digits() == 0 {
			return nil, errBadJSON
		}
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		p.pos++
		isInt = false
		if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, errBadJSON
		}
	}
	if isInt && intDigits > maxIntDigits {
		return nil, errBadJSON
	}
	return &jval{kind: jNumber, num: p.s[start:p.pos]}, nil
}

// str reads a string literal. It reports whether a lone surrogate escape was replaced.
func (p *jparser) str() (string, bool, error) {
	p.pos++ // opening quote
	var b strings.Builder
	bad := false
	for {
		if p.pos >= len(p.s) {
			return "", false, errBadJSON
		}
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), bad, nil
		case c < 0x20:
			return "", false, errBadJSON
		case c == '\\':
			p.pos++
			if p.pos >= len(p.s) {
				return "", false, errBadJSON
			}
			e := p.s[p.pos]
			p.pos++
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", false, errBadJSON
				}
				if utf16.IsSurrogate(r) {
					// A high surrogate followed by a low one is a pair; anything else is lone.
					if r < 0xdc00 && strings.HasPrefix(p.s[p.pos:], `\u`) {
						save := p.pos
						p.pos += 2
						if r2, ok := p.hex4(); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
							b.WriteRune(utf16.DecodeRune(r, r2))
							continue
						}
						p.pos = save
					}
					bad = true
					b.WriteRune(utf8.RuneError)
					continue
				}
				b.WriteRune(r)
			default:
				return "", false, errBadJSON
			}
		default:
			_, size := utf8.DecodeRuneInString(p.s[p.pos:])
			b.WriteString(p.s[p.pos : p.pos+size])
			p.pos += size
		}
	}
}

func (p *jparser) hex4() (rune, bool) {
	if p.pos+4 > len(p.s) {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := p.s[p.pos+i]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

// separator consumes what follows a member or element: a comma, or the closing byte of its
// object or array, which done reports.
func (p *jparser) separator(closing byte) (done bool, err error) {
	p.ws()
	if p.pos >= len(p.s) {
		return false, errBadJSON
	}
	switch p.s[p.pos] {
	case ',':
		p.pos++
		return false, nil
	case closing:
		p.pos++
		return true, nil
	default:
		return false, errBadJSON
	}
}
