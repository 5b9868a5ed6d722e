package payload

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		paths []string
		want  []Value // Raw compared as text; Kind Missing means Raw nil
	}{
		{"flat", `{"a":"x","b":2,"c":true,"d":null,"e":[1],"f":{}}`,
			[]string{"a", "b", "c", "d", "e", "f", "g"},
			[]Value{{String, []byte(`"x"`)}, {Number, []byte(`2`)}, {Bool, []byte(`true`)}, {Null, []byte(`null`)}, {Array, []byte(`[1]`)}, {Object, []byte(`{}`)}, {}}},
		{"nested", `{"pr":{"head":{"sha":"abc"},"n":1}}`,
			[]string{"pr.head.sha", "pr.n", "pr.head", "pr.base.sha"},
			[]Value{{String, []byte(`"abc"`)}, {Number, []byte(`1`)}, {Object, []byte(`{"sha":"abc"}`)}, {}}},
		{"whitespace kept inside raw", "{ \"a\" :\t{ \"b\" : [ 1 , 2 ] }\r\n}",
			[]string{"a", "a.b"},
			[]Value{{Object, []byte(`{ "b" : [ 1 , 2 ] }`)}, {Array, []byte(`[ 1 , 2 ]`)}}},
		{"case-sensitive", `{"Action":"a","action":"b"}`, []string{"action", "ACTION"},
			[]Value{{String, []byte(`"b"`)}, {}}},
		{"last wins", `{"a":1,"a":2}`, []string{"a"}, []Value{{Number, []byte(`2`)}}},
		{"last wins resets below", `{"a":{"b":1,"c":2},"a":{"c":3}}`, []string{"a.b", "a.c", "a"},
			[]Value{{}, {Number, []byte(`3`)}, {Object, []byte(`{"c":3}`)}}},
		{"object replaced by scalar", `{"a":{"b":1},"a":5}`, []string{"a.b", "a"},
			[]Value{{}, {Number, []byte(`5`)}}},
		{"scalar replaced by object", `{"a":5,"a":{"b":1}}`, []string{"a.b"},
			[]Value{{Number, []byte(`1`)}}},
		{"repeat in untracked sibling is not a reset", `{"a":{"b":1},"c":{"a":2}}`, []string{"a.b"},
			[]Value{{Number, []byte(`1`)}}},
		{"through array is missing", `{"a":[{"b":1}]}`, []string{"a.b"}, []Value{{}}},
		{"through string is missing", `{"a":"b"}`, []string{"a.b"}, []Value{{}}},
		{"through null is missing", `{"a":null}`, []string{"a.b"}, []Value{{}}},
		{"nested same key not matched at top", `{"x":{"a":1}}`, []string{"a"}, []Value{{}}},
		{"escaped key matches", `{"\u0061":1,"b\/c":2}`, []string{"a", "b/c"},
			[]Value{{Number, []byte(`1`)}, {Number, []byte(`2`)}}},
		{"empty key", `{"":{"":3}}`, []string{"."}, []Value{{Number, []byte(`3`)}}},
		{"duplicate paths", `{"a":1}`, []string{"a", "a"},
			[]Value{{Number, []byte(`1`)}, {Number, []byte(`1`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract([]byte(tt.doc), tt.paths...)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range tt.want {
				if got[i].Kind != w.Kind || string(got[i].Raw) != string(w.Raw) || (w.Kind == Missing) != (got[i].Raw == nil) {
					t.Errorf("%s: got %s %q, want %s %q", tt.paths[i], got[i].Kind, got[i].Raw, w.Kind, w.Raw)
				}
			}
			if err := checkDoc([]byte(tt.doc), tt.paths); err != nil {
				t.Error(err)
			}
		})
	}
}

// validityCases are documents at the edges of JSON's grammar; each must be accepted exactly when
// json.Valid accepts it (and it is an object).
var validityCases = []string{
	``, ` `, `{}`, ` {} `, "{}\n", "\t{\r\n}\t", `{`, `}`, `{}}`, `{} {}`, `{}x`, `[]`, `"a"`, `1`, `null`,
	"\v{}", "\f{}", "\u00a0{}", "\ufeff{}",
	`{"a"}`, `{"a":}`, `{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{a:1}`, `{'a':1}`, `{"a":1 "b":2}`,
	`{"a":[1,]}`, `{"a":[,1]}`, `{"a":[1 2]}`, `{"a":[}`, `{"a":{]}`, `{"a":[1}]}`,
	`{"a":-0}`, `{"a":-}`, `{"a":01}`, `{"a":00}`, `{"a":-01}`, `{"a":1.}`, `{"a":.1}`, `{"a":1.e1}`,
	`{"a":1e}`, `{"a":1e+}`, `{"a":1E-7}`, `{"a":1e400}`, `{"a":-1e-400}`, `{"a":+1}`, `{"a":0x1}`,
	`{"a":1.5e+10}`, `{"a":123456789012345678901234567890}`, `{"a":Infinity}`, `{"a":NaN}`,
	`{"a":true}`, `{"a":tru}`, `{"a":truee}`, `{"a":True}`, `{"a":nul}`, `{"a":fals}`, `{"a":false1}`,
	`{"a":"\u00e9"}`, `{"a":"\u00G9"}`, `{"a":"\u00e"}`, `{"a":"\x41"}`, `{"a":"\'"}`, `{"a":"\/\b\f\n\r\t\"\\"}`,
	`{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`, `{"a":"` + "\x00" + `"}`, `{"a":"` + "\x1f" + `"}`, `{"a":"` + "\x7f" + `"}`,
	`{"a":"` + "\t" + `"}`, `{"a":"` + "\n" + `"}`, `{"a":"` + "\xff\xfe" + `"}`, `{"` + "\xc3" + `":1}`,
	`{"a":"é"}`, `{"a":"unterminated}`, `{"a":"\`, `{"a":"\u12`, `{"a":"abc\"def"}`, `{"a":"12345678\"9"}`,
	`{"a":"` + strings.Repeat("x", 100) + `\n` + strings.Repeat("y", 100) + `"}`,
	`{"a":1}` + "\x00", "{\"a\":1}\u2028",
}

func TestValidityMatchesEncodingJSON(t *testing.T) {
	for _, doc := range validityCases {
		if err := checkDoc([]byte(doc), []string{"a", "a.b"}); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

func TestErrorsNameOffset(t *testing.T) {
	tests := []struct {
		doc    string
		offset int
		msg    string
	}{
		{`{"a":x}`, 5, "invalid character 'x' looking for beginning of value"},
		{`{"a":1,}`, 7, "looking for beginning of object key string"},
		{`{"a":01}`, 6, "after object key:value pair"},
		{`{"a":"` + "\x01" + `"}`, 6, "in string literal"},
		{`{"a":"\q"}`, 7, "in string escape code"},
		{`{"a":1`, 6, "unexpected end of JSON input"},
		{`{} x`, 3, "after top-level value"},
		{`[1]`, 0, "top-level value is not an object"},
		{``, 0, "unexpected end of JSON input"},
	}
	for _, tt := range tests {
		_, err := Extract([]byte(tt.doc), "a")
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("%q: error %v, want a *SyntaxError", tt.doc, err)
		}
		if se.Offset != tt.offset || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%q: %v (offset %d), want offset %d and %q", tt.doc, err, se.Offset, tt.offset, tt.msg)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	for _, depth := range []int{9999, 10000, 10001, 100000} {
		// The top-level object is one level; the arrays make up the rest.
		doc := `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		_, err := Extract([]byte(doc), "a")
		if (err == nil) != json.Valid([]byte(doc)) {
			t.Errorf("depth %d: Extract error %v, json.Valid %v", depth, err, json.Valid([]byte(doc)))
		}
		if depth > maxDepth && (err == nil || !strings.Contains(err.Error(), "exceeded max depth")) {
			t.Errorf("depth %d: error %v, want max depth", depth, err)
		}
		deepObj := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
		if err := checkDoc([]byte(deepObj), []string{"a.a.a", "a"}); err != nil {
			t.Errorf("depth %d objects: %v", depth, err)
		}
	}
	// Unclosed nesting far beyond the limit is refused without growing without bound.
	if _, err := Extract([]byte(`{"a":`+strings.Repeat("[", 1<<20)), "a"); err == nil {
		t.Error("unclosed deep nesting accepted")
	}
}

func TestConversions(t *testing.T) {
	tests := []struct {
		raw     string
		str     string
		strErr  bool
		i64     int64
		i64Err  bool
		boolean bool
		boolErr bool
	}{
		{raw: `"plain"`, str: "plain", i64Err: true, boolErr: true},
		{raw: `"a\nb\u00e9\ud83d\ude00\"\\\/"`, str: "a\nbé😀\"\\/", i64Err: true, boolErr: true},
		{raw: `"\ud800x"`, str: "\ufffdx", i64Err: true, boolErr: true},
		{raw: "\"\xff\"", str: "\ufffd", i64Err: true, boolErr: true},
		{raw: `"é"`, str: "é", i64Err: true, boolErr: true},
		{raw: `"12"`, str: "12", i64Err: true, boolErr: true},
		{raw: `12`, strErr: true, i64: 12, boolErr: true},
		{raw: `-0`, strErr: true, i64: 0, boolErr: true},
		{raw: `-9223372036854775808`, strErr: true, i64: -9223372036854775808, boolErr: true},
		{raw: `9223372036854775808`, strErr: true, i64Err: true, boolErr: true},
		{raw: `1.0`, strErr: true, i64Err: true, boolErr: true},
		{raw: `1e3`, strErr: true, i64Err: true, boolErr: true},
		{raw: `true`, strErr: true, i64Err: true, boolean: true},
		{raw: `false`, strErr: true, i64Err: true},
		{raw: `null`},
		{raw: `{"a":1}`, strErr: true, i64Err: true, boolErr: true},
		{raw: `[]`, strErr: true, i64Err: true, boolErr: true},
	}
	for _, tt := range tests {
		vals, err := Extract([]byte(`{"v":`+tt.raw+`}`), "v")
		if err != nil {
			t.Fatalf("%s: %v", tt.raw, err)
		}
		v := vals[0]
		if s, err := v.String(); s != tt.str || (err != nil) != tt.strErr {
			t.Errorf("%s: String() = %q, %v", tt.raw, s, err)
		}
		if n, err := v.Int64(); n != tt.i64 || (err != nil) != tt.i64Err {
			t.Errorf("%s: Int64() = %d, %v", tt.raw, n, err)
		}
		if b, err := v.Bool(); b != tt.boolean || (err != nil) != tt.boolErr {
			t.Errorf("%s: Bool() = %v, %v", tt.raw, b, err)
		}
		if !v.Present() {
			t.Errorf("%s: not present", tt.raw)
		}
		if err := checkConversions(v); err != nil {
			t.Errorf("%s: %v", tt.raw, err)
		}
	}
	var missing Value
	if s, err := missing.String(); s != "" || err != nil || missing.Present() {
		t.Errorf("missing: String() = %q, %v, Present %v", s, err, missing.Present())
	}
}

// fixtureFiles lists the webhook payloads in this repository's test data.
func fixtureFiles(tb testing.TB) []string {
	var files []string
	for _, dir := range []string{"testdata/webhooks", "../testdata/webhooks", "../../deploy/testdata/webhooks"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			tb.Fatal(err)
		}
		if len(m) == 0 {
			tb.Fatalf("no payloads in %s", dir)
		}
		files = append(files, m...)
	}
	return files
}

// TestFixturesAgainstOracle extracts every path of every payload, plus some absent ones, and
// compares each value with encoding/json's.
func TestFixturesAgainstOracle(t *testing.T) {
	for _, file := range fixtureFiles(t) {
		doc, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			if !json.Valid(doc) {
				t.Fatal("fixture is not valid JSON")
			}
			root, err := oracleDecode(doc)
			if err != nil {
				t.Fatal(err)
			}
			paths := allPaths(root, "", true, nil)
			sort.Strings(paths)
			n := len(paths)
			paths = append(paths, "nope", "action.x", "pull_request.head.sha.x", "pull_request.labels.name", "sender.LOGIN")
			if err := checkDoc(doc, paths); err != nil {
				t.Error(err)
			}
			// A compiled set is reusable, and a shorter document is refused.
			f := NewFields(paths...)
			for i := 0; i < 2; i++ {
				if _, err := f.Extract(doc); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.Extract(doc[:len(doc)/2]); err == nil {
				t.Error("truncated payload accepted")
			}
			t.Logf("%d paths", n)
		})
	}
}

// fuzzPaths are the fixed paths of FuzzExtract, chosen to meet the seeds' keys.
var fuzzPaths = []string{"a", "a.b", "a.b.c", "b", "", "action", "pull_request.head.sha", "pull_request.number", "sender.login", "changes.title"}

func FuzzExtract(f *testing.F) {
	for _, file := range fixtureFiles(f) {
		doc, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(doc, "repository.owner.login")
	}
	for _, doc := range validityCases {
		f.Add([]byte(doc), "a")
	}
	for _, doc := range []string{
		`{"a":{"b":{"c":1}},"a":{"b":2}}`,
		`{"a":{"b":{"c":1},"b":{"d":2}},"a":{"b":{"c":3}}}`,
		`{"a":[{"b":1}],"a":{"b":{"c":"\u0041"}}}`,
		`{"\u0061":{"b":1},"a\u0000":2,"":3}`,
		`{"pull_request":{"head":{"sha":"x\"y"},"number":1e400},"action":"opened","action":null}`,
		`{"a":-0,"b":1e400,"a.b":01}`,
		`{"a":` + strings.Repeat(`{"b":`, 50) + `1` + strings.Repeat(`}`, 50) + `}`,
		`{"a":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `}`,
	} {
		f.Add([]byte(doc), "a.b.b")
	}
	f.Fuzz(func(t *testing.T, doc []byte, path string) {
		paths := append(append([]string(nil), fuzzPaths...), path)
		if err := checkDoc(doc, paths); err != nil {
			t.Fatal(err)
		}
		// Every path the document has, too (keys repeated or escaped included).
		if !json.Valid(doc) || !topIsObject(doc) {
			return
		}
		root, err := oracleDecode(doc)
		if err != nil {
			t.Fatal(err)
		}
		if all := allPaths(root, "", true, nil); len(all) <= 200 {
			if err := checkDoc(doc, all); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// prPaths are the fields the pull_request handler reads.
var prPaths = []string{
	"action", "pull_request", "pull_request.number", "pull_request.draft", "pull_request.state",
	"pull_request.head", "pull_request.head.sha", "repository", "repository.name", "repository.owner",
	"repository.owner.login", "installation", "installation.id", "sender", "sender.login", "sender.type",
	"changes", "changes.title", "changes.body", "changes.base",
}

// prStruct is what the handler decoded with encoding/json before this package.
type prStruct struct {
	Action      string `json:"action"`
	PullRequest *struct {
		Number int    `json:"number"`
		Draft  bool   `json:"draft"`
		State  string `json:"state"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
	} `json:"pull_request"`
	Repository *struct {
		Name  string `json:"name"`
		Owner struct {
			Login string `json:"login"`
		} `json:"owner"`
	} `json:"repository"`
	Installation *struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Sender *struct {
		Login *string `json:"login"`
		Type  *string `json:"type"`
	} `json:"sender"`
	Changes *struct {
		Title json.RawMessage `json:"title"`
		Body  json.RawMessage `json:"body"`
		Base  json.RawMessage `json:"base"`
	} `json:"changes"`
}

func benchDoc(b *testing.B) []byte {
	doc, err := os.ReadFile("../../deploy/testdata/webhooks/pull_request.opened.payload.json")
	if err != nil {
		b.Fatal(err)
	}
	return doc
}

func BenchmarkExtract(b *testing.B) {
	doc := benchDoc(b)
	f := NewFields(prPaths...)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	reportCPU(b, func() {
		vals, err := f.Extract(doc)
		if err != nil {
			b.Fatal(err)
		}
		if s, _ := vals[6].String(); s == "" {
			b.Fatal("no head sha")
		}
	})
}

func BenchmarkUnmarshalStruct(b *testing.B) {
	doc := benchDoc(b)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	reportCPU(b, func() {
		var ev prStruct
		if err := json.Unmarshal(doc, &ev); err != nil {
			b.Fatal(err)
		}
		if ev.PullRequest.Head.SHA == "" {
			b.Fatal("no head sha")
		}
	})
}

func BenchmarkValid(b *testing.B) {
	doc := benchDoc(b)
	b.SetBytes(int64(len(doc)))
	reportCPU(b, func() {
		if !json.Valid(doc) {
			b.Fatal("invalid")
		}
	})
}

// reportCPU adds cpu-ns/op, process CPU time per operation: on a shared machine wall time per
// operation overstates the cost.
func reportCPU(b *testing.B, run func()) {
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	n := 0
	for b.Loop() {
		run()
		n++
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	if n > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
	}
}

// TestConcurrentUse shares one compiled set between goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	doc, err := os.ReadFile("../../deploy/testdata/webhooks/pull_request.opened.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	f := NewFields(prPaths...)
	want, err := f.Extract(doc)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 50; i++ {
				got, err := f.Extract(doc)
				if err != nil {
					errs <- err
					return
				}
				for j := range got {
					if got[j].Kind != want[j].Kind || string(got[j].Raw) != string(want[j].Raw) {
						errs <- fmt.Errorf("%s differs", prPaths[j])
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
