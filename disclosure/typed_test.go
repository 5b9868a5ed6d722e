package disclosure

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// oracleVerify is the general path alone, with Verify's panic guard: the oracle the typed
// reading is held to.
func oracleVerify(env []byte, opts Options) (r *Report) {
	defer func() {
		if p := recover(); p != nil {
			r = internalError(V01, p)
			r.PredicateVersionStatus = VersionUnknown
		}
	}()
	return verifyGeneric(env, opts)
}

// sameAsGeneric fails unless Verify reports on env exactly what the general path reports, and
// says whether the typed reading decided it.
func sameAsGeneric(t testing.TB, what string, env []byte, opts Options) bool {
	t.Helper()
	got, want := Verify(env, opts), oracleVerify(env, opts)
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("%s: typed report differs from the general path\ntyped:   %s\ngeneral: %s", what, g, w)
	}
	return readTyped(env, opts) != nil
}

// optionSets are the relying-party inputs every differential case runs under.
func optionSets(t testing.TB, subject string, body *string) []Options {
	t.Helper()
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32)).Public().(ed25519.PublicKey)
	lowOrder := make(ed25519.PublicKey, 32)
	lowOrder[0] = 1
	strictCoverage := ParsePolicy([]byte(`{"name":"strict","blocking":["IDENTITY_UNBOUND"],"require_coverage_status":["COMPLETE"],"time":{"kind":"freshness"}}`))
	broken := ParsePolicy([]byte(`{"name":3}`))
	wrong := strings.Repeat("0", 64)
	return []Options{
		{PublicKey: testPub()},
		{PublicKey: testPub(), ExpectedSubjectDigest: subject, Policy: DefaultPolicy(), Body: body},
		{PublicKey: testPub(), ExpectedSubjectDigest: wrong, Policy: strictCoverage},
		{PublicKey: testPub(), ExpectedSubjectDigest: subject, Policy: broken},
		{PublicKey: other, ExpectedSubjectDigest: subject, Policy: DefaultPolicy()},
		{PublicKey: lowOrder, ExpectedSubjectDigest: subject},
	}
}

func signStatement(t testing.TB, st any) []byte {
	t.Helper()
	payload, err := jcs.Canonical(st)
	if err != nil {
		t.Fatal(err)
	}
	return signPayload(t, payload)
}

func signPayload(t testing.TB, payload []byte) []byte {
	t.Helper()
	env, err := dsse.Sign(dsse.PayloadType, payload, testSigner().Key, "test")
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func statementOf(t testing.TB, env []byte) map[string]any {
	t.Helper()
	tree, err := jcs.Parse(env)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := readStatement(tree)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// richPredicate uses every member the typed reading knows: an issue would need its own.
func richPredicate() *Predicate {
	p := typicalPredicate()
	p.Coverage = Coverage{Status: CoverageComplete, Window: "head", Sources: []string{"diff"},
		ObservedRuns: intp(2), ExpectedRuns: intp(2), CollectionMethod: "lens runs"}
	p.FindingsTotal = len(p.Findings)
	p.Authoring[0].EvidenceSHA256 = strings.Repeat("a", 64)
	p.Findings[0].EvidenceSHA256 = strings.Repeat("b", 64)
	p.TimeClaims = append(p.TimeClaims, TimeClaim{Kind: "reviewStarted", Value: "2026-11-29T17:00:00Z", AssertedBy: "lensgate"},
		TimeClaim{Kind: "reviewCompleted", Value: "2026-11-29T18:00:00Z", AssertedBy: "lens tests"})
	p.Supersession = &Supersession{Supersedes: []Relation{{PriorDigest: strings.Repeat("c", 64), Reason: "new head"}},
		Withdraws: []Relation{{PriorDigest: strings.Repeat("d", 64), Reason: "wrong PR"}}}
	p.Producer = &Producer{ID: "lensgate", KeyID: "SHA256:x"}
	p.PlanDigest = strings.Repeat("e", 64)
	return p
}

func issuePredicate() *Predicate {
	p := typicalPredicate()
	p.Subject = SubjectContext{Kind: KindIssue, Forge: "github.com", RepositoryID: "R_kgDOAbCdEf",
		IssueNodeID: "I_kwDOAbCdEf", CommentNodeID: "IC_kwDO", BodyCoreDigest: strings.Repeat("1", 64),
		RevisedAt: "2026-11-29T17:59:00Z", HumanRef: ""}
	return p
}

// differentialRoots are signed statements the mutation test starts from.
func differentialRoots(t *testing.T) map[string][]byte {
	t.Helper()
	roots := map[string][]byte{}
	d, _ := disclosed(t)
	roots["typical"] = d.Receipt.Envelope
	for name, p := range map[string]*Predicate{"rich": richPredicate(), "issue": issuePredicate()} {
		rc, err := Emit(p, testSigner())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		roots[name] = rc.Envelope
	}
	st := statementOf(t, d.Receipt.Envelope)
	st["predicateType"] = V03.PredicateType()
	roots["typical-v0.3"] = signStatement(t, st)
	v3, err := os.ReadFile(corpusDir + "/agent_review/agent-review-v03-positive-control-verifier-block-is-accepted/predicate.json")
	if err != nil {
		t.Fatal(err)
	}
	pred, err := jcs.Parse(v3)
	if err != nil {
		t.Fatal(err)
	}
	stmt, _, err := buildStatement(pred.(map[string]any), V03)
	if err != nil {
		t.Fatal(err)
	}
	roots["corpus-v0.3-verifier"] = signStatement(t, stmt)
	return roots
}

// TestTypedReadingTakesWellFormedReceipts: the receipts lensgate writes go the typed way.
func TestTypedReadingTakesWellFormedReceipts(t *testing.T) {
	for name, env := range differentialRoots(t) {
		st := statementOf(t, env)
		digest := st["subject"].([]any)[0].(map[string]any)["digest"].(map[string]any)["sha256"].(string)
		for i, o := range optionSets(t, digest, nil) {
			if !sameAsGeneric(t, fmt.Sprintf("%s/options %d", name, i), env, o) {
				t.Errorf("%s/options %d: the typed reading refused a well-formed receipt", name, i)
			}
		}
	}
}

// replacements are the values each member of a root is set to, one at a time.
var replacements = []any{nil, false, true, jcs.Number("0"), jcs.Number("-1"), jcs.Number("3"),
	jcs.Number("1.5"), jcs.Number("1e2"), jcs.Number("9007199254740993"), "", "x", SelfDeclared,
	"0.1.\u0663", "2026-11-29T18:00:00Z", "2026-11-29T18:00:00.5Z", "2026-11-29T18:00:00+01:00",
	CoverageComplete, CoverageUnknown, "fixed", "dismissed", "reviewCompleted", KindIssue,
	strings.Repeat("a", 40), strings.Repeat("a", 64), strings.Repeat("A", 64), "tab\there",
	"quote\"and\\slash", "\u2028\u00e9", []any{}, []any{"x"}, []any{map[string]any{}},
	map[string]any{}, map[string]any{"sha256": strings.Repeat("f", 64)},
	map[string]any{"sha256": strings.Repeat("f", 64), "sha512": "x"}}

// extraKeys are added to every object of a root, one at a time.
var extraKeys = []string{"zz", "", "_type", "verifier", "revisedAt", "issueNodeId", "pullRequestNodeId",
	"commentNodeId", "humanRef", "strata", "integrity", "absenceAssertions", "timeClaims", "observedBy",
	"evidenceRef", "fixCommit", "reason", "findingsRoot", "observations", "planRef", "supersession",
	"producer", "keyId", "corrects", "limitationCodes", "sha256", "name", "digest", "observedAt"}

// paths lists the path of every value in a JSON tree.
func paths(v any, prefix []any, out *[][]any) {
	*out = append(*out, prefix)
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			paths(x[k], append(append([]any{}, prefix...), k), out)
		}
	case []any:
		for i, e := range x {
			paths(e, append(append([]any{}, prefix...), i), out)
		}
	}
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}

// edit sets (or with del, removes) the value at path in a copy of root.
func edit(root any, path []any, val any, del bool) any {
	out := deepCopy(root)
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
		i := path[len(path)-1].(int)
		if del {
			copy(c[i:], c[i+1:])
			c[len(c)-1] = "removed"
		} else {
			c[i] = val
		}
	}
	return out
}

// TestTypedReadingAgreesUnderMutation changes each member of each root in turn (a new value, a
// removal, an added member), signs the result and checks that Verify reports exactly what the
// general path reports; both judge the signed statement, not a broken signature.
func TestTypedReadingAgreesUnderMutation(t *testing.T) {
	cases, typed := 0, 0
	for name, env := range differentialRoots(t) {
		st := statementOf(t, env)
		digest := st["subject"].([]any)[0].(map[string]any)["digest"].(map[string]any)["sha256"].(string)
		opts := optionSets(t, digest, nil)[:3]
		var ps [][]any
		paths(st, nil, &ps)
		check := func(what string, mutated any) {
			payload, err := jcs.Canonical(mutated)
			if err != nil {
				return
			}
			// One relying-party input per case, taken in turn, keeps the run short.
			i := cases % len(opts)
			cases++
			if sameAsGeneric(t, fmt.Sprintf("%s %s/options %d", name, what, i), signPayload(t, payload), opts[i]) {
				typed++
			}
		}
		for _, p := range ps {
			for _, val := range replacements {
				check(fmt.Sprintf("%v = %#v", p, val), edit(st, p, val, false))
			}
			if len(p) > 0 {
				check(fmt.Sprintf("%v removed", p), edit(st, p, nil, true))
			}
		}
		for _, p := range ps {
			if _, isObj := valueAt(st, p).(map[string]any); !isObj {
				continue
			}
			for _, k := range extraKeys {
				for _, val := range []any{"x", strings.Repeat("a", 64)} {
					check(fmt.Sprintf("%v + %q", p, k), edit(st, append(append([]any{}, p...), k), val, false))
				}
			}
		}
		// The same statement, not in canonical form.
		payload, _ := jcs.Canonical(st)
		for i, variant := range [][]byte{
			append([]byte{' '}, payload...),
			bytes.Replace(payload, []byte(`{"_type"`), []byte(`{ "_type"`), 1),
			bytes.Replace(payload, []byte(`lensgate`), []byte(`lens\/gate`), 1),
			bytes.Replace(payload, []byte(`lensgate`), []byte(`len\u0073gate`), 1),
			bytes.Replace(payload, []byte(`:2,`), []byte(`:2.0,`), 1),
			bytes.Replace(payload, []byte(`"_type":"https://in-toto.io/Statement/v1",`), nil, 1),
		} {
			if bytes.Equal(variant, payload) {
				continue
			}
			for j, o := range opts {
				cases++
				if sameAsGeneric(t, fmt.Sprintf("%s non-canonical %d/options %d", name, i, j), signPayload(t, variant), o) {
					t.Errorf("%s non-canonical %d: the typed reading took it", name, i)
				}
			}
		}
	}
	t.Logf("%d cases, %d decided by the typed reading", cases, typed)
}

func valueAt(root any, path []any) any {
	cur := root
	for _, p := range path {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p.(string)]
		case []any:
			cur = c[p.(int)]
		}
	}
	return cur
}

// TestTypedReadingAgreesOnEnvelopes varies the envelope around a good statement.
func TestTypedReadingAgreesOnEnvelopes(t *testing.T) {
	d, base := disclosed(t)
	env := d.Receipt.Envelope
	var m map[string]any
	if err := json.Unmarshal(env, &m); err != nil {
		t.Fatal(err)
	}
	payload, _ := base64.StdEncoding.DecodeString(m["payload"].(string))
	sig := m["signatures"].([]any)[0].(map[string]any)["sig"].(string)
	enc := func(v any) []byte { b, _ := json.Marshal(v); return b }
	url := base64.URLEncoding.EncodeToString(payload)
	bad := base64.StdEncoding.EncodeToString(make([]byte, 64))
	variants := map[string][]byte{
		"as signed": env,
		"compact":   enc(m),
		"url-safe payload": []byte(`{"payload":"` + url + `","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"` +
			sig + `"}]}`),
		"second signature good": []byte(`{"payloadType":"application/vnd.in-toto+json","signatures":[{"keyid":"a","sig":"` + bad +
			`"},{"sig":"` + sig + `","keyid":"b"}],"payload":"` + m["payload"].(string) + `"}`),
		"only a bad signature":    bytes.Replace(env, []byte(sig), []byte(bad), 1),
		"short signature":         bytes.Replace(env, []byte(sig), []byte("AAAA"), 1),
		"long signature":          bytes.Replace(env, []byte(sig), []byte(sig+"AAAA"), 1),
		"signature with newline":  bytes.Replace(env, []byte(sig), []byte(sig[:4]+`\n`+sig[4:]), 1),
		"no signatures":           bytes.Replace(env, []byte(`"signatures": [`), []byte(`"signatures": [], "x": [`), 1),
		"keyid a number":          bytes.Replace(env, []byte(`"sig":`), []byte(`"keyid": 7, "sig":`), 1),
		"extra member":            bytes.Replace(env, []byte(`"payloadType"`), []byte(`"note": "x", "payloadType"`), 1),
		"repeated member":         bytes.Replace(env, []byte(`"payloadType"`), []byte(`"payloadType": "x", "payloadType"`), 1),
		"other payload type":      bytes.Replace(env, []byte(`"application/vnd.in-toto+json"`), []byte(`"application/json"`), 1),
		"escaped payload type":    bytes.Replace(env, []byte(`"application/vnd.in-toto+json"`), []byte(`"application\/vnd.in-toto+json"`), 1),
		"empty payload type":      bytes.Replace(env, []byte(`"application/vnd.in-toto+json"`), []byte(`""`), 1),
		"payload padding broken":  bytes.Replace(env, []byte(`=",`), []byte(`A",`), 1),
		"trailing data":           append(append([]byte{}, env...), '1'),
		"trailing space":          append(append([]byte{}, env...), ' ', '\t'),
		"invalid UTF-8":           bytes.Replace(env, []byte(`"test"`), []byte("\"\xff\""), 1),
		"not an object":           []byte(`[1]`),
		"empty":                   nil,
		"payload empty":           []byte(`{"payload":"","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"` + sig + `"}]}`),
		"signature entry null":    bytes.Replace(env, []byte(`"signatures": [`), []byte(`"signatures": [null, `), 1),
		"signatures not an array": []byte(`{"payload":"` + m["payload"].(string) + `","payloadType":"application/vnd.in-toto+json","signatures":{}}`),
	}
	for name, v := range variants {
		for i, o := range optionSets(t, base.ExpectedSubjectDigest, base.Body) {
			sameAsGeneric(t, fmt.Sprintf("%s/options %d", name, i), v, o)
		}
	}
	if !sameAsGeneric(t, "compact", variants["compact"], base) || !sameAsGeneric(t, "second signature good", variants["second signature good"], base) {
		t.Error("the typed reading refused an envelope of the usual shape")
	}
}

// TestTypedReadingAgreesOnTheCorpus runs every envelope and predicate of the upstream corpus,
// the published receipts and a set of emitted ones through both paths.
func TestTypedReadingAgreesOnTheCorpus(t *testing.T) {
	var envs [][]byte
	files, _ := filepath.Glob(corpusDir + "/*/*/*.json")
	more, _ := filepath.Glob(corpusDir + "/*/*.json")
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, b)
		// A predicate file is signed as each version.
		if v, err := jcs.Parse(b); err == nil && strings.HasSuffix(f, "predicate.json") {
			if pred, ok := v.(map[string]any); ok {
				for _, ver := range []Version{V01, V02, V03} {
					if st, _, err := buildStatement(pred, ver); err == nil {
						envs = append(envs, signStatement(t, st))
					}
				}
			}
		}
	}
	r := rand.New(rand.NewSource(11))
	for i := 0; i < 60; i++ {
		d, err := Disclose("body\n", randomPredicate(r), testSigner())
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, d.Receipt.Envelope)
	}
	typed := 0
	for i, env := range envs {
		subject := ""
		if tree, err := jcs.Parse(env); err == nil {
			if st, _, err := readStatement(tree); err == nil {
				if s, ok := subjectEntry(st); ok {
					d, _ := asObj(s["digest"])
					subject, _ = d["sha256"].(string)
				}
			}
		}
		body := "body\n"
		for j, o := range optionSets(t, subject, &body) {
			if sameAsGeneric(t, fmt.Sprintf("corpus %d/options %d", i, j), env, o) {
				typed++
			}
		}
	}
	t.Logf("%d envelopes, %d verifications decided by the typed reading", len(envs), typed)
}

// TestTypedDecoderAgreesWithTheTree checks the typed values against the parsed tree.
func TestTypedDecoderAgreesWithTheTree(t *testing.T) {
	for name, env := range differentialRoots(t) {
		tree, _ := jcs.Parse(env)
		p, err := readParsed(tree)
		if err != nil {
			t.Fatal(err)
		}
		if err := typedAgreesWithTree(p.payload); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// typedAgreesWithTree decodes payload both ways; when the typed reading accepts it, the
// general parser must accept it as canonical, find no structural issue, and hold the same
// values.
func typedAgreesWithTree(payload []byte) error {
	st, ok := decodeTyped(payload)
	if !ok {
		return nil
	}
	v, canonical, err := jcs.ParseCanonical(payload)
	if err != nil || !canonical {
		return fmt.Errorf("typed reading accepted what the parser refuses or finds not canonical (%v)", err)
	}
	stm := v.(map[string]any)
	pred := stm["predicate"].(map[string]any)
	if is := shapeCheck(stm); len(is) > 0 {
		return fmt.Errorf("typed reading accepted a statement with shape issues %v", is)
	}
	if is := ValidatePredicate(pred, st.version); len(is) > 0 {
		return fmt.Errorf("typed reading accepted a predicate with issues %v", is)
	}
	subj, _ := subjectEntry(stm)
	d, _ := asObj(subj["digest"])
	decl := pred["declaration"].(map[string]any)
	root, hasRoot := decl["findingsRoot"].(string)
	findings, _ := asArr(decl["findings"])
	spans, _ := canonicalFindings(jcs.Member(payload, "predicate"), len(findings))
	times, _ := asObj(pred["times"])
	cov, _ := asObj(pred["coverage"])
	var completed []string
	claims, _ := asArr(decl["timeClaims"])
	for _, c := range claims {
		if m := c.(map[string]any); m["kind"] == "reviewCompleted" {
			completed = append(completed, m["value"].(string))
		}
	}
	var producer []byte
	var producerTree map[string]any
	if prod, ok := asObj(pred["producer"]); ok && has(prod, "verifier") {
		producer = jcs.Member(jcs.Member(payload, "predicate"), "producer")
		producerTree = prod
	}
	want := tStatement{
		version:       st.version,
		predicateType: stm["predicateType"].(string),
		subjectName:   subj["name"].(string),
		subjectDigest: d["sha256"].(string),
		predSpan:      jcs.Member(payload, "predicate"),
		scSpan:        jcs.Member(jcs.Member(payload, "predicate"), "subjectContext"),
		findingSpans:  spans,
		findingsRoot:  root,
		hasRoot:       hasRoot,
		completed:     completed,
		signedAt:      truthy(times["signedAt"]),
		status:        cov["status"].(string),
		producer:      producer,
		producerTree:  producerTree,
	}
	if want.version.PredicateType() != want.predicateType {
		return fmt.Errorf("version %s for %s", want.version, want.predicateType)
	}
	norm := func(s *tStatement) string {
		c := *s
		if len(c.findingSpans) == 0 {
			c.findingSpans = nil
		}
		return fmt.Sprintf("%q", fmt.Sprintf("%+v", c))
	}
	if norm(st) != norm(&want) {
		return fmt.Errorf("typed values differ\ntyped: %s\ntree:  %s", norm(st), norm(&want))
	}
	return nil
}

// FuzzTypedStatement signs arbitrary payloads, so that they reach every rule past the
// signature, and holds the typed reading to the general path: same report under several
// relying-party inputs, and typed values equal to the parsed tree's.
func FuzzTypedStatement(f *testing.F) {
	d, _ := disclosed(f)
	envs := [][]byte{d.Receipt.Envelope}
	for _, p := range []*Predicate{richPredicate(), issuePredicate()} {
		rc, err := Emit(p, testSigner())
		if err != nil {
			f.Fatal(err)
		}
		envs = append(envs, rc.Envelope)
	}
	for _, env := range envs {
		tree, _ := jcs.Parse(env)
		pp, err := readParsed(tree)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pp.payload)
	}
	body := "Fixes the widget parser.\n"
	f.Fuzz(func(t *testing.T, payload []byte) {
		if err := typedAgreesWithTree(payload); err != nil {
			t.Fatal(err)
		}
		env, err := dsse.Sign(dsse.PayloadType, payload, testSigner().Key, "")
		if err != nil {
			return
		}
		subject := ""
		if st, ok := decodeTyped(payload); ok {
			subject = st.subjectDigest
		}
		for i, o := range optionSets(t, subject, &body)[:3] {
			sameAsGeneric(t, fmt.Sprintf("options %d", i), env, o)
		}
	})
}

// FuzzTypedEnvelope holds the typed envelope reading to the general path on arbitrary
// envelopes.
func FuzzTypedEnvelope(f *testing.F) {
	d, opts := disclosed(f)
	f.Add(d.Receipt.Envelope)
	var m map[string]any
	_ = json.Unmarshal(d.Receipt.Envelope, &m)
	compact, _ := json.Marshal(m)
	f.Add(compact)
	f.Fuzz(func(t *testing.T, env []byte) {
		sameAsGeneric(t, "envelope", env, opts)
		o := opts
		o.Body = nil
		sameAsGeneric(t, "envelope without body", env, o)
	})
}

// TestTypedReadingAllocatesLess guards the point of the typed reading without timing it.
func TestTypedReadingAllocatesLess(t *testing.T) {
	d, opts := disclosed(t)
	opts.Body = nil
	allocs := testing.AllocsPerRun(20, func() { Verify(d.Receipt.Envelope, opts) })
	generic := testing.AllocsPerRun(20, func() { oracleVerify(d.Receipt.Envelope, opts) })
	if allocs*2 > generic {
		t.Errorf("typed verify makes %.0f allocations, the general path %.0f", allocs, generic)
	}
}

// TestTypedReadingAgreesOnRandomEdits is a seeded, byte-level companion of the fuzz targets:
// random edits of signed payloads (re-signed, so every rule past the signature is reached)
// and of envelopes, each judged by both paths.
func TestTypedReadingAgreesOnRandomEdits(t *testing.T) {
	roots := differentialRoots(t)
	var payloads, envs [][]byte
	for _, env := range roots {
		tree, _ := jcs.Parse(env)
		p, err := readParsed(tree)
		if err != nil {
			t.Fatal(err)
		}
		payloads, envs = append(payloads, p.payload), append(envs, env)
	}
	// Bytes that matter to JSON and to the rules.
	alphabet := []byte(`{}[]:,"\ 0123456789-.eEtrufalsn` + "abcdefABCDEF\x00\x1f\x7f\xc3\xa9\xff")
	mutate := func(r *rand.Rand, in []byte) []byte {
		s := append([]byte{}, in...)
		for k := 0; k < 1+r.Intn(3); k++ {
			j := r.Intn(len(s))
			switch r.Intn(4) {
			case 0:
				s[j] = alphabet[r.Intn(len(alphabet))]
			case 1:
				s = append(s[:j], s[j+1:]...)
			case 2:
				s = append(s[:j], append([]byte{alphabet[r.Intn(len(alphabet))]}, s[j:]...)...)
			case 3: // repeat a span, which repeats members and elements
				e := min(len(s), j+1+r.Intn(40))
				s = append(s[:e], append(append([]byte{}, s[j:e]...), s[e:]...)...)
			}
		}
		return s
	}
	r := rand.New(rand.NewSource(3))
	body := "Fixes the widget parser.\n"
	typed := 0
	for i := 0; i < 4000; i++ {
		p := mutate(r, payloads[i%len(payloads)])
		if err := typedAgreesWithTree(p); err != nil {
			t.Fatalf("payload edit %d: %v", i, err)
		}
		o := optionSets(t, "", &body)[i%3]
		if st, ok := decodeTyped(p); ok {
			o.ExpectedSubjectDigest = st.subjectDigest
		}
		if sameAsGeneric(t, fmt.Sprintf("payload edit %d", i), signPayload(t, p), o) {
			typed++
		}
		sameAsGeneric(t, fmt.Sprintf("envelope edit %d", i), mutate(r, envs[i%len(envs)]), o)
	}
	t.Logf("%d payload edits decided by the typed reading", typed)
}
