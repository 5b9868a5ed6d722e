package observation

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/disclosure/severity"
)

// Parsed is an envelope whose structure, statement and predicate passed every rule of the
// format. Its signature is not checked yet: Verify does that with the keys the reader trusts.
type Parsed struct {
	Statement *Statement
	// Digest is the SHA-256 of the decoded payload.
	Digest string
	opened *dsse.Opened
}

// isHex64 reports 64 lowercase hex characters.
func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Parse reads an observation envelope strictly: at most MaxEnvelopeBytes, JSON without
// duplicate keys, canonical base64, a payload that is exactly its own RFC 8785 form, and a
// statement and predicate with closed key sets and bounded lists. Every failure is an error
// that says which rule was broken; nothing panics.
func Parse(envelope []byte) (*Parsed, error) {
	if len(envelope) == 0 {
		return nil, errors.New("observation: empty input")
	}
	if len(envelope) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("observation: %d bytes exceeds the %d byte limit", len(envelope), MaxEnvelopeBytes)
	}
	tree, err := jcs.Parse(envelope)
	if err != nil {
		return nil, fmt.Errorf("observation: envelope: %w", err)
	}
	env, ok := tree.(map[string]any)
	if !ok {
		return nil, errors.New("observation: envelope is not a JSON object")
	}
	for k := range env {
		if k != "payload" && k != "payloadType" && k != "signatures" {
			return nil, fmt.Errorf("observation: envelope: unknown member %q", bound(k))
		}
	}
	op, err := dsse.Open(env)
	if err != nil {
		return nil, fmt.Errorf("observation: envelope: %w", err)
	}
	if op.PayloadType != dsse.PayloadType {
		return nil, fmt.Errorf("observation: payloadType must be %s", dsse.PayloadType)
	}
	if op.Alphabet != dsse.Standard {
		return nil, errors.New("observation: payload must use the standard base64 alphabet")
	}
	s, err := parseStatementOf(op.Payload)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(op.Payload)
	return &Parsed{Statement: s, Digest: hex.EncodeToString(sum[:]), opened: op}, nil
}

// parseStatementOf parses a payload to a tree and reads the statement from it.
func parseStatementOf(payload []byte) (*Statement, error) {
	st, canonical, err := jcs.ParseCanonicalWith(payload, jcs.Options{Objects: true})
	if err != nil {
		return nil, fmt.Errorf("observation: payload: %w", err)
	}
	if !canonical {
		return nil, errors.New("observation: payload is not its own RFC 8785 form")
	}
	s, err := parseStatement(st)
	if err != nil {
		return nil, fmt.Errorf("observation: %w", err)
	}
	return s, nil
}

// loc names a place in a statement for an error message, such as calls[1].exchanges[0].request:
// names, each followed by an optional index. It is spelled out only when an error is reported,
// so reading a valid statement builds no strings for it.
type loc struct {
	names [maxLocDepth]string
	idx   [maxLocDepth]int // the index after names[k] plus one; 0 for none
	n     int
}

// maxLocDepth is the deepest place the reader names (calls[i].exchanges[j].request).
const maxLocDepth = 3

func at(name string) loc { return loc{names: [maxLocDepth]string{name}, n: 1} }

// then is the place name (".runtime") inside l.
func (l loc) then(name string) loc {
	l.names[l.n] = name
	l.n++
	return l
}

// index is entry i of the list l names.
func (l loc) index(i int) loc {
	l.idx[l.n-1] = i + 1
	return l
}

func (l loc) String() string {
	var b strings.Builder
	for k := range l.n {
		b.WriteString(l.names[k])
		if l.idx[k] > 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(l.idx[k] - 1))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// reader walks a JSON tree with closed key sets and collects the first error. v2 is set while
// a v0.2 statement is read.
type reader struct {
	err error
	v2  bool
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// object returns v as an object whose keys are all in required or optional, and all of
// required are present.
func (r *reader) object(v any, where loc, required, optional []string) jcs.Object {
	m, ok := v.(jcs.Object)
	if !ok {
		r.fail("%s must be an object", where)
		return nil
	}
	for _, k := range required {
		if _, ok := m.Get(k); !ok {
			r.fail("%s: %q is required", where, k)
		}
	}
	for _, f := range m {
		if !slices.Contains(required, f.Key) && !slices.Contains(optional, f.Key) {
			r.fail("%s: unknown member %q", where, bound(f.Key))
		}
	}
	return m
}

// get is the value of member k of m, nil when there is none.
func get(m jcs.Object, k string) any {
	v, _ := m.Get(k)
	return v
}

func (r *reader) str(m jcs.Object, k string, where loc, maxLen int) string {
	v, present := m.Get(k)
	if !present {
		return ""
	}
	s, ok := v.(string)
	switch {
	case !ok:
		r.fail("%s.%s must be a string", where, k)
	case s == "":
		r.fail("%s.%s must not be empty", where, k)
	case len(s) > maxLen:
		r.fail("%s.%s is longer than %d bytes", where, k, maxLen)
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		r.fail("%s.%s is not clean UTF-8", where, k)
	}
	return s
}

func (r *reader) hex64(m jcs.Object, k string, where loc) string {
	s := r.str(m, k, where, 64)
	if _, present := m.Get(k); present && !isHex64(s) {
		r.fail("%s.%s must be 64 lowercase hex characters", where, k)
	}
	return s
}

func (r *reader) digest(v any, where loc) string {
	m := r.object(v, where, []string{"sha256"}, nil)
	return r.hex64(m, "sha256", where)
}

func (r *reader) integer(m jcs.Object, k string, where loc, min, max int64) int64 {
	v, present := m.Get(k)
	if !present {
		return 0
	}
	n, ok := v.(jcs.Number)
	if !ok || !n.IsInt() {
		r.fail("%s.%s must be an integer", where, k)
		return 0
	}
	i, ok := n.Int64()
	if !ok || i < min || i > max {
		r.fail("%s.%s must be an integer from %d to %d", where, k, min, max)
		return 0
	}
	return i
}

// time reads a time and returns it with its text.
func (r *reader) time(m jcs.Object, k string, where loc) (time.Time, string) {
	s := r.str(m, k, where, len(TimeLayout))
	if r.err != nil {
		return time.Time{}, ""
	}
	t, ok := parseTime(s)
	if !ok {
		r.fail("%s.%s must be a UTC time of the form %s", where, k, TimeLayout)
		return time.Time{}, ""
	}
	return t, s
}

// parseTime reads a time written exactly in TimeLayout. time.Parse alone also takes a
// one-digit hour; with every digit in its place, what it takes formats back to s.
func parseTime(s string) (time.Time, bool) {
	if len(s) != len(TimeLayout) {
		return time.Time{}, false
	}
	for i := 0; i < len(s); i++ {
		if l := TimeLayout[i]; l >= '0' && l <= '9' {
			if s[i] < '0' || s[i] > '9' {
				return time.Time{}, false
			}
		} else if s[i] != l {
			return time.Time{}, false
		}
	}
	t, err := time.Parse(TimeLayout, s)
	return t, err == nil
}

func (r *reader) list(m jcs.Object, k string, where loc, max int) []any {
	v, present := m.Get(k)
	if !present {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		r.fail("%s.%s must be an array", where, k)
		return nil
	}
	if len(l) > max {
		r.fail("%s.%s has %d entries, more than %d", where, k, len(l), max)
		return nil
	}
	return l
}

// parseStatement reads a statement parsed with jcs.Options.Objects.
func parseStatement(v any) (*Statement, error) {
	r := &reader{}
	st := r.object(v, at("statement"), []string{"_type", "predicateType", "subject", "predicate"}, nil)
	if r.err != nil {
		return nil, r.err
	}
	if get(st, "_type") != StatementType {
		return nil, fmt.Errorf("statement: _type must be %s", StatementType)
	}
	schema := SchemaVersion
	switch get(st, "predicateType") {
	case PredicateType:
	case PredicateTypeV02:
		r.v2, schema = true, SchemaVersionV02
	default:
		return nil, fmt.Errorf("statement: predicateType must be %s or %s (unknown version or another format)", PredicateType, PredicateTypeV02)
	}
	s := &Statement{}
	subj := r.list(st, "subject", at("statement"), 1)
	if r.err == nil && len(subj) != 1 {
		r.fail("statement.subject must hold exactly one entry")
	}
	if r.err != nil {
		return nil, r.err
	}
	sm := r.object(subj[0], at("subject[0]"), []string{"name", "digest"}, nil)
	s.SubjectName = r.str(sm, "name", at("subject[0]"), MaxStringBytes)
	s.SubjectDigest = r.digest(get(sm, "digest"), at("subject[0].digest"))

	p := r.object(get(st, "predicate"), at("predicate"),
		[]string{"schemaVersion", "runner", "binds", "window", "calls", "findings"}, nil)
	if r.err != nil {
		return nil, r.err
	}
	if get(p, "schemaVersion") != schema {
		return nil, fmt.Errorf("predicate.schemaVersion must be %q", schema)
	}
	run := r.object(get(p, "runner"), at("predicate.runner"), []string{"id", "version"}, nil)
	s.Runner = Runner{ID: r.str(run, "id", at("runner"), 64), Version: r.str(run, "version", at("runner"), 128)}

	b := r.object(get(p, "binds"), at("predicate.binds"), []string{"receipt", "reviewedDiffDigest"}, []string{"plan"})
	s.ReceiptDigest = r.digest(get(b, "receipt"), at("binds.receipt"))
	s.ReviewedDiffDigest = r.hex64(b, "reviewedDiffDigest", at("binds"))
	if pl, ok := b.Get("plan"); ok {
		s.PlanDigest = r.digest(pl, at("binds.plan"))
	}

	w := r.object(get(p, "window"), at("predicate.window"), []string{"started", "finished"}, nil)
	s.Started, s.started = r.time(w, "started", at("window"))
	s.Finished, s.finished = r.time(w, "finished", at("window"))
	if r.err == nil && s.Finished.Before(s.Started) {
		r.fail("window: finished is before started")
	}

	calls := r.list(p, "calls", at("predicate"), MaxCalls)
	s.Calls = sized[Call](len(calls))
	for i, cv := range calls {
		if r.err != nil {
			break
		}
		c := r.call(cv, at("calls").index(i))
		if r.err == nil && (c.Started.Before(s.Started) || c.Finished.After(s.Finished)) {
			r.fail("calls[%d]: its times lie outside the window", i)
		}
		s.Calls = append(s.Calls, c)
	}

	f := r.object(get(p, "findings"), at("predicate.findings"), []string{"listed", "total", "root"}, nil)
	s.FindingsTotal = int(r.integer(f, "total", at("findings"), 0, 1<<31-1))
	s.FindingsRoot = r.hex64(f, "root", at("findings"))
	listed := r.list(f, "listed", at("findings"), MaxFindings)
	s.Findings = sized[Finding](len(listed))
	for i, fv := range listed {
		where := at("findings.listed").index(i)
		fm := r.object(fv, where, []string{"id", "lens", "severity"}, nil)
		fd := Finding{ID: r.str(fm, "id", where, 256), Lens: r.str(fm, "lens", where, 256), Severity: r.str(fm, "severity", where, 16)}
		if r.err == nil && severity.Rank(fd.Severity) < 0 {
			r.fail("%s.severity %q is not critical, high, medium, low or info", where, bound(fd.Severity))
		}
		s.Findings = append(s.Findings, fd)
	}
	if r.err == nil && len(s.Findings) > s.FindingsTotal {
		r.fail("findings: %d listed but a total of %d", len(s.Findings), s.FindingsTotal)
	}
	if r.err == nil && len(s.Findings) == s.FindingsTotal && FindingsRoot(s.Findings) != s.FindingsRoot {
		r.fail("findings: the root does not cover the listed findings")
	}
	if r.err != nil {
		return nil, r.err
	}
	return s, nil
}

func (r *reader) call(v any, where loc) Call {
	m := r.object(v, where, []string{"lenses", "runtime", "started", "finished", "exchanges", "files", "outcomes"},
		[]string{"reviewDigest", "tokens", "error"})
	if r.err != nil {
		return Call{}
	}
	c := Call{}
	lenses := r.list(m, "lenses", where, MaxLensesPerCall)
	c.Lenses = sized[string](len(lenses))
	for i, lv := range lenses {
		l, ok := lv.(string)
		if !ok || l == "" || len(l) > 256 {
			r.fail("%s.lenses[%d] must be a non-empty string", where, i)
			continue
		}
		c.Lenses = append(c.Lenses, l)
	}
	if r.err == nil && len(c.Lenses) == 0 {
		r.fail("%s.lenses must name at least one lens", where)
	}
	c.Runtime = r.runtime(get(m, "runtime"), where.then(".runtime"))
	c.Started, c.started = r.time(m, "started", where)
	c.Finished, c.finished = r.time(m, "finished", where)
	if r.err == nil && c.Finished.Before(c.Started) {
		r.fail("%s: finished is before started", where)
	}
	exchanges := r.list(m, "exchanges", where, MaxExchanges)
	c.Exchanges = sized[Exchange](len(exchanges))
	for i, ev := range exchanges {
		ew := where.then(".exchanges").index(i)
		em := r.object(ev, ew, []string{"request"}, []string{"response", "status"})
		e := Exchange{Request: r.blob(get(em, "request"), ew.then(".request"))}
		if rv, ok := em.Get("response"); ok {
			b := r.blob(rv, ew.then(".response"))
			e.Response = &b
		}
		e.Status = int(r.integer(em, "status", ew, 100, 599))
		c.Exchanges = append(c.Exchanges, e)
	}
	c.ReviewDigest = r.hex64(m, "reviewDigest", where)
	fm := r.object(get(m, "files"), where.then(".files"), []string{"digest", "count"}, nil)
	c.Files = Files{Digest: r.hex64(fm, "digest", where.then(".files")), Count: int(r.integer(fm, "count", where.then(".files"), 0, 1<<31-1))}
	if tv, ok := m.Get("tokens"); ok {
		tm := r.object(tv, where.then(".tokens"), []string{"input", "output"}, nil)
		c.Tokens = &Tokens{Input: r.integer(tm, "input", where.then(".tokens"), 0, 1<<53-1), Output: r.integer(tm, "output", where.then(".tokens"), 0, 1<<53-1)}
	}
	c.Error = r.str(m, "error", where, MaxErrorBytes)
	outcomes := r.list(m, "outcomes", where, MaxLensesPerCall)
	c.Outcomes = sized[Outcome](len(outcomes))
	for i, ov := range outcomes {
		ow := where.then(".outcomes").index(i)
		om := r.object(ov, ow, []string{"lens", "outcome"}, nil)
		o := Outcome{Lens: r.str(om, "lens", ow, 256), Outcome: r.str(om, "outcome", ow, 16)}
		switch o.Outcome {
		case "passed", "failed", "pending", "":
		default:
			r.fail("%s.outcome must be passed, failed or pending", ow)
		}
		c.Outcomes = append(c.Outcomes, o)
	}
	if r.err == nil && c.ReviewDigest == "" && c.Error == "" {
		r.fail("%s: a call without a reviewDigest must say its error", where)
	}
	return c
}

func (r *reader) runtime(v any, where loc) Runtime {
	m := r.object(v, where, []string{"kind", "name"},
		[]string{"version", "executableSha256", "exitStatus", "endpointHost", "modelRequested", "modelResponded", "interpreter"})
	if r.err != nil {
		return Runtime{}
	}
	rt := Runtime{
		Kind: r.str(m, "kind", where, 16), Name: r.str(m, "name", where, 64),
		Version: r.str(m, "version", where, 128), ExecutableSHA256: r.hex64(m, "executableSha256", where),
		EndpointHost: r.str(m, "endpointHost", where, 255), ModelRequested: r.str(m, "modelRequested", where, 256),
		ModelResponded: r.str(m, "modelResponded", where, 256),
	}
	if _, ok := m.Get("exitStatus"); ok {
		n := int(r.integer(m, "exitStatus", where, -1, 255))
		rt.ExitStatus = &n
	}
	if iv, ok := m.Get("interpreter"); ok {
		if !r.v2 {
			r.fail("%s: interpreter is a member of v0.2, not of v0.1", where)
			return rt
		}
		im := r.object(iv, where.then(".interpreter"), []string{"path", "sha256"}, nil)
		rt.InterpreterPath = r.str(im, "path", where.then(".interpreter"), MaxStringBytes)
		rt.InterpreterSHA256 = r.hex64(im, "sha256", where.then(".interpreter"))
		if r.err == nil && !strings.HasPrefix(rt.InterpreterPath, "/") {
			r.fail("%s.interpreter.path must be absolute", where)
		}
	}
	has := func(k string) bool { _, ok := m.Get(k); return ok }
	only := func(keys ...string) {
		for _, f := range m {
			if k := f.Key; k != "kind" && k != "name" && !slices.Contains(keys, k) {
				r.fail("%s: %q does not belong to a %s runtime", where, k, rt.Kind)
			}
		}
	}
	switch rt.Kind {
	case KindBuiltin:
		only("version", "executableSha256")
		if !has("version") || !has("executableSha256") {
			r.fail("%s: a builtin runtime names its version and executableSha256", where)
		}
	case KindExec:
		only("executableSha256", "exitStatus", "interpreter")
		if !has("executableSha256") {
			r.fail("%s: an exec runtime names its executableSha256", where)
		}
	case KindOpenAI:
		only("endpointHost", "modelRequested", "modelResponded")
		if !has("endpointHost") || !has("modelRequested") {
			r.fail("%s: an openai runtime names its endpointHost and modelRequested", where)
		}
	case KindOther:
		only("version")
	default:
		r.fail("%s.kind must be builtin, exec, openai or other", where)
	}
	return rt
}

func (r *reader) blob(v any, where loc) Blob {
	m := r.object(v, where, []string{"sha256", "size"}, nil)
	return Blob{SHA256: r.hex64(m, "sha256", where), Size: r.integer(m, "size", where, 0, 1<<53-1)}
}

// sized is an empty slice with room for n entries, nil for none (as appending to nil gives).
func sized[T any](n int) []T {
	if n == 0 {
		return nil
	}
	return make([]T, 0, n)
}

// bound keeps a value quoted in an error short and printable.
func bound(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
