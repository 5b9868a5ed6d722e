package jcs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits of the strict parser. They match the reference verifier's input budget.
const (
	MaxDepth = 64      // nested objects and arrays; the outermost container is level 1
	MaxNodes = 200_000 // values of any kind in one document
	// maxIntDigits bounds an integer literal to about 8192 bits.
	maxIntDigits = 2467
)

// Number is a JSON number kept as its literal token.
type Number string

// IsInt reports whether the token is an integer token (no fraction, no exponent).
func (n Number) IsInt() bool {
	for i := 0; i < len(n); i++ {
		switch n[i] {
		case '.', 'e', 'E':
			return false
		}
	}
	return true
}

// Int64 returns the value of an integer token that fits in an int64.
func (n Number) Int64() (int64, bool) {
	if !n.IsInt() {
		return 0, false
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	return v, err == nil
}

// SyntaxError describes where strict parsing failed.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("json: %s at offset %d", e.Msg, e.Offset) }

// ErrDuplicateKey is wrapped by the error for an object that repeats a key.
var ErrDuplicateKey = errors.New("duplicate object key")

// Parse decodes one JSON document strictly. Objects become map[string]any, arrays []any,
// strings string, numbers Number, and true/false/null bool and nil.
func Parse(data []byte) (any, error) {
	v, _, err := ParseCanonical(data)
	return v, err
}

// ParseCanonical is Parse that also reports whether data is exactly the RFC 8785 form of the
// value it holds, found while parsing: no whitespace, keys in order, canonical escapes and
// number tokens. canonical is false whenever Canonical(v) would differ from data or fail.
func ParseCanonical(data []byte) (v any, canonical bool, err error) {
	return parse(data, Options{})
}

// Options adapt the strict parser to a format with other limits than a signed payload's. The
// zero value is Parse's rules.
type Options struct {
	// MaxDepth bounds nesting; the outermost container is level 1 (0: MaxDepth).
	MaxDepth int
	// MaxNodes bounds the values of one document (0: MaxNodes; negative: no bound, for input
	// its caller has already bounded in size).
	MaxNodes int
	// MaxIntDigits bounds the digits of an integer literal (0: 2,467, about 8,192 bits).
	MaxIntDigits int
	// LoneSurrogates accepts a \u escape of an unpaired surrogate, as Python's json module
	// does: it has no UTF-8 form, so it is read as U+FFFD and the string comes back as a
	// BrokenString for the caller to judge (a key is replaced the same way, silently).
	LoneSurrogates bool
	// Objects returns each object as an Object (its members in document order) instead of a
	// map[string]any: one allocation per object instead of a hash table, for a reader that
	// looks up a few known members. Duplicate keys are refused all the same.
	Objects bool
}

// Object is a JSON object as its members in document order, as ParseCanonicalWith returns it
// under Options.Objects. Its keys are distinct.
type Object []Field

// Field is one member of an Object.
type Field struct {
	Key   string
	Value any
}

// Get returns the value of member k. Objects of signed documents hold a handful of members,
// so a scan costs less than hashing.
func (o Object) Get(k string) (any, bool) {
	for i := range o {
		if o[i].Key == k {
			return o[i].Value, true
		}
	}
	return nil, false
}

// BrokenString is a string value that held an unpaired surrogate escape, each replaced by
// U+FFFD. Only ParseWith with Options.LoneSurrogates returns it.
type BrokenString string

// ParseWith is Parse under other limits.
func ParseWith(data []byte, opts Options) (any, error) {
	v, _, err := parse(data, opts)
	return v, err
}

// ParseCanonicalWith is ParseCanonical under other limits or with Options.Objects.
func ParseCanonicalWith(data []byte, opts Options) (v any, canonical bool, err error) {
	return parse(data, opts)
}

func parse(data []byte, opts Options) (v any, canonical bool, err error) {
	if !utf8.Valid(data) {
		return nil, false, &SyntaxError{0, "input is not valid UTF-8"}
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = MaxDepth
	}
	if opts.MaxNodes == 0 {
		opts.MaxNodes = MaxNodes
	}
	if opts.MaxIntDigits <= 0 {
		opts.MaxIntDigits = maxIntDigits
	}
	p := parser{data: data, stack: make([]Field, 0, 16), opts: opts}
	if len(data) <= maxSharedDoc {
		p.doc = string(data)
	}
	p.skipSpace()
	v, err = p.value(0)
	if err != nil {
		return nil, false, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, false, p.fail("trailing data after the document")
	}
	return v, !p.nonCanonical, nil
}

type parser struct {
	data  []byte
	pos   int
	nodes int
	// nonCanonical is set as soon as the input shows a token or layout that RFC 8785 would
	// write differently; while it stays false the input is its own canonical form.
	nonCanonical bool
	// stack holds the members of the objects being read, innermost last; items the elements
	// of the arrays being read.
	stack []Field
	items []any
	// fields and elems are the free tails of the slabs that the document's Objects and arrays
	// are cut from: a few allocations for the whole tree instead of one per container.
	fields []Field
	elems  []any
	opts   Options
	// broken is set when the string just read held an unpaired surrogate.
	broken bool
	// doc is data as one string, for a document of at most maxSharedDoc bytes: the strings
	// without escapes are slices of it instead of one allocation each.
	doc string
}

// maxSharedDoc bounds the documents whose strings share one copy of the input. A string kept
// from the tree keeps that copy alive, so larger documents copy each string on its own.
const maxSharedDoc = 64 << 10

// A new slab chunk is sized for the rest of the document, guessing a member per bytesPerField
// and an array element per bytesPerElem bytes of it, within minSlab..maxSlab entries.
const (
	bytesPerField = 32
	bytesPerElem  = 128
	minSlab       = 8
	maxSlab       = 256
)

// cut copies src into a slab and returns the copy, its capacity capped so that appending to
// it cannot reach into its neighbour. want is the size of a new chunk when one is needed.
func cut[T any](slab *[]T, src []T, want int) []T {
	if cap(*slab)-len(*slab) < len(src) {
		*slab = make([]T, 0, max(min(max(want, minSlab), maxSlab), len(src)))
	}
	i := len(*slab)
	*slab = append(*slab, src...)
	return (*slab)[i:len(*slab):len(*slab)]
}

// text returns data[i:j] as a string, sharing the document's copy when there is one.
func (p *parser) text(i, j int) string {
	if p.doc != "" {
		return p.doc[i:j]
	}
	return string(p.data[i:j])
}

func (p *parser) fail(msg string) error { return &SyntaxError{p.pos, msg} }

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
			p.nonCanonical = true
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, error) {
	p.nodes++
	if p.nodes > p.opts.MaxNodes && p.opts.MaxNodes > 0 {
		return nil, p.fail("too many JSON values")
	}
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.stringValue()
		if p.broken {
			p.broken = false
			return BrokenString(s.(string)), err
		}
		return s, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return p.literal()
	}
}

// stringValue reads a string value; the short enumerated values of receipts come back as
// shared, already boxed values so that they cost no allocation.
func (p *parser) stringValue() (any, error) {
	start := p.pos + 1
	if end := indexQuoteOrEscape(p.data[start:]); end >= 0 && p.data[start+end] == '"' {
		// No escape: the string is the bytes up to the quote, found in one scan.
		raw := p.data[start : start+end]
		p.pos = start + end + 1
		if end <= maxInternedLen && internedLen[end] {
			if v, ok := internedValues[string(raw)]; ok {
				return v, nil
			}
		}
		return p.text(start, start+end), nil
	}
	return p.str()
}

const maxInternedLen = 64

// internedLen marks the lengths of the interned values, so that a string of another length (a
// hex digest, a title) is not hashed for a lookup that cannot succeed (a read-only table).
var internedLen = func() (t [maxInternedLen + 1]bool) {
	for v := range internedValues {
		t[len(v)] = true
	}
	return t
}()

// internedValues holds enumerated string values of envelopes and agent-review predicates (a
// read-only table).
var internedValues = func() map[string]any {
	vals := []string{"application/vnd.in-toto+json", "https://in-toto.io/Statement/v1",
		"https://b7n0de.com/proofbundle/predicates/agent-review/v0.1",
		"https://b7n0de.com/proofbundle/predicates/agent-review/v0.2",
		"https://b7n0de.com/proofbundle/predicates/agent-review/v0.3",
		"0.1.0", "githubPullRequest", "githubIssue", "github.com", "selfDeclared", "runnerObserved",
		"platformAttested", "independentlyWitnessed", "critical", "high", "medium", "low", "info",
		"fixed", "dismissed", "deferred", "open", "COMPLETE", "PARTIAL", "UNKNOWN",
		"IDENTITY_UNBOUND", "TIME_SELF_DECLARED", "CURRENTNESS_UNKNOWN", "COVERAGE_PARTIAL",
		"NOT_QUALITY_ATTESTATION", "reviewCompleted", "receiptCreated", "reviewStarted",
		"evidenceCollected",
		// Runner observations (review-run statements).
		"https://github.com/lensgate/lensgate/predicates/review-run/v0.1",
		"https://github.com/lensgate/lensgate/predicates/review-run/v0.2", "0.2.0", "lensgate",
		"builtin", "exec", "openai", "other", "passed", "failed", "pending"}
	m := make(map[string]any, len(vals))
	for _, v := range vals {
		m[v] = v
	}
	return m
}()

func (p *parser) literal() (any, error) {
	rest := p.data[p.pos:]
	for _, l := range []struct {
		text string
		val  any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(rest) >= len(l.text) && string(rest[:len(l.text)]) == l.text {
			p.pos += len(l.text)
			return l.val, nil
		}
	}
	return nil, p.fail("invalid value")
}

func (p *parser) object(depth int) (any, error) {
	if depth > p.opts.MaxDepth {
		return nil, p.fail(fmt.Sprintf("nesting deeper than %d", p.opts.MaxDepth))
	}
	p.pos++ // {
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		if p.opts.Objects {
			return Object{}, nil
		}
		return make(map[string]any), nil
	}
	// Members are gathered on the parser's shared stack while their keys rise strictly in
	// byte order, which rules out a duplicate without a lookup; the map is then made at its
	// final size. The first key out of order moves them into a map that checks each key (under
	// Options.Objects the map only records the keys and the members stay on the stack).
	base := len(p.stack)
	defer func() { p.stack = p.stack[:base] }()
	var m map[string]any
	prev, first := "", true
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail("expected object key")
		}
		keyAt := p.pos
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		p.broken = false
		if m == nil && !first && prev >= k {
			m = make(map[string]any, len(p.stack)-base+1)
			for _, kv := range p.stack[base:] {
				m[kv.Key] = kv.Value
			}
		}
		if m != nil {
			if _, dup := m[k]; dup {
				return nil, &SyntaxError{keyAt, fmt.Sprintf("%v %q", ErrDuplicateKey, k)}
			}
		}
		if !first && !p.nonCanonical && CompareKeys(prev, k) >= 0 {
			p.nonCanonical = true
		}
		prev, first = k, false
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		if m != nil {
			m[k] = v
		}
		if m == nil || p.opts.Objects {
			p.stack = append(p.stack, Field{k, v})
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			if p.opts.Objects {
				return Object(cut(&p.fields, p.stack[base:], (len(p.data)-p.pos)/bytesPerField)), nil
			}
			if m == nil {
				m = make(map[string]any, len(p.stack)-base)
				for _, kv := range p.stack[base:] {
					m[kv.Key] = kv.Value
				}
			}
			return m, nil
		default:
			return nil, p.fail("expected ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) (any, error) {
	if depth > p.opts.MaxDepth {
		return nil, p.fail(fmt.Sprintf("nesting deeper than %d", p.opts.MaxDepth))
	}
	p.pos++ // [
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return []any{}, nil
	}
	base := len(p.items)
	defer func() { p.items = p.items[:base] }()
	for {
		p.skipSpace()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		p.items = append(p.items, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return cut(&p.elems, p.items[base:], (len(p.data)-p.pos)/bytesPerElem), nil
		default:
			return nil, p.fail("expected ',' or ']'")
		}
	}
}

// key reads an object key as a slice of the shared document or, in a larger document, as a
// shared string for common member names, so that a receipt's keys cost no allocation each.
func (p *parser) key() (string, error) {
	start := p.pos + 1
	if end := indexQuoteOrEscape(p.data[start:]); end >= 0 && p.data[start+end] == '"' {
		raw := p.data[start : start+end]
		p.pos = start + end + 1
		if p.doc != "" {
			return p.doc[start : start+end], nil
		}
		if k, ok := internedKeys[string(raw)]; ok {
			return k, nil
		}
		return string(raw), nil
	}
	return p.str()
}

// indexQuoteOrEscape returns the index of the first quote, backslash or control character in
// b, or -1. It tests eight bytes at a time: base64 payloads and digests are long plain runs.
func indexQuoteOrEscape(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (ones * '"')
		bs := x ^ (ones * '\\')
		// A byte is flagged when it is zero in q or bs (a quote or backslash) or below 0x20.
		// A borrow can flag a byte above a flagged one, never below: the lowest flag is the
		// first special byte.
		if m := ((q-ones)&^q | (bs-ones)&^bs | (x-ones*0x20)&^x) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return -1
}

// internedKeys holds member names of envelopes, statements and agent-review predicates
// (a read-only table).
var internedKeys = func() map[string]string {
	names := []string{"payload", "payloadType", "signatures", "keyid", "sig", "_type", "subject",
		"predicateType", "predicate", "digest", "sha256", "name", "schemaVersion", "reviewId",
		"subjectContext", "declaration", "coverage", "times", "limitations", "limitationCodes",
		"producer", "observations", "supersession", "planRef", "kind", "forge", "repositoryId",
		"pullRequestNodeId", "issueNodeId", "commentNodeId", "headSha", "baseSha",
		"reviewedDiffDigest", "bodyCoreDigest", "disclosureCoreDigest", "renderedDisclosureDigest",
		"revisedAt", "humanRef", "authoring", "reviewRuns", "findings", "findingsTotal",
		"findingsRoot", "nonClaims", "timeClaims", "assurance", "assertedBy", "observedBy",
		"evidenceRef", "id", "severity", "title", "disposition", "fixCommit", "reason", "value",
		"status", "window", "sources", "observedRuns", "expectedRuns", "knownGaps",
		"collectionMethod", "strata", "integrity", "absenceAssertions", "declaredAt", "observedAt",
		"signedAt", "anchoredAt", "keyId", "verifier", "supersedes", "corrects", "withdraws",
		"priorDigest",
		// Runner observations (review-run statements).
		"runner", "version", "binds", "receipt", "plan", "started", "finished", "calls", "lenses",
		"runtime", "exchanges", "request", "response", "size", "files", "count", "outcomes",
		"outcome", "lens", "listed", "total", "root", "reviewDigest", "tokens", "input", "output",
		"error", "executableSha256", "exitStatus", "endpointHost", "modelRequested",
		"modelResponded", "interpreter", "path"}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}()

func (p *parser) number() (any, error) {
	start := p.pos
	d := p.data
	if p.pos < len(d) && d[p.pos] == '-' {
		p.pos++
	}
	digits := p.pos
	switch {
	case p.pos < len(d) && d[p.pos] == '0':
		p.pos++
	case p.pos < len(d) && d[p.pos] >= '1' && d[p.pos] <= '9':
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
	default:
		return nil, p.fail("invalid number")
	}
	intDigits := p.pos - digits
	isInt := true
	if p.pos < len(d) && d[p.pos] == '.' {
		isInt = false
		p.pos++
		if !p.digits() {
			return nil, p.fail("invalid number fraction")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		isInt = false
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if !p.digits() {
			return nil, p.fail("invalid number exponent")
		}
	}
	if isInt && intDigits > p.opts.MaxIntDigits {
		return nil, &SyntaxError{start, "integer literal too large"}
	}
	n := Number(d[start:p.pos])
	if !p.nonCanonical {
		if isInt {
			// The grammar already excludes leading zeros, so an integer token is canonical
			// unless it is "-0" or outside ±(2^53-1); no need to format it again.
			v, ok := n.Int64()
			if !ok || n == "-0" || v > maxSafeInt || v < -maxSafeInt {
				p.nonCanonical = true
			}
		} else if c, err := appendNumber(nil, n); err != nil || string(c) != string(n) {
			p.nonCanonical = true
		}
	}
	return n, nil
}

func (p *parser) digits() bool {
	start := p.pos
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
	}
	return p.pos > start
}

func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if !stringSpecial[c] {
			p.pos++
			continue
		}
		if c == '"' {
			s := p.text(start, p.pos)
			p.pos++
			return s, nil
		}
		if c == '\\' {
			break
		}
		return "", p.fail("control character in string")
	}
	buf := make([]byte, 0, p.pos-start+16)
	buf = append(buf, p.data[start:p.pos]...)
	for {
		if p.pos >= len(p.data) {
			return "", p.fail("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.fail("control character in string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		p.pos++ // backslash
		if p.pos >= len(p.data) {
			return "", p.fail("unterminated escape")
		}
		e := p.data[p.pos]
		p.pos++
		if v := shortEscape[e]; v != 0 {
			buf = append(buf, v)
			continue
		}
		switch e {
		case '/':
			buf = append(buf, e)
			p.nonCanonical = true
		case 'u':
			hexAt := p.pos
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			// Only control characters without a short escape are written as \u00xx.
			if r >= 0x20 || hasShortEscape[r] ||
				p.data[hexAt+2] >= 'A' && p.data[hexAt+2] <= 'F' || p.data[hexAt+3] >= 'A' && p.data[hexAt+3] <= 'F' {
				p.nonCanonical = true
			}
			if utf16.IsSurrogate(r) {
				var err error
				if r, err = p.lowSurrogate(r); err != nil {
					return "", err
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", p.fail("invalid escape")
		}
	}
}

// lowSurrogate completes the surrogate escape r just read with the low surrogate escape that
// must follow it, and returns the rune of the pair. An unpaired surrogate is an error, or
// U+FFFD under Options.LoneSurrogates (what follows is then read on its own).
func (p *parser) lowSurrogate(r rune) (rune, error) {
	lone := func() (rune, error) {
		if !p.opts.LoneSurrogates {
			return 0, p.fail("lone surrogate in string")
		}
		p.broken, p.nonCanonical = true, true
		return utf8.RuneError, nil
	}
	if r >= 0xdc00 || p.pos+1 >= len(p.data) || p.data[p.pos] != '\\' || p.data[p.pos+1] != 'u' {
		return lone()
	}
	at := p.pos
	p.pos += 2
	r2, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if r2 < 0xdc00 || r2 > 0xdfff {
		p.pos = at
		return lone()
	}
	return utf16.DecodeRune(r, r2), nil
}

// shortEscape maps the letter of a two-character escape to the byte it stands for (0: not a
// short escape). \/ is left out: valid JSON but never canonical, so each reader handles it.
var shortEscape = [256]byte{'"': '"', '\\': '\\', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hasShortEscape marks the control characters that canonical JSON writes with a short escape,
// never as \u00xx.
var hasShortEscape = [0x20]bool{'\b': true, '\f': true, '\n': true, '\r': true, '\t': true}

// stringSpecial marks the bytes that end the plain run of a string: quote, backslash and
// control characters (a read-only table).
var stringSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func (p *parser) hex4() (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.fail("short \\u escape")
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, p.fail("invalid \\u escape")
		}
	}
	p.pos += 4
	return r, nil
}
