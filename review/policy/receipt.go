package policy

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/lensgate/lensgate/config"
)

// Outcome is the closed result of one lens, and also the aggregate state of a gate.
type Outcome string

const (
	Passed  Outcome = "passed"
	Failed  Outcome = "failed"
	Pending Outcome = "pending"
)

// Valid reports whether o is one of the three closed outcomes.
func (o Outcome) Valid() bool { return o == Passed || o == Failed || o == Pending }

// MaxReceiptBytes bounds a receipt file.
const MaxReceiptBytes = 1 << 20

// MaxSummaryBytes bounds one result summary.
const MaxSummaryBytes = 4096

// Receipt is a results document: one closed outcome per lens of the plan it names.
type Receipt struct {
	Version    int
	PlanDigest string
	Results    []Result // in the receipt's own order
}

// Result is one lens outcome. Summary is nil when the provider gave none.
type Result struct {
	Lens    string
	Outcome Outcome
	Summary *string
}

// Doc renders the receipt as the indented JSON document YAGA writes (no summary key when a
// result has none), ending in a newline.
func (r Receipt) Doc() string {
	results := make([]any, len(r.Results))
	for i, res := range r.Results {
		o := obj{{"lens", res.Lens}, {"outcome", string(res.Outcome)}}
		if res.Summary != nil {
			o = append(o, kv{"summary", *res.Summary})
		}
		results[i] = o
	}
	return indentJSON(obj{{"version", r.Version}, {"plan_digest", r.PlanDigest}, {"results", results}})
}

// ReadReceiptFile reads and validates a receipt file, reading at most MaxReceiptBytes+1 bytes.
// path is quoted in messages; pass the resolved absolute path.
func ReadReceiptFile(path string) (Receipt, error) {
	data, err := readBounded(path, MaxReceiptBytes)
	if err != nil {
		return Receipt{}, configErr(fmt.Sprintf("cannot read Agent review results %s: %s", path, osErrText(err)))
	}
	return LoadReceipt(path, data)
}

// LoadReceipt parses and validates receipt bytes; path is quoted in messages.
func LoadReceipt(path string, data []byte) (Receipt, error) {
	if len(data) > MaxReceiptBytes {
		return Receipt{}, configErr(fmt.Sprintf("Agent review results exceed %d bytes: %s", MaxReceiptBytes, path))
	}
	data = bytes.TrimPrefix(data, []byte{0xef, 0xbb, 0xbf})
	notJSON := configErr("Agent review results are not valid JSON: " + path)
	if !utf8.Valid(data) {
		return Receipt{}, notJSON
	}
	root, err := parseStrictJSON(string(data))
	if err != nil {
		return Receipt{}, notJSON
	}
	in := " in " + path
	if root.kind != jObject {
		return Receipt{}, configErr("Agent review results must be an object" + in)
	}
	if k := firstUnknown(root, "version", "plan_digest", "results"); k != "" {
		return Receipt{}, configErr(fmt.Sprintf("Agent review results has unknown key %s%s", k, in))
	}
	if v, ok := root.get("version"); !ok || v.kind != jNumber || v.num != "1" {
		return Receipt{}, configErr("Agent review results.version must be integer 1" + in)
	}
	d, ok := root.get("plan_digest")
	if !ok || d.kind != jString || !isDigest(d.str) {
		return Receipt{}, configErr("Agent review results.plan_digest is invalid" + in)
	}
	res, ok := root.get("results")
	if !ok || res.kind != jArray || len(res.arr) > config.MaxLenses {
		return Receipt{}, configErr("Agent review results.results is unbounded or invalid" + in)
	}
	r := Receipt{Version: 1, PlanDigest: d.str, Results: make([]Result, 0, len(res.arr))}
	seen := map[string]bool{}
	for _, e := range res.arr {
		if e.kind != jObject {
			return Receipt{}, configErr("Agent review result entries must be objects" + in)
		}
		if k := firstUnknown(e, "lens", "outcome", "summary"); k != "" {
			return Receipt{}, configErr(fmt.Sprintf("Agent review result has unknown key %s%s", k, in))
		}
		l, ok := e.get("lens")
		if !ok || l.kind != jString || l.badUTF || !config.ValidName(l.str) || seen[l.str] {
			return Receipt{}, configErr("Agent review result lens is invalid or repeated" + in)
		}
		seen[l.str] = true
		o, ok := e.get("outcome")
		if !ok || o.kind != jString || !Outcome(o.str).Valid() {
			return Receipt{}, configErr("Agent review result outcome is invalid" + in)
		}
		item := Result{Lens: l.str, Outcome: Outcome(o.str)}
		if s, ok := e.get("summary"); ok && s.kind != jNull {
			switch {
			case s.kind != jString || config.IsBlank(s.str) || strings.ContainsRune(s.str, 0):
				return Receipt{}, configErr("Agent review result summary is invalid" + in)
			case s.badUTF:
				return Receipt{}, configErr("Agent review result summary is not valid UTF-8" + in)
			case len(s.str) > MaxSummaryBytes:
				return Receipt{}, configErr("Agent review result summary is invalid" + in)
			}
			str := s.str
			item.Summary = &str
		}
		r.Results = append(r.Results, item)
	}
	return r, nil
}

// firstUnknown returns the first key of v, in sorted order, that is not allowed.
func firstUnknown(v *jval, allowed ...string) string {
	var unknown []string
	for _, k := range v.keys {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	slices.Sort(unknown)
	return unknown[0]
}

func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
