package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// The oracle is encoding/json itself: the document decoded into any with UseNumber (maps give
// exact keys and last-wins), then walked key by key.

func oracleDecode(doc []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func oracleWalk(root any, path string) (any, bool) {
	cur := root
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// topIsObject reports whether the first non-space byte opens an object.
func topIsObject(doc []byte) bool {
	t := bytes.TrimLeft(doc, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// compareOracle checks that got is the oracle's value want (found says the path exists).
func compareOracle(got Value, want any, found bool) error {
	if !found {
		if got.Kind != Missing || got.Raw != nil {
			return fmt.Errorf("got %s %q, want missing", got.Kind, got.Raw)
		}
		return checkConversions(got)
	}
	var kind Kind
	switch w := want.(type) {
	case nil:
		kind = Null
	case bool:
		kind = Bool
		if b, err := got.Bool(); err != nil || b != w {
			return fmt.Errorf("Bool() = %v, %v; want %v", b, err, w)
		}
	case json.Number:
		kind = Number
		if string(got.Raw) != string(w) {
			return fmt.Errorf("number text %q, want %q", got.Raw, w)
		}
		gi, gerr := got.Int64()
		wi, werr := w.Int64()
		if (gerr == nil) != (werr == nil) || gerr == nil && gi != wi {
			return fmt.Errorf("Int64() = %d, %v; json.Number.Int64() = %d, %v", gi, gerr, wi, werr)
		}
	case string:
		kind = String
		if s, err := got.String(); err != nil || s != w {
			return fmt.Errorf("String() = %q, %v; want %q", s, err, w)
		}
	case map[string]any, []any:
		if _, ok := w.(map[string]any); ok {
			kind = Object
		} else {
			kind = Array
		}
		sub, err := oracleDecode(got.Raw)
		if err != nil || !reflect.DeepEqual(sub, w) {
			return fmt.Errorf("raw %.60q decodes to %v (%v), not the oracle's value", got.Raw, sub, err)
		}
	default:
		return fmt.Errorf("oracle value of type %T", want)
	}
	if got.Kind != kind {
		return fmt.Errorf("kind %s, want %s", got.Kind, kind)
	}
	return checkConversions(got)
}

// checkConversions checks String, Int64 and Bool against json.Unmarshal of the raw text into a
// string, an int64 and a bool (Missing behaves as null).
func checkConversions(v Value) error {
	raw := v.Raw
	if v.Kind == Missing {
		raw = []byte("null")
	}
	var ws string
	werr := json.Unmarshal(raw, &ws)
	gs, gerr := v.String()
	if (gerr == nil) != (werr == nil) || gerr == nil && gs != ws {
		return fmt.Errorf("String() = %q, %v; json.Unmarshal gives %q, %v", gs, gerr, ws, werr)
	}
	var wi int64
	werr = json.Unmarshal(raw, &wi)
	gi, gerr := v.Int64()
	if (gerr == nil) != (werr == nil) || gerr == nil && gi != wi {
		return fmt.Errorf("Int64() = %d, %v; json.Unmarshal gives %d, %v", gi, gerr, wi, werr)
	}
	var wb bool
	werr = json.Unmarshal(raw, &wb)
	gb, gerr := v.Bool()
	if (gerr == nil) != (werr == nil) || gerr == nil && gb != wb {
		return fmt.Errorf("Bool() = %v, %v; json.Unmarshal gives %v, %v", gb, gerr, wb, werr)
	}
	return nil
}

// checkDoc runs Extract and the oracle on doc and reports the first difference.
func checkDoc(doc []byte, paths []string) error {
	vals, err := Extract(doc, paths...)
	wantOK := json.Valid(doc) && topIsObject(doc)
	if (err == nil) != wantOK {
		return fmt.Errorf("Extract error %v; json.Valid %v, top-level object %v", err, json.Valid(doc), topIsObject(doc))
	}
	if err != nil {
		if _, ok := err.(*SyntaxError); !ok {
			return fmt.Errorf("error %T %v is not a *SyntaxError", err, err)
		}
		return nil
	}
	root, oerr := oracleDecode(doc)
	if oerr != nil {
		return fmt.Errorf("oracle refuses a valid document: %v", oerr)
	}
	if len(vals) != len(paths) {
		return fmt.Errorf("%d values for %d paths", len(vals), len(paths))
	}
	for i, p := range paths {
		want, found := oracleWalk(root, p)
		if err := compareOracle(vals[i], want, found); err != nil {
			return fmt.Errorf("path %q: %v", p, err)
		}
	}
	return nil
}

// allPaths lists the dotted path of every object member reachable through objects (keys with a
// dot cannot be named and are left out).
func allPaths(v any, prefix string, top bool, out []string) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return out
	}
	for k, sub := range m {
		if strings.Contains(k, ".") {
			continue
		}
		p := k
		if !top {
			p = prefix + "." + k
		}
		out = append(out, p)
		out = allPaths(sub, p, false, out)
	}
	return out
}
