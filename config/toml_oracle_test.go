package config

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lensgate/lensgate/config/pyoracle"
)

// tomlTag writes a decoded value in the oracle's tagged form.
func tomlTag(v *tomlValue) any {
	switch v.kind {
	case tomlString:
		return []any{"str", v.str}
	case tomlInteger:
		return []any{"int", pyoracle.IntHex(v.num)}
	case tomlFloat:
		return []any{"float", pyoracle.FloatRepr(v.f)}
	case tomlBool:
		return []any{"bool", v.b}
	case tomlDatetime:
		return []any{"datetime", v.str}
	case tomlDate:
		return []any{"date", v.str}
	case tomlTime:
		return []any{"time", v.str}
	case tomlArray:
		items := []any{}
		for _, it := range v.arr {
			items = append(items, tomlTag(it))
		}
		return []any{"array", items}
	}
	pairs := []any{}
	for _, k := range v.keys {
		pairs = append(pairs, []any{k, tomlTag(v.vals[k])})
	}
	return []any{"table", pairs}
}

// canonJSON re-encodes a JSON document so that two equal trees compare equal as bytes.
func canonJSON(t testing.TB, raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// tomlDiff compares lensgate's reading of doc with tomllib's and describes any disagreement:
// accepted by one only, a different decoded value, or a different error message.
func tomlDiff(t testing.TB, o *pyoracle.Oracle, doc string) string {
	want := o.TOML(t, doc, false, false)
	got, err := parseTOML(doc)
	switch {
	case want.OK && err != nil:
		return "tomllib accepts, lensgate rejects: " + err.Error()
	case !want.OK && err == nil:
		return "tomllib rejects (" + want.Error + "), lensgate accepts"
	case !want.OK:
		te := err.(*TOMLError)
		if te.IntegerLimit != (want.Class == "value") || te.Message != want.Error {
			return "messages differ: tomllib " + strconv.Quote(want.Error) + ", lensgate " + strconv.Quote(te.Message)
		}
		return ""
	}
	g, _ := json.Marshal(tomlTag(got))
	if w := canonJSON(t, want.Value); canonJSON(t, g) != w {
		return "values differ: tomllib " + w + ", lensgate " + string(g)
	}
	return ""
}

// tomlRegressions are named documents of each class where a TOML 1.1 reader or a reader that
// keeps CR LF differs from tomllib.
var tomlRegressions = []struct{ name, doc string }{
	{"crlf in multi-line basic string", "a = \"\"\"x\r\ny\"\"\"\r\n"},
	{"crlf in multi-line literal string", "a = '''x\r\ny'''\r\n"},
	{"crlf after opening delimiter", "a = '''\r\nx'''\r\n"},
	{"crlf line-ending backslash", "a = \"\"\"x\\\r\n   y\"\"\"\r\n"},
	{"escaped crlf stays", "a = \"x\\r\\ny\"\n"},
	{"escape \\e", "a = \"\\e\"\n"},
	{"escape \\x", "a = \"\\x41\"\n"},
	{"escape \\x in multi-line", "a = \"\"\"\\x41\"\"\"\n"},
	{"newline in inline table", "a = {b = 1,\n c = 2}\n"},
	{"newline before inline close", "a = {b = 1\n}\n"},
	{"trailing comma in inline table", "a = {b = 1,}\n"},
	{"comment in inline table", "a = {b = 1, # c\n}\n"},
	{"time without seconds", "a = 07:32\n"},
	{"datetime without seconds", "a = 1979-05-27T07:32Z\n"},
	{"local datetime without seconds", "a = 1979-05-27 07:32\n"},
	{"inline table extended by a header", "a = {b = 1}\n[a.c]\nd = 2\n"},
	{"inline table extended by a sub-header", "[x]\na = {b = 1}\n[x.a]\nd = 2\n"},
	{"inline table extended by a dotted key", "a = {b = 1}\na.c = 2\n"},
	{"table redefined by a dotted key", "[a.b]\nc = 1\n[a]\nb.d = 2\n"},
	{"dotted table reopened by a header", "[x]\na.b = 1\n[x.a]\nc = 2\n"},
	{"inline dotted key into a closed inline table", "a = {b = {}, b.c = 1}\n"},
	{"second leading BOM", "\ufeffa = 1\n"},
	{"integer beyond 64 bits", "a = 99999999999999999999\n"},
	{"negative integer beyond 64 bits", "a = -9223372036854775809\n"},
	{"hex integer beyond 64 bits", "a = 0xffffffffffffffffffff\n"},
	{"integer of 4300 digits", "a = " + strings.Repeat("7", 4300) + "\n"},
	{"integer of 4301 digits", "a = " + strings.Repeat("7", 4301) + "\n"},
	{"integer of 4301 digits with underscores", "a = -" + strings.Repeat("1_", 4300) + "1\n"},
	{"year zero", "a = 0000-01-01\n"},
	{"offset of 24 hours", "a = 1979-05-27T07:32:00+24:00\n"},
	{"negative zero offset", "a = 1979-05-27T07:32:00-00:00\n"},
	{"fraction beyond microseconds", "a = 07:32:00.1234567\n"},
	{"february 29 of a common year", "a = 2023-02-29\n"},
	{"bare carriage return", "a = 1\r"},
	{"carriage return in a comment", "a = 1 # x\ry\n"},
	{"delete in a comment", "a = 1 # x\x7fy\n"},
	{"six closing quotes", "a = \"\"\"a\"\"\"\"\"\"\n"},
	{"lone surrogate escape", "a = \"\\uD800\"\n"},
	{"array of tables after an inline array", "a = [{b = 1}]\n[[a]]\n"},
	{"header after array of tables", "[[a]]\n[a]\n"},
	{"unicode whitespace", "a =\u00a01\n"},
	{"float with underscores", "a = 1_000.5e1_0\n"},
	{"float overflow", "a = 1e400\n"},
}

// TestTOMLRegressions: each named class reads exactly as tomllib reads it, value and message.
func TestTOMLRegressions(t *testing.T) {
	o := pyoracle.Start(t)
	for _, tt := range tomlRegressions {
		if d := tomlDiff(t, o, tt.doc); d != "" {
			t.Errorf("%s: %s", tt.name, d)
		}
	}
}

// tomlFragments are the pieces the generator joins into documents: statements, values and
// separators, including every TOML 1.1 extension and every place CR LF can stand.
var (
	tomlKeys   = []string{"a", "b", "a.b", "\"q k\"", "'lit'", "a . c", "x.y.z", "agents", "1", "-_", "\"\"", "a.\"b.c\""}
	tomlValues = []string{
		"1", "-0", "+7", "0x1F", "0o17", "0b101", "1_000", "99999999999999999999", "-9223372036854775808",
		"0xffffffffffffffffffffffff", "1.5", "-0.0", "1e16", "1.0e-5", "6.626e-34", "inf", "-nan", "1e400", "01", "1__0", "1.e5",
		"true", "false", "\"s\"", "\"\\u00e9\\U0001F600\"", "\"\\e\"", "\"\\x41\"", "\"tab\\there\"", "'lit\\eral'",
		"\"\"\"\nml\r\nbasic\"\"\"", "'''\r\nml\r\nlit'''", "\"\"\"a\\\r\n  b\"\"\"", "\"\"\"q\"\"\"\"", "''''''",
		"1979-05-27", "1979-05-27T07:32:00Z", "1979-05-27 07:32:00.999999999-07:00", "1979-05-27t07:32:00z",
		"07:32:00", "07:32", "1979-05-27T07:32", "0000-01-01", "1979-02-30", "1979-05-27T07:32:00+24:00",
		"[]", "[1, 2,]", "[\n1,\r\n# c\n2\n]", "[[1], [\"a\", 1.5]]", "{}", "{a = 1}", "{a = 1,}", "{a = 1,\nb = 2}",
		"{a.b = 1, a.c = 2}", "{a = {}, a.b = 1}", "{ x = [1], y = {z = true} }",
	}
	tomlSeps = []string{"\n", "\r\n", "\n\n", " # comment\n", "\r", "\t\n"}
)

// genTOML builds one document from fragments: headers, key/value pairs and comments with
// random separators, and sometimes a BOM or a mutated byte.
func genTOML(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(20) == 0 {
		b.WriteString("\ufeff")
	}
	for range 1 + r.IntN(6) {
		switch r.IntN(6) {
		case 0:
			b.WriteString("[" + tomlKeys[r.IntN(len(tomlKeys))] + "]")
		case 1:
			b.WriteString("[[" + tomlKeys[r.IntN(len(tomlKeys))] + "]]")
		case 2:
			b.WriteString("# note")
		default:
			b.WriteString(tomlKeys[r.IntN(len(tomlKeys))] + " = " + tomlValues[r.IntN(len(tomlValues))])
		}
		b.WriteString(tomlSeps[r.IntN(len(tomlSeps))])
	}
	doc := b.String()
	if r.IntN(4) == 0 && len(doc) > 0 {
		// One random edit with a character TOML gives meaning to.
		const alphabet = "[]{}=,.\"'#\\\n\r\t 0:-_eTZx"
		i := r.IntN(len(doc))
		for !utf8.RuneStart(doc[i]) {
			i--
		}
		c := string(alphabet[r.IntN(len(alphabet))])
		if r.IntN(2) == 0 {
			doc = doc[:i] + c + doc[i:]
		} else {
			_, size := utf8.DecodeRuneInString(doc[i:])
			doc = doc[:i] + c + doc[i+size:]
		}
	}
	return doc
}

// tomlCorpus is the seeded corpus: the regression cases, every YAGA test policy, and generated
// documents from a fixed seed.
func tomlCorpus(t testing.TB, n int) []string {
	var docs []string
	for _, tt := range tomlRegressions {
		docs = append(docs, tt.doc)
	}
	entries, _ := os.ReadDir("testdata/yaga")
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".toml") {
			doc := string(readTestdata(t, "yaga", e.Name()))
			docs = append(docs, doc, strings.ReplaceAll(doc, "\n", "\r\n"))
		}
	}
	r := rand.New(rand.NewPCG(15, 1))
	for range n {
		docs = append(docs, genTOML(r))
	}
	return docs
}

// TestTOMLAgreesWithTomllib: on the seeded corpus, lensgate accepts exactly what tomllib
// accepts, decodes it to the same values in the same order, and rejects the rest with
// tomllib's message.
func TestTOMLAgreesWithTomllib(t *testing.T) {
	o := pyoracle.Start(t)
	docs := tomlCorpus(t, 4000)
	if out := os.Getenv("LENSGATE_TOML_CORPUS_OUT"); out != "" {
		b, _ := json.Marshal(docs)
		_ = os.WriteFile(out, b, 0o600)
	}
	differ, accepted := 0, 0
	for _, doc := range docs {
		if d := tomlDiff(t, o, doc); d != "" {
			differ++
			if differ <= 20 {
				t.Errorf("%q: %s", doc, d)
			}
		}
		if _, err := parseTOML(doc); err == nil {
			accepted++
		}
	}
	t.Logf("%d documents compared with tomllib (%d accepted), %d disagreements", len(docs), accepted, differ)
}

// FuzzTOMLAgainstTomllib: any valid UTF-8 document reads as tomllib reads it.
func FuzzTOMLAgainstTomllib(f *testing.F) {
	for _, doc := range tomlCorpus(f, 200) {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !utf8.ValidString(doc) || len(doc) > 1<<16 {
			return
		}
		o := pyoracle.Start(t)
		if d := tomlDiff(t, o, doc); d != "" {
			t.Fatalf("%q: %s", doc, d)
		}
	})
}
