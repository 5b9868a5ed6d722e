package config

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// A TOML 1.0 reader that accepts, rejects and decodes exactly what Python's tomllib does, because
// YAGA reads its policies with tomllib and a policy must give the same plan_digest in both. The
// TOML libraries for Go read TOML 1.1 (\e and \xHH escapes, multi-line inline tables with
// trailing commas, times without seconds) and keep CR LF inside multi-line strings; tomllib
// rejects the first and turns CR LF into LF. Reading the document here also gives every key and
// value its line and column, and keeps document order, which is the plan's lens order.
//
// Messages and their positions (line, and column in code points) follow tomllib's, so a YAGA
// error document quotes the same text.

// tomlKind is the type of a decoded TOML value.
type tomlKind int

const (
	tomlString tomlKind = iota
	tomlInteger
	tomlFloat
	tomlBool
	tomlDatetime // offset or local date-time
	tomlDate
	tomlTime
	tomlArray
	tomlTable
)

// tomlValue is one decoded value. Tables keep their keys in document order.
type tomlValue struct {
	kind tomlKind
	str  string   // string; ISO text of a date or time, as Python's isoformat writes it
	num  *big.Int // integer, of any size
	f    float64
	b    bool
	arr  []*tomlValue
	keys []string // table keys in insertion order
	vals map[string]*tomlValue
	kpos map[string]tomlPos // where each key was first written
	pos  tomlPos            // where the value starts (a table: where it was first opened)
}

type tomlPos struct{ line, col int }

func (v *tomlValue) get(k string) (*tomlValue, bool) {
	x, ok := v.vals[k]
	return x, ok
}

func (v *tomlValue) put(k string, x *tomlValue, at tomlPos) {
	v.keys = append(v.keys, k)
	v.vals[k] = x
	v.kpos[k] = at
}

func newTable(at tomlPos) *tomlValue {
	return &tomlValue{kind: tomlTable, vals: map[string]*tomlValue{}, kpos: map[string]tomlPos{}, pos: at}
}

// TOMLError is a document that is not TOML 1.0 as tomllib reads it. Message is tomllib's,
// position suffix included.
type TOMLError struct {
	Message      string
	Line, Column int // at the end of the document: its last line
	// IntegerLimit marks Python's ValueError for a decimal integer of more than 4,300 digits,
	// which tomllib does not turn into a TOML error.
	IntegerLimit bool
}

func (e *TOMLError) Error() string { return e.Message }

// maxIntDigits is Python's default limit on the digits of a decimal integer it converts.
const maxIntDigits = 4300

// Flags of a key path, as tomllib keeps them: an explicitly declared table cannot be declared
// again, and an inline table or array cannot be changed afterwards.
const (
	flagFrozen   = 1
	flagExplicit = 2
)

type flagNode struct {
	flags, recursive int
	nested           map[string]*flagNode
}

type flagSet struct {
	root    map[string]*flagNode
	pending [][]string // keys waiting to be marked explicit at the next table header
}

func newFlagSet() *flagSet { return &flagSet{root: map[string]*flagNode{}} }

func (f *flagSet) is(key []string, flag int) bool {
	if len(key) == 0 {
		return false
	}
	cont := f.root
	for _, k := range key[:len(key)-1] {
		n, ok := cont[k]
		if !ok {
			return false
		}
		if n.recursive&flag != 0 {
			return true
		}
		cont = n.nested
	}
	if n, ok := cont[key[len(key)-1]]; ok {
		return (n.flags|n.recursive)&flag != 0
	}
	return false
}

func (f *flagSet) set(key []string, flag int, recursive bool) {
	cont := f.root
	for i, k := range key {
		n, ok := cont[k]
		if !ok {
			n = &flagNode{nested: map[string]*flagNode{}}
			cont[k] = n
		}
		if i == len(key)-1 {
			if recursive {
				n.recursive |= flag
			} else {
				n.flags |= flag
			}
			return
		}
		cont = n.nested
	}
}

func (f *flagSet) unsetAll(key []string) {
	cont := f.root
	for _, k := range key[:len(key)-1] {
		n, ok := cont[k]
		if !ok {
			return
		}
		cont = n.nested
	}
	delete(cont, key[len(key)-1])
}

func (f *flagSet) finalizePending() {
	for _, k := range f.pending {
		f.set(k, flagExplicit, false)
	}
	f.pending = nil
}

type tomlParser struct {
	src        []rune
	pos        int
	lineStarts []int
}

// errNoNest is tomllib's KeyError for a path through a value that is not a table.
var errNoNest = fmt.Errorf("no table behind this key")

// parseTOML decodes a TOML document (valid UTF-8, BOM already removed) as tomllib.loads does.
func parseTOML(doc string) (*tomlValue, error) {
	doc = strings.ReplaceAll(doc, "\r\n", "\n")
	p := &tomlParser{src: []rune(doc)}
	p.lineStarts = []int{0}
	for i, r := range p.src {
		if r == '\n' {
			p.lineStarts = append(p.lineStarts, i+1)
		}
	}
	root := newTable(tomlPos{1, 1})
	flags := newFlagSet()
	var header []string
	for {
		p.skip(" \t")
		if p.pos >= len(p.src) {
			break
		}
		c := p.src[p.pos]
		switch {
		case c == '\n':
			p.pos++
			continue
		case isBareKey(c) || c == '"' || c == '\'':
			if err := p.keyValueRule(root, flags, header); err != nil {
				return nil, err
			}
			p.skip(" \t")
		case c == '[':
			flags.finalizePending()
			var err error
			if p.pos+1 < len(p.src) && p.src[p.pos+1] == '[' {
				header, err = p.createListRule(root, flags)
			} else {
				header, err = p.createDictRule(root, flags)
			}
			if err != nil {
				return nil, err
			}
			p.skip(" \t")
		case c != '#':
			return nil, p.fail(p.pos, "Invalid statement")
		}
		if err := p.skipComment(); err != nil {
			return nil, err
		}
		if p.pos < len(p.src) && p.src[p.pos] != '\n' {
			return nil, p.fail(p.pos, "Expected newline or end of document after a statement")
		}
		p.pos++
	}
	return root, nil
}

func (p *tomlParser) at(pos int) tomlPos {
	i, found := slices.BinarySearch(p.lineStarts, pos)
	if !found {
		i--
	}
	return tomlPos{i + 1, pos - p.lineStarts[i] + 1}
}

func (p *tomlParser) fail(pos int, msg string) error {
	at := p.at(pos)
	if pos >= len(p.src) {
		// tomllib names no line here; the end's own position still locates the problem.
		if len(p.src) > 0 && p.src[len(p.src)-1] == '\n' {
			at = p.at(len(p.src) - 1)
		}
		return &TOMLError{Message: msg + " (at end of document)", Line: at.line, Column: at.col}
	}
	return &TOMLError{Message: fmt.Sprintf("%s (at line %d, column %d)", msg, at.line, at.col), Line: at.line, Column: at.col}
}

func (p *tomlParser) skip(chars string) {
	for p.pos < len(p.src) && strings.ContainsRune(chars, p.src[p.pos]) {
		p.pos++
	}
}

func (p *tomlParser) hasPrefix(s string) bool {
	i := p.pos
	for _, r := range s {
		if i >= len(p.src) || p.src[i] != r {
			return false
		}
		i++
	}
	return true
}

func isBareKey(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// isCtrl reports the ASCII control characters, which TOML allows in no string or comment except
// tab (and newline in multi-line strings).
func isCtrl(r rune) bool { return r < 0x20 || r == 0x7f }

// skipUntil returns the position of the next expect, failing on a forbidden character before it
// and, when eofErr, on a missing expect.
func (p *tomlParser) skipUntil(expect string, illegal func(rune) bool, eofErr bool) (int, error) {
	want := []rune(expect)
	end := -1
	for i := p.pos; i+len(want) <= len(p.src); i++ {
		if p.src[i] == want[0] && slices.Equal(p.src[i:i+len(want)], want) {
			end = i
			break
		}
	}
	if end < 0 {
		end = len(p.src)
		if eofErr {
			return 0, p.fail(end, "Expected "+pyRepr(expect))
		}
	}
	for i := p.pos; i < end; i++ {
		if illegal(p.src[i]) {
			return 0, p.fail(i, "Found invalid character "+pyRepr(string(p.src[i])))
		}
	}
	return end, nil
}

func (p *tomlParser) skipComment() error {
	if p.pos < len(p.src) && p.src[p.pos] == '#' {
		p.pos++
		end, err := p.skipUntil("\n", func(r rune) bool { return isCtrl(r) && r != '\t' }, false)
		if err != nil {
			return err
		}
		p.pos = end
	}
	return nil
}

func (p *tomlParser) skipCommentsAndArrayWS() error {
	for {
		before := p.pos
		p.skip(" \t\n")
		if err := p.skipComment(); err != nil {
			return err
		}
		if p.pos == before {
			return nil
		}
	}
}

// nest walks key from t, creating tables on the way, and returns the table at its end. With
// lastOfArray, an array on the way stands for its last element (an array of tables).
func nest(t *tomlValue, key []string, at []tomlPos, lastOfArray bool) (*tomlValue, error) {
	cont := t
	for i, k := range key {
		next, ok := cont.get(k)
		if !ok {
			next = newTable(at[i])
			cont.put(k, next, at[i])
		}
		if lastOfArray && next.kind == tomlArray {
			if len(next.arr) == 0 {
				return nil, errNoNest
			}
			next = next.arr[len(next.arr)-1]
		}
		if next.kind != tomlTable {
			return nil, errNoNest
		}
		cont = next
	}
	return cont, nil
}

func (p *tomlParser) createDictRule(root *tomlValue, flags *flagSet) ([]string, error) {
	p.pos++
	p.skip(" \t")
	key, at, err := p.parseKey()
	if err != nil {
		return nil, err
	}
	if flags.is(key, flagExplicit) || flags.is(key, flagFrozen) {
		return nil, p.fail(p.pos, fmt.Sprintf("Cannot declare %s twice", pyTuple(key)))
	}
	flags.set(key, flagExplicit, false)
	if _, err := nest(root, key, at, true); err != nil {
		return nil, p.fail(p.pos, "Cannot overwrite a value")
	}
	if !p.hasPrefix("]") {
		return nil, p.fail(p.pos, "Expected ']' at the end of a table declaration")
	}
	p.pos++
	return key, nil
}

func (p *tomlParser) createListRule(root *tomlValue, flags *flagSet) ([]string, error) {
	p.pos += 2
	p.skip(" \t")
	key, at, err := p.parseKey()
	if err != nil {
		return nil, err
	}
	if flags.is(key, flagFrozen) {
		return nil, p.fail(p.pos, fmt.Sprintf("Cannot mutate immutable namespace %s", pyTuple(key)))
	}
	flags.unsetAll(key)
	flags.set(key, flagExplicit, false)
	parent, err := nest(root, key[:len(key)-1], at, true)
	if err != nil {
		return nil, p.fail(p.pos, "Cannot overwrite a value")
	}
	last := key[len(key)-1]
	elem := newTable(at[len(at)-1])
	if list, ok := parent.get(last); ok {
		if list.kind != tomlArray {
			return nil, p.fail(p.pos, "Cannot overwrite a value")
		}
		list.arr = append(list.arr, elem)
	} else {
		parent.put(last, &tomlValue{kind: tomlArray, arr: []*tomlValue{elem}, pos: at[len(at)-1]}, at[len(at)-1])
	}
	if !p.hasPrefix("]]") {
		return nil, p.fail(p.pos, "Expected ']]' at the end of an array declaration")
	}
	p.pos += 2
	return key, nil
}

func (p *tomlParser) keyValueRule(root *tomlValue, flags *flagSet, header []string) error {
	key, at, value, err := p.parseKeyValuePair()
	if err != nil {
		return err
	}
	parent, stem := key[:len(key)-1], key[len(key)-1]
	absParent := append(slices.Clip(header), parent...)
	for i := 1; i < len(key); i++ {
		cont := append(slices.Clip(header), key[:i]...)
		if flags.is(cont, flagExplicit) {
			return p.fail(p.pos, fmt.Sprintf("Cannot redefine namespace %s", pyTuple(cont)))
		}
		flags.pending = append(flags.pending, cont)
	}
	if flags.is(absParent, flagFrozen) {
		return p.fail(p.pos, fmt.Sprintf("Cannot mutate immutable namespace %s", pyTuple(absParent)))
	}
	// The header's own parts were positioned when it was declared; only new parts need one.
	hdrAt := make([]tomlPos, len(header), len(absParent))
	for i := range hdrAt {
		hdrAt[i] = at[0]
	}
	t, err := nest(root, absParent, append(hdrAt, at[:len(parent)]...), true)
	if err != nil {
		return p.fail(p.pos, "Cannot overwrite a value")
	}
	if _, ok := t.get(stem); ok {
		return p.fail(p.pos, "Cannot overwrite a value")
	}
	if value.kind == tomlTable || value.kind == tomlArray {
		flags.set(append(slices.Clip(header), key...), flagFrozen, true)
	}
	t.put(stem, value, at[len(at)-1])
	return nil
}

func (p *tomlParser) parseKeyValuePair() ([]string, []tomlPos, *tomlValue, error) {
	key, at, err := p.parseKey()
	if err != nil {
		return nil, nil, nil, err
	}
	if p.pos >= len(p.src) || p.src[p.pos] != '=' {
		return nil, nil, nil, p.fail(p.pos, "Expected '=' after a key in a key/value pair")
	}
	p.pos++
	p.skip(" \t")
	v, err := p.parseValue()
	if err != nil {
		return nil, nil, nil, err
	}
	return key, at, v, nil
}

func (p *tomlParser) parseKey() ([]string, []tomlPos, error) {
	var key []string
	var at []tomlPos
	for {
		start := p.pos
		part, err := p.parseKeyPart()
		if err != nil {
			return nil, nil, err
		}
		key = append(key, part)
		at = append(at, p.at(start))
		p.skip(" \t")
		if p.pos >= len(p.src) || p.src[p.pos] != '.' {
			return key, at, nil
		}
		p.pos++
		p.skip(" \t")
	}
}

func (p *tomlParser) parseKeyPart() (string, error) {
	if p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case isBareKey(c):
			start := p.pos
			for p.pos < len(p.src) && isBareKey(p.src[p.pos]) {
				p.pos++
			}
			return string(p.src[start:p.pos]), nil
		case c == '\'':
			return p.parseLiteralString()
		case c == '"':
			p.pos++
			return p.parseBasicString(false)
		}
	}
	return "", p.fail(p.pos, "Invalid initial character for a key part")
}

func (p *tomlParser) parseLiteralString() (string, error) {
	p.pos++
	start := p.pos
	end, err := p.skipUntil("'", func(r rune) bool { return isCtrl(r) && r != '\t' }, true)
	if err != nil {
		return "", err
	}
	p.pos = end + 1
	return string(p.src[start:end]), nil
}

func (p *tomlParser) parseMultilineString(literal bool) (string, error) {
	p.pos += 3
	if p.hasPrefix("\n") {
		p.pos++
	}
	var s string
	delim := "\""
	if literal {
		delim = "'"
		start := p.pos
		end, err := p.skipUntil("'''", func(r rune) bool { return isCtrl(r) && r != '\t' && r != '\n' }, true)
		if err != nil {
			return "", err
		}
		s = string(p.src[start:end])
		p.pos = end + 3
	} else {
		var err error
		if s, err = p.parseBasicString(true); err != nil {
			return "", err
		}
	}
	// Up to two quotes right before the closing delimiter belong to the string.
	for range 2 {
		if !p.hasPrefix(delim) {
			break
		}
		p.pos++
		s += delim
	}
	return s, nil
}

func (p *tomlParser) parseBasicString(multiline bool) (string, error) {
	illegal := func(r rune) bool { return isCtrl(r) && r != '\t' && (!multiline || r != '\n') }
	var b strings.Builder
	start := p.pos
	for {
		if p.pos >= len(p.src) {
			return "", p.fail(p.pos, "Unterminated string")
		}
		c := p.src[p.pos]
		switch {
		case c == '"':
			if !multiline {
				b.WriteString(string(p.src[start:p.pos]))
				p.pos++
				return b.String(), nil
			}
			if p.hasPrefix(`"""`) {
				b.WriteString(string(p.src[start:p.pos]))
				p.pos += 3
				return b.String(), nil
			}
			p.pos++
		case c == '\\':
			b.WriteString(string(p.src[start:p.pos]))
			esc, err := p.parseEscape(multiline)
			if err != nil {
				return "", err
			}
			b.WriteString(esc)
			start = p.pos
		case illegal(c):
			return "", p.fail(p.pos, "Illegal character "+pyRepr(string(c)))
		default:
			p.pos++
		}
	}
}

func (p *tomlParser) parseEscape(multiline bool) (string, error) {
	id := string(p.src[p.pos:min(p.pos+2, len(p.src))])
	p.pos += 2
	if multiline && (id == "\\ " || id == "\\\t" || id == "\\\n") {
		// A line-ending backslash trims the newline and the whitespace after it; only
		// whitespace may stand between the backslash and the newline.
		if id != "\\\n" {
			p.skip(" \t")
			if p.pos >= len(p.src) {
				return "", nil
			}
			if p.src[p.pos] != '\n' {
				return "", p.fail(p.pos, `Unescaped '\' in a string`)
			}
			p.pos++
		}
		p.skip(" \t\n")
		return "", nil
	}
	switch id {
	case `\u`:
		return p.parseHexChar(4)
	case `\U`:
		return p.parseHexChar(8)
	case `\b`:
		return "\b", nil
	case `\t`:
		return "\t", nil
	case `\n`:
		return "\n", nil
	case `\f`:
		return "\f", nil
	case `\r`:
		return "\r", nil
	case `\"`:
		return `"`, nil
	case `\\`:
		return `\`, nil
	}
	return "", p.fail(p.pos, `Unescaped '\' in a string`)
}

func (p *tomlParser) parseHexChar(n int) (string, error) {
	if p.pos+n > len(p.src) {
		return "", p.fail(p.pos, "Invalid hex value")
	}
	hex := string(p.src[p.pos : p.pos+n])
	for _, r := range hex {
		if !isHex(r) {
			return "", p.fail(p.pos, "Invalid hex value")
		}
	}
	p.pos += n
	cp, _ := strconv.ParseUint(hex, 16, 64)
	if cp > 0x10ffff || cp >= 0xd800 && cp <= 0xdfff {
		return "", p.fail(p.pos, "Escaped character is not a Unicode scalar value")
	}
	return string(rune(cp)), nil
}

func isHex(r rune) bool { return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' }

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

func (p *tomlParser) digitAt(i int, ok func(rune) bool) bool {
	return i < len(p.src) && ok(p.src[i])
}

func (p *tomlParser) parseValue() (*tomlValue, error) {
	start := p.pos
	at := p.at(start)
	if p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '"':
			var s string
			var err error
			if p.hasPrefix(`"""`) {
				s, err = p.parseMultilineString(false)
			} else {
				p.pos++
				s, err = p.parseBasicString(false)
			}
			if err != nil {
				return nil, err
			}
			return &tomlValue{kind: tomlString, str: s, pos: at}, nil
		case '\'':
			var s string
			var err error
			if p.hasPrefix("'''") {
				s, err = p.parseMultilineString(true)
			} else {
				s, err = p.parseLiteralString()
			}
			if err != nil {
				return nil, err
			}
			return &tomlValue{kind: tomlString, str: s, pos: at}, nil
		case 't':
			if p.hasPrefix("true") {
				p.pos += 4
				return &tomlValue{kind: tomlBool, b: true, pos: at}, nil
			}
		case 'f':
			if p.hasPrefix("false") {
				p.pos += 5
				return &tomlValue{kind: tomlBool, pos: at}, nil
			}
		case '[':
			return p.parseArray(at)
		case '{':
			return p.parseInlineTable(at)
		}
	}
	if v, ok, err := p.matchDatetime(at); ok || err != nil {
		return v, err
	}
	if v, ok := p.matchTime(p.pos); ok {
		v.pos = at
		return v, nil
	}
	if v, ok, err := p.matchNumber(at); ok || err != nil {
		return v, err
	}
	for _, w := range []string{"inf", "nan", "-inf", "+inf", "-nan", "+nan"} {
		if p.hasPrefix(w) {
			p.pos += len(w)
			f := math.Inf(1)
			switch {
			case strings.HasSuffix(w, "nan"):
				f = math.NaN()
			case w[0] == '-':
				f = math.Inf(-1)
			}
			return &tomlValue{kind: tomlFloat, f: f, pos: at}, nil
		}
	}
	return nil, p.fail(p.pos, "Invalid value")
}

func (p *tomlParser) parseArray(at tomlPos) (*tomlValue, error) {
	p.pos++
	v := &tomlValue{kind: tomlArray, arr: []*tomlValue{}, pos: at}
	if err := p.skipCommentsAndArrayWS(); err != nil {
		return nil, err
	}
	if p.hasPrefix("]") {
		p.pos++
		return v, nil
	}
	for {
		it, err := p.parseValue()
		if err != nil {
			return nil, err
		}
		v.arr = append(v.arr, it)
		if err := p.skipCommentsAndArrayWS(); err != nil {
			return nil, err
		}
		if p.hasPrefix("]") {
			p.pos++
			return v, nil
		}
		if !p.hasPrefix(",") {
			return nil, p.fail(p.pos, "Unclosed array")
		}
		p.pos++
		if err := p.skipCommentsAndArrayWS(); err != nil {
			return nil, err
		}
		if p.hasPrefix("]") {
			p.pos++
			return v, nil
		}
	}
}

func (p *tomlParser) parseInlineTable(at tomlPos) (*tomlValue, error) {
	p.pos++
	t := newTable(at)
	flags := newFlagSet()
	p.skip(" \t")
	if p.hasPrefix("}") {
		p.pos++
		return t, nil
	}
	for {
		key, kat, value, err := p.parseKeyValuePair()
		if err != nil {
			return nil, err
		}
		parent, stem := key[:len(key)-1], key[len(key)-1]
		if flags.is(key, flagFrozen) {
			return nil, p.fail(p.pos, fmt.Sprintf("Cannot mutate immutable namespace %s", pyTuple(key)))
		}
		n, err := nest(t, parent, kat, false)
		if err != nil {
			return nil, p.fail(p.pos, "Cannot overwrite a value")
		}
		if _, ok := n.get(stem); ok {
			return nil, p.fail(p.pos, "Duplicate inline table key "+pyRepr(stem))
		}
		n.put(stem, value, kat[len(kat)-1])
		p.skip(" \t")
		if p.hasPrefix("}") {
			p.pos++
			return t, nil
		}
		if !p.hasPrefix(",") {
			return nil, p.fail(p.pos, "Unclosed inline table")
		}
		if value.kind == tomlTable || value.kind == tomlArray {
			flags.set(key, flagFrozen, true)
		}
		p.pos++
		p.skip(" \t")
	}
}

// digitsFrom reads d(_?d)* from i and returns the end, or i when there is no first digit.
func (p *tomlParser) digitsFrom(i int, ok func(rune) bool) int {
	if !p.digitAt(i, ok) {
		return i
	}
	i++
	for {
		switch {
		case p.digitAt(i, ok):
			i++
		case p.digitAt(i, func(r rune) bool { return r == '_' }) && p.digitAt(i+1, ok):
			i += 2
		default:
			return i
		}
	}
}

// matchNumber reads an integer or a float as tomllib's number pattern does: a prefixed
// integer, or a decimal with optional fraction and exponent; what follows is left for the
// statement rule to reject.
func (p *tomlParser) matchNumber(at tomlPos) (*tomlValue, bool, error) {
	i := p.pos
	if p.digitAt(i, func(r rune) bool { return r == '0' }) && i+1 < len(p.src) {
		var ok func(rune) bool
		base := 0
		switch p.src[i+1] {
		case 'x':
			ok, base = isHex, 16
		case 'b':
			ok, base = func(r rune) bool { return r == '0' || r == '1' }, 2
		case 'o':
			ok, base = func(r rune) bool { return r >= '0' && r <= '7' }, 8
		}
		if ok != nil {
			if end := p.digitsFrom(i+2, ok); end > i+2 {
				n, _ := new(big.Int).SetString(strings.ReplaceAll(string(p.src[i+2:end]), "_", ""), base)
				p.pos = end
				return &tomlValue{kind: tomlInteger, num: n, pos: at}, true, nil
			}
		}
	}
	if p.digitAt(i, func(r rune) bool { return r == '+' || r == '-' }) {
		i++
	}
	switch {
	case p.digitAt(i, func(r rune) bool { return r == '0' }):
		i++
	case p.digitAt(i, func(r rune) bool { return r >= '1' && r <= '9' }):
		i = p.digitsFrom(i, isDigit)
	default:
		return nil, false, nil
	}
	intEnd := i
	if p.digitAt(i, func(r rune) bool { return r == '.' }) {
		if end := p.digitsFrom(i+1, isDigit); end > i+1 {
			i = end
		}
	}
	if p.digitAt(i, func(r rune) bool { return r == 'e' || r == 'E' }) {
		j := i + 1
		if p.digitAt(j, func(r rune) bool { return r == '+' || r == '-' }) {
			j++
		}
		if end := p.digitsFrom(j, isDigit); end > j {
			i = end
		}
	}
	text := strings.ReplaceAll(string(p.src[p.pos:i]), "_", "")
	if i > intEnd {
		f, _ := strconv.ParseFloat(text, 64) // out of range gives ±Inf or 0, as Python's float()
		p.pos = i
		return &tomlValue{kind: tomlFloat, f: f, pos: at}, true, nil
	}
	digits := len(strings.TrimLeft(text, "+-"))
	if digits > maxIntDigits {
		return nil, false, &TOMLError{Line: at.line, Column: at.col, IntegerLimit: true, Message: fmt.Sprintf(
			"Exceeds the limit (%d digits) for integer string conversion: value has %d digits; use sys.set_int_max_str_digits() to increase the limit",
			maxIntDigits, digits)}
	}
	n, _ := new(big.Int).SetString(text, 10)
	p.pos = i
	return &tomlValue{kind: tomlInteger, num: n, pos: at}, true, nil
}

// fixed reads n ASCII digits at i within [lo, hi].
func (p *tomlParser) fixed(i, n, lo, hi int) (int, bool) {
	if i+n > len(p.src) {
		return 0, false
	}
	v := 0
	for _, r := range p.src[i : i+n] {
		if !isDigit(r) {
			return 0, false
		}
		v = v*10 + int(r-'0')
	}
	return v, v >= lo && v <= hi
}

// matchTime reads HH:MM:SS[.frac] at i; the fraction is cut to microseconds, as tomllib does.
func (p *tomlParser) matchTime(i int) (*tomlValue, bool) {
	h, ok1 := p.fixed(i, 2, 0, 23)
	m, ok2 := p.fixed(i+3, 2, 0, 59)
	s, ok3 := p.fixed(i+6, 2, 0, 59)
	if !ok1 || !ok2 || !ok3 || p.src[i+2] != ':' || p.src[i+5] != ':' {
		return nil, false
	}
	end := i + 8
	micro, frac := 0, ""
	if p.digitAt(end, func(r rune) bool { return r == '.' }) && p.digitAt(end+1, isDigit) {
		j := end + 1
		for p.digitAt(j, isDigit) {
			j++
		}
		frac = string(p.src[end+1 : min(j, end+7)])
		micro, _ = strconv.Atoi((frac + "000000")[:6])
		end = j
	}
	p.pos = end
	text := fmt.Sprintf("%02d:%02d:%02d", h, m, s)
	if micro != 0 {
		text += fmt.Sprintf(".%06d", micro)
	}
	return &tomlValue{kind: tomlTime, str: text}, true
}

func (p *tomlParser) matchDatetime(at tomlPos) (*tomlValue, bool, error) {
	i := p.pos
	y, ok1 := p.fixed(i, 4, 0, 9999)
	mo, ok2 := p.fixed(i+5, 2, 1, 12)
	d, ok3 := p.fixed(i+8, 2, 1, 31)
	if !ok1 || !ok2 || !ok3 || p.src[i+4] != '-' || p.src[i+7] != '-' {
		return nil, false, nil
	}
	date := fmt.Sprintf("%04d-%02d-%02d", y, mo, d)
	p.pos = i + 10
	if y < 1 || d > daysIn(y, mo) {
		return nil, false, p.fail(i, "Invalid date or datetime")
	}
	if !p.digitAt(p.pos, func(r rune) bool { return r == 'T' || r == 't' || r == ' ' }) {
		return &tomlValue{kind: tomlDate, str: date, pos: at}, true, nil
	}
	save := p.pos
	t, ok := p.matchTime(p.pos + 1)
	if !ok {
		p.pos = save
		return &tomlValue{kind: tomlDate, str: date, pos: at}, true, nil
	}
	text := date + "T" + t.str
	j := p.pos
	switch {
	case p.digitAt(j, func(r rune) bool { return r == 'Z' || r == 'z' }):
		text += "+00:00"
		p.pos++
	case p.digitAt(j, func(r rune) bool { return r == '+' || r == '-' }):
		oh, ok1 := p.fixed(j+1, 2, 0, 23)
		om, ok2 := p.fixed(j+4, 2, 0, 59)
		if ok1 && ok2 && p.src[j+3] == ':' {
			sign := string(p.src[j])
			if oh == 0 && om == 0 {
				sign = "+"
			}
			text += fmt.Sprintf("%s%02d:%02d", sign, oh, om)
			p.pos = j + 6
		}
	}
	return &tomlValue{kind: tomlDatetime, str: text, pos: at}, true, nil
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// pyRepr writes s as Python's repr() of a str does, which tomllib's messages quote.
func pyRepr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == ' ' || r < 0x7f && r > 0x20 || r > 0x7f && pyPrintable(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// pyPrintable approximates Python's str.isprintable for one non-ASCII character: letters,
// marks, numbers, punctuation and symbols.
func pyPrintable(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

// pyTuple writes a key path as Python writes a tuple of strings.
func pyTuple(key []string) string {
	parts := make([]string, len(key))
	for i, k := range key {
		parts[i] = pyRepr(k)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
