package jcs

import (
	"reflect"
	"strconv"
	"testing"
)

// readAny reads any value with a Reader, the way a typed decoder would, building the same
// tree Parse builds. Keys must rise in RFC 8785 order.
func readAny(r *Reader) any {
	switch r.Peek() {
	case '{':
		r.Enter('{')
		m := map[string]any{}
		prev := ""
		for i := 0; r.Next('}', i); i++ {
			k := r.Key()
			if r.Failed() || (i > 0 && CompareKeys(prev, k) >= 0) {
				r.Fail()
				return nil
			}
			prev = k
			m[k] = readAny(r)
		}
		return m
	case '[':
		r.Enter('[')
		a := []any{}
		for i := 0; r.Next(']', i); i++ {
			a = append(a, readAny(r))
		}
		return a
	case '"':
		s, _ := r.Str()
		return s
	case 't', 'f':
		b, _ := r.Bool()
		return b
	case 'n':
		r.Null()
		return nil
	default:
		n, _ := r.Int()
		return Number(strconv.FormatInt(n, 10))
	}
}

func checkReader(t *testing.T, data []byte) {
	for _, spaces := range []bool{false, true} {
		r := NewReader(data, spaces)
		if !spaces {
			r.ShareStrings()
		}
		got := readAny(r)
		if !r.End() {
			continue
		}
		want, canonical, err := ParseCanonical(data)
		if err != nil {
			t.Fatalf("spaces=%v: the reader took %q, which Parse refuses: %v", spaces, data, err)
		}
		if !spaces && !canonical {
			t.Fatalf("the reader took %q as canonical, ParseCanonical does not", data)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("spaces=%v: %q reads as %#v, Parse gives %#v", spaces, data, got, want)
		}
	}
}

func TestReaderAgreesWithParse(t *testing.T) {
	for _, c := range []string{
		`{}`, `[]`, `{"a":[1,-2,0,"x",true,false,null,{}]}`, `{"a":1,"b":2}`, `{"b":1,"a":2}`,
		`{"a":1,"a":2}`, `"\u0000\u001f\b\f\n\r\t\"\\"`, `"\u0041"`, `"\/"`, `"\u001F"`, `-0`, `01`,
		`1.0`, `1e3`, `9007199254740991`, `9007199254740992`, `-9007199254740991`, ` {} `, "{\n\"a\" : [ 1 , 2 ]\n}",
		`{"a":1,}`, `[1,]`, `[,1]`, `{"a"}`, `nul`, `nullx`, `"\ud83d\ude00"`, "\"\xff\"", `"é€"`, `[[[[]]]]`,
		`tru`, `"abc`, `"\u00`, `{"a":1}x`, `"` + "\x01" + `"`,
	} {
		checkReader(t, []byte(c))
	}
	deep := make([]byte, 0, 200)
	for i := 0; i < 70; i++ {
		deep = append(deep, '[')
	}
	for i := 0; i < 70; i++ {
		deep = append(deep, ']')
	}
	checkReader(t, deep)
	for _, c := range []string{`{"a":[1,-2,0,"x",true,false,null,{}]}`, `"\u0000\u001f\b\f\n\r\t\"\\"`, `"é€"`, `9007199254740991`} {
		if r := NewReader([]byte(c), false); readAny(r) == nil && c[0] != 'n' || !r.End() {
			t.Errorf("the reader refused canonical %s", c)
		}
	}
	if r := NewReader(deep, false); readAny(r) != nil && r.End() {
		t.Error("the reader took nesting deeper than MaxDepth")
	}
}

// FuzzReader: whatever a Reader reads, Parse reads with the same values, and without spaces
// ParseCanonical finds it canonical.
func FuzzReader(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2,"x\n",true,null,{}],"b":{"c":"\u0001"}}`, ` [ 1 , "é" ] `, `"\u001f"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkReader(t, data) })
}
