package disclosure

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/internal/digest"
)

func testSigner() Signer {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i)
	}
	return Signer{Key: ed25519.NewKeyFromSeed(seed)}
}

func testPub() ed25519.PublicKey { return testSigner().Key.Public().(ed25519.PublicKey) }

func intp(i int) *int { return &i }

// typicalPredicate is a v0.2 pull request review with five findings.
func typicalPredicate() *Predicate {
	sha := func(c string) string { return strings.Repeat(c, 40) }
	return &Predicate{
		ReviewID: "lensgate/acme/widgets#42/1",
		Subject: SubjectContext{
			Kind: KindPullRequest, Forge: "github.com", RepositoryID: "R_kgDOAbCdEf",
			PullRequestNodeID: "PR_kwDOAbCdEf", HeadSHA: sha("b"), BaseSHA: sha("c"),
			ReviewedDiffDigest: strings.Repeat("d", 64), HumanRef: "github-pr:acme/widgets#42",
			BodyCoreDigest: strings.Repeat("a", 64),
		},
		Authoring:  []AssuredItem{{AssertedBy: "pull request author"}},
		ReviewRuns: []AssuredItem{{AssertedBy: "lensgate lens security"}, {AssertedBy: "lensgate lens tests"}},
		Findings: []Finding{
			{ID: "security-1", Severity: "high", Title: "token written to the log", Disposition: "open"},
			{ID: "security-2", Severity: "medium", Title: "unbounded read of the request body", Disposition: "fixed", FixCommit: sha("e")},
			{ID: "tests-1", Severity: "low", Title: "no test for the empty input", Disposition: "deferred"},
			{ID: "tests-2", Severity: "info", Title: "table test could cover CRLF", Disposition: "dismissed", Reason: "covered by the fuzz target"},
			{ID: "tests-3", Severity: "critical", Title: "race on the shared map", Disposition: "open"},
		},
		FindingsTotal: 5,
		NonClaims:     []string{"does not prove the change is correct", "does not prove who wrote it"},
		TimeClaims:    []TimeClaim{{Kind: "reviewCompleted", Value: "2026-11-29T18:00:00Z", AssertedBy: "lensgate"}},
		Coverage: Coverage{Status: CoveragePartial, ObservedRuns: intp(2), ExpectedRuns: intp(2),
			KnownGaps: []string{"generated files were not reviewed"}},
		Limitations: []string{"self-declared by lensgate", "offline verification cannot establish currency"},
		DeclaredAt:  time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC),
		SignedAt:    time.Date(2026, 11, 29, 18, 0, 1, 0, time.UTC),
		Producer:    &Producer{ID: "lensgate"},
	}
}

func TestWorkedExampleFromTheCorpus(t *testing.T) {
	env := readFile(t, corpusDir+"/agent_review/agent-review-positive-control-valid-self-declared/envelope.json")
	rep := VerifyVersion(V01, env, Options{PublicKey: testPub(),
		ExpectedSubjectDigest: "f2fca8ac146b3236c8f37533890f42350a8562a6426ec7d96c129e04de3c662a"})
	if !rep.OK || rep.ReceiptDigest != "2c029c6099365c8393981ea01939f8a57c22b8416a9395e3418ecb39fe68b66e" ||
		rep.SubjectName != "github-pr:R_kgDOAbCdEf:PR_kwDOAbCdEf" {
		t.Fatalf("ok=%v digest=%s name=%s errors=%v", rep.OK, rep.ReceiptDigest, rep.SubjectName, rep.Errors)
	}
	f1 := map[string]any{"disposition": "fixed", "fixCommit": strings.Repeat("a", 40), "id": "F1", "severity": "high", "title": "unbalanced marker accepted"}
	f2 := map[string]any{"disposition": "dismissed", "id": "F2", "reason": "covered by the limitations block", "severity": "low", "title": "wording too broad"}
	for _, order := range [][]any{{f1, f2}, {f2, f1}} {
		root, err := FindingsRoot(order)
		if err != nil || root != "f763c3864fda0dc695e03006ec9a6573465f546cc0c316c4511267da80c1af06" {
			t.Fatalf("findings root %s %v", root, err)
		}
	}
	if root, _ := FindingsRoot(nil); root != EmptyFindingsRoot {
		t.Fatalf("empty root %s", root)
	}
}

// TestCorpusEnvelopesRegenerateByteForByte re-emits every corpus envelope signed by the corpus
// key from its own predicate: Ed25519 is deterministic, so equal bytes prove equal JCS.
func TestCorpusEnvelopesRegenerateByteForByte(t *testing.T) {
	cases := []string{
		"agent-review-positive-control-valid-self-declared",
		"agent-review-counter-proof-findings-root-covers-the-list",
		"agent-review-counter-proof-receipt-does-not-travel-between-subjects",
		"agent-review-positive-control-absent-expectation-is-reported",
		"agent-review-v02-positive-control-legacy-v01-is-marked-legacy",
		"agent-review-v02-positive-control-current-v02-is-marked-current",
	}
	for _, c := range cases {
		env := readFile(t, corpusDir+"/agent_review/"+c+"/envelope.json")
		tree, err := jcs.Parse(env)
		if err != nil {
			t.Fatal(err)
		}
		st, payload, err := readStatement(tree)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := versionOfType(st["predicateType"].(string))
		pred := st["predicate"].(map[string]any)
		if c == "agent-review-counter-proof-findings-root-covers-the-list" {
			// The emitter refuses a root that does not cover the list; sign it the raw way.
			got, _ := jcs.Canonical(st)
			if !bytes.Equal(got, payload) {
				t.Errorf("%s: canonical form differs", c)
			}
			continue
		}
		rc, err := EmitTree(pred, v, testSigner())
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if !bytes.Equal(rc.Envelope, env) {
			t.Errorf("%s: regenerated envelope differs\n%s\n%s", c, rc.Envelope, env)
		}
	}
}

type expectedCase struct {
	Expected          map[string]any `json:"expected"`
	PredicateVersion  *string        `json:"predicateVersion"`
	SubjectDigest     string         `json:"subject_digest"`
	ValidatorFindings []struct {
		Text string  `json:"text"`
		Code *string `json:"code"`
	} `json:"validator_findings"`
	DerivedLimitationCodes []string `json:"derived_limitation_codes"`
}

// TestCounterProofsFailForTheirIntendedReason checks that each refused predicate is refused
// with the same number of findings and the same codes as the reference records.
func TestCounterProofsFailForTheirIntendedReason(t *testing.T) {
	raw := readFile(t, corpusDir+"/expected-results.json")
	var er struct {
		Cases map[string]expectedCase `json:"conformance_cases"`
	}
	if err := json.Unmarshal(raw, &er); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for id, c := range er.Cases {
		pj, err := jcs.Parse(mustReadFile(corpusDir + "/agent_review/" + id + "/predicate.json"))
		if err != nil {
			continue // not a predicate case
		}
		v := V01
		if c.PredicateVersion != nil {
			v = Version(*c.PredicateVersion)
			if markerVersion(pj.(map[string]any)) == V03 {
				v = V03
			}
		}
		issues := ValidatePredicate(pj, v)
		if len(issues) != len(c.ValidatorFindings) {
			t.Errorf("%s: %d findings %v, reference has %d", id, len(issues), issues, len(c.ValidatorFindings))
			continue
		}
		for i, want := range c.ValidatorFindings {
			wantCode := ""
			if want.Code != nil {
				wantCode = *want.Code
			}
			if issues[i].Code != wantCode {
				t.Errorf("%s: finding %d code %q, want %q (%s)", id, i, issues[i].Code, wantCode, want.Text)
			}
		}
		if c.SubjectDigest != "" {
			if d, _ := SubjectDigest(pj.(map[string]any)["subjectContext"]); d != c.SubjectDigest {
				t.Errorf("%s: subject digest %s, want %s", id, d, c.SubjectDigest)
			}
		}
		if c.DerivedLimitationCodes != nil && strings.Join(LimitationCodes(pj), ",") != strings.Join(c.DerivedLimitationCodes, ",") {
			t.Errorf("%s: derived codes %v, want %v", id, LimitationCodes(pj), c.DerivedLimitationCodes)
		}
		checked++
	}
	if checked != 21 {
		t.Errorf("checked %d predicate cases, want 21", checked)
	}
}

// mustReadFile returns the file's bytes, or nil when it does not exist.
func mustReadFile(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

func disclosed(t testing.TB) (*Disclosure, Options) {
	t.Helper()
	d, err := Disclose("Fixes the widget parser.\n\nCloses #41.\n", typicalPredicate(), testSigner())
	if err != nil {
		t.Fatal(err)
	}
	body := d.Body
	return d, Options{PublicKey: testPub(), ExpectedSubjectDigest: d.Receipt.SubjectDigest,
		Body: &body, Policy: DefaultPolicy()}
}

func TestDiscloseRoundTrip(t *testing.T) {
	d, opts := disclosed(t)
	rep := Verify(d.Receipt.Envelope, opts)
	if !rep.OK || !rep.Automation.SafeForAutomation {
		t.Fatalf("not ok: %v %v", rep.Errors, rep.Automation.AutomationBlockers)
	}
	want := map[string]string{
		"body": rep.BodyCoreDigestMatch, "disclosure": rep.DisclosureCoreDigestMatch, "visible": rep.VisibleBlockRendering,
	}
	for k, v := range want {
		if v != MatchMatch {
			t.Errorf("%s = %s", k, v)
		}
	}
	if rep.PredicateVersionStatus != VersionCurrent || d.Receipt.Version != V02 {
		t.Errorf("version %s %s", rep.PredicateVersionStatus, d.Receipt.Version)
	}
	if strOr(rep.PolicyDecision) != DecisionAccept || rep.EventTimeStatus != TimeSelfDeclared ||
		rep.ObservationTimeStatus != TimeAbsent || rep.SignatureTimeStatus != TimeSelfDeclared ||
		rep.ExternalTimeStatus != TimeNotEvaluated || rep.Currentness != CurrentnessUnknown {
		t.Errorf("axes: %+v", rep)
	}
	if !strings.Contains(d.Block, "- **Findings:** 5 total (1 deferred, 1 dismissed, 1 fixed, 2 open)") ||
		!strings.Contains(d.Block, "- **Review:** 2 run(s), coverage PARTIAL") {
		t.Errorf("block:\n%s", d.Block)
	}
	if lines, _ := block.Parse(d.Body); block.ReceiptDigest(lines) != digest.SHA256Hex(d.Receipt.Envelope) {
		t.Error("Receipt line does not carry the envelope file hash")
	}
	// A later edit of the author text, with the block kept, must be detected.
	edited := strings.Replace(d.Body, "Closes #41.", "Closes #40.", 1)
	opts.Body = &edited
	if r := Verify(d.Receipt.Envelope, opts); r.OK || r.BodyCoreDigestMatch != MatchMismatch {
		t.Errorf("edited body: ok=%v body=%s", r.OK, r.BodyCoreDigestMatch)
	}
}

func flipPayloadByte(t testing.TB, env []byte, i int) []byte {
	var m map[string]any
	if err := json.Unmarshal(env, &m); err != nil {
		t.Fatal(err)
	}
	p, _ := base64.StdEncoding.DecodeString(m["payload"].(string))
	p[i] ^= 0x01
	m["payload"] = base64.StdEncoding.EncodeToString(p)
	out, _ := json.Marshal(m)
	return out
}

func payloadIndex(t testing.TB, env []byte, sub string) int {
	tree, _ := jcs.Parse(env)
	_, payload, err := readStatement(tree)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(payload, []byte(sub))
	if i < 0 {
		t.Fatalf("%q not in payload", sub)
	}
	return i
}

func resign(t testing.TB, env []byte, edit func(st map[string]any)) []byte {
	t.Helper()
	tree, _ := jcs.Parse(env)
	st, _, err := readStatement(tree)
	if err != nil {
		t.Fatal(err)
	}
	edit(st)
	payload, err := jcs.Canonical(st)
	if err != nil {
		t.Fatal(err)
	}
	out, err := dsse.Sign(dsse.PayloadType, payload, testSigner().Key, "")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTamperTurnsTheRightAxis changes one thing at a time and checks the axis that must see it.
func TestTamperTurnsTheRightAxis(t *testing.T) {
	d, base := disclosed(t)
	env := d.Receipt.Envelope
	var envMap map[string]any
	_ = json.Unmarshal(env, &envMap)
	sig := envMap["signatures"].([]any)[0].(map[string]any)["sig"].(string)
	sigBytes, _ := base64.StdEncoding.DecodeString(sig)
	sigBytes[10] ^= 0x80
	badSig := bytes.Replace(env, []byte(sig), []byte(base64.StdEncoding.EncodeToString(sigBytes)), 1)
	otherKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x20}, 32))
	foreign, _ := EmitTree(mustTree(t, typicalPredicate(), d), V02, Signer{Key: otherKey})

	type want struct {
		check   func(r *Report) bool
		blocker string
	}
	bodyWith := func(s string) *string { return &s }
	tests := []struct {
		name string
		env  []byte
		mod  func(o *Options)
		want want
	}{
		{"payload byte", flipPayloadByte(t, env, payloadIndex(t, env, "token written")), nil, want{func(r *Report) bool { return isFalse(r.CryptoOK) }, BlockerCryptoNotOK}},
		{"signature byte", badSig, nil, want{func(r *Report) bool { return isFalse(r.CryptoOK) }, BlockerCryptoNotOK}},
		{"foreign key", foreign.Envelope, nil, want{func(r *Report) bool { return isFalse(r.CryptoOK) }, BlockerCryptoNotOK}},
		{"payloadType", bytes.Replace(env, []byte("in-toto+json"), []byte("in-toto+jsoN"), 1), nil,
			want{func(r *Report) bool { return isFalse(r.CryptoOK) && isTrue(r.StructureOK) }, BlockerCryptoNotOK}},
		{"expected subject", env, func(o *Options) { o.ExpectedSubjectDigest = flipHex(o.ExpectedSubjectDigest, 7) },
			want{func(r *Report) bool { return isFalse(r.SubjectBindingOK) && r.ExpectedSubjectMatch == MatchMismatch }, BlockerReferencesNotResolved}},
		{"body outside the block", env, func(o *Options) { o.Body = bodyWith(strings.Replace(*o.Body, "widget", "wodget", 1)) },
			want{func(r *Report) bool {
				return r.BodyCoreDigestMatch == MatchMismatch && r.DisclosureCoreDigestMatch == MatchMatch
			}, BlockerReceiptNotOK}},
		{"body inside the block", env, func(o *Options) { o.Body = bodyWith(strings.Replace(*o.Body, "5 total", "4 total", 1)) },
			want{func(r *Report) bool {
				return r.DisclosureCoreDigestMatch == MatchMismatch && r.BodyCoreDigestMatch == MatchMatch && r.VisibleBlockRendering == MatchMismatch
			}, BlockerReceiptNotOK}},
		{"second block in body", env, func(o *Options) { o.Body = bodyWith(*o.Body + d.Block) },
			want{func(r *Report) bool { return r.BodyCoreDigestMatch == MatchNotMeasurable }, BlockerReceiptNotOK}},
		{"subject digest re-signed", resign(t, env, func(st map[string]any) {
			st["subject"].([]any)[0].(map[string]any)["digest"] = map[string]any{"sha256": strings.Repeat("0", 64)}
		}), func(o *Options) { o.Body = nil },
			want{func(r *Report) bool { return isFalse(r.InternalSubjectConsistencyOK) && isFalse(r.SubjectBindingOK) }, BlockerReferencesNotResolved}},
		{"findings root re-signed", resign(t, env, func(st map[string]any) {
			st["predicate"].(map[string]any)["declaration"].(map[string]any)["findingsRoot"] = strings.Repeat("1", 64)
		}), func(o *Options) { o.Body = nil },
			want{func(r *Report) bool { return isFalse(r.FindingsRootOK) && isTrue(r.StructureOK) }, BlockerReferencesNotResolved}},
		{"assurance raised and re-signed", resign(t, env, func(st map[string]any) {
			st["predicate"].(map[string]any)["declaration"].(map[string]any)["authoring"].([]any)[0].(map[string]any)["assurance"] = IndependentlyWitnessed
		}), func(o *Options) { o.Body = nil },
			want{func(r *Report) bool { return isFalse(r.AssuranceOK) && isFalse(r.StructureOK) }, BlockerStructureNotOK}},
		{"non-canonical payload", func() []byte {
			tree, _ := jcs.Parse(env)
			_, payload, _ := readStatement(tree)
			out, _ := dsse.Sign(dsse.PayloadType, append([]byte(" "), payload...), testSigner().Key, "")
			return out
		}(), nil, want{func(r *Report) bool { return isTrue(r.CryptoOK) && isFalse(r.StructureOK) }, BlockerStructureNotOK}},
		{"time claims conflict", resign(t, env, func(st map[string]any) {
			decl := st["predicate"].(map[string]any)["declaration"].(map[string]any)
			decl["timeClaims"] = append(decl["timeClaims"].([]any), map[string]any{"kind": "reviewCompleted",
				"value": "2026-11-29T19:00:00Z", "assertedBy": "lensgate", "assurance": SelfDeclared})
		}), func(o *Options) { o.Body = nil },
			want{func(r *Report) bool {
				return isFalse(r.TimeConsistencyOK) && r.EventTimeStatus == TimeConflict && slices.Contains(r.ReasonCodes, CodeTimeClaimsConflict)
			}, BlockerReceiptNotOK}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := base
			if tt.mod != nil {
				tt.mod(&opts)
			}
			r := Verify(tt.env, opts)
			if r.OK {
				t.Fatal("tampered receipt verified ok")
			}
			if !tt.want.check(r) {
				b, _ := json.MarshalIndent(r, "", " ")
				t.Fatalf("wrong axis:\n%s", b)
			}
			if !slices.Contains(r.Automation.AutomationBlockers, tt.want.blocker) {
				t.Fatalf("blockers %v lack %s", r.Automation.AutomationBlockers, tt.want.blocker)
			}
		})
	}
}

func flipHex(h string, i int) string {
	b := []byte(h)
	if b[i] == '0' {
		b[i] = '1'
	} else {
		b[i] = '0'
	}
	return string(b)
}

func mustTree(t testing.TB, p *Predicate, d *Disclosure) map[string]any {
	p.Subject.BodyCoreDigest, _ = block.BodyCoreDigest(d.Body)
	p.Subject.DisclosureCoreDigest, _ = block.DisclosureCoreDigest(d.Body)
	tree, err := p.Tree()
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// TestEveryByteMatters flips each byte of the payload, the signature, the body and the expected
// subject digest in turn; no single change may leave the receipt ok.
func TestEveryByteMatters(t *testing.T) {
	d, base := disclosed(t)
	env := d.Receipt.Envelope
	tree, _ := jcs.Parse(env)
	_, payload, _ := readStatement(tree)
	for i := range payload {
		if r := Verify(flipPayloadByte(t, env, i), base); r.OK || !isFalse(r.CryptoOK) && r.PredicateVersionStatus != VersionUnknown {
			t.Fatalf("payload byte %d: ok=%v crypto=%v", i, r.OK, r.CryptoOK)
		}
	}
	var m map[string]any
	_ = json.Unmarshal(env, &m)
	sig, _ := base64.StdEncoding.DecodeString(m["signatures"].([]any)[0].(map[string]any)["sig"].(string))
	for i := range sig {
		s := bytes.Clone(sig)
		s[i] ^= 0x01
		m["signatures"] = []any{map[string]any{"sig": base64.StdEncoding.EncodeToString(s)}}
		e, _ := json.Marshal(m)
		if r := Verify(e, base); r.OK || !isFalse(r.CryptoOK) {
			t.Fatalf("signature byte %d: ok=%v", i, r.OK)
		}
	}
	// The Receipt line's value is a locator and masked by design; every other byte counts.
	lines, _ := block.Parse(d.Body)
	loc := strings.Index(d.Body, block.ReceiptDigest(lines))
	for i := 0; i < len(d.Body); i++ {
		if i >= loc && i < loc+64 {
			continue
		}
		b := []byte(d.Body)
		b[i] ^= 0x01
		body := string(b)
		opts := base
		opts.Body = &body
		r := Verify(env, opts)
		if r.OK && r.VisibleBlockRendering == MatchMatch {
			t.Fatalf("body byte %d (%q) changed without detection", i, d.Body[i])
		}
	}
	for i := range base.ExpectedSubjectDigest {
		opts := base
		opts.ExpectedSubjectDigest = flipHex(opts.ExpectedSubjectDigest, i)
		if r := Verify(env, opts); r.OK || r.ExpectedSubjectMatch != MatchMismatch {
			t.Fatalf("subject digest char %d: ok=%v", i, r.OK)
		}
	}
}

func TestEmitterRefusesWhatItCannotClaim(t *testing.T) {
	edit := func(f func(p map[string]any)) map[string]any {
		p := typicalPredicate()
		tree, err := p.Tree()
		if err != nil {
			t.Fatal(err)
		}
		f(tree)
		return tree
	}
	decl := func(p map[string]any) map[string]any { return p["declaration"].(map[string]any) }
	tests := map[string]struct {
		pred map[string]any
		code string
	}{
		"runner-observed authoring": {edit(func(p map[string]any) {
			decl(p)["authoring"].([]any)[0].(map[string]any)["assurance"] = RunnerObserved
		}), ""},
		"platform-attested time claim": {edit(func(p map[string]any) {
			decl(p)["timeClaims"].([]any)[0].(map[string]any)["assurance"] = PlatformAttested
		}), ""},
		"observations": {edit(func(p map[string]any) {
			p["observations"] = []any{map[string]any{"observer": map[string]any{"id": "x"}}}
		}), ""},
		"anchored time": {edit(func(p map[string]any) { p["times"].(map[string]any)["anchoredAt"] = "2026-11-29T18:00:00Z" }), ""},
		"observed time": {edit(func(p map[string]any) { p["times"].(map[string]any)["observedAt"] = "2026-11-29T18:00:00Z" }), ""},
		"short fixCommit": {edit(func(p map[string]any) {
			decl(p)["findings"].([]any)[1].(map[string]any)["fixCommit"] = "eeeeeee"
		}), CodeFixCommitNotFullSHA},
		"root not covering the list": {edit(func(p map[string]any) { decl(p)["findingsRoot"] = EmptyFindingsRoot }), ""},
		"root missing":               {edit(func(p map[string]any) { delete(decl(p), "findingsRoot") }), CodeFindingsRootMissing},
		"typed limitation codes":     {edit(func(p map[string]any) { p["limitationCodes"] = []any{LimitNotQualityAttestation} }), ""},
		"unknown top-level field":    {edit(func(p map[string]any) { p["verdict"] = "pass" }), ""},
		"unknown finding field":      {edit(func(p map[string]any) { decl(p)["findings"].([]any)[0].(map[string]any)["line"] = "1" }), ""},
		"duplicate finding id": {edit(func(p map[string]any) {
			decl(p)["findings"].([]any)[1].(map[string]any)["id"] = "security-1"
		}), ""},
		"unlisted finding without gap": {edit(func(p map[string]any) {
			decl(p)["findingsTotal"] = jcs.Number("9")
			p["coverage"].(map[string]any)["knownGaps"] = []any{}
		}), ""},
		"complete with gaps": {edit(func(p map[string]any) {
			c := p["coverage"].(map[string]any)
			c["status"], c["sources"], c["window"], c["collectionMethod"] = CoverageComplete, []any{"diff"}, "head", "api"
		}), CodeCoverageWithGaps},
		"complete under expectation": {edit(func(p map[string]any) {
			c := p["coverage"].(map[string]any)
			c["status"], c["sources"], c["window"], c["collectionMethod"] = CoverageComplete, []any{"diff"}, "head", "api"
			c["knownGaps"], c["observedRuns"] = []any{}, jcs.Number("1")
		}), CodeCoverageUnderExpectation},
		"issue without revisedAt": {edit(func(p map[string]any) {
			sc := p["subjectContext"].(map[string]any)
			sc["kind"], sc["issueNodeId"] = KindIssue, "I_x"
			delete(sc, "pullRequestNodeId")
			delete(sc, "headSha")
			delete(sc, "baseSha")
			delete(sc, "reviewedDiffDigest")
		}), ""},
		"conflicting reviewCompleted claims": {edit(func(p map[string]any) {
			tc := decl(p)["timeClaims"].([]any)[0].(map[string]any)
			other := map[string]any{"kind": tc["kind"], "value": "2026-11-29T17:00:00Z", "assertedBy": "lensgate", "assurance": SelfDeclared}
			decl(p)["timeClaims"] = append(decl(p)["timeClaims"].([]any), other)
		}), CodeTimeClaimsConflict},
		"month 13": {edit(func(p map[string]any) { p["times"].(map[string]any)["declaredAt"] = "2026-13-01T00:00:00Z" }), ""},
		"time claim that is not a time": {edit(func(p map[string]any) {
			decl(p)["timeClaims"].([]any)[0].(map[string]any)["value"] = "yesterday"
		}), ""},
		"time claim with an offset": {edit(func(p map[string]any) {
			decl(p)["timeClaims"].([]any)[0].(map[string]any)["value"] = "2026-11-29T18:00:00+01:00"
		}), ""},
		"issue revised at hour 25": {edit(func(p map[string]any) {
			sc := p["subjectContext"].(map[string]any)
			sc["kind"], sc["issueNodeId"], sc["revisedAt"] = KindIssue, "I_x", "2026-11-29T25:00:00Z"
			for _, k := range []string{"pullRequestNodeId", "headSha", "baseSha", "reviewedDiffDigest"} {
				delete(sc, k)
			}
		}), ""},
		"named observer on a self-declared run": {edit(func(p map[string]any) {
			decl(p)["reviewRuns"].([]any)[0].(map[string]any)["observedBy"] = "github-actions"
		}), ""},
		"extra field on a run": {edit(func(p map[string]any) {
			decl(p)["reviewRuns"].([]any)[0].(map[string]any)["independentlyWitnessed"] = true
		}), ""},
		"verifier block with v0.2 emitter explicit v0.1": {edit(func(p map[string]any) {
			p["producer"].(map[string]any)["verifier"] = map[string]any{}
		}), CodeVerifierBlockInvalid},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := EmitTree(tt.pred, "", testSigner())
			var refused *RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("not refused: %v", err)
			}
			if tt.code != "" && !slices.Contains(refused.Codes(), tt.code) {
				t.Fatalf("codes %v lack %s: %v", refused.Codes(), tt.code, refused)
			}
		})
	}
}

// An explicit version is honoured: v0.3 needs a verifier block, v0.2 refuses one.
func TestExplicitVersionIsNotSilentlyChanged(t *testing.T) {
	tree, err := typicalPredicate().Tree()
	if err != nil {
		t.Fatal(err)
	}
	var refused *RefusedError
	if _, err := EmitTree(tree, V03, testSigner()); !errors.As(err, &refused) {
		t.Errorf("v0.3 without a block: %v", err)
	}
	tree["producer"].(map[string]any)["verifier"] = map[string]any{"implementation": "lensgate", "version": "1.0.0",
		"build":     map[string]any{"digest": map[string]any{"sha256": EmptyFindingsRoot}, "source": "source-tree"},
		"assurance": SelfDeclared}
	if _, err := EmitTree(tree, V02, testSigner()); !errors.As(err, &refused) {
		t.Errorf("v0.2 with a block: %v", err)
	}
	rc, err := EmitTree(tree, "", testSigner())
	if err != nil || rc.Version != V03 {
		t.Errorf("auto with a block: %v %v", rc, err)
	}
}

func TestIssueProfileRoundTrip(t *testing.T) {
	p := typicalPredicate()
	p.Subject = SubjectContext{Kind: KindIssue, Forge: "github.com", RepositoryID: "R_1", IssueNodeID: "I_kwDO1",
		RevisedAt: "2026-11-29T17:59:00Z"}
	d, err := Disclose("Steps to reproduce:\r\n1. run it\r\n", p, testSigner())
	if err != nil {
		t.Fatal(err)
	}
	if d.Receipt.SubjectName != "github-issue:R_1:I_kwDO1" {
		t.Errorf("subject name %s", d.Receipt.SubjectName)
	}
	r := Verify(d.Receipt.Envelope, Options{PublicKey: testPub(), ExpectedSubjectDigest: d.Receipt.SubjectDigest,
		Body: &d.Body, Policy: DefaultPolicy()})
	if !r.OK || r.BodyCoreDigestMatch != MatchMatch || r.DisclosureCoreDigestMatch != MatchMatch {
		t.Fatalf("issue receipt: %v", r.Errors)
	}
}

func TestCap1Rules(t *testing.T) {
	stratum := func() map[string]any {
		return map[string]any{"id": "files", "basis": map[string]any{"kind": "enumeration", "enumeration_method": "git diff --name-only"},
			"eligible": jcs.Number("3"), "examined": jcs.Number("2"),
			"unexamined": []any{map[string]any{"unit": "gen.pb.go", "disposition": "out_of_scope"}}, "supports": []any{"diff"}}
	}
	cov := func(f func(c, s map[string]any)) map[string]any {
		s := stratum()
		c := map[string]any{"status": CoverageComplete, "strata": []any{s},
			"integrity": map[string]any{"complete": true}, "absenceAssertions": []any{map[string]any{"stratum": "files"}}}
		f(c, s)
		return c
	}
	tests := map[string]struct {
		cov  map[string]any
		code string
	}{
		"valid":                  {cov(func(c, s map[string]any) {}), ""},
		"R0 empty strata":        {cov(func(c, s map[string]any) { c["strata"] = []any{} }), CodeCap1Shape},
		"R0 complete not bool":   {cov(func(c, s map[string]any) { c["integrity"] = map[string]any{"complete": "yes"} }), CodeCap1Shape},
		"R0 duplicate ids":       {cov(func(c, s map[string]any) { c["strata"] = []any{s, stratum()} }), CodeCap1Shape},
		"R5 examined > eligible": {cov(func(c, s map[string]any) { s["examined"] = jcs.Number("4") }), CodeCap1CountsMalformed},
		"R5 float count":         {cov(func(c, s map[string]any) { s["eligible"] = jcs.Number("3.0") }), CodeCap1CountsMalformed},
		"R1 silent remainder":    {cov(func(c, s map[string]any) { s["eligible"] = jcs.Number("5") }), CodeCap1SilentRemainder},
		"R2 open disposition": {cov(func(c, s map[string]any) {
			s["unexamined"] = []any{map[string]any{"unit": "x", "disposition": "skipped"}}
		}), CodeCap1DispositionNotClosed},
		"R3 withheld without digest": {cov(func(c, s map[string]any) {
			s["unexamined"] = []any{map[string]any{"unit": "x", "disposition": "withheld"}}
		}), CodeCap1WithheldWithoutDigest},
		"R4 catalogue without digest": {cov(func(c, s map[string]any) { s["basis"] = map[string]any{"kind": "catalogue"} }), CodeCap1BasisMissing},
		"R6 unknown stratum": {cov(func(c, s map[string]any) {
			c["absenceAssertions"] = []any{map[string]any{"stratum": "nope"}}
		}), CodeCap1AbsenceUnscoped},
		"R7 failed while complete": {cov(func(c, s map[string]any) {
			s["unexamined"] = []any{map[string]any{"unit": "x", "disposition": "failed"}}
		}), CodeCap1IncompleteClaimedClean},
		"R7 incomplete without cap": {cov(func(c, s map[string]any) {
			c["integrity"] = map[string]any{"complete": false}
			c["status"] = CoveragePartial
		}), CodeCap1IncompleteClaimedClean},
		"R8 no supports":            {cov(func(c, s map[string]any) { delete(s, "supports") }), CodeCap1SupportsMissing},
		"status contradicts strata": {cov(func(c, s map[string]any) { c["status"] = CoveragePartial }), CodeCap1StatusContradicts},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			tree, _ := typicalPredicate().Tree()
			tree["coverage"] = tt.cov
			tree["limitationCodes"] = strs(LimitationCodes(tree))
			issues := ValidatePredicate(tree, V02)
			var codes []string
			for _, is := range issues {
				codes = append(codes, is.Code)
			}
			if tt.code == "" {
				if len(issues) > 0 {
					t.Fatalf("valid CAP-1 coverage refused: %v", issues)
				}
				return
			}
			if !slices.Contains(codes, tt.code) {
				t.Fatalf("codes %v lack %s (%v)", codes, tt.code, issues)
			}
			if ValidatePredicate(tree, V01) == nil {
				t.Fatal("v0.1 accepted CAP-1 fields")
			}
		})
	}
}

func TestPolicyDecisions(t *testing.T) {
	d, base := disclosed(t)
	base.Body = nil
	tests := []struct {
		name, policy, decision, code string
	}{
		{"default accepts PARTIAL", "", DecisionAccept, ""},
		{"blocking identity rejects", `{"name":"strict","blocking":["IDENTITY_UNBOUND"]}`, DecisionReject, ""},
		{"never_blocking wins", `{"blocking":["IDENTITY_UNBOUND"],"never_blocking":["IDENTITY_UNBOUND"]}`, DecisionAccept, ""},
		{"coverage requirement", `{"require_coverage_status":["COMPLETE"]}`, DecisionInsufficientEvidence, ""},
		{"self-declared time never satisfies", `{"time":{"kind":"freshness"}}`, DecisionInsufficientEvidence, ""},
		{"unknown code is not evaluable", `{"blocking":["SOMETHING"]}`, DecisionInsufficientEvidence, CodePolicyNotEvaluable},
		{"not an object", `[]`, DecisionInsufficientEvidence, CodePolicyNotEvaluable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := base
			if tt.policy != "" {
				opts.Policy = ParsePolicy([]byte(tt.policy))
			}
			r := Verify(d.Receipt.Envelope, opts)
			if strOr(r.PolicyDecision) != tt.decision || r.OK != (tt.decision == DecisionAccept) {
				t.Fatalf("decision %s ok=%v", strOr(r.PolicyDecision), r.OK)
			}
			if tt.code != "" && !slices.Contains(r.ReasonCodes, tt.code) {
				t.Fatalf("reason codes %v", r.ReasonCodes)
			}
			if !strings.HasPrefix(strOr(r.PolicyDigest), "sha256:") {
				t.Fatal("no policy digest")
			}
		})
	}
	opts := base
	opts.Policy = nil
	r := Verify(d.Receipt.Envelope, opts)
	if r.PolicyDecision != nil || !r.OK || !slices.Contains(r.AdvisoryCodes, AdvisoryPolicyNotEvaluated) ||
		!slices.Contains(r.Automation.AutomationBlockers, BlockerPolicyNotEvaluated) {
		t.Fatalf("without policy: %v %v %v", r.PolicyDecision, r.AdvisoryCodes, r.Automation.AutomationBlockers)
	}
}

func TestDispatcherRefusals(t *testing.T) {
	d, base := disclosed(t)
	unknownType := resign(t, d.Receipt.Envelope, func(st map[string]any) {
		st["predicateType"] = "https://b7n0de.com/proofbundle/predicates/agent-review/v0.9"
	})
	tests := map[string]struct {
		env  []byte
		code string
	}{
		"not JSON":          {[]byte("{"), CodeEnvelopeUnreadable},
		"not an object":     {[]byte("[]"), CodeEnvelopeUnreadable},
		"duplicate key":     {[]byte(`{"payload":"e30=","payload":"e30="}`), CodeEnvelopeUnreadable},
		"payload not b64":   {[]byte(`{"payload":"e30","payloadType":"x","signatures":[]}`), CodeEnvelopeUnreadable},
		"statement array":   {[]byte(`{"payload":"W10=","payloadType":"x","signatures":[]}`), CodeEnvelopeUnreadable},
		"unknown type":      {unknownType, CodePredicateTypeUnknown},
		"no predicate type": {[]byte(`{"payload":"e30=","payloadType":"x","signatures":[]}`), CodePredicateTypeUnknown},
	}
	for name, tt := range tests {
		r := Verify(tt.env, base)
		if r.OK || r.PredicateVersionStatus != VersionUnknown || !slices.Contains(r.ReasonCodes, tt.code) || r.Automation != nil {
			t.Errorf("%s: ok=%v status=%s codes=%v", name, r.OK, r.PredicateVersionStatus, r.ReasonCodes)
		}
	}
	// A sibling version given to a direct verifier.
	if r := VerifyVersion(V01, d.Receipt.Envelope, base); r.OK || !slices.Contains(r.ReasonCodes, CodeUnknownPredicateVersion) {
		t.Errorf("v0.2 receipt under the v0.1 verifier: %v", r.ReasonCodes)
	}
}

func TestCapsHoldWithBoundedMemory(t *testing.T) {
	// A payload over 8 MiB fails closed before it is decoded.
	big := bytes.Repeat([]byte("A"), (dsse.MaxPayload/3+2)*4)
	env := []byte(fmt.Sprintf(`{"payload":"%s","payloadType":%q,"signatures":[{"sig":""}]}`, big, dsse.PayloadType))
	if r := VerifyVersion(V02, env, Options{PublicKey: testPub()}); r.OK || !isFalse(r.StructureOK) || r.CryptoOK != nil {
		t.Fatalf("oversized payload: structure=%v crypto=%v", r.StructureOK, r.CryptoOK)
	}
	if r := Verify(env, Options{PublicKey: testPub()}); !slices.Contains(r.ReasonCodes, CodeEnvelopeUnreadable) {
		t.Fatalf("dispatcher read an oversized payload: %v", r.ReasonCodes)
	}
	// Envelopes beyond the input budget are not even parsed.
	huge := make([]byte, MaxEnvelopeBytes+1)
	allocs := testing.AllocsPerRun(3, func() { Verify(huge, Options{PublicKey: testPub()}) })
	if allocs > 100 {
		t.Fatalf("oversized envelope allocated %v times", allocs)
	}
	// 513 signatures fail closed; 512 are read.
	d, base := disclosed(t)
	base.Body = nil
	var m map[string]any
	_ = json.Unmarshal(d.Receipt.Envelope, &m)
	good := m["signatures"].([]any)[0]
	junk := map[string]any{"sig": base64.StdEncoding.EncodeToString(make([]byte, 64))}
	for n, wantOK := range map[int]bool{512: true, 513: false} {
		sigs := make([]any, n)
		for i := range sigs {
			sigs[i] = junk
		}
		sigs[n-1] = good
		m["signatures"] = sigs
		e, _ := json.Marshal(m)
		r := Verify(e, base)
		if r.OK != wantOK || (!wantOK && !isFalse(r.StructureOK)) {
			t.Errorf("%d signatures: ok=%v structure=%v", n, r.OK, r.StructureOK)
		}
	}
}

func TestLegacyDispatch(t *testing.T) {
	env := readFile(t, corpusDir+"/agent_review/agent-review-positive-control-valid-self-declared/envelope.json")
	opts := Options{PublicKey: testPub(), ExpectedSubjectDigest: "f2fca8ac146b3236c8f37533890f42350a8562a6426ec7d96c129e04de3c662a", Policy: DefaultPolicy()}
	r := Verify(env, opts)
	want := []string{AdvisoryLegacyV01, AdvisoryArgumentDropped, AdvisoryPolicyNotEvaluated}
	if !r.OK || r.PredicateVersionStatus != VersionLegacy || strings.Join(r.AdvisoryCodes, ",") != strings.Join(want, ",") ||
		r.PolicyDecision != nil {
		t.Fatalf("legacy: ok=%v %s %v", r.OK, r.PredicateVersionStatus, r.AdvisoryCodes)
	}
	opts.Policy = nil
	if r := Verify(env, opts); slices.Contains(r.AdvisoryCodes, AdvisoryArgumentDropped) {
		t.Fatal("argument reported as dropped though none was given")
	}
}

func TestRenderBlockVersionAndRefusal(t *testing.T) {
	tree, _ := typicalPredicate().Tree()
	blk, err := RenderBlock(tree, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(blk, "Receipt") || !strings.HasPrefix(blk, block.Begin) || !strings.HasSuffix(blk, block.End) {
		t.Fatalf("block:\n%s", blk)
	}
	tree["observations"] = []any{"x"}
	if _, err := RenderBlock(tree, ""); err == nil {
		t.Fatal("rendered an invalid predicate")
	}
}

// TestLargestPayloadVerifiesWithBoundedMemory signs a statement just under the 8 MiB budget and
// checks that verifying it allocates a small multiple of its size.
func TestLargestPayloadVerifiesWithBoundedMemory(t *testing.T) {
	p := typicalPredicate()
	p.Limitations = append(p.Limitations, strings.Repeat("x", dsse.MaxPayload-8192))
	rc, err := Emit(p, testSigner())
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{PublicKey: testPub(), ExpectedSubjectDigest: rc.SubjectDigest, Policy: DefaultPolicy()}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := Verify(rc.Envelope, opts)
	runtime.ReadMemStats(&after)
	if !r.OK {
		t.Fatalf("largest receipt: %v", r.Errors)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("verifying a %d byte envelope allocated %d bytes", len(rc.Envelope), alloc)
	if alloc > 8*uint64(len(rc.Envelope)) {
		t.Fatalf("verifying a %d byte envelope allocated %d bytes", len(rc.Envelope), alloc)
	}
	// One byte more than the budget is refused at emission.
	p.Limitations[len(p.Limitations)-1] += strings.Repeat("x", 8192)
	if _, err := Emit(p, testSigner()); err == nil {
		t.Fatal("payload over 8 MiB was signed")
	}
}

// A body copied from GitHub's web editor has CRLF line endings. It is a different body (no
// normalisation), and the report says why so a reader does not suspect tampering.
func TestCRLFBodyIsAMismatchWithAHint(t *testing.T) {
	d, opts := disclosed(t)
	crlf := strings.ReplaceAll(d.Body, "\n", "\r\n")
	opts.Body = &crlf
	rep := Verify(d.Receipt.Envelope, opts)
	if rep.OK || rep.BodyCoreDigestMatch != MatchMismatch || rep.DisclosureCoreDigestMatch != MatchMismatch {
		t.Fatalf("CRLF body: ok=%v body=%s disclosure=%s", rep.OK, rep.BodyCoreDigestMatch, rep.DisclosureCoreDigestMatch)
	}
	hints := 0
	for _, w := range rep.Warnings {
		if strings.Contains(w, "CRLF line endings are turned into LF") {
			hints++
		}
	}
	if hints != 2 {
		t.Errorf("want a line-ending hint for both digests, warnings: %q", rep.Warnings)
	}
	// A genuinely edited author text gets no such hint for the body core (its block still does).
	edited := strings.ReplaceAll(strings.Replace(d.Body, "#41", "#40", 1), "\n", "\r\n")
	opts.Body = &edited
	for _, w := range Verify(d.Receipt.Envelope, opts).Warnings {
		if strings.HasPrefix(w, "bodyCoreDigest") && strings.Contains(w, "would match") {
			t.Errorf("hint on an edited body: %s", w)
		}
	}
}

// The Receipt: line is masked in the disclosure core, so a block pointing at another receipt
// keeps every digest; the verifier warns about it without changing the verdict.
func TestReceiptLineNamingAnotherFileIsReported(t *testing.T) {
	d, opts := disclosed(t)
	if r := Verify(d.Receipt.Envelope, opts); !r.OK || slices.ContainsFunc(r.Warnings, isReceiptLineWarning) {
		t.Fatalf("own Receipt line: ok=%v warnings %q", r.OK, r.Warnings)
	}
	lines, _ := block.Parse(d.Body)
	other := strings.Replace(d.Body, block.ReceiptDigest(lines), strings.Repeat("0", 64), 1)
	opts.Body = &other
	r := Verify(d.Receipt.Envelope, opts)
	if !r.OK || r.DisclosureCoreDigestMatch != MatchMatch || !slices.ContainsFunc(r.Warnings, isReceiptLineWarning) {
		t.Fatalf("foreign Receipt line: ok=%v disclosure=%s warnings %q", r.OK, r.DisclosureCoreDigestMatch, r.Warnings)
	}
}

func isReceiptLineWarning(w string) bool { return strings.Contains(w, "Receipt: line names") }

// Editors add a final newline or a byte-order mark; the hint names what differs.
func TestEditorArtefactsAreNamed(t *testing.T) {
	d, opts := disclosed(t)
	stored := d.Body // the exact bytes the receipt was made for
	for name, tt := range map[string]struct{ body, hint string }{
		"final newline":         {stored + "\n", "final newline is removed"},
		"BOM":                   {"\ufeff" + stored, "byte-order mark is removed"},
		"CRLF and final CRLF":   {strings.ReplaceAll(stored, "\n", "\r\n") + "\r\n", "CRLF line endings are turned into LF and its final newline is removed"},
		"exact bytes (no hint)": {stored, ""},
	} {
		b := tt.body
		o := opts
		o.Body = &b
		r := Verify(d.Receipt.Envelope, o)
		joined := strings.Join(r.Warnings, "\n")
		if tt.hint == "" {
			if !r.OK || strings.Contains(joined, "would match") {
				t.Errorf("%s: ok=%v warnings %q", name, r.OK, r.Warnings)
			}
			continue
		}
		if r.OK || r.BodyCoreDigestMatch != MatchMismatch || !strings.Contains(joined, tt.hint) {
			t.Errorf("%s: ok=%v body=%s warnings %q", name, r.OK, r.BodyCoreDigestMatch, r.Warnings)
		}
	}
}
