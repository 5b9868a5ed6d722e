package disclosure

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/internal/digest"
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

// EmitTree signs a predicate tree (as produced by jcs.Parse); see EmitJSON for v. Beyond the
// version's rules it applies lensgate's own publishing rules (honestyChecks).
func EmitTree(pred any, v Version, s Signer) (*Receipt, error) {
	return emit(pred, v, s, true)
}

// EmitReference signs a predicate tree as the format's reference emitter does: only the rules
// of the version refuse, so a predicate the verifier will reject (two conflicting time claims,
// a findingsRoot over other findings) is signed. Conformance runs use it to classify a case as
// the reference would; lensgate never publishes with it.
func EmitReference(pred any, v Version, s Signer) (*Receipt, error) {
	return emit(pred, v, s, false)
}

func emit(pred any, v Version, s Signer, honest bool) (*Receipt, error) {
	if len(s.Key) != ed25519.PrivateKeySize {
		return nil, errors.New("emit: signing key is missing or malformed")
	}
	p, ok := asObj(pred)
	if !ok {
		return nil, &RefusedError{Issues: []Issue{{Text: "predicate must be an object"}}}
	}
	block := false
	if prod, ok := asObj(p["producer"]); ok && has(prod, "verifier") {
		block = true
	}
	switch {
	case v == "":
		v = V02
		if block {
			v = V03
		}
	case v == V03 && !block:
		// v0.3 differs from v0.2 only by the block; an explicit v0.3 without one is a caller error.
		return nil, &RefusedError{Issues: []Issue{{Text: "v0.3 was requested but producer.verifier is absent"}}}
	}
	is := ValidatePredicate(p, v)
	if honest {
		is = append(is, honestyChecks(p)...)
	}
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
	return &Receipt{Envelope: env, Version: v, ReceiptDigest: digest.SHA256Hex(payload),
		SubjectDigest: subjectDigest, SubjectName: name}, nil
}

// honestyChecks are refusals beyond the version rules: a signed value that the verifier would
// recompute differently, time claims that contradict each other, or an assured item that names
// an observer or carries fields of its own are claims the emitter cannot stand behind. The
// verifier stays as lenient as the format (published receipts carry extra item fields).
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
	for _, sec := range []string{"authoring", "reviewRuns"} {
		d, _ := asObj(p["declaration"])
		items, _ := asArr(d[sec])
		for i, it := range items {
			m, _ := asObj(it)
			for _, k := range slices.Sorted(maps.Keys(m)) {
				switch val := m[k]; k {
				case "assurance", "assertedBy", "evidenceRef":
				case "observedBy":
					if val != nil {
						is.add("", "declaration: %s[%d]: observedBy names an observer, which a self-declared item cannot show", sec, i)
					}
				default:
					is.add("", "declaration: %s[%d]: %s is not a field this emitter signs", sec, i, k)
				}
			}
		}
	}
	// The format only checks the shape of a time (month 13 passes, time claims are not checked
	// at all); what this emitter signs must be a real UTC instant.
	checkTime := func(where string, v any) {
		if s, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil || !asciiTimestamp(s) {
				is.add("", "%s: %q is not a real UTC time (YYYY-MM-DDTHH:MM:SS[.fff]Z)", where, s)
			}
		}
	}
	if t, ok := asObj(p["times"]); ok {
		checkTime("times.declaredAt", t["declaredAt"])
		checkTime("times.signedAt", t["signedAt"])
	}
	if sc, ok := asObj(p["subjectContext"]); ok {
		checkTime("subjectContext.revisedAt", sc["revisedAt"])
	}
	if d, ok := asObj(p["declaration"]); ok {
		tcs, _ := asArr(d["timeClaims"])
		for i, tc := range tcs {
			m, _ := asObj(tc)
			checkTime(fmt.Sprintf("declaration.timeClaims[%d].value", i), m["value"])
		}
	}
	if ax := timeAxes(p); ax.Event == TimeConflict || ax.Observation == TimeConflict {
		is.add(CodeTimeClaimsConflict, "declaration: timeClaims contradict each other")
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
