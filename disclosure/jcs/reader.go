package jcs

import "unicode/utf8"

// Reader reads one JSON document token by token, for a caller that decodes it straight into
// its own types. It accepts only the RFC 8785 form of a document, or with spaces that form
// with whitespace between tokens; a token that form would write otherwise (an escape it does
// not use, a float, an integer beyond 2^53, a key out of order as the caller sees it) makes
// it fail, and so does anything the caller calls Fail on. Once failed, every method returns
// zero values, so a caller checks Failed once at the end.
//
// What a Reader accepts, Parse accepts too, with the same values, and ParseCanonical reports
// canonical (without spaces): it never reads out of bounds and counts depth and values with
// Parse's limits. It is not a general parser; a caller falls back to Parse when it fails.
type Reader struct {
	data   []byte
	str    string // data as a string, when strings are taken from it without copying
	pos    int
	nodes  int
	depth  int
	spaces bool
	failed bool
}

// NewReader returns a Reader over data; spaces allows whitespace between tokens. Input that
// is not valid UTF-8 fails at once.
func NewReader(data []byte, spaces bool) *Reader {
	return &Reader{data: data, spaces: spaces, failed: !utf8.Valid(data)}
}

// ShareStrings copies the document into one string once, so that the strings Str returns
// share it instead of each being allocated.
func (r *Reader) ShareStrings() { r.str = string(r.data) }

// Fail stops the reader.
func (r *Reader) Fail() { r.failed = true }

// Failed reports whether the reader stopped.
func (r *Reader) Failed() bool { return r.failed }

// Pos is the offset of the next unread byte.
func (r *Reader) Pos() int { return r.pos }

// End reports whether the whole document was read without failing.
func (r *Reader) End() bool {
	r.skipSpace()
	return !r.failed && r.pos == len(r.data)
}

func (r *Reader) skipSpace() {
	if !r.spaces {
		return
	}
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// Peek returns the next byte after any allowed whitespace, or 0.
func (r *Reader) Peek() byte {
	r.skipSpace()
	if r.failed || r.pos >= len(r.data) {
		return 0
	}
	return r.data[r.pos]
}

func (r *Reader) node() bool {
	r.nodes++
	if r.nodes > MaxNodes {
		r.failed = true
	}
	return !r.failed
}

// Enter reads the opening '{' or '[' of a container.
func (r *Reader) Enter(open byte) bool {
	if r.Peek() != open || !r.node() {
		r.failed = true
		return false
	}
	r.depth++
	if r.depth > MaxDepth {
		r.failed = true
		return false
	}
	r.pos++
	return true
}

// Next is the loop condition over the members or elements of the container last entered: i
// counts those already read. It reads the separating comma and reports true when another one
// follows, or reads the closing byte and reports false.
func (r *Reader) Next(close byte, i int) bool {
	c := r.Peek()
	if r.failed {
		return false
	}
	if c == close {
		r.pos++
		r.depth--
		return false
	}
	if i == 0 {
		return true
	}
	if c != ',' {
		r.failed = true
		return false
	}
	r.pos++
	return true
}

// Key reads an object member name and its colon. Names are ASCII without escapes here;
// any other name fails (callers only know such names).
func (r *Reader) Key() string {
	if r.Peek() != '"' {
		r.failed = true
		return ""
	}
	start := r.pos + 1
	end := indexQuoteOrEscape(r.data[start:])
	if end < 0 || r.data[start+end] != '"' {
		r.failed = true
		return ""
	}
	k := r.take(start, start+end)
	r.pos = start + end + 1
	if r.Peek() != ':' {
		r.failed = true
		return ""
	}
	r.pos++
	return k
}

func (r *Reader) take(from, to int) string {
	if r.str != "" {
		return r.str[from:to]
	}
	return string(r.data[from:to])
}

// Raw reads a string without escapes and returns its bytes, a slice of the document.
func (r *Reader) Raw() ([]byte, bool) {
	if r.Peek() != '"' || !r.node() {
		r.failed = true
		return nil, false
	}
	start := r.pos + 1
	end := indexQuoteOrEscape(r.data[start:])
	if end < 0 || r.data[start+end] != '"' {
		r.failed = true
		return nil, false
	}
	r.pos = start + end + 1
	return r.data[start : start+end], true
}

// Str reads a string, with the escapes RFC 8785 writes and no other.
func (r *Reader) Str() (string, bool) {
	if r.Peek() != '"' || !r.node() {
		r.failed = true
		return "", false
	}
	start := r.pos + 1
	end := indexQuoteOrEscape(r.data[start:])
	if end < 0 {
		r.failed = true
		return "", false
	}
	if r.data[start+end] == '"' {
		r.pos = start + end + 1
		return r.take(start, start+end), true
	}
	return r.escaped(start, start+end)
}

// escaped reads the rest of a string whose first special byte is at i.
func (r *Reader) escaped(start, i int) (string, bool) {
	d := r.data
	buf := append(make([]byte, 0, i-start+16), d[start:i]...)
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			r.pos = i + 1
			return string(buf), true
		case c < 0x20:
			r.failed = true
			return "", false
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(d) {
			break
		}
		e := d[i+1]
		if v := shortEscape[e]; v != 0 {
			buf = append(buf, v)
			i += 2
			continue
		}
		switch e {
		case 'u':
			// Only a control character without a short escape is written \u00xx, in
			// lowercase hex.
			if i+6 > len(d) || d[i+2] != '0' || d[i+3] != '0' || (d[i+4] != '0' && d[i+4] != '1') {
				r.failed = true
				return "", false
			}
			lo := d[i+5]
			var v byte
			switch {
			case lo >= '0' && lo <= '9':
				v = lo - '0'
			case lo >= 'a' && lo <= 'f':
				v = lo - 'a' + 10
			default:
				r.failed = true
				return "", false
			}
			v += (d[i+4] - '0') << 4
			if hasShortEscape[v] {
				r.failed = true
				return "", false
			}
			buf = append(buf, v)
			i += 6
			continue
		default:
			r.failed = true
			return "", false
		}
	}
	r.failed = true
	return "", false
}

// Int reads an integer in its canonical form: no fraction or exponent, not -0, and within
// ±(2^53-1).
func (r *Reader) Int() (int64, bool) {
	c := r.Peek()
	if (c != '-' && (c < '0' || c > '9')) || !r.node() {
		r.failed = true
		return 0, false
	}
	start := r.pos
	j := start
	if c == '-' {
		j++
	}
	digits := j
	for j < len(r.data) && r.data[j] >= '0' && r.data[j] <= '9' {
		j++
	}
	n := j - digits
	if n == 0 || n > 16 || (n > 1 && r.data[digits] == '0') {
		r.failed = true
		return 0, false
	}
	if j < len(r.data) {
		if e := r.data[j]; e == '.' || e == 'e' || e == 'E' {
			r.failed = true
			return 0, false
		}
	}
	var v int64
	for _, d := range r.data[digits:j] {
		v = v*10 + int64(d-'0')
	}
	if v > maxSafeInt || (v == 0 && c == '-') {
		r.failed = true
		return 0, false
	}
	r.pos = j
	if c == '-' {
		v = -v
	}
	return v, true
}

// Null reads null if it comes next and reports whether it did; anything else is left unread.
func (r *Reader) Null() bool {
	if r.Peek() != 'n' {
		return false
	}
	if len(r.data)-r.pos < 4 || string(r.data[r.pos:r.pos+4]) != "null" || !r.node() {
		r.failed = true
		return false
	}
	r.pos += 4
	return true
}

// Bool reads true or false.
func (r *Reader) Bool() (bool, bool) {
	c := r.Peek()
	rest := r.data[r.pos:]
	switch {
	case c == 't' && len(rest) >= 4 && string(rest[:4]) == "true" && r.node():
		r.pos += 4
		return true, true
	case c == 'f' && len(rest) >= 5 && string(rest[:5]) == "false" && r.node():
		r.pos += 5
		return false, true
	}
	r.failed = true
	return false, false
}

// Object reads an object whose member names rise strictly in byte order (RFC 8785's order
// for the ASCII names callers know), calling member for each after its name; member reads
// the value and reports false for a name it does not take, which fails the reader.
func (r *Reader) Object(member func(name string) bool) bool {
	if !r.Enter('{') {
		return false
	}
	prev := ""
	for i := 0; r.Next('}', i); i++ {
		k := r.Key()
		if (i > 0 && k <= prev) || !member(k) {
			r.failed = true
			return false
		}
		prev = k
	}
	return !r.failed
}

// Array reads an array, calling elem for each element (elem reads it, or reports false to
// fail the reader), and returns the number of elements.
func (r *Reader) Array(elem func(i int) bool) (int, bool) {
	if !r.Enter('[') {
		return 0, false
	}
	i := 0
	for ; r.Next(']', i); i++ {
		if !elem(i) {
			r.failed = true
			return 0, false
		}
	}
	return i, !r.failed
}
