package observation

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// typedAgrees decodes payload both ways: when the typed reading accepts it, parseGeneric must
// accept it too, with an equal Statement. It reports whether the typed reading accepted.
func typedAgrees(t testing.TB, what string, payload []byte) bool {
	t.Helper()
	typed, ok := decodeTyped(payload)
	if !ok {
		return false
	}
	generic, err := parseGeneric(payload)
	if err != nil {
		t.Fatalf("%s: the typed reading accepted what the general path refuses: %v", what, err)
	}
	if !reflect.DeepEqual(typed, generic) {
		t.Fatalf("%s: statements differ\ntyped:   %+v\ngeneral: %+v", what, typed, generic)
	}
	return true
}

func payloadOf(t testing.TB, env []byte) []byte {
	t.Helper()
	tree, err := jcs.Parse(env)
	if err != nil {
		t.Fatal(err)
	}
	op, err := dsse.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	return op.Payload
}

// roots are observations the mutation test starts from: the fixture, one without a plan or
// findings, and the published example.
func roots(t testing.TB) map[string][]byte {
	f := newFixture(t, nil)
	out := map[string][]byte{"fixture": payloadOf(t, f.sign(t, witnessKey))}
	f.stmt.Calls[1].Runtime.InterpreterPath = "/usr/bin/dash"
	f.stmt.Calls[1].Runtime.InterpreterSHA256 = strings.Repeat("f", 64)
	out["v0.2 interpreter"] = payloadOf(t, f.sign(t, witnessKey))
	f.stmt.Calls[1].Runtime.InterpreterPath, f.stmt.Calls[1].Runtime.InterpreterSHA256 = "", ""
	f.stmt.PlanDigest, f.stmt.Findings, f.stmt.FindingsTotal = "", nil, 0
	f.stmt.FindingsRoot = FindingsRoot(nil)
	f.stmt.Calls = f.stmt.Calls[:1]
	f.stmt.Calls[0].Runtime = Runtime{Kind: KindOther, Name: "script"}
	out["bare"] = payloadOf(t, f.sign(t, witnessKey))
	ex, err := os.ReadFile(filepath.Join("testdata", "example.observation.json"))
	if err != nil {
		t.Fatal(err)
	}
	out["example"] = payloadOf(t, ex)
	return out
}

func TestTypedReadingTakesTheRunnersObservations(t *testing.T) {
	for name, p := range roots(t) {
		if !typedAgrees(t, name, p) {
			t.Errorf("%s: the typed reading refused it", name)
		}
	}
}

var replacements = []any{nil, false, true, jcs.Number("-2"), jcs.Number("-1"), jcs.Number("0"), jcs.Number("1"),
	jcs.Number("99"), jcs.Number("100"), jcs.Number("255"), jcs.Number("256"), jcs.Number("599"), jcs.Number("600"),
	jcs.Number("2147483647"), jcs.Number("2147483648"), jcs.Number("9007199254740991"), jcs.Number("1.5"), "", "x",
	"/usr/bin/sh", "0.2.0", PredicateTypeV02, map[string]any{"path": "/bin/sh", "sha256": strings.Repeat("e", 64)},
	map[string]any{"path": "bin/sh", "sha256": strings.Repeat("e", 64)},
	strings.Repeat("x", 17), strings.Repeat("x", 65), strings.Repeat("x", 257), strings.Repeat("x", 501), "nul\x00",
	strings.Repeat("a", 64), strings.Repeat("A", 64), "2026-12-01T10:00:00.000000000Z", "2026-12-01T09:00:00.000000000Z",
	"2026-12-01T11:00:00.000000000Z", "2026-12-01T10:00:00Z", "passed", "pending", "bogus", "critical", KindBuiltin,
	KindExec, KindOpenAI, KindOther, SchemaVersion, StatementType, PredicateType, []any{}, []any{"x"},
	[]any{map[string]any{}}, map[string]any{}, map[string]any{"sha256": strings.Repeat("f", 64)},
	map[string]any{"sha256": strings.Repeat("f", 64), "size": jcs.Number("3")}}

var extraKeys = []string{"zz", "interpreter", "path", "plan", "reviewDigest", "tokens", "error", "response", "status", "version",
	"executableSha256", "exitStatus", "endpointHost", "modelRequested", "modelResponded", "size", "sha256"}

func walk(v any, prefix []any, out *[][]any) {
	*out = append(*out, prefix)
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walk(x[k], append(append([]any{}, prefix...), k), out)
		}
	case []any:
		for i, e := range x {
			walk(e, append(append([]any{}, prefix...), i), out)
		}
	}
}

func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = clone(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = clone(e)
		}
		return a
	}
	return v
}

func set(root any, path []any, val any, del bool) any {
	out := clone(root)
	if len(path) == 0 {
		return val
	}
	cur := out
	for _, p := range path[:len(path)-1] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p.(string)]
		case []any:
			cur = c[p.(int)]
		}
	}
	switch c := cur.(type) {
	case map[string]any:
		if del {
			delete(c, path[len(path)-1].(string))
		} else {
			c[path[len(path)-1].(string)] = val
		}
	case []any:
		if i := path[len(path)-1].(int); !del {
			c[i] = val
		}
	}
	return out
}

// TestTypedReadingAgreesUnderMutation sets each member of each root to each replacement,
// removes it, and adds members, and holds the typed reading to the general path.
func TestTypedReadingAgreesUnderMutation(t *testing.T) {
	cases, typed := 0, 0
	check := func(what string, tree any) {
		payload, err := jcs.Canonical(tree)
		if err != nil {
			return
		}
		cases++
		if typedAgrees(t, what, payload) {
			typed++
		}
	}
	for name, p := range roots(t) {
		tree, err := jcs.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		var paths [][]any
		walk(tree, nil, &paths)
		for _, path := range paths {
			for _, v := range replacements {
				check(fmt.Sprintf("%s %v = %#v", name, path, v), set(tree, path, v, false))
			}
			if len(path) > 0 {
				check(fmt.Sprintf("%s %v removed", name, path), set(tree, path, nil, true))
			}
			var at any = tree
			for _, p := range path {
				switch c := at.(type) {
				case map[string]any:
					at = c[p.(string)]
				case []any:
					at = c[p.(int)]
				}
			}
			if _, isObj := at.(map[string]any); isObj {
				for _, k := range extraKeys {
					for _, v := range []any{"x", strings.Repeat("a", 64), jcs.Number("200")} {
						check(fmt.Sprintf("%s %v + %s", name, path, k), set(tree, append(append([]any{}, path...), k), v, false))
					}
				}
			}
		}
		// Not canonical: the typed reading must leave it to the general path.
		for i, v := range [][]byte{append([]byte{' '}, p...), []byte(strings.Replace(string(p), `"_type"`, `"_ty\u0070e"`, 1))} {
			if _, ok := decodeTyped(v); ok {
				t.Errorf("%s: non-canonical variant %d taken", name, i)
			}
		}
	}
	t.Logf("%d cases, %d taken by the typed reading", cases, typed)
}

// TestTypedReadingAgreesOnRandomEdits edits the roots' payload bytes at random.
func TestTypedReadingAgreesOnRandomEdits(t *testing.T) {
	var payloads [][]byte
	for _, p := range roots(t) {
		payloads = append(payloads, p)
	}
	alphabet := []byte(`{}[]:,"\ 0123456789-.eEtrufalsn` + "abcdefABCDEFZ\x00\x1f\x7f\xc3\xa9\xff")
	r := rand.New(rand.NewSource(5))
	typed := 0
	for i := 0; i < 20000; i++ {
		s := append([]byte{}, payloads[i%len(payloads)]...)
		for k := 0; k < 1+r.Intn(3); k++ {
			j := r.Intn(len(s))
			switch r.Intn(4) {
			case 0:
				s[j] = alphabet[r.Intn(len(alphabet))]
			case 1:
				s = append(s[:j], s[j+1:]...)
			case 2:
				s = append(s[:j], append([]byte{alphabet[r.Intn(len(alphabet))]}, s[j:]...)...)
			case 3:
				e := min(len(s), j+1+r.Intn(60))
				s = append(s[:e], append(append([]byte{}, s[j:e]...), s[e:]...)...)
			}
		}
		if typedAgrees(t, fmt.Sprintf("edit %d", i), s) {
			typed++
		}
	}
	t.Logf("%d edits taken by the typed reading", typed)
}

// FuzzTypedObservation holds the typed reading to the general path on arbitrary payloads.
func FuzzTypedObservation(f *testing.F) {
	for _, p := range roots(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) { typedAgrees(t, "payload", payload) })
}
