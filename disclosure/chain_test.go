package disclosure

import (
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
)

func envTree(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSupersessionChainOfLensgateReceipts(t *testing.T) {
	s := testSigner()
	p1 := typicalPredicate()
	r1, err := Emit(p1, s)
	if err != nil {
		t.Fatal(err)
	}
	p2 := typicalPredicate()
	p2.Subject.HeadSHA = "f000000000000000000000000000000000000000"
	p2.Supersession = &Supersession{Supersedes: []Relation{{PriorDigest: r1.ReceiptDigest, Reason: "new head pushed"}}}
	r2, err := Emit(p2, s)
	if err != nil {
		t.Fatal(err)
	}
	envs := []any{envTree(t, r2.Envelope), envTree(t, r1.Envelope)}

	res := ResolveChain(envs, map[string]bool{r1.ReceiptDigest: true, r2.ReceiptDigest: true})
	if res.Current == nil || *res.Current != r2.ReceiptDigest || !res.IntegrityOK || res.Ambiguous {
		t.Fatalf("resolution: %+v", res)
	}
	if got := res.CorrectedBy[r1.ReceiptDigest]; len(got) != 1 || got[0] != r2.ReceiptDigest {
		t.Fatalf("corrected_by: %v", res.CorrectedBy)
	}
	// The old receipt stays valid for what it binds.
	if r := Verify(r1.Envelope, Options{PublicKey: testPub(), ExpectedSubjectDigest: r1.SubjectDigest, Policy: DefaultPolicy()}); !r.OK {
		t.Fatalf("superseded receipt no longer verifies: %v", r.Errors)
	}

	// Unverified claims are ignored: a foreign key cannot supersede.
	res = ResolveChain(envs, map[string]bool{r1.ReceiptDigest: true})
	if res.Current != nil || len(res.Corrected) != 0 || len(res.UnverifiedSupersessionClaims) != 1 {
		t.Fatalf("unverified claim honoured: %+v", res)
	}
	// A missing predecessor breaks integrity.
	res = ResolveChain(envs[:1], map[string]bool{r2.ReceiptDigest: true})
	if res.IntegrityOK || len(res.MissingPredecessors) != 1 {
		t.Fatalf("missing predecessor: %+v", res)
	}
	// A URL-safe payload is unaddressable.
	// A URL-safe payload cannot be addressed ("+/+/" in the standard alphabet).
	urlSafe := map[string]any{"payload": toURLSafe("+/+/"), "payloadType": "x", "signatures": []any{}}
	res = ResolveChain([]any{urlSafe}, nil)
	if len(res.Unaddressable) != 1 || res.IntegrityOK || len(res.CurrentCandidates) != 0 {
		t.Fatalf("URL-safe payload addressed: %+v", res)
	}
}

func toURLSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch c {
		case '+':
			b[i] = '-'
		case '/':
			b[i] = '_'
		}
	}
	return string(b)
}

func TestCap1PredicateRoundTrip(t *testing.T) {
	p := typicalPredicate()
	p.Coverage = Coverage{
		Status: CoverageComplete,
		Strata: []Stratum{{ID: "changed-files", Basis: Basis{Kind: "enumeration", EnumerationMethod: "git diff --name-only base...head"},
			Eligible: 4, Examined: 3, Unexamined: []Unexamined{{Unit: "vendor/x.go", Disposition: "out_of_scope"}},
			Supports: []string{"lens:security"}}},
		Integrity:         &Integrity{Complete: true},
		AbsenceAssertions: []AbsenceAssertion{{Stratum: "changed-files"}},
	}
	rc, err := Emit(p, testSigner())
	if err != nil {
		t.Fatal(err)
	}
	r := Verify(rc.Envelope, Options{PublicKey: testPub(), ExpectedSubjectDigest: rc.SubjectDigest, Policy: DefaultPolicy()})
	if !r.OK || slices.Contains(r.AdvisoryCodes, AdvisoryCoverageLegacy) {
		t.Fatalf("CAP-1 receipt: ok=%v advisories=%v errors=%v", r.OK, r.AdvisoryCodes, r.Errors)
	}
	// A failed unit cannot be part of a complete examination.
	p.Coverage.Strata[0].Unexamined[0].Disposition = "failed"
	if _, err := Emit(p, testSigner()); err == nil {
		t.Fatal("complete coverage with a failed unit was signed")
	}
}

func TestKeyFiles(t *testing.T) {
	path := t.TempDir() + "/k"
	pub, err := GenerateKey(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := LoadPrivateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if PublicKeyHex(priv) != hex.EncodeToString(pub) {
		t.Fatal("loaded key differs")
	}
	if _, err := GenerateKey(path, nil); err == nil {
		t.Fatal("existing key overwritten")
	}
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	fromPEM, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err != nil || !fromPEM.Equal(priv) {
		t.Fatalf("PEM key: %v", err)
	}
	pubHex := PublicKeyHex(priv) + "\n"
	if _, err := ParsePrivateKey([]byte(pubHex)); err == nil || !strings.Contains(err.Error(), "public key") {
		t.Errorf("a .publickey.hex file was accepted as a signing seed: %v", err)
	}
	for _, bad := range []string{"", "ed25519-seed:zz", "ed25519-seed:00", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"} {
		if _, err := ParsePrivateKey([]byte(bad)); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}

// Forks, all three relations, a gap in the middle of a chain and repeated envelopes. Cycles
// cannot be built: a receipt can only name digests of payloads that existed before it.
func TestChainForksGapsAndRelations(t *testing.T) {
	s := testSigner()
	emit := func(head string, sup *Supersession) *Receipt {
		t.Helper()
		p := typicalPredicate()
		p.Subject.HeadSHA = strings.Repeat(head, 40)
		p.Supersession = sup
		rc, err := Emit(p, s)
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	rel := func(rc *Receipt, why string) []Relation {
		return []Relation{{PriorDigest: rc.ReceiptDigest, Reason: why}}
	}
	a := emit("a", nil)
	b := emit("b", &Supersession{Supersedes: rel(a, "new head")})
	c := emit("c", &Supersession{Corrects: rel(b, "wrong coverage")})
	fork := emit("d", &Supersession{Withdraws: rel(b, "reviewed the wrong diff")})
	all := map[string]bool{a.ReceiptDigest: true, b.ReceiptDigest: true, c.ReceiptDigest: true, fork.ReceiptDigest: true}
	trees := func(rcs ...*Receipt) []any {
		var out []any
		for _, rc := range rcs {
			out = append(out, envTree(t, rc.Envelope))
		}
		return out
	}

	res := ResolveChain(trees(a, b, c), all)
	if res.Current == nil || *res.Current != c.ReceiptDigest || !res.IntegrityOK {
		t.Fatalf("linear chain: %+v", res)
	}
	// Two receipts replace the same predecessor: no single current one.
	res = ResolveChain(trees(a, b, c, fork), all)
	if res.Current != nil || !res.Ambiguous || len(res.CurrentCandidates) != 2 || len(res.CorrectedBy[b.ReceiptDigest]) != 2 {
		t.Fatalf("fork: %+v", res)
	}
	// The middle of the chain is missing: c names b, which is absent, so integrity fails and a
	// (whose successor is gone) is a candidate again.
	res = ResolveChain(trees(a, c), all)
	if res.IntegrityOK || !slices.Equal(res.MissingPredecessors, []string{b.ReceiptDigest}) || !res.Ambiguous {
		t.Fatalf("gap: %+v", res)
	}
	// The same envelope twice counts once.
	res = ResolveChain(trees(a, b, b, a), all)
	if res.Current == nil || *res.Current != b.ReceiptDigest || len(res.CurrentCandidates) != 1 {
		t.Fatalf("repeated envelopes: %+v", res)
	}
	// Not an envelope at all: ignored, not counted.
	res = ResolveChain(append(trees(a), "junk", map[string]any{"payload": 1}), all)
	if res.Current == nil || *res.Current != a.ReceiptDigest || !res.IntegrityOK {
		t.Fatalf("junk entries: %+v", res)
	}
}
