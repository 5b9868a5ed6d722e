package jcs

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	gojcs "github.com/gowebpki/jcs"
)

// maxSafeInt is 2^53-1: larger integers cannot round-trip through an IEEE double.
const maxSafeInt = 1<<53 - 1

// Canonical returns the RFC 8785 form of v. v may hold the types Parse produces (Object
// included), plus int, int64, []string and map[string]string for convenience when building
// documents in Go.
func Canonical(v any) ([]byte, error) {
	return AppendCanonical(make([]byte, 0, 256), v)
}

// AppendCanonical appends the RFC 8785 form of v to dst.
func AppendCanonical(dst []byte, v any) ([]byte, error) {
	return appendValue(dst, v, 0)
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("jcs: nesting deeper than %d", MaxDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		return AppendString(dst, x), nil
	case Number:
		return appendNumber(dst, x)
	case int:
		return appendInt(dst, int64(x))
	case int64:
		return appendInt(dst, x)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case []string:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, e)
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := SortedKeys(x)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, x[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case Object:
		return appendObject(dst, x, depth)
	case map[string]string:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, CompareKeys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			dst = AppendString(dst, x[k])
		}
		return append(dst, '}'), nil
	default:
		return nil, fmt.Errorf("jcs: unsupported type %T", v)
	}
}

// appendObject writes an Object's members in key order; an Object built by hand that repeats
// a key has no canonical form.
func appendObject(dst []byte, o Object, depth int) ([]byte, error) {
	cmp := func(a, b Field) int { return CompareKeys(a.Key, b.Key) }
	if !slices.IsSortedFunc(o, cmp) {
		o = slices.Clone(o)
		slices.SortFunc(o, cmp)
	}
	dst = append(dst, '{')
	for i, f := range o {
		if i > 0 {
			if o[i-1].Key == f.Key {
				return nil, fmt.Errorf("jcs: duplicate object key %q", f.Key)
			}
			dst = append(dst, ',')
		}
		dst = AppendString(dst, f.Key)
		dst = append(dst, ':')
		var err error
		if dst, err = appendValue(dst, f.Value, depth+1); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

func appendInt(dst []byte, n int64) ([]byte, error) {
	if n > maxSafeInt || n < -maxSafeInt {
		return nil, fmt.Errorf("jcs: integer %d outside ±(2^53-1)", n)
	}
	return strconv.AppendInt(dst, n, 10), nil
}

func appendNumber(dst []byte, n Number) ([]byte, error) {
	if n.IsInt() {
		v, ok := n.Int64()
		if !ok {
			return nil, fmt.Errorf("jcs: integer outside ±(2^53-1)")
		}
		return appendInt(dst, v)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	// ErrRange on underflow still yields the nearest double, as Python's float() does.
	if (err != nil && !errors.Is(err, strconv.ErrRange)) || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("jcs: number %.40q is not a finite double", string(n))
	}
	s, ferr := gojcs.NumberToJSON(f)
	if ferr != nil {
		return nil, fmt.Errorf("jcs: %w", ferr)
	}
	return append(dst, s...), nil
}

// AppendString appends s as an RFC 8785 string literal.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			const hexdigits = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// SortedKeys returns the keys of m in RFC 8785 order (UTF-16 code units).
func SortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	bmp := true
	for k := range m {
		keys = append(keys, k)
		bmp = bmp && isBMPOnly(k)
	}
	if bmp {
		// Without supplementary characters, byte order is UTF-16 order.
		slices.Sort(keys)
	} else {
		slices.SortFunc(keys, CompareKeys)
	}
	return keys
}

// CompareKeys orders two strings by their UTF-16 code units, as RFC 8785 requires.
func CompareKeys(a, b string) int {
	// UTF-8 byte order equals code point order; it differs from UTF-16 order only when a
	// supplementary character meets one in U+E000..U+FFFF, so compare by code units then.
	if isBMPOnly(a) && isBMPOnly(b) {
		return strings.Compare(a, b)
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func isBMPOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xf0 { // lead byte of a 4-byte sequence
			return false
		}
	}
	return true
}

// Transform parses data strictly and returns its canonical form.
func Transform(data []byte) ([]byte, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return Canonical(v)
}
