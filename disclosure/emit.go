package disclosure

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// RefusedError is returned when the emitter will not sign a predicate: it would claim more
// than can be shown, or break a rule of its version.
type RefusedError struct {
	Issues []Issue
}

func (e *RefusedError) Error() string {
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		parts[i] = is.String()
	}
	return "refused: " + strings.Join(parts, "; ")
}

// Codes returns the reason codes among the refusal's issues.
func (e *RefusedError) Codes() []string {
	var out []string
	for _, is := range e.Issues {
		if is.Code != "" && !slices.Contains(out, is.Code) {
			out = append(out, is.Code)
		}
	}
	return out
}

// Signer holds the App's Ed25519 key. KeyID is written to the envelope for information only;
// empty means the OpenSSH fingerprint of the key.
type Signer struct {
	Key   ed25519.PrivateKey
	KeyID string
}

// Receipt is an emitted, signed receipt.
type Receipt struct {
	Envelope      []byte  // DSSE envelope JSON, 2-space indent, trailing LF
	Version       Version // chosen predicate version
	ReceiptDigest string  // sha256 of the payload bytes: the key for supersession
	SubjectDigest string  // what a relying party passes as the expected subject digest
	SubjectName   string
}

// EmitJSON signs a predicate given as JSON. An empty version chooses as the format says: v0.3
// when producer.verifier is present, v0.2 otherwise. v0.1 is only emitted on explicit request.
func EmitJSON(predicateJSON []byte, v Version, s Signer) (*Receipt, error) {
	tree, err := jcs.Parse(predicateJSON)
	if err != nil {
		return nil, fmt.Errorf("emit: predicate: %w", err)
	}
	return EmitTree(tree, v, s)
}

// EmitTree signs a predicate tree (as produced by jcs.Parse); see EmitJSON for v.
func EmitTree(pred any, v Version, s Signer) (*Receipt, error) {
	if len(s.Key) != ed25519.PrivateKeySize {
		return nil, errors.New("emit: signing key is missing or malformed")
	}
	p, ok := asObj(pred)
	if !ok {
		return nil, &RefusedError{Issues: []Issue{{Text: "predicate must be an object"}}}
	}
	if v == "" || v == V02 || v == V03 {
		v = V02
		if prod, ok := asObj(p["producer"]); ok && has(prod, "verifier") {
			v = V03
		}
	}
	is := ValidatePredicate(p, v)
	is = append(is, honestyChecks(p)...)
	if len(is) > 0 {
		return nil, &RefusedError{Issues: is}
	}
	st, subjectDigest, err := buildStatement(p, v)
	if err != nil {
		return nil, &RefusedError{Issues: []Issue{{Text: err.Error()}}}
	}
	payload, err := jcs.Canonical(st)
	if err != nil {
		return nil, &RefusedError{Issues: []Issue{{Code: CodeStatementNotCanonicalizable, Text: err.Error()}}}
	}
	pub, _ := s.Key.Public().(ed25519.PublicKey)
	if err := dsse.CheckPublicKey(pub); err != nil {
		return nil, fmt.Errorf("emit: signing key: %w", err)
	}
	keyid := s.KeyID
	if keyid == "" {
		keyid = dsse.KeyID(pub)
	}
	env, err := dsse.Sign(dsse.PayloadType, payload, s.Key, keyid)
	if err != nil {
		return nil, fmt.Errorf("emit: %w", err)
	}
	name, _ := SubjectName(p["subjectContext"])
	return &Receipt{Envelope: env, Version: v, ReceiptDigest: sha256Hex(payload),
		SubjectDigest: subjectDigest, SubjectName: name}, nil
}

// honestyChecks are refusals beyond the version rules: a signed value that the verifier would
// recompute differently is a claim the emitter cannot stand behind.
func honestyChecks(p map[string]any) []Issue {
	var is issues
	if d, ok := asObj(p["declaration"]); ok {
		if root, ok := d["findingsRoot"].(string); ok {
			list, _ := asArr(d["findings"])
			if got, err := FindingsRoot(list); err != nil || got != root {
				is.add("", "declaration: findingsRoot does not cover the listed findings")
			}
		}
	}
	if lc, ok := asArr(p["limitationCodes"]); ok {
		derived := LimitationCodes(p)
		var signed []string
		for _, c := range lc {
			s, _ := c.(string)
			signed = append(signed, s)
		}
		slices.Sort(signed)
		if !slices.Equal(signed, derived) {
			is.add("", "limitationCodes must equal the derived codes %v", derived)
		}
	}
	return is
}
