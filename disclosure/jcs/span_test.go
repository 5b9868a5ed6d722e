package jcs

import (
	"bytes"
	"testing"
)

// Every member span of a canonical document is the canonical form of that member.
func TestSpansAreCanonicalForms(t *testing.T) {
	doc := []byte(`{"a":[1,"x\"]}",{"b":{"c":[]}},true,null,-0.5],"b\\":"\u001f","e":{},"f":[],"z":{"y":[{"q":"}"}]}}`)
	v, canonical, err := ParseCanonical(doc)
	if err != nil || !canonical {
		t.Fatalf("test document: canonical=%v %v", canonical, err)
	}
	m := v.(map[string]any)
	for _, k := range []string{"a", "e", "f", "z"} {
		want, err := Canonical(m[k])
		if err != nil {
			t.Fatal(err)
		}
		if got := Member(doc, k); !bytes.Equal(got, want) {
			t.Errorf("member %s: %s, want %s", k, got, want)
		}
	}
	if Member(doc, "missing") != nil || Member(doc, "b") != nil || Member([]byte(`[1]`), "a") != nil {
		t.Error("found a member that is not there")
	}
	els, ok := Elements(Member(doc, "a"), nil)
	if !ok || len(els) != 6 {
		t.Fatalf("elements: %q %v", els, ok)
	}
	for i, e := range els {
		want, _ := Canonical(m["a"].([]any)[i])
		if !bytes.Equal(e, want) {
			t.Errorf("element %d: %s, want %s", i, e, want)
		}
	}
	if els, ok := Elements(Member(doc, "f"), nil); !ok || len(els) != 0 {
		t.Errorf("empty array: %q %v", els, ok)
	}
	if _, ok := Elements(Member(doc, "e"), nil); ok {
		t.Error("an object read as an array")
	}
	for _, bad := range []string{"", "{", `{"a`, `{"a":`, `{"a":[`, `[1,`, `["`} {
		Member([]byte(bad), "a")
		Elements([]byte(bad), nil)
	}
}

func FuzzSpans(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"c"}],"d":"e"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, canonical, err := ParseCanonical(data)
		if err != nil || !canonical {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, val := range m {
			want, err := Canonical(val)
			if err != nil {
				t.Fatal(err)
			}
			if got := Member(data, k); !bytes.Equal(got, want) {
				t.Fatalf("member %q: %s, want %s", k, got, want)
			}
			if arr, ok := val.([]any); ok {
				els, ok := Elements(Member(data, k), nil)
				if !ok || len(els) != len(arr) {
					t.Fatalf("elements of %q: %d, want %d", k, len(els), len(arr))
				}
			}
		}
	})
}

func TestIndexQuoteOrEscapeMatchesBytewiseScan(t *testing.T) {
	naive := func(b []byte) int {
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 {
				return i
			}
		}
		return -1
	}
	specials := []byte{'"', '\\', 0, 0x1f, '\n'}
	plain := []byte{' ', '!', '#', '[', ']', 0x7f, 0x80, 0xff, 0xc3, 'A', '0', '+', '/', '='}
	for n := 0; n < 40; n++ {
		for pos := -1; pos < n; pos++ {
			for si, sp := range specials {
				b := make([]byte, n)
				for i := range b {
					b[i] = plain[(i+n+si)%len(plain)]
				}
				if pos >= 0 {
					b[pos] = sp
				}
				if got, want := indexQuoteOrEscape(b), naive(b); got != want {
					t.Fatalf("%q: %d, want %d", b, got, want)
				}
			}
		}
	}
}

func FuzzIndexQuoteOrEscape(f *testing.F) {
	f.Add([]byte("abcdefgh\"\x00\\ijklmnop"))
	f.Add([]byte("\x21\x23\x01\x22\x5c\x5d\x1f\x20"))
	f.Fuzz(func(t *testing.T, b []byte) {
		want := -1
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 {
				want = i
				break
			}
		}
		if got := indexQuoteOrEscape(b); got != want {
			t.Fatalf("%q: %d, want %d", b, got, want)
		}
	})
}

// MemberFrom reads the same nested members and elements as Member without bounding the value.
func FuzzMemberFrom(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,{"c":"}"}],"d":{}},"e":"f"}`), "a", "b")
	f.Add([]byte(`{"a":{"b\"":[]},"b":1}`), "a", "b")
	f.Fuzz(func(t *testing.T, data []byte, k1, k2 string) {
		if _, canonical, err := ParseCanonical(data); err != nil || !canonical {
			return
		}
		from, whole := MemberFrom(data, k1), Member(data, k1)
		if (from == nil) != (whole == nil) || !bytes.HasPrefix(from, whole) {
			t.Fatalf("MemberFrom %q, Member %q", from, whole)
		}
		if a, b := Member(from, k2), Member(whole, k2); !bytes.Equal(a, b) {
			t.Fatalf("nested member %q, want %q", a, b)
		}
		a, aok := Elements(from, nil)
		b, bok := Elements(whole, nil)
		if aok != bok || len(a) != len(b) {
			t.Fatalf("elements %q %v, want %q %v", a, aok, b, bok)
		}
		for i := range a {
			if !bytes.Equal(a[i], b[i]) {
				t.Fatalf("element %d: %q, want %q", i, a[i], b[i])
			}
		}
	})
}
