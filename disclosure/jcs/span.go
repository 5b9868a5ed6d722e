package jcs

// Spans of a document that ParseCanonical reported canonical. In such a document the bytes of
// every member are already that member's RFC 8785 form, so a verifier can hash them as they
// are instead of serialising the parsed tree again. The functions assume valid JSON (the
// document was parsed) and canonical layout (no whitespace, keys without escapes); they never
// read out of bounds, and return nil when the shape is not what the caller asked for.

// Member returns the bytes of the value of key in the JSON object obj, or nil.
func Member(obj []byte, key string) []byte {
	vs := valueOf(obj, key)
	if vs < 0 {
		return nil
	}
	ve := skipValue(obj, vs)
	if ve < 0 {
		return nil
	}
	return obj[vs:ve]
}

// MemberFrom is Member without finding where the value ends: the bytes of obj from the value
// of key on, or nil. Member, MemberFrom and Elements read such bytes up to the end of the
// object or array they start with, so a caller that only looks into the value saves a scan of
// all of it.
func MemberFrom(obj []byte, key string) []byte {
	if vs := valueOf(obj, key); vs >= 0 {
		return obj[vs:]
	}
	return nil
}

// valueOf returns the index in the JSON object obj where the value of key starts, or -1.
func valueOf(obj []byte, key string) int {
	if len(obj) < 2 || obj[0] != '{' {
		return -1
	}
	i := 1
	for i < len(obj) && obj[i] == '"' {
		ks := i + 1
		ke := skipString(obj, i)
		if ke < 0 || ke >= len(obj) || obj[ke] != ':' {
			return -1
		}
		vs := ke + 1
		if string(obj[ks:ke-1]) == key {
			return vs
		}
		ve := skipValue(obj, vs)
		if ve < 0 || ve >= len(obj) || obj[ve] != ',' {
			return -1
		}
		i = ve + 1
	}
	return -1
}

// Elements returns the bytes of each element of the JSON array arr; ok is false when arr is
// not an array.
func Elements(arr []byte, dst [][]byte) (out [][]byte, ok bool) {
	if len(arr) < 2 || arr[0] != '[' {
		return dst, false
	}
	out = dst
	if arr[1] == ']' {
		return out, true
	}
	i := 1
	for {
		e := skipValue(arr, i)
		if e < 0 || e >= len(arr) {
			return dst, false
		}
		out = append(out, arr[i:e])
		switch arr[e] {
		case ',':
			i = e + 1
		case ']':
			return out, true
		default:
			return dst, false
		}
	}
}

// skipString returns the index just after the string that starts with the quote at b[i].
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := indexQuoteOrEscape(b[j:])
		if k < 0 {
			return -1
		}
		j += k
		switch b[j] {
		case '"':
			return j + 1
		case '\\':
			j += 2
		default: // a control character, which valid JSON does not hold; keep going
			j++
		}
	}
	return -1
}

// skipValue returns the index just after the value that starts at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j)
				if j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	return j
}
