package disclosure

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// randomPredicate builds a varied predicate; valid reports whether the emitter must accept it.
func randomPredicate(r *rand.Rand) *Predicate {
	hex := func(n int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, n)
		for i := range b {
			b[i] = digits[r.Intn(16)]
		}
		return string(b)
	}
	text := func() string {
		words := []string{"parser", "ünïcode", "<script>", "a\"quote", "tab\there", "line\nbreak", "emoji \U0001F600", "\u2028sep", "&amp;", "\\slash"}
		return words[r.Intn(len(words))] + " " + words[r.Intn(len(words))]
	}
	p := typicalPredicate()
	p.ReviewID = "review-" + hex(8)
	if r.Intn(2) == 0 {
		p.Subject = SubjectContext{Kind: KindIssue, Forge: "github.com", RepositoryID: "R_" + hex(6),
			IssueNodeID: "I_" + hex(6), RevisedAt: "2026-11-29T17:00:00Z", BodyCoreDigest: hex(64)}
		if r.Intn(2) == 0 {
			p.Subject.CommentNodeID = "IC_" + hex(6)
		}
	} else {
		p.Subject.HeadSHA, p.Subject.BaseSHA, p.Subject.ReviewedDiffDigest = hex(40), hex(40), hex(64)
		if r.Intn(2) == 0 {
			p.Subject.HumanRef = ""
		}
	}
	p.Findings = nil
	for i := 0; i < r.Intn(12); i++ {
		f := Finding{ID: fmt.Sprintf("f-%d", i), Severity: Severities[r.Intn(len(Severities))], Title: text(),
			Disposition: Dispositions[r.Intn(len(Dispositions))]}
		switch f.Disposition {
		case "fixed":
			f.FixCommit = hex(40)
		case "dismissed":
			f.Reason = text()
		}
		if r.Intn(3) == 0 {
			f.EvidenceSHA256 = hex(64)
		}
		p.Findings = append(p.Findings, f)
	}
	p.FindingsTotal = len(p.Findings)
	p.ReviewRuns = nil
	for i := 0; i < r.Intn(4); i++ {
		p.ReviewRuns = append(p.ReviewRuns, AssuredItem{AssertedBy: text()})
	}
	switch r.Intn(3) {
	case 0:
		p.Coverage = Coverage{Status: CoverageUnknown}
	case 1:
		p.FindingsTotal += r.Intn(3)
		p.Coverage = Coverage{Status: CoveragePartial, KnownGaps: []string{text()}}
	default:
		n := 1 + r.Intn(3)
		p.Coverage = Coverage{Status: CoverageComplete, ObservedRuns: &n, ExpectedRuns: &n, Sources: []string{"diff"},
			Window: "base...head", CollectionMethod: "lensgate pipeline"}
	}
	if r.Intn(2) == 0 {
		p.TimeClaims = nil
	}
	if r.Intn(2) == 0 {
		p.SignedAt = time.Time{}
	}
	p.Limitations = []string{text()}
	return p
}

// TestEveryEmittedPredicateReverifies: whatever lensgate signs, its own verifier accepts
// with the subject digest, the body and the default policy (UNKNOWN coverage is the one case the
// default policy does not accept).
func TestEveryEmittedPredicateReverifies(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for i := 0; i < 300; i++ {
		p := randomPredicate(r)
		body := strings.Repeat("text of the author\r\n", r.Intn(3))
		d, err := Disclose(body, p, testSigner())
		if err != nil {
			t.Fatalf("#%d refused: %v", i, err)
		}
		rep := Verify(d.Receipt.Envelope, Options{PublicKey: testPub(), ExpectedSubjectDigest: d.Receipt.SubjectDigest,
			Body: &d.Body, Policy: DefaultPolicy()})
		wantOK := p.Coverage.Status != CoverageUnknown
		if rep.OK != wantOK || rep.BodyCoreDigestMatch != MatchMatch || rep.DisclosureCoreDigestMatch != MatchMatch ||
			rep.VisibleBlockRendering != MatchMatch || !isTrue(rep.StructureOK) || !isTrue(rep.CryptoOK) {
			t.Fatalf("#%d: ok=%v (want %v) errors=%v", i, rep.OK, wantOK, rep.Errors)
		}
		if !wantOK && strOr(rep.PolicyDecision) != DecisionInsufficientEvidence {
			t.Fatalf("#%d: UNKNOWN coverage decided %s", i, strOr(rep.PolicyDecision))
		}
	}
}
