package disclosure

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/lensgate/lensgate/disclosure/jcs"
)

// Helpers over the generic tree produced by jcs.Parse. The rules are written against that tree
// because a verifier must judge foreign receipts exactly as they were signed.

var (
	// \p{Nd} mirrors the reference's Unicode-aware \d.
	reTimestamp = regexp.MustCompile(`^\p{Nd}{4}-\p{Nd}{2}-\p{Nd}{2}T\p{Nd}{2}:\p{Nd}{2}:\p{Nd}{2}(\.\p{Nd}+)?Z$`)
	reSchema    = regexp.MustCompile(`^0\.1\.\p{Nd}+$`)
	reSemver    = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*$`)
)

func asObj(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok
}

func asArr(v any) ([]any, bool) {
	a, ok := v.([]any)
	return a, ok
}

func nonEmptyString(v any) bool {
	s, ok := v.(string)
	return ok && s != ""
}

// intValue reports an integer token (not a bool, not a float token).
func intValue(v any) (int64, bool) {
	n, ok := v.(jcs.Number)
	if !ok {
		return 0, false
	}
	return n.Int64()
}

// truthy follows the reference's truthiness: null, false, 0, "", [] and {} are false.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case jcs.Number:
		if x.IsInt() {
			// Any digit other than 0 makes an integer token non-zero, however long it is.
			return strings.ContainsAny(string(x), "123456789")
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f != 0 // 1e-400 underflows to 0.0, which is falsy as in the reference
	}
	return false
}

// isLowerHex reports a string of min..max lowercase hex characters.
func isLowerHex(min, max int, v any) bool {
	s, ok := v.(string)
	return ok && len(s) >= min && len(s) <= max && lowerHex(s)
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// digestObject: an object whose sha256 member is 64 lowercase hex (other members allowed).
func digestObject(v any) bool {
	m, ok := asObj(v)
	return ok && isLowerHex(64, 64, m["sha256"])
}

// strictDigest: exactly {"sha256": <64 hex>}.
func strictDigest(v any) bool {
	m, ok := asObj(v)
	return ok && len(m) == 1 && isLowerHex(64, 64, m["sha256"])
}

func isTimestamp(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	if asciiTimestamp(s) {
		return true
	}
	return reTimestamp.MatchString(s)
}

// asciiTimestamp is the common ASCII case of reTimestamp, checked without the regexp engine.
func asciiTimestamp(s string) bool {
	const layout = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(layout)+1 || s[len(s)-1] != 'Z' {
		return false
	}
	for i := 0; i < len(layout); i++ {
		if layout[i] == 'd' {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		} else if s[i] != layout[i] {
			return false
		}
	}
	rest := s[len(layout) : len(s)-1]
	if rest == "" {
		return true
	}
	if rest[0] != '.' || len(rest) < 2 {
		return false
	}
	for i := 1; i < len(rest); i++ {
		if rest[i] < '0' || rest[i] > '9' {
			return false
		}
	}
	return true
}

func oneOf(v any, allowed ...string) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}

// unknownKeys returns, sorted, the keys of m that allowed does not hold; it allocates only
// when there are some.
func unknownKeys(m map[string]any, allowed map[string]bool) []string {
	var out []string
	for k := range m {
		if !allowed[k] {
			out = append(out, k)
		}
	}
	if len(out) > 1 {
		slices.Sort(out)
	}
	return out
}

func has(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}
