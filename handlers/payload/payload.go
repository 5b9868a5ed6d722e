// Package payload reads the fields a webhook handler needs from a payload in one validating
// pass, without decoding the rest of it.
//
// A field is named by a dotted path of object keys, such as "pull_request.head.sha". The rules:
//
//   - Keys match exactly and case-sensitively, after unquoting ("\u0061" matches "a"). A key
//     containing a dot cannot be named.
//   - When a key repeats within one object, the last occurrence wins entirely: its value replaces
//     the earlier one together with everything under it, as when decoding into a map.
//   - Only objects are traversed. A path through an array, a string or any other non-object is
//     Missing; arrays cannot be indexed.
//   - The whole document is validated: it is accepted exactly when encoding/json.Valid accepts it
//     and its top-level value is an object. Like encoding/json, invalid UTF-8 inside strings is
//     accepted and nesting deeper than 10000 is refused (counted on an explicit stack, so that no
//     input can exhaust the goroutine's). Errors name the byte offset.
//
// A Value keeps the field's JSON text as a sub-slice of the document; its String, Int64 and Bool
// methods convert it exactly as encoding/json would decode it into a string, an int64 or a bool.
package payload

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit: 10000 open containers are accepted, not more.
const maxDepth = 10000

// Kind is the JSON type of a value.
type Kind uint8

// Kinds of values. Missing means the path named no value in the document.
const (
	Missing Kind = iota
	Null
	Bool
	Number
	String
	Object
	Array
)

var kindNames = [...]string{"missing", "null", "bool", "number", "string", "object", "array"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is the value found at one path.
type Value struct {
	Kind Kind
	// Raw is the value's JSON text, a sub-slice of the document; nil when Missing.
	Raw []byte
}

// Present reports whether the path named a value; null counts as present, as it does for a
// json.RawMessage field.
func (v Value) Present() bool { return v.Kind != Missing }

// String returns a JSON string unquoted as encoding/json does; "" for Missing and null.
func (v Value) String() (string, error) {
	switch v.Kind {
	case Missing, Null:
		return "", nil
	case String:
		in := v.Raw[1 : len(v.Raw)-1]
		if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
			return string(in), nil
		}
		// Escapes and invalid UTF-8: encoding/json's own unquoting, on this token only.
		var s string
		if err := json.Unmarshal(v.Raw, &s); err != nil {
			return "", fmt.Errorf("payload: unquote string: %w", err)
		}
		return s, nil
	}
	return "", v.typeError("string")
}

// Int64 returns a JSON number as encoding/json decodes it into an int64: fractions, exponents
// and overflow are errors. Missing and null give 0.
func (v Value) Int64() (int64, error) {
	switch v.Kind {
	case Missing, Null:
		return 0, nil
	case Number:
		n, err := strconv.ParseInt(string(v.Raw), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("payload: number %s is not an int64", v.Raw)
		}
		return n, nil
	}
	return 0, v.typeError("number")
}

// Bool returns a JSON boolean; false for Missing and null.
func (v Value) Bool() (bool, error) {
	switch v.Kind {
	case Missing, Null:
		return false, nil
	case Bool:
		return v.Raw[0] == 't', nil
	}
	return false, v.typeError("bool")
}

func (v Value) typeError(want string) error {
	return fmt.Errorf("payload: %s value where a %s is expected", v.Kind, want)
}

// SyntaxError describes why a document was refused and where.
type SyntaxError struct {
	Offset int // byte offset of the offending byte, or the document's length at its end
	msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("payload: %s at offset %d", e.msg, e.Offset)
}

// Fields is a compiled set of paths. It is immutable and safe for concurrent use.
type Fields struct {
	n    int
	root *node
}

// node is one key of the path tree.
type node struct {
	keys  []string
	kids  []*node
	ends  []int // indexes of the paths that end here
	under []int // indexes of the paths that end here or below, reset when the key repeats
}

// NewFields compiles paths; Extract returns their values in the same order.
func NewFields(paths ...string) *Fields {
	f := &Fields{n: len(paths), root: &node{}}
	for i, p := range paths {
		n := f.root
		for _, k := range strings.Split(p, ".") {
			n = n.child(k)
			n.under = append(n.under, i)
		}
		n.ends = append(n.ends, i)
	}
	return f
}

func (n *node) child(k string) *node {
	for i, key := range n.keys {
		if key == k {
			return n.kids[i]
		}
	}
	c := &node{}
	n.keys = append(n.keys, k)
	n.kids = append(n.kids, c)
	return c
}

// lookup finds the child named by the raw key text (without quotes). esc says the key holds a
// backslash.
func (n *node) lookup(raw []byte, esc bool) *node {
	if !esc && utf8.Valid(raw) {
		for i, k := range n.keys {
			if string(raw) == k {
				return n.kids[i]
			}
		}
		return nil
	}
	// Unquoting may change the key (escapes, invalid UTF-8 becomes U+FFFD): let encoding/json
	// do it so that matching is the same as for a decoded map.
	quoted := make([]byte, 0, len(raw)+2)
	quoted = append(append(append(quoted, '"'), raw...), '"')
	var key string
	if json.Unmarshal(quoted, &key) != nil {
		return nil
	}
	for i, k := range n.keys {
		if key == k {
			return n.kids[i]
		}
	}
	return nil
}

// Extract validates doc and returns the value at each path, in order.
func Extract(doc []byte, paths ...string) ([]Value, error) {
	return NewFields(paths...).Extract(doc)
}

// Extract validates doc and returns the value at each of the compiled paths, in order.
func (f *Fields) Extract(doc []byte) ([]Value, error) {
	out := make([]Value, f.n)
	if err := f.extract(doc, out); err != nil {
		return nil, err
	}
	return out, nil
}

// frame is one open container.
type frame struct {
	match *node // node whose children are this object's wanted keys; nil when none are wanted
	rec   *node // node whose paths receive this container's text when it closes; nil when none
	start int
	obj   bool
}

func record(out []Value, n *node, k Kind, raw []byte) {
	for _, r := range n.ends {
		out[r] = Value{Kind: k, Raw: raw}
	}
}

// extract is one iterative pass over doc: an explicit stack instead of recursion, so that depth
// is bounded by maxDepth and not by the goroutine stack.
func (f *Fields) extract(doc []byte, out []Value) error {
	var buf [32]frame
	stack := buf[:0]
	n := len(doc)
	i := skipSpace(doc, 0)
	if i < n && doc[i] != '{' {
		// Still validate, so that an invalid document gets its syntax error.
		if err := f.parse(doc, i, nil, stack, out); err != nil {
			return err
		}
		return &SyntaxError{Offset: i, msg: "top-level value is not an object"}
	}
	return f.parse(doc, i, f.root, stack, out)
}

// parse validates doc from i and records the values at the paths under match. The labels
// are the states of the grammar, with an explicit stack of open containers; goto keeps the
// position and the current nodes in registers, which the acknowledgement path's budget needs.
func (f *Fields) parse(doc []byte, i int, match *node, stack []frame, out []Value) error {
	n := len(doc)
	var rec *node // node whose paths receive the next value
	var c byte
	var err error
value:
	i = skipSpace(doc, i)
	if i >= n {
		return errEnd(n)
	}
	switch c = doc[i]; c {
	case '{', '[':
		if len(stack) >= maxDepth {
			return &SyntaxError{Offset: i, msg: "exceeded max depth"}
		}
		if c == '{' {
			stack = append(stack, frame{match: match, rec: rec, start: i, obj: true})
		} else {
			stack = append(stack, frame{rec: rec, start: i})
		}
		i = skipSpace(doc, i+1)
		if i < n && doc[i] == c+2 { // '}' and ']' follow '{' and '[' by two
			i++
			goto closed
		}
		if c == '{' {
			goto key
		}
		match, rec = nil, nil
		goto value
	default:
		if i, err = scalar(doc, i, rec, out); err != nil {
			return err
		}
	}

next: // after a value: a separator, the end of its container, or the end of the document
	if len(stack) == 0 {
		if i = skipSpace(doc, i); i < n {
			return errChar(doc, i, "after top-level value")
		}
		return nil
	}
	i = skipSpace(doc, i)
	if i >= n {
		return errEnd(n)
	}
	c = doc[i]
	if stack[len(stack)-1].obj {
		switch c {
		case ',':
			i = skipSpace(doc, i+1)
			goto key
		case '}':
			i++
			goto closed
		}
		return errChar(doc, i, "after object key:value pair")
	}
	switch c {
	case ',':
		i++
		match, rec = nil, nil
		goto value
	case ']':
		i++
		goto closed
	}
	return errChar(doc, i, "after array element")

closed: // doc[:i] ends the innermost container
	if top := &stack[len(stack)-1]; top.rec != nil {
		k := Array
		if top.obj {
			k = Object
		}
		record(out, top.rec, k, doc[top.start:i])
	}
	stack = stack[:len(stack)-1]
	goto next

key: // i is at an object key, whitespace skipped
	if i, match, rec, err = objectKey(doc, i, stack[len(stack)-1].match, out); err != nil {
		return err
	}
	goto value
}

// scalar reads the string, number or literal at doc[i], records it for rec's paths, and
// returns the offset after it.
func scalar(doc []byte, i int, rec *node, out []Value) (int, error) {
	start := i
	var err error
	var k Kind
	switch c := doc[i]; {
	case c == '"':
		i, _, err = scanString(doc, i)
		k = String
	case c == '-' || c >= '0' && c <= '9':
		i, err = scanNumber(doc, i)
		k = Number
	case c == 't':
		i, err = literal(doc, i, "true")
		k = Bool
	case c == 'f':
		i, err = literal(doc, i, "false")
		k = Bool
	case c == 'n':
		i, err = literal(doc, i, "null")
		k = Null
	default:
		return i, errChar(doc, i, "looking for beginning of value")
	}
	if err != nil {
		return i, err
	}
	if rec != nil {
		record(out, rec, k, doc[start:i])
	}
	return i, nil
}

// objectKey reads the key at doc[i] and its colon. m holds the wanted keys of the object
// (nil when none are); it returns the offset of the value and the nodes that value matches.
func objectKey(doc []byte, i int, m *node, out []Value) (next int, match, rec *node, err error) {
	n := len(doc)
	if i >= n {
		return i, nil, nil, errEnd(n)
	}
	if doc[i] != '"' {
		return i, nil, nil, errChar(doc, i, "looking for beginning of object key string")
	}
	start := i
	var esc bool
	if i, esc, err = scanString(doc, i); err != nil {
		return i, nil, nil, err
	}
	name := doc[start+1 : i-1]
	i = skipSpace(doc, i)
	if i >= n {
		return i, nil, nil, errEnd(n)
	}
	if doc[i] != ':' {
		return i, nil, nil, errChar(doc, i, "after object key")
	}
	i++
	if m == nil {
		return i, nil, nil, nil
	}
	if k := m.lookup(name, esc); k != nil {
		// A repeated key replaces everything found under its earlier occurrence.
		for _, r := range k.under {
			out[r] = Value{}
		}
		if len(k.ends) > 0 {
			rec = k
		}
		if len(k.kids) > 0 {
			match = k
		}
	}
	return i, match, rec, nil
}

func errEnd(n int) error { return &SyntaxError{Offset: n, msg: "unexpected end of JSON input"} }

func errChar(doc []byte, i int, context string) error {
	return &SyntaxError{Offset: i, msg: "invalid character " + quoteChar(doc[i]) + " " + context}
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	if c >= utf8.RuneSelf {
		s = fmt.Sprintf(`"\x%02x"`, c)
	}
	return "'" + s[1:len(s)-1] + "'"
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) {
		c := doc[i]
		if c > ' ' || (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
			break
		}
		i++
	}
	return i
}

func literal(doc []byte, i int, lit string) (int, error) {
	for j := 1; j < len(lit); j++ {
		if i+j >= len(doc) {
			return 0, errEnd(len(doc))
		}
		if doc[i+j] != lit[j] {
			return 0, errChar(doc, i+j, "in literal "+lit+" (expecting "+quoteChar(lit[j])+")")
		}
	}
	return i + len(lit), nil
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// scanString reads the string whose opening quote is doc[i] and returns the offset after its
// closing quote, and whether it holds a backslash. Eight bytes are checked at a time for a
// quote, a backslash or a control character.
func scanString(doc []byte, i int) (int, bool, error) {
	n := len(doc)
	esc := false
	j := i + 1
	for {
		for j+8 <= n {
			x := binary.LittleEndian.Uint64(doc[j:])
			q := x ^ (ones * '"')
			b := x ^ (ones * '\\')
			t := ((q - ones) &^ q) | ((b - ones) &^ b) | ((x - ones*0x20) &^ x)
			if t &= highs; t != 0 {
				// The lowest flagged byte is exact: borrows only run upwards from it.
				j += bits.TrailingZeros64(t) >> 3
				break
			}
			j += 8
		}
		if j >= n {
			return 0, false, errEnd(n)
		}
		switch c := doc[j]; {
		case c == '"':
			return j + 1, esc, nil
		case c == '\\':
			esc = true
			if j+1 >= n {
				return 0, false, errEnd(n)
			}
			switch doc[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				for k := j + 2; k < j+6; k++ {
					if k >= n {
						return 0, false, errEnd(n)
					}
					if !isHex(doc[k]) {
						return 0, false, errChar(doc, k, "in \\u hexadecimal character escape")
					}
				}
				j += 6
			default:
				return 0, false, errChar(doc, j+1, "in string escape code")
			}
		case c < 0x20:
			return 0, false, errChar(doc, j, "in string literal")
		default:
			j++
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanNumber reads the number starting at doc[i] with JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(doc []byte, i int) (int, error) {
	n := len(doc)
	if doc[i] == '-' {
		i++
		if i >= n {
			return 0, errEnd(n)
		}
	}
	switch c := doc[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i = digits(doc, i+1)
	default:
		return 0, errChar(doc, i, "in numeric literal")
	}
	if i < n && doc[i] == '.' {
		i++
		if i >= n {
			return 0, errEnd(n)
		}
		if !isDigit(doc[i]) {
			return 0, errChar(doc, i, "after decimal point in numeric literal")
		}
		i = digits(doc, i+1)
	}
	if i < n && (doc[i] == 'e' || doc[i] == 'E') {
		i++
		if i < n && (doc[i] == '+' || doc[i] == '-') {
			i++
		}
		if i >= n {
			return 0, errEnd(n)
		}
		if !isDigit(doc[i]) {
			return 0, errChar(doc, i, "in exponent of numeric literal")
		}
		i = digits(doc, i+1)
	}
	return i, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(doc []byte, i int) int {
	for i < len(doc) && isDigit(doc[i]) {
		i++
	}
	return i
}
