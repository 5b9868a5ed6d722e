package observation

import (
	"crypto/ed25519"
	"fmt"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
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
	}
	// readReceipt has opened the envelope already; these reads cannot fail differently.
	tree, err := jcs.Parse(env)
	if err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	op, err := dsse.Open(tree)
	if err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	st, err := jcs.Parse(op.Payload)
	if err != nil {
		return nil, fmt.Errorf("receipt payload: %w", err)
	}
	m, _ := st.(map[string]any)
	pred, _ := m["predicate"].(map[string]any)
	sc, _ := pred["subjectContext"].(map[string]any)
	f.HeadSHA, _ = sc["headSha"].(string)
	f.BaseSHA, _ = sc["baseSha"].(string)
	return f, nil
}

// SignedBy reports whether a signature of the parsed envelope verifies under key.
func (p *Parsed) SignedBy(key ed25519.PublicKey) bool {
	return p != nil && p.opened != nil && dsse.CheckPublicKey(key) == nil && p.opened.Verify(key)
}
