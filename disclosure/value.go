package disclosure

import (
	"regexp"

	"github.com/lensgate/lensgate/disclosure/jcs"
)

// Helpers over the generic tree produced by jcs.Parse. The rules are written against that tree
// because a verifier must judge foreign receipts exactly as they were signed.

var (
	reHex40      = regexp.MustCompile(`^[0-9a-f]{40}$`)
	reHex64      = regexp.MustCompile(`^[0-9a-f]{64}$`)
	reHex32to128 = regexp.MustCompile(`^[0-9a-f]{32,128}$`)
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
		for i := 0; i < len(x); i++ {
			c := x[i]
			if c == 'e' || c == 'E' {
				break
			}
			if c >= '1' && c <= '9' {
				return true
			}
		}
		return false
	}
	return false
}

func isHex(re *regexp.Regexp, v any) bool {
	s, ok := v.(string)
	return ok && re.MatchString(s)
}

// digestObject: an object whose sha256 member is 64 lowercase hex (other members allowed).
func digestObject(v any) bool {
	m, ok := asObj(v)
	return ok && isHex(reHex64, m["sha256"])
}

// strictDigest: exactly {"sha256": <64 hex>}.
func strictDigest(v any) bool {
	m, ok := asObj(v)
	return ok && len(m) == 1 && isHex(reHex64, m["sha256"])
}

func isTimestamp(v any) bool {
	s, ok := v.(string)
	return ok && reTimestamp.MatchString(s)
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

func has(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}
