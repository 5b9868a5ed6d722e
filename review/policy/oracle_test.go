package policy

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/config/pyoracle"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// jsonTag writes a strict-JSON value in the oracle's tagged form.
func jsonTag(v any) any {
	switch v := v.(type) {
	case nil:
		return []any{"null", nil}
	case bool:
		return []any{"bool", v}
	case string:
		return []any{"str", v}
	case jcs.BrokenString:
		return []any{"str", string(v)}
	case jcs.Number:
		if !strings.ContainsAny(string(v), ".eE") {
			n, _ := new(big.Int).SetString(string(v), 10)
			return []any{"int", pyoracle.IntHex(n)}
		}
		f, _ := strconv.ParseFloat(string(v), 64) // beyond the range: ±Inf, as Python's float()
		return []any{"float", pyoracle.FloatRepr(f)}
	case []any:
		items := []any{}
		for _, it := range v {
			items = append(items, jsonTag(it))
		}
		return []any{"array", items}
	}
	pairs := []any{}
	for k, val := range v.(map[string]any) {
		pairs = append(pairs, []any{k, jsonTag(val)})
	}
	return []any{"table", pairs}
}

// canon is the tagged value in one text form: a table's pairs in key order, since the reader's
// objects do not keep the order Python's dict does (no check depends on it).
func canon(t testing.TB, raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(sortTables(v))
	return string(b)
}

func sortTables(v any) any {
	tag, ok := v.([]any)
	if !ok || len(tag) != 2 {
		return v
	}
	switch tag[0] {
	case "array":
		for i, it := range tag[1].([]any) {
			tag[1].([]any)[i] = sortTables(it)
		}
	case "table":
		pairs := tag[1].([]any)
		for _, pr := range pairs {
			pr.([]any)[1] = sortTables(pr.([]any)[1])
		}
		sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].([]any)[0].(string) < pairs[j].([]any)[0].(string) })
	}
	return tag
}

// jsonDiff compares the strict receipt reader with Python's json.loads (duplicate keys and
// NaN/Infinity refused, as YAGA refuses them).
func jsonDiff(t testing.TB, o *pyoracle.Oracle, doc string) string {
	want := o.JSON(t, doc)
	got, err := jcs.ParseWith([]byte(doc), receiptJSON)
	switch {
	case want.OK && err != nil:
		return "json accepts, lensgate rejects"
	case !want.OK && err == nil:
		return "json rejects (" + want.Class + ": " + want.Error + "), lensgate accepts"
	case !want.OK:
		return ""
	}
	g, _ := json.Marshal(jsonTag(got))
	if w := canon(t, want.Value); canon(t, g) != w {
		return fmt.Sprintf("values differ: json %.300s, lensgate %.300s", w, g)
	}
	return ""
}

func nest(open, close string, n int, inner string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

// jsonRegressions are named receipts of each class where the reader once differed from
// Python's: nesting below Python's recursion limit, integers beyond 64 bits, integers of more
// than 4,300 digits.
var jsonRegressions = []struct{ name, doc string }{
	{"nested 200 deep", nest("[", "]", 200, "")},
	{"nested 990 deep", nest("[", "]", 990, "")},
	{"objects nested 500 deep", nest(`{"a":`, "}", 500, "1")},
	{"version nested 300 deep", `{"version": ` + nest("[", "]", 300, "1") + `}`},
	{"integer beyond 64 bits", `{"version": 18446744073709551617}`},
	{"negative integer beyond 64 bits", `[-9223372036854775809]`},
	{"integer of 4300 digits", "[" + strings.Repeat("9", 4300) + "]"},
	{"integer of 4301 digits", "[" + strings.Repeat("9", 4301) + "]"},
	{"negative integer of 4301 digits", "[-" + strings.Repeat("9", 4301) + "]"},
	{"float of 4301 digits", "[" + strings.Repeat("9", 4301) + ".5]"},
	{"float beyond range", "[1e400, -1e400, 1e-400]"},
	{"duplicate key", `{"a": 1, "a": 2}`},
	{"NaN", `[NaN]`},
	{"-Infinity", `[-Infinity]`},
	{"lone surrogate", `["\ud800"]`},
	{"surrogate pair", `["\ud83d\ude00"]`},
	{"leading zero", `[01]`},
	{"trailing comma", `[1,]`},
	{"raw tab in string", "[\"a\tb\"]"},
	{"escaped slash", `["\/"]`},
}

// genJSON builds a receipt-like document and sometimes mutates one character.
func genJSON(r *rand.Rand) string {
	values := []string{`1`, `-0`, `1.0`, `1e2`, `18446744073709551616`, `"passed"`, `"pending"`, `null`, `true`,
		`"\u2028<&>"`, `"\ud800"`, `[]`, `{}`, `"é"`, `1E+2`, `-1.5e-3`, `0.1`, `123456789012345678901234567890`}
	var b strings.Builder
	fmt.Fprintf(&b, `{"version": %s, "plan_digest": "%s", "results": [`, values[r.IntN(len(values))], strings.Repeat("a", 64))
	for i := range r.IntN(4) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"lens": "l%d", "outcome": %s, "summary": %s}`, i, values[r.IntN(len(values))], values[r.IntN(len(values))])
	}
	b.WriteString("]}")
	doc := b.String()
	if r.IntN(3) == 0 {
		depth := r.IntN(990)
		doc = `{"version": 1, "x": ` + nest("[", "]", depth, values[r.IntN(len(values))]) + `}`
	}
	if r.IntN(3) == 0 {
		const alphabet = "[]{},:\"\\ 0-.eE"
		i := r.IntN(len(doc))
		c := string(alphabet[r.IntN(len(alphabet))])
		doc = doc[:i] + c + doc[i+1:]
	}
	return doc
}

// TestReceiptJSONAgreesWithPython: on a seeded corpus, the strict reader accepts what Python's
// json accepts and decodes it to the same values.
func TestReceiptJSONAgreesWithPython(t *testing.T) {
	o := pyoracle.Start(t)
	var docs []string
	for _, tt := range jsonRegressions {
		if d := jsonDiff(t, o, tt.doc); d != "" {
			t.Errorf("%s: %s", tt.name, d)
		}
		docs = append(docs, tt.doc)
	}
	r := rand.New(rand.NewPCG(15, 2))
	for range 2000 {
		docs = append(docs, genJSON(r))
	}
	differ := 0
	for _, doc := range docs {
		if d := jsonDiff(t, o, doc); d != "" {
			differ++
			if differ <= 10 {
				t.Errorf("%.200q: %s", doc, d)
			}
		}
	}
	t.Logf("%d JSON documents compared with Python's json, %d disagreements", len(docs), differ)
}

// genPolicy writes a random YAGA policy, mostly valid, in one of the TOML layouts, with the
// text a digest is most easily got wrong on: non-ASCII, U+2028, <>&, control characters,
// Python-only whitespace and multi-line strings with either line ending.
func genPolicy(r *rand.Rand) string {
	texts := []string{`"Review it."`, `"line\nnext"`, `"tab\tand \"quote\" \\ <&>"`, `"\u2028\u2029 é 😀"`,
		`"\u001c blank?"`, `"\u0000"`, `"   "`, "\"\"\"\nmulti\r\nline\r\n\"\"\"", "'''\r\nliteral\\n'''", `"\u007f\u0085"`,
		`'single'`, `"\b\f\r"`, "\"\"\"a \\\r\n   b\"\"\""}
	names := []string{"security", "correctness", "docs", "a", "x-1", "Bad", "tests", "z9"}
	outcomes := []string{"", "review", "advisory", "block"}
	pubs := []string{"", "comment", "inline", "reaction", "review", "check", "email"}
	eol := "\n"
	if r.IntN(2) == 0 {
		eol = "\r\n"
	}
	n := 1 + r.IntN(4)
	var lenses []string
	var b strings.Builder
	b.WriteString("[agent-review]" + eol + "version = 1" + eol)
	if r.IntN(3) == 0 {
		b.WriteString(`aggregation = "any-required"` + eol)
	}
	var body strings.Builder
	layout := r.IntN(3)
	if layout == 1 {
		body.WriteString("agents = { ")
	}
	for i := range n {
		name := names[r.IntN(len(names))]
		lenses = append(lenses, name)
		fields := []string{`preset = "p"`, "instruction = " + texts[r.IntN(len(texts))]}
		if o := outcomes[r.IntN(len(outcomes))]; o != "" {
			fields = append(fields, `outcome = "`+o+`"`)
		}
		if p := pubs[r.IntN(len(pubs))]; p != "" {
			fields = append(fields, `publication = "`+p+`"`)
		}
		switch layout {
		case 0:
			body.WriteString(eol + "[agent-review.agents." + name + "]" + eol + strings.Join(fields, eol) + eol)
		case 1:
			if i > 0 {
				body.WriteString(", ")
			}
			body.WriteString(name + " = { " + strings.Join(fields, ", ") + " }")
		default:
			for _, f := range fields {
				body.WriteString("agents." + name + "." + f + eol)
			}
		}
	}
	if layout == 1 {
		body.WriteString(" }" + eol)
	}
	var req []string
	for _, l := range lenses {
		if r.IntN(2) == 0 {
			req = append(req, strconv.Quote(l))
		}
	}
	if len(req) == 0 {
		req = append(req, strconv.Quote(lenses[0]))
	}
	b.WriteString("required = [" + strings.Join(req, ", ") + "]" + eol)
	b.WriteString(body.String())
	return b.String()
}

// planDiff compares lensgate's decoded policy and plan_digest with the digest Python computes
// from tomllib's decoding of the same document.
func planDiff(t testing.TB, o *pyoracle.Oracle, file, doc string) string {
	want := o.TOML(t, doc, true, file == "pyproject.toml")
	pol, err := config.ParseYAGATOML(file, []byte(doc))
	var got string
	if err == nil {
		plan, err := NewPlan(pol)
		if err != nil {
			return "plan: " + err.Error()
		}
		got = plan.Digest()
	}
	var w string
	if want.OK && want.Digest != nil {
		w = *want.Digest
	}
	if got != w {
		return fmt.Sprintf("digest: python %q, lensgate %q (%v)", w, got, err)
	}
	return ""
}

// TestPlanDigestAgreesWithPython: for generated policies in every layout and both line
// endings, lensgate accepts exactly the policies Python's decoding makes valid and gives them
// the digest Python computes.
func TestPlanDigestAgreesWithPython(t *testing.T) {
	o := pyoracle.Start(t)
	r := rand.New(rand.NewPCG(15, 3))
	valid, differ, n := 0, 0, 3000
	for range n {
		doc := genPolicy(r)
		if d := planDiff(t, o, "policy.toml", doc); d != "" {
			differ++
			if differ <= 10 {
				t.Errorf("%q: %s", doc, d)
			}
		}
		if _, err := config.ParseYAGATOML("policy.toml", []byte(doc)); err == nil {
			valid++
		}
	}
	// The same policy with Windows line endings: one digest.
	unix := "[agent-review]\nversion = 1\nrequired = [\"a\"]\n[agent-review.agents.a]\npreset = \"p\"\ninstruction = \"\"\"\nline one\nline two\n\"\"\"\n"
	for _, doc := range []string{unix, strings.ReplaceAll(unix, "\n", "\r\n")} {
		if d := planDiff(t, o, "policy.toml", doc); d != "" {
			t.Errorf("crlf: %s", d)
		}
	}
	t.Logf("%d policies compared with Python (%d valid), %d disagreements", n+2, valid, differ)
}

// FuzzPlanDigestAgainstPython: any policy document decodes to the digest Python gives it.
func FuzzPlanDigestAgainstPython(f *testing.F) {
	r := rand.New(rand.NewPCG(15, 4))
	for range 100 {
		f.Add(genPolicy(r))
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !utf8.ValidString(doc) || len(doc) > 1<<16 {
			return
		}
		o := pyoracle.Start(t)
		if d := planDiff(t, o, "policy.toml", doc); d != "" {
			t.Fatalf("%q: %s", doc, d)
		}
	})
}

// FuzzReceiptJSONAgainstPython: any receipt document below Python's nesting limit reads as
// json.loads reads it.
func FuzzReceiptJSONAgainstPython(f *testing.F) {
	for _, tt := range jsonRegressions {
		f.Add(tt.doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !utf8.ValidString(doc) || len(doc) > 1<<16 || strings.Count(doc, "[")+strings.Count(doc, "{") > 900 {
			return
		}
		o := pyoracle.Start(t)
		if d := jsonDiff(t, o, doc); d != "" {
			t.Fatalf("%q: %s", doc, d)
		}
	})
}
