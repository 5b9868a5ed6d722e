package policy

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure/jcs"
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
	tree, err := jcs.ParseWith(data, receiptJSON)
	if err != nil {
		return Receipt{}, notJSON
	}
	in := " in " + path
	root, ok := tree.(map[string]any)
	if !ok {
		return Receipt{}, configErr("Agent review results must be an object" + in)
	}
	if k := firstUnknown(root, "version", "plan_digest", "results"); k != "" {
		return Receipt{}, configErr(fmt.Sprintf("Agent review results has unknown key %s%s", k, in))
	}
	if v, ok := root["version"].(jcs.Number); !ok || v != "1" {
		return Receipt{}, configErr("Agent review results.version must be integer 1" + in)
	}
	d, ok := root["plan_digest"].(string)
	if !ok || !isDigest(d) {
		return Receipt{}, configErr("Agent review results.plan_digest is invalid" + in)
	}
	res, ok := root["results"].([]any)
	if !ok || len(res) > config.MaxLenses {
		return Receipt{}, configErr("Agent review results.results is unbounded or invalid" + in)
	}
	r := Receipt{Version: 1, PlanDigest: d, Results: make([]Result, 0, len(res))}
	seen := map[string]bool{}
	for _, e := range res {
		item, err := readResult(e, seen, in)
		if err != nil {
			return Receipt{}, err
		}
		r.Results = append(r.Results, item)
	}
	return r, nil
}

// receiptJSON are the limits of Python's json.loads, which YAGA reads results with: nesting
// stops near its recursion limit (about 1,000 levels), integers at 4,300 digits, and a lone
// surrogate escape is accepted (a summary holding one has its own error). The size of the file
// bounds the number of values.
var receiptJSON = jcs.Options{MaxDepth: 1000, MaxIntDigits: 4300, MaxNodes: -1, LoneSurrogates: true}

// readResult reads one entry of results; seen holds the lenses read so far.
func readResult(e any, seen map[string]bool, in string) (Result, error) {
	m, ok := e.(map[string]any)
	if !ok {
		return Result{}, configErr("Agent review result entries must be objects" + in)
	}
	if k := firstUnknown(m, "lens", "outcome", "summary"); k != "" {
		return Result{}, configErr(fmt.Sprintf("Agent review result has unknown key %s%s", k, in))
	}
	l, ok := m["lens"].(string)
	if !ok || !config.ValidName(l) || seen[l] {
		return Result{}, configErr("Agent review result lens is invalid or repeated" + in)
	}
	seen[l] = true
	o, ok := m["outcome"].(string)
	if !ok || !Outcome(o).Valid() {
		return Result{}, configErr("Agent review result outcome is invalid" + in)
	}
	item := Result{Lens: l, Outcome: Outcome(o)}
	if s, ok := m["summary"]; ok && s != nil {
		str, isStr := s.(string)
		broken, isBroken := s.(jcs.BrokenString)
		if isBroken {
			str = string(broken)
		}
		switch {
		case !isStr && !isBroken || config.IsBlank(str) || strings.ContainsRune(str, 0):
			return Result{}, configErr("Agent review result summary is invalid" + in)
		case isBroken:
			return Result{}, configErr("Agent review result summary is not valid UTF-8" + in)
		case len(str) > MaxSummaryBytes:
			return Result{}, configErr("Agent review result summary is invalid" + in)
		}
		item.Summary = &str
	}
	return item, nil
}

// firstUnknown returns the first key of m, in sorted order, that is not allowed.
func firstUnknown(m map[string]any, allowed ...string) string {
	var unknown []string
	for k := range m {
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
