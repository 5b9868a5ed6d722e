package disclosure

import (
	"crypto/ed25519"
	"strings"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// tEnvelope is an envelope read by openTyped.
type tEnvelope struct {
	pae           []byte // PAE of the payload; the payload is its tail
	payload       []byte
	alphabet      dsse.Alphabet
	payloadTypeOK bool
	sigs          [][]byte
}

// openTyped reads an envelope of the usual shape (payload, payloadType, signatures of keyid
// and sig, strings without escapes, any whitespace) and decodes its payload and signatures
// once. ok is false for anything else, which the general path judges.
func openTyped(envelope []byte) (e tEnvelope, ok bool) {
	r := jcs.NewReader(envelope, true)
	var payload, payloadType []byte
	var hasPayload, hasType, hasSigs bool
	var sigs [][]byte
	if !r.Enter('{') {
		return e, false
	}
	for i := 0; r.Next('}', i); i++ {
		switch k := r.Key(); {
		case k == "payload" && !hasPayload:
			payload, hasPayload = r.Raw()
		case k == "payloadType" && !hasType:
			payloadType, hasType = r.Raw()
		case k == "signatures" && !hasSigs:
			sigs, hasSigs = readSignatures(r)
		default:
			// A repeated or unknown member: the general path names it or ignores it.
			r.Fail()
		}
	}
	if !r.End() || !hasPayload || !hasType || len(payloadType) == 0 || !hasSigs ||
		dsse.DecodedLenBound(len(payload)) > dsse.MaxPayload {
		return e, false
	}
	// The decoded length follows from the padding, so the PAE prefix can be written first
	// and the payload decoded straight behind it.
	n := dsse.DecodedLenBound(len(payload))
	for j := len(payload) - 1; j >= 0 && j >= len(payload)-2 && payload[j] == '='; j-- {
		n--
	}
	e.payloadTypeOK = string(payloadType) == dsse.PayloadType
	pae := dsse.AppendPAEPrefix(make([]byte, 0, 64+len(payloadType)+dsse.DecodedLenBound(len(payload))), string(payloadType), n)
	got, alpha, err := dsse.DecodeBase64Into(pae[len(pae):cap(pae)], payload)
	if err != nil || got != n {
		return e, false
	}
	e.pae = pae[:len(pae)+n]
	e.payload = e.pae[len(pae):]
	e.alphabet = alpha
	e.sigs = sigs
	return e, true
}

// readSignatures reads 1..MaxSignatures entries of keyid and sig; a sig that is not 64 bytes
// of base64 is skipped, as the general path skips it.
func readSignatures(r *jcs.Reader) ([][]byte, bool) {
	if !r.Enter('[') {
		return nil, false
	}
	var sigs [][]byte
	i := 0
	for ; r.Next(']', i); i++ {
		if i >= dsse.MaxSignatures || !r.Enter('{') {
			r.Fail()
			return nil, false
		}
		var sig []byte
		var hasKeyID, hasSig bool
		for j := 0; r.Next('}', j); j++ {
			switch k := r.Key(); {
			case k == "keyid" && !hasKeyID:
				_, hasKeyID = r.Raw()
			case k == "sig" && !hasSig:
				sig, hasSig = r.Raw()
			default:
				r.Fail()
			}
		}
		if !hasSig {
			r.Fail()
			return nil, false
		}
		// Base64 of 64 bytes is 88 characters; longer text decodes to more bytes.
		if len(sig) > 88 {
			continue
		}
		raw := make([]byte, dsse.DecodedLenBound(len(sig)))
		if n, _, err := dsse.DecodeBase64Into(raw, sig); err == nil && n == ed25519.SignatureSize {
			sigs = append(sigs, raw[:n:n])
		}
	}
	return sigs, i > 0 && !r.Failed()
}

// typedInput is an envelope the typed reading takes, ready to be verified.
type typedInput struct {
	e    tEnvelope
	st   *tStatement
	pred any // parsed predicate, when a body is to be checked
}

// readTyped reads an envelope the typed way, or returns nil for the general path to judge.
// It decides before any signature is checked, so none is checked twice.
func readTyped(envelope []byte, opts Options) *typedInput {
	e, ok := openTyped(envelope)
	if !ok {
		return nil
	}
	st, ok := decodeTyped(e.payload)
	if !ok {
		return nil
	}
	in := &typedInput{e: e, st: st}
	// The visible-block checks keep their rules on the parsed tree.
	if opts.Body != nil {
		var err error
		if in.pred, err = jcs.Parse(st.predSpan); err != nil {
			return nil
		}
	}
	return in
}

// verifyTyped verifies an envelope the typed way, or returns nil for the general path.
func verifyTyped(envelope []byte, opts Options) *Report {
	if in := readTyped(envelope, opts); in != nil {
		return in.verify(opts)
	}
	return nil
}

func (in *typedInput) verify(opts Options) *Report {
	e, st := in.e, in.st
	v := st.version
	r := newReport(v)
	if e.alphabet == dsse.Standard {
		r.ReceiptDigest = sha256Hex(e.payload)
	}
	crypto := false
	if kerr := dsse.CheckPublicKey(opts.PublicKey); kerr != nil {
		r.Errors = append(r.Errors, "public key refused: "+kerr.Error())
	} else if !e.payloadTypeOK {
		r.Errors = append(r.Errors, "payloadType is not "+dsse.PayloadType)
	} else {
		for _, s := range e.sigs {
			if crypto = ed25519.Verify(opts.PublicKey, e.pae, s); crypto {
				break
			}
		}
		if !crypto {
			r.Errors = append(r.Errors, "no signature verifies under the supplied public key")
		}
	}
	r.CryptoOK = ptr(crypto)
	// The typed strings share the payload's memory; the report keeps copies, not the payload.
	r.PredicateType = strings.Clone(st.predicateType)
	r.PredicateTypeOK = ptr(true)
	r.StatementShapeOK = ptr(true)
	r.StructureOK = ptr(true)
	r.SubjectDigest, r.SubjectName = strings.Clone(st.subjectDigest), strings.Clone(st.subjectName)

	if crypto {
		ax := st.timeAxes()
		r.EventTimeStatus, r.ObservationTimeStatus = ax.Event, ax.Observation
		r.SignatureTimeStatus, r.ExternalTimeStatus = ax.Signature, ax.External
		r.advise(AdvisoryCoverageLegacy) // the typed reading takes no CAP-1 coverage
		consistent := ax.Event != TimeConflict
		r.TimeConsistencyOK = ptr(consistent)
		if !consistent {
			r.reason(CodeTimeClaimsConflict)
			r.Errors = append(r.Errors, "time claims conflict")
		}
		bindSubjectDigest(r, sha256Hex(st.scSpan), nil, st.subjectDigest, opts.ExpectedSubjectDigest)
		if st.hasRoot {
			setFindingsRootOK(r, findingsRootOfCanonical(st.findingSpans) == st.findingsRoot)
		}
		r.AssuranceOK = ptr(true) // every assurance read is selfDeclared
	}
	r.TimeSemantics = ptr("V0_2")
	if v == V03 {
		r.VerifierBlock = verifierBlockReport(map[string]any{"producer": st.producerTree})
	}
	if opts.Body != nil {
		checkBody(r, in.pred, *opts.Body)
	}
	if opts.Policy == nil {
		r.advise(AdvisoryPolicyNotEvaluated)
	} else {
		r.PolicyName, r.PolicyDigest = ptr(opts.Policy.Name), ptr(opts.Policy.Digest)
		// Every assurance is selfDeclared and there are no observations.
		status := strings.Clone(st.status)
		applyPolicy(r, opts.Policy, limitationCodesOf(true, true, status), status)
	}
	conclude(r, crypto, true, true)
	return r
}

// timeAxes is timeAxes over the typed statement: no observations and a null observedAt.
func (st *tStatement) timeAxes() TimeAxes {
	ax := TimeAxes{Event: TimeAbsent, Observation: TimeAbsent, Signature: TimeAbsent, External: TimeNotEvaluated}
	if len(st.completed) > 0 {
		ax.Event = TimeSelfDeclared
		for _, v := range st.completed[1:] {
			if v != st.completed[0] {
				ax.Event = TimeConflict
			}
		}
	}
	if st.signedAt {
		ax.Signature = TimeSelfDeclared
	}
	return ax
}
