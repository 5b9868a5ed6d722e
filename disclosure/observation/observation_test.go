package observation

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

func key(b byte) ed25519.PrivateKey {
	seed := bytes.Repeat([]byte{b}, ed25519.SeedSize)
	return ed25519.NewKeyFromSeed(seed)
}

var (
	receiptKey = key(1)
	witnessKey = key(2)
	t0         = time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
)

func pub(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// fixture is a receipt and the observation that honestly accompanies it.
type fixture struct {
	receipt *disclosure.Receipt
	stmt    *Statement
}

func newFixture(t testing.TB, edit func(p *disclosure.Predicate)) fixture {
	t.Helper()
	p := &disclosure.Predicate{
		ReviewID: "lensgate:test",
		Subject: disclosure.SubjectContext{
			Kind: disclosure.KindPullRequest, Forge: "github.com", RepositoryID: "R_1", PullRequestNodeID: "PR_1",
			HeadSHA: strings.Repeat("a", 40), BaseSHA: strings.Repeat("b", 40),
			ReviewedDiffDigest: strings.Repeat("d", 64), BodyCoreDigest: strings.Repeat("c", 64),
			HumanRef: "github-pr:o/r#1",
		},
		Authoring:   []disclosure.AssuredItem{{AssertedBy: "github:alice"}},
		ReviewRuns:  []disclosure.AssuredItem{{AssertedBy: "lensgate/security/builtin"}},
		Findings:    []disclosure.Finding{{ID: "LG-1", Severity: "high", Title: "x", Disposition: "open"}, {ID: "LG-2", Severity: "low", Title: "y", Disposition: "open"}},
		Coverage:    disclosure.Coverage{Status: disclosure.CoverageUnknown},
		TimeClaims:  []disclosure.TimeClaim{{Kind: "reviewCompleted", Value: t0.Add(2 * time.Second).Format(time.RFC3339), AssertedBy: "lensgate"}},
		Limitations: []string{"self-declared"},
		NonClaims:   []string{"none"},
		DeclaredAt:  t0.Add(5 * time.Second),
		SignedAt:    t0.Add(5 * time.Second),
		PlanDigest:  strings.Repeat("e", 64),
	}
	if edit != nil {
		edit(p)
	}
	rc, err := disclosure.Emit(p, disclosure.Signer{Key: receiptKey})
	if err != nil {
		t.Fatal(err)
	}
	exit := 0
	findings := []Finding{{ID: "LG-1", Lens: "security", Severity: "high"}, {ID: "LG-2", Lens: "style", Severity: "low"}}
	st := &Statement{
		SubjectName: rc.SubjectName, SubjectDigest: rc.SubjectDigest,
		Runner:        Runner{ID: "lensgate", Version: "test"},
		ReceiptDigest: rc.ReceiptDigest, PlanDigest: strings.Repeat("e", 64), ReviewedDiffDigest: strings.Repeat("d", 64),
		Started: t0, Finished: t0.Add(3 * time.Second),
		Calls: []Call{
			{Lenses: []string{"security"}, Runtime: Runtime{Kind: KindBuiltin, Name: "builtin", Version: "test", ExecutableSHA256: strings.Repeat("1", 64)},
				Started: t0, Finished: t0.Add(time.Second), Exchanges: []Exchange{{Request: Blob{strings.Repeat("2", 64), 10}, Response: &Blob{strings.Repeat("3", 64), 20}}},
				ReviewDigest: strings.Repeat("4", 64), Files: Files{Digest: strings.Repeat("5", 64), Count: 1},
				Outcomes: []Outcome{{Lens: "security", Outcome: "failed"}}},
			{Lenses: []string{"style"}, Runtime: Runtime{Kind: KindExec, Name: "lint", ExecutableSHA256: strings.Repeat("6", 64), ExitStatus: &exit},
				Started: t0.Add(time.Second), Finished: t0.Add(2*time.Second + 500*time.Millisecond),
				Exchanges:    []Exchange{{Request: Blob{strings.Repeat("7", 64), 10}, Response: &Blob{strings.Repeat("8", 64), 20}}},
				ReviewDigest: strings.Repeat("9", 64), Files: Files{Digest: strings.Repeat("5", 64), Count: 1},
				Tokens: &Tokens{Input: 100, Output: 20}, Outcomes: []Outcome{{Lens: "style", Outcome: "passed"}}},
			{Lenses: []string{"model"}, Runtime: Runtime{Kind: KindOpenAI, Name: "openai", EndpointHost: "127.0.0.1:1", ModelRequested: "m", ModelResponded: "m-2"},
				Started: t0.Add(2 * time.Second), Finished: t0.Add(3 * time.Second),
				Exchanges: []Exchange{{Request: Blob{strings.Repeat("a", 64), 10}, Status: 503}},
				Files:     Files{Digest: strings.Repeat("5", 64), Count: 1}, Error: "model endpoint answered HTTP 503",
				Outcomes: []Outcome{{Lens: "model", Outcome: "pending"}}},
		},
		Findings: findings, FindingsTotal: 2, FindingsRoot: FindingsRoot(findings),
	}
	return fixture{receipt: rc, stmt: st}
}

func (f fixture) sign(t testing.TB, k ed25519.PrivateKey) []byte {
	t.Helper()
	s, err := Sign(f.stmt, Signer{Key: k})
	if err != nil {
		t.Fatal(err)
	}
	return s.Envelope
}

func opts(f fixture) Options {
	return Options{WitnessKey: pub(witnessKey), ReceiptKey: pub(receiptKey), Receipt: f.receipt.Envelope}
}

func TestVerifyMatch(t *testing.T) {
	f := newFixture(t, nil)
	env := f.sign(t, witnessKey)
	res := Verify(env, opts(f))
	if res.RunnerObservation != Match || len(res.ReasonCodes) != 0 {
		t.Fatalf("got %s %v %v", res.RunnerObservation, res.ReasonCodes, res.Errors)
	}
	if got := Verify(nil, opts(f)); got.RunnerObservation != Absent {
		t.Fatalf("nil observation: %s", got.RunnerObservation)
	}
	text := res.Text()
	for _, want := range []string{"runner observation: MATCH", "does not show", "correct", "independent", "exit status 0", "model answered m-2"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	// Parsing gives back the statement that was signed.
	p, err := Parse(env)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.stmt.Tree()
	b, _ := p.Statement.Tree()
	ca, _ := jcs.Canonical(a)
	cb, _ := jcs.Canonical(b)
	if !bytes.Equal(ca, cb) {
		t.Fatalf("round trip differs:\n%s\n%s", ca, cb)
	}
}

// Each counter-proof flips one thing and must turn MATCH into its code.
func TestVerifyCounterProofs(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(f *fixture, o *Options) []byte
		code string
	}{
		"signed with the receipt key": {func(f *fixture, o *Options) []byte { return f.sign(t, receiptKey) }, CodeWrongWitnessKey},
		"witness key is the receipt key": {func(f *fixture, o *Options) []byte {
			o.WitnessKey = pub(receiptKey)
			return f.sign(t, receiptKey)
		}, CodeWrongWitnessKey},
		"signed by a stranger": {func(f *fixture, o *Options) []byte { return f.sign(t, key(9)) }, CodeSignature},
		"receipt from another head": {func(f *fixture, o *Options) []byte {
			other := newFixture(t, func(p *disclosure.Predicate) { p.Subject.HeadSHA = strings.Repeat("f", 40) })
			o.Receipt = other.receipt.Envelope
			return f.sign(t, witnessKey)
		}, CodeSubjectDiffers},
		"another receipt of the same subject": {func(f *fixture, o *Options) []byte {
			other := newFixture(t, func(p *disclosure.Predicate) { p.ReviewID = "lensgate:other" })
			o.Receipt = other.receipt.Envelope
			return f.sign(t, witnessKey)
		}, CodeEnvelopeDiffers},
		"receipt findings not derived": {func(f *fixture, o *Options) []byte {
			other := newFixture(t, func(p *disclosure.Predicate) { p.Findings[1].Severity = "info" })
			o.Receipt = other.receipt.Envelope
			f.stmt.ReceiptDigest = other.receipt.ReceiptDigest
			return f.sign(t, witnessKey)
		}, CodeFindingsDiffer},
		"reviewCompleted after the window": {func(f *fixture, o *Options) []byte {
			other := newFixture(t, func(p *disclosure.Predicate) {
				p.TimeClaims[0].Value = t0.Add(time.Hour).Format(time.RFC3339)
				p.DeclaredAt, p.SignedAt = t0.Add(2*time.Hour), t0.Add(2*time.Hour)
			})
			o.Receipt = other.receipt.Envelope
			f.stmt.ReceiptDigest = other.receipt.ReceiptDigest
			return f.sign(t, witnessKey)
		}, CodeTimeOutside},
		"swapped adapter": {func(f *fixture, o *Options) []byte {
			o.Expected = []Expectation{{Name: "lint", ExecutableSHA256: strings.Repeat("0", 64)}}
			return f.sign(t, witnessKey)
		}, CodeRuntimeDiffers},
		"plan differs": {func(f *fixture, o *Options) []byte {
			f.stmt.PlanDigest = strings.Repeat("0", 64)
			return f.sign(t, witnessKey)
		}, CodePlanDiffers},
		"no receipt": {func(f *fixture, o *Options) []byte { o.Receipt = nil; return f.sign(t, witnessKey) }, CodeReceiptMissing},
		"payload edited": {func(f *fixture, o *Options) []byte {
			env := f.sign(t, witnessKey)
			var m map[string]any
			_ = json.Unmarshal(env, &m)
			payload, _ := base64.StdEncoding.DecodeString(m["payload"].(string))
			payload = bytes.Replace(payload, []byte(`"size":20`), []byte(`"size":21`), 1)
			m["payload"] = base64.StdEncoding.EncodeToString(payload)
			out, _ := json.Marshal(m)
			return out
		}, CodeSignature},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil)
			o := opts(f)
			env := tc.edit(&f, &o)
			res := Verify(env, o)
			if res.RunnerObservation != Mismatch || !slices.Contains(res.ReasonCodes, tc.code) {
				t.Fatalf("got %s %v %v, want %s", res.RunnerObservation, res.ReasonCodes, res.Errors, tc.code)
			}
		})
	}
}

func TestBoundedFindings(t *testing.T) {
	f := newFixture(t, nil)
	for i := 0; i < 500; i++ {
		f.stmt.Findings = append(f.stmt.Findings, Finding{ID: "LG-x" + itoa(i), Lens: "style", Severity: "info"})
	}
	f.stmt.FindingsTotal = len(f.stmt.Findings)
	f.stmt.FindingsRoot = FindingsRoot(f.stmt.Findings)
	left, err := f.stmt.Bound(8 << 10)
	if err != nil || left == 0 {
		t.Fatalf("left %d, %v", left, err)
	}
	s, err := Sign(f.stmt, Signer{Key: witnessKey})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Envelope) > 8<<10 {
		t.Fatalf("envelope %d bytes", len(s.Envelope))
	}
	p, err := Parse(s.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	if p.Statement.FindingsTotal != 502 || p.Statement.Findings[0].Severity != "high" {
		t.Fatalf("total %d, first %+v", p.Statement.FindingsTotal, p.Statement.Findings[0])
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestParseRefuses(t *testing.T) {
	f := newFixture(t, nil)
	good := f.sign(t, witnessKey)
	tree, _ := f.stmt.Tree()
	resign := func(edit func(st map[string]any)) []byte {
		raw, _ := jcs.Canonical(tree)
		v, _ := jcs.Parse(raw)
		st := v.(map[string]any)
		edit(st)
		payload, err := jcs.Canonical(st)
		if err != nil {
			t.Fatal(err)
		}
		env, _ := dsse.Sign(dsse.PayloadType, payload, witnessKey, "")
		return env
	}
	pred := func(st map[string]any) map[string]any { return st["predicate"].(map[string]any) }
	call0 := func(st map[string]any) map[string]any { return pred(st)["calls"].([]any)[0].(map[string]any) }
	for name, tc := range map[string]struct {
		in   []byte
		want string
	}{
		"empty":            {nil, "empty"},
		"oversized":        {bytes.Repeat([]byte("x"), MaxEnvelopeBytes+1), "limit"},
		"not json":         {[]byte("{"), "envelope"},
		"duplicate key":    {[]byte(`{"payload":"","payload":"","payloadType":"x","signatures":[]}`), "duplicate"},
		"extra member":     {bytes.Replace(good, []byte(`"payloadType"`), []byte(`"x":1,"payloadType"`), 1), "unknown member"},
		"other type":       {resign(func(st map[string]any) { st["predicateType"] = "https://example.com/x" }), "predicateType"},
		"unknown field":    {resign(func(st map[string]any) { pred(st)["extra"] = true }), "unknown member"},
		"bad kind":         {resign(func(st map[string]any) { call0(st)["runtime"].(map[string]any)["kind"] = "magic" }), "kind"},
		"builtin no hash":  {resign(func(st map[string]any) { delete(call0(st)["runtime"].(map[string]any), "executableSha256") }), "executableSha256"},
		"foreign member":   {resign(func(st map[string]any) { call0(st)["runtime"].(map[string]any)["endpointHost"] = "h" }), "does not belong"},
		"time form":        {resign(func(st map[string]any) { call0(st)["started"] = "2026-12-01T10:00:00Z" }), "UTC time"},
		"outside window":   {resign(func(st map[string]any) { call0(st)["finished"] = "2027-12-01T10:00:00.000000000Z" }), "window"},
		"float size":       {resign(func(st map[string]any) { call0(st)["files"].(map[string]any)["count"] = jcs.Number("1.5") }), "integer"},
		"root not covered": {resign(func(st map[string]any) { pred(st)["findings"].(map[string]any)["root"] = strings.Repeat("0", 64) }), "root"},
		"silent failure":   {resign(func(st map[string]any) { delete(call0(st), "reviewDigest") }), "error"},
		"not canonical":    {func() []byte { e, _ := dsse.Sign(dsse.PayloadType, []byte(`{ "_type":1}`), witnessKey, ""); return e }(), "RFC 8785"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			if res := Verify(tc.in, opts(f)); len(tc.in) > 0 && (res.RunnerObservation != Mismatch || !slices.Contains(res.ReasonCodes, CodeMalformed)) {
				t.Fatalf("verify: %s %v", res.RunnerObservation, res.ReasonCodes)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	fx := newFixture(f, nil)
	f.Add(fx.sign(f, witnessKey))
	f.Add([]byte(`{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":""}]}`))
	o := opts(fx)
	f.Fuzz(func(t *testing.T, env []byte) {
		p, err := Parse(env)
		res := Verify(env, o)
		if err != nil {
			if len(bytes.TrimSpace(env)) > 0 && !slices.Contains(res.ReasonCodes, CodeMalformed) {
				t.Fatalf("parse error %v but verify says %v", err, res.ReasonCodes)
			}
			return
		}
		// What parses must re-encode to the very payload: the reader and the writer agree.
		tree, err := p.Statement.Tree()
		if err != nil {
			t.Fatalf("parsed statement does not rebuild: %v", err)
		}
		payload, err := jcs.Canonical(tree)
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256hex(payload); got != p.Digest {
			t.Fatalf("rebuilt payload differs")
		}
	})
}

// TestPublishedExample: the example in docs/review-run.md (an observation the server stack
// published beside its receipt) verifies MATCH with the published keys, and its payload is
// exactly what this package rebuilds from the parsed statement.
func TestPublishedExample(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	key := func(name string) ed25519.PublicKey {
		b, err := hex.DecodeString(strings.TrimSpace(string(read(name))))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	env, receipt := read("example.observation.json"), read("example.receipt.json")
	res := Verify(env, Options{WitnessKey: key("example.witness.publickey.hex"), ReceiptKey: key("example.receipt.publickey.hex"), Receipt: receipt})
	if res.RunnerObservation != Match || res.ObservationDigest != "01eacb5d7e82855005230a3a72831a713c0d85eb5f396851af98da2f345e1993" {
		t.Fatalf("%s %s %v %v", res.RunnerObservation, res.ObservationDigest, res.ReasonCodes, res.Errors)
	}
	p, err := Parse(env)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := Sign(p.Statement, Signer{Key: witnessKey})
	if err != nil || signed.Digest != res.ObservationDigest {
		t.Fatalf("rebuilt digest %v %v", signed, err)
	}
	res = Verify(env, Options{WitnessKey: key("example.receipt.publickey.hex"), ReceiptKey: key("example.receipt.publickey.hex"), Receipt: receipt})
	if !slices.Contains(res.ReasonCodes, CodeWrongWitnessKey) {
		t.Fatalf("%v", res.ReasonCodes)
	}
}

// FindingsRoot is the SHA-256 of the RFC 8785 form of the sorted {"id","severity"} objects,
// for ids that need escapes or sort differently in UTF-16 than in UTF-8 too.
func TestFindingsRootIsTheCanonicalArray(t *testing.T) {
	for _, fs := range [][]Finding{
		nil,
		{{ID: "LG-2", Severity: "low"}, {ID: "LG-1", Severity: "high"}},
		{{ID: "b", Severity: "low"}, {ID: "b", Severity: "high"}, {ID: "a\"\\\n\u0001", Severity: "info"}},
		{{ID: "\U0001F600", Severity: "low"}, {ID: "\uff61", Severity: "low"}, {ID: "é", Severity: "low"}},
		{{ID: "x", Severity: "low"}, {ID: "x", Severity: "low"}},
	} {
		ps := slices.Clone(fs)
		slices.SortFunc(ps, func(a, b Finding) int {
			if c := jcs.CompareKeys(a.ID, b.ID); c != 0 {
				return c
			}
			return jcs.CompareKeys(a.Severity, b.Severity)
		})
		arr := make([]any, len(ps))
		for i, f := range ps {
			arr[i] = map[string]any{"severity": f.Severity, "id": f.ID}
		}
		b, err := jcs.Canonical(arr)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got, want := FindingsRoot(fs), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("FindingsRoot(%q) = %s, want %s (%s)", fs, got, want, b)
		}
	}
}
