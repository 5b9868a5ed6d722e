package disclosure

import (
	"fmt"
	"strings"
	"testing"
)

func TestBoundFindingsKeepsTheReceiptSmallAndSaysSo(t *testing.T) {
	p := typicalPredicate()
	p.Coverage = Coverage{Status: CoverageComplete, ObservedRuns: intp(2), ExpectedRuns: intp(2),
		Sources: []string{"diff"}, Window: "head", CollectionMethod: "api"}
	p.Findings = nil
	for i := range 2000 {
		sev := []string{"info", "low", "medium", "high", "critical"}[i%5]
		p.Findings = append(p.Findings, Finding{ID: fmt.Sprintf("f-%04d", i), Severity: sev,
			Title: strings.Repeat("long finding title ", 4), Disposition: "open"})
	}
	const limit = 60000
	left, err := p.BoundFindings(limit)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := Emit(p, testSigner())
	if err != nil {
		t.Fatalf("bounded predicate refused: %v", err)
	}
	if len(rc.Envelope) > limit || left == 0 || left+len(p.Findings) != 2000 || p.FindingsTotal != 2000 {
		t.Fatalf("envelope %d bytes, %d left out, %d listed, total %d", len(rc.Envelope), left, len(p.Findings), p.FindingsTotal)
	}
	for _, f := range p.Findings {
		if f.Severity != "critical" && f.Severity != "high" {
			t.Fatalf("kept a %s finding while leaving %d out", f.Severity, left)
		}
	}
	if p.Coverage.Status != CoveragePartial || !strings.Contains(strings.Join(p.Coverage.KnownGaps, ";"), fmt.Sprintf("%d of 2000 findings are not listed", left)) {
		t.Fatalf("bounding is not disclosed: %+v", p.Coverage)
	}
	r := Verify(rc.Envelope, Options{PublicKey: testPub(), ExpectedSubjectDigest: rc.SubjectDigest, Policy: DefaultPolicy()})
	if !r.OK {
		t.Fatalf("bounded receipt does not verify: %v", r.Errors)
	}
	// A predicate that already fits is left alone.
	small := typicalPredicate()
	before := len(small.Findings)
	if left, err := small.BoundFindings(limit); err != nil || left != 0 || len(small.Findings) != before {
		t.Fatalf("small predicate changed: %d %v", left, err)
	}
	// A bound nothing fits under is an error, and the predicate is unchanged.
	if _, err := small.BoundFindings(100); err == nil || len(small.Findings) != before {
		t.Fatalf("impossible bound: %v, %d findings", err, len(small.Findings))
	}
}
