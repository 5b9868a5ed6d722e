package jcs

import (
	"strings"
	"testing"
)

func TestCanonicalForm(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"sorts keys and drops whitespace", `{ "b": 1, "a": [true, false, null] }`, `{"a":[true,false,null],"b":1}`},
		{"sorts by UTF-16 code units", `{"\ud83d\ude00":1,"\ufb01":2,"a":3}`, "{\"a\":3,\"\U0001F600\":1,\"\ufb01\":2}"},
		{"escapes only what RFC 8785 escapes", `"<>&\u2028\u2029\u00e9\"\\\/\b\f\n\r\t\u0001\u001f\u007f"`, "\"<>&\u2028\u2029\u00e9\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\""},
		{"integers stay exact", `[0,-0,9007199254740991,-9007199254740991]`, `[0,0,9007199254740991,-9007199254740991]`},
		{"floats use ECMAScript form", `[1.0,1e2,1.5e-7,0.000001,1e21,1.2345678901234568e20,-0.0,5e-324]`, `[1,100,1.5e-7,0.000001,1e+21,123456789012345680000,0,5e-324]`},
		{"nested", `{"z":{"y":[{"b":"x","a":{}}]},"a":[]}`, `{"a":[],"z":{"y":[{"a":{},"b":"x"}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Transform([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestStrictParseRefuses(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	tests := []struct{ name, in string }{
		{"duplicate key", `{"a":1,"a":1}`},
		{"duplicate key after escape", `{"a":1,"\u0061":2}`},
		{"duplicate key after keys out of order", `{"b":1,"a":2,"b":3}`},
		{"duplicate key after ascending keys", `{"a":1,"b":2,"c":3,"b":4}`},
		{"duplicate key in a nested object", `{"a":{"x":1,"y":2},"b":{"x":1,"x":2}}`},
		{"duplicate key around a nested object", `{"a":{"z":1},"b":1,"a":1}`},
		{"nesting deeper than 64", deep},
		{"lone high surrogate", `"\ud800"`},
		{"lone low surrogate", `"\udc00x"`},
		{"invalid UTF-8", "\"\xff\""},
		{"NaN", `NaN`},
		{"Infinity", `[Infinity]`},
		{"leading zero", `01`},
		{"trailing comma", `[1,]`},
		{"trailing data", `{} {}`},
		{"raw control character", "\"a\tb\""},
		{"bad escape", `"\x"`},
		{"empty", ``},
		{"huge integer", strings.Repeat("9", 2468)},
		{"byte order mark", "\ufeff{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v, err := Parse([]byte(tt.in)); err == nil {
				t.Errorf("accepted %q as %#v", tt.in, v)
			}
		})
	}
	if _, err := Parse([]byte(`{"a":1,"a":2}`)); err == nil || !strings.Contains(err.Error(), ErrDuplicateKey.Error()) {
		t.Errorf("duplicate key error does not say so: %v", err)
	}
}

// Members of nested objects share the parser's member stack; each object must keep its own.
func TestNestedObjectsKeepTheirMembers(t *testing.T) {
	in := `{"a":{"b":{"c":1},"d":[{"e":2,"f":3}]},"g":{"i":4,"h":5},"j":6}`
	v, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"b":{"c":1},"d":[{"e":2,"f":3}]},"g":{"h":5,"i":4},"j":6}`
	if string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}

func TestDepthLimitIsInclusive(t *testing.T) {
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Parse([]byte(ok)); err != nil {
		t.Fatalf("depth %d refused: %v", MaxDepth, err)
	}
}

func TestNodeLimit(t *testing.T) {
	in := "[" + strings.Repeat("0,", MaxNodes) + "0]"
	if _, err := Parse([]byte(in)); err == nil {
		t.Fatal("more than MaxNodes values accepted")
	}
}

func TestCanonicalRefusesUnsafeNumbers(t *testing.T) {
	for _, in := range []string{`9007199254740992`, `-9007199254740992`, `1e400`, `123456789012345678901234567890`} {
		v, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("%s: parse: %v", in, err)
		}
		if got, err := Canonical(v); err == nil {
			t.Errorf("%s canonicalized to %s", in, got)
		}
	}
}

func TestParseCanonicalVerdict(t *testing.T) {
	tests := map[string]bool{
		`{"a":1,"b":[true,null,"x"]}`:     true,
		`{"b":1,"a":2}`:                   false,
		`{"a":1 }`:                        false,
		` {}`:                             false,
		`"\u0001\n"`:                      true,
		`"\u000A"`:                        false,
		`"\u001F"`:                        false,
		`"\u0041"`:                        false,
		`"\/"`:                            false,
		`"\ud83d\ude00"`:                  false,
		"\"\U0001F600\"":                  true,
		`1.0`:                             false,
		`1.5`:                             true,
		`-0`:                              false,
		`1e21`:                            false,
		`1e+21`:                           true,
		`9007199254740992`:                false,
		"{\"\ufb01\":1,\"\U0001F600\":2}": false,
		"{\"\U0001F600\":2,\"\ufb01\":1}": true,
	}
	for in, want := range tests {
		_, got, err := ParseCanonical([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got != want {
			t.Errorf("%s: canonical=%v, want %v", in, got, want)
		}
	}
}

func TestNumberKinds(t *testing.T) {
	for in, isInt := range map[Number]bool{"1": true, "-3": true, "1.0": false, "1e2": false, "2E-1": false} {
		if in.IsInt() != isInt {
			t.Errorf("%s IsInt = %v", in, !isInt)
		}
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x\u0000"],"b":{"c":null}}`, `"\ud83d\ude00"`, `[1e400]`, `{"a":1,"a":2}`, `-0.0`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, canonical, err := ParseCanonical(data)
		sameUnderObjects(t, data, v, canonical, err)
		if err != nil {
			return
		}
		c, err := Canonical(v)
		// The streaming verdict must agree with re-serializing.
		if want := err == nil && string(c) == string(data); canonical != want {
			t.Fatalf("ParseCanonical says %v, re-serializing says %v: %q", canonical, want, data)
		}
		if err != nil {
			return
		}
		// Canonical output parses and is a fixed point.
		v2, err := Parse(c)
		if err != nil {
			t.Fatalf("canonical output does not parse: %v\n%s", err, c)
		}
		c2, err := Canonical(v2)
		if err != nil {
			// A float of 2^53 or more is written without a fraction, so it reads back as an
			// integer outside ±(2^53-1), which no canonical payload may hold (as in the
			// reference implementation).
			if !strings.Contains(err.Error(), "outside") {
				t.Fatalf("canonical output cannot be canonicalized again: %v\n%s", err, c)
			}
			return
		}
		if string(c2) != string(c) {
			t.Fatalf("canonical form is not stable:\n%s\n%s", c, c2)
		}
	})
}

// ParseWith keeps Parse's grammar and changes only the limits and the lone-surrogate rule.
func TestParseWithOptions(t *testing.T) {
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if _, err := Parse([]byte(deep)); err == nil {
		t.Fatal("Parse took nesting 100 deep")
	}
	if _, err := ParseWith([]byte(deep), Options{MaxDepth: 1000}); err != nil {
		t.Fatalf("MaxDepth 1000: %v", err)
	}
	long := "[" + strings.Repeat("9", 4300) + "]"
	if _, err := Parse([]byte(long)); err == nil {
		t.Fatal("Parse took a 4,300-digit integer")
	}
	if _, err := ParseWith([]byte(long), Options{MaxIntDigits: 4300}); err != nil {
		t.Fatalf("MaxIntDigits 4300: %v", err)
	}
	if _, err := ParseWith([]byte("[9"+long[1:]), Options{MaxIntDigits: 4300}); err == nil {
		t.Fatal("MaxIntDigits 4300 took 4,301 digits")
	}
	many := "[" + strings.Repeat("0,", MaxNodes) + "0]"
	if _, err := Parse([]byte(many)); err == nil {
		t.Fatal("Parse took more than MaxNodes values")
	}
	if _, err := ParseWith([]byte(many), Options{MaxNodes: -1}); err != nil {
		t.Fatalf("MaxNodes -1: %v", err)
	}
	for _, doc := range []string{`["\ud800"]`, `["\udc00"]`, `["a\ud800\u0041"]`} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Fatalf("Parse took the lone surrogate of %s", doc)
		}
	}
	cases := []struct {
		doc  string
		want any
	}{
		{`["\ud800"]`, BrokenString("\ufffd")},
		{`["a\ud800\u0041"]`, BrokenString("a\ufffdA")},
		{`["\ud800\ud83d\ude00"]`, BrokenString("\ufffd😀")},
		{`["\ud83d\ude00"]`, "😀"},
	}
	for _, c := range cases {
		v, err := ParseWith([]byte(c.doc), Options{LoneSurrogates: true})
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		if got := v.([]any)[0]; got != c.want {
			t.Fatalf("%s: %#v, want %#v", c.doc, got, c.want)
		}
	}
	// A key with a lone surrogate is replaced and the value after it is an ordinary string.
	v, err := ParseWith([]byte(`{"\ud800":"x"}`), Options{LoneSurrogates: true})
	if err != nil || v.(map[string]any)["\ufffd"] != "x" {
		t.Fatalf("key with a lone surrogate: %#v, %v", v, err)
	}
}

// sameUnderObjects checks that Options.Objects changes only the type of the objects: the same
// error, the same canonical verdict and the same canonical form.
func sameUnderObjects(t *testing.T, data []byte, v any, canonical bool, err error) {
	t.Helper()
	ov, ocanonical, oerr := ParseCanonicalWith(data, Options{Objects: true})
	if (err == nil) != (oerr == nil) || err != nil && err.Error() != oerr.Error() {
		t.Fatalf("Objects changes the error of %q: %v / %v", data, err, oerr)
	}
	if err != nil {
		return
	}
	if ocanonical != canonical {
		t.Fatalf("Objects changes the canonical verdict of %q", data)
	}
	c, cerr := Canonical(v)
	oc, ocerr := Canonical(ov)
	if (cerr == nil) != (ocerr == nil) || string(c) != string(oc) {
		t.Fatalf("Objects changes the canonical form of %q: %s / %s (%v / %v)", data, c, oc, cerr, ocerr)
	}
}

// Under Options.Objects an object is its members in document order, with the same refusals.
func TestObjects(t *testing.T) {
	v, canonical, err := ParseCanonicalWith([]byte(`{"b":{},"a":[{"x":1}],"c":"\u00e9"}`), Options{Objects: true})
	if err != nil || canonical {
		t.Fatalf("%v, canonical %v", err, canonical)
	}
	o := v.(Object)
	if len(o) != 3 || o[0].Key != "b" || o[1].Key != "a" || o[2].Key != "c" {
		t.Fatalf("members %#v", o)
	}
	if x, ok := o.Get("a"); !ok || x.([]any)[0].(Object)[0] != (Field{"x", Number("1")}) {
		t.Fatalf("Get a: %#v %v", x, ok)
	}
	if e, ok := o.Get("b"); !ok || e.(Object) == nil || len(e.(Object)) != 0 {
		t.Fatalf("Get b: %#v %v", e, ok)
	}
	if _, ok := o.Get("d"); ok {
		t.Fatal("Get found a member that is not there")
	}
	if c, err := Canonical(o); err != nil || string(c) != `{"a":[{"x":1}],"b":{},"c":"é"}` {
		t.Fatalf("canonical %s %v", c, err)
	}
	for _, doc := range []string{`{"a":1,"a":2}`, `{"b":1,"a":1,"b":2}`, `{"a":1,"b":{"c":1,"c":2}}`, `{"b":1,"a":1,"a":2}`} {
		_, _, err := ParseCanonicalWith([]byte(doc), Options{Objects: true})
		_, want := Parse([]byte(doc))
		if err == nil || want == nil || err.Error() != want.Error() || !strings.Contains(err.Error(), ErrDuplicateKey.Error()) {
			t.Fatalf("%s: %v, want %v", doc, err, want)
		}
	}
	if _, err := Canonical(Object{{"a", true}, {"a", false}}); err == nil {
		t.Fatal("an Object that repeats a key has a canonical form")
	}
}

// Arrays and Objects share slabs; appending to one leaves the next one as it was.
func TestContainersDoNotShareCapacity(t *testing.T) {
	v, _, err := ParseCanonicalWith([]byte(`[[1],[2],{"a":1},{"b":2}]`), Options{Objects: true})
	if err != nil {
		t.Fatal(err)
	}
	a := v.([]any)
	_ = append(a[0].([]any), "x")
	_ = append(a[2].(Object), Field{"z", true})
	if c, err := Canonical(a); err != nil || string(c) != `[[1],[2],{"a":1},{"b":2}]` {
		t.Fatalf("%s %v", c, err)
	}
}

// Under Options.Objects every refusal stays the same error at the same offset, and every
// non-canonical form is still found.
func TestObjectsRefuseTheSame(t *testing.T) {
	deep := strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth)
	deeper := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	for _, in := range []string{
		`{"a":1,"a":1}`, `{"a":1,"\u0061":2}`, `{"b":1,"a":2,"b":3}`, `{"a":1,"b":2,"c":3,"b":4}`,
		`{"a":{"x":1,"y":2},"b":{"x":1,"x":2}}`, `{"a":{"z":1},"b":1,"a":1}`, deep, deeper,
		`{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":NaN}`, `{"a":01}`, `{"a":1,}`, `{"a":1} {}`,
		"{\"a\":\"a\tb\"}", `{"a":"\x"}`, `{"a":` + strings.Repeat("9", 2468) + `}`, "\ufeff{}",
		`{"a":` + strings.Repeat("9", 20) + `}`, `{"a":1.0}`, `{"a":1e2}`, `{"a":-0}`, `{ "a":1}`,
		`{"b":1,"a":2}`, `{"a":"\/"}`, `{"a":"\u00E9"}`, `{"a":"\u0041"}`, `{"\ud83d\ude00":1,"\uffff":2}`,
		`{"\uffff":1,"\ud83d\ude00":2}`, `{"a":[{"b":{}},[],{"c":[1,{"d":null}]}]}`, `{}`, `[]`, `"x"`,
	} {
		v, canonical, err := ParseCanonical([]byte(in))
		sameUnderObjects(t, []byte(in), v, canonical, err)
	}
}
