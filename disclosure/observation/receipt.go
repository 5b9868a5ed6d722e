package observation

import (
	"crypto/ed25519"

	"github.com/lensgate/lensgate/disclosure/dsse"
)

// ReceiptFacts are the members of an agent-review receipt that an observation is checked
// against, as a runner reads them before it signs one. Its own verification (signature,
// rules) is the receipt verifier's job.
type ReceiptFacts struct {
	Digest        string // SHA-256 of the decoded payload
	SubjectName   string
	SubjectDigest string
	HeadSHA       string
	BaseSHA       string
	ReviewedDiff  string
	Plan          string // "" without planRef
	// Findings are the listed findings (id and severity); Total counts all of them.
	Findings []Finding
	Total    int
	// Completed are the values of the reviewCompleted time claims.
	Completed []string
}

// ReadReceipt reads an agent-review envelope strictly (JSON, DSSE structure) and returns the
// facts an observation binds.
func ReadReceipt(env []byte) (*ReceiptFacts, error) {
	rc, err := readReceipt(env)
	if err != nil {
		return nil, err
	}
	f := &ReceiptFacts{
		Digest: rc.digest, SubjectName: rc.subjectName, SubjectDigest: rc.subjectDigest, ReviewedDiff: rc.reviewedDiff,
		Plan: rc.plan, Findings: rc.findings, Total: rc.total, Completed: rc.completed,
		HeadSHA: rc.headSHA, BaseSHA: rc.baseSHA,
	}
	return f, nil
}

// SignedBy reports whether a signature of the parsed envelope verifies under key.
func (p *Parsed) SignedBy(key ed25519.PublicKey) bool {
	return p != nil && p.opened != nil && dsse.CheckPublicKey(key) == nil && p.opened.Verify(key)
}
