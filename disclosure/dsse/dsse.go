package dsse

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Wire constants and input budget.
const (
	PayloadType   = "application/vnd.in-toto+json"
	MaxPayload    = 8 << 20 // decoded payload bytes
	MaxSignatures = 512
)

// PAE returns the DSSE v1 pre-authentication encoding of payloadType and body.
func PAE(payloadType string, body []byte) []byte {
	out := AppendPAEPrefix(make([]byte, 0, 32+len(payloadType)+len(body)), payloadType, len(body))
	return append(out, body...)
}

// AppendPAEPrefix appends the part of PAE(payloadType, body) that comes before body, for a
// body of n bytes.
func AppendPAEPrefix(dst []byte, payloadType string, n int) []byte {
	dst = append(dst, "DSSEv1 "...)
	dst = strconv.AppendInt(dst, int64(len(payloadType)), 10)
	dst = append(dst, ' ')
	dst = append(dst, payloadType...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, ' ')
}

// Alphabet says which base64 alphabet a canonical string used.
type Alphabet int

// The two accepted alphabets.
const (
	Standard Alphabet = iota + 1
	URLSafe
)

// ErrNotCanonicalBase64 is returned for base64 text that does not round-trip exactly.
var ErrNotCanonicalBase64 = errors.New("not canonical padded base64")

// DecodeBase64 decodes padded base64 in the standard or URL-safe alphabet and refuses anything
// that does not re-encode to the same text (whitespace, newlines, stray characters, non-zero
// padding bits).
func DecodeBase64(s string) ([]byte, Alphabet, error) {
	if b, err := decodeCanonical(stdStrict, s); err == nil {
		return b, Standard, nil
	}
	if b, err := decodeCanonical(urlStrict, s); err == nil {
		return b, URLSafe, nil
	}
	return nil, 0, ErrNotCanonicalBase64
}

// Decoded is an envelope's payload decoded from its base64 text, held right after room for
// its PAE prefix so that checking a signature does not copy the payload into a new message.
type Decoded struct {
	Payload  []byte
	Alphabet Alphabet
	// pae is PAE(payloadType, Payload), sharing Payload's bytes.
	pae         []byte
	payloadType string
}

// DecodePayload decodes an envelope's payload text as DecodeBase64 does, for an envelope whose
// payloadType is payloadType.
func DecodePayload(payloadType, p64 string) (*Decoded, error) {
	if len(p64)%4 != 0 || strings.IndexByte(p64, '\n') >= 0 || strings.IndexByte(p64, '\r') >= 0 {
		return nil, ErrNotCanonicalBase64
	}
	// The prefix's last number is the payload's length, known once it is decoded: leave room
	// for the longest and move the prefix against the payload afterwards.
	var pre [64]byte
	room := len(AppendPAEPrefix(pre[:0], payloadType, DecodedLenBound(len(p64))))
	buf := make([]byte, room+DecodedLenBound(len(p64)))
	src := []byte(p64)
	alpha := Standard
	n, err := stdStrict.Decode(buf[room:], src)
	if err != nil {
		alpha = URLSafe
		if n, err = urlStrict.Decode(buf[room:], src); err != nil {
			return nil, ErrNotCanonicalBase64
		}
	}
	prefix := AppendPAEPrefix(pre[:0], payloadType, n)
	start := room - len(prefix)
	copy(buf[start:room], prefix)
	return &Decoded{Payload: buf[room : room+n : room+n], Alphabet: alpha, pae: buf[start : room+n], payloadType: payloadType}, nil
}

// DecodeStdBase64 decodes canonical padded standard base64 only.
func DecodeStdBase64(s string) ([]byte, error) { return decodeCanonical(stdStrict, s) }

// Strict decoders, built once (read-only).
var (
	stdStrict = base64.StdEncoding.Strict()
	urlStrict = base64.URLEncoding.Strict()
)

func decodeCanonical(enc *base64.Encoding, s string) ([]byte, error) {
	// Padding is mandatory, and Strict refuses non-zero padding bits; Strict still skips CR and
	// LF, so those are refused here. What remains re-encodes to the same text.
	if len(s)%4 != 0 || strings.IndexByte(s, '\n') >= 0 || strings.IndexByte(s, '\r') >= 0 {
		return nil, ErrNotCanonicalBase64
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		return nil, ErrNotCanonicalBase64
	}
	return b, nil
}

// DecodedLenBound is the most bytes a base64 text of n characters can decode to.
func DecodedLenBound(n int) int { return n / 4 * 3 }

// lowOrderY lists the y-coordinates (little-endian, sign bit clear) of the eight points of small
// order; every encoding whose y is one of them is a low-order point.
var lowOrderY = [][32]byte{
	{0x01},
	{0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
	{},
	{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
		0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
	{0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
		0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
}

// fieldP is 2^255-19, little-endian.
var fieldP = [32]byte{0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0x7f}

// CheckPublicKey refuses a key that is not 32 bytes, encodes y >= p, or is a low-order point.
// Go's crypto/ed25519 accepts low-order keys, under which forged signatures can verify.
func CheckPublicKey(pub []byte) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("public key has %d bytes, want 32", len(pub))
	}
	var y [32]byte
	copy(y[:], pub)
	y[31] &= 0x7f
	// Compare y with p from the most significant byte down.
	for i := 31; i >= 0; i-- {
		if y[i] < fieldP[i] {
			break
		}
		if y[i] > fieldP[i] || i == 0 {
			return errors.New("public key is not a canonical point encoding")
		}
	}
	for _, lo := range lowOrderY {
		if y == lo {
			return errors.New("public key is a low-order point")
		}
	}
	return nil
}

// KeyID is the OpenSSH SHA-256 fingerprint of an Ed25519 public key; informational only.
func KeyID(pub ed25519.PublicKey) string {
	const algo = "ssh-ed25519"
	blob := make([]byte, 0, 4+len(algo)+4+len(pub))
	blob = binary.BigEndian.AppendUint32(blob, uint32(len(algo)))
	blob = append(blob, algo...)
	blob = binary.BigEndian.AppendUint32(blob, uint32(len(pub)))
	blob = append(blob, pub...)
	sum := sha256.Sum256(blob)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// Sign returns a one-signature envelope over payload, pretty-printed with a 2-space indent and
// a trailing LF. An empty keyid leaves the member out.
func Sign(payloadType string, payload []byte, priv ed25519.PrivateKey, keyid string) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, errors.New("dsse: private key has the wrong size")
	}
	if len(payload) > MaxPayload {
		return nil, fmt.Errorf("dsse: payload of %d bytes exceeds %d", len(payload), MaxPayload)
	}
	sig := ed25519.Sign(priv, PAE(payloadType, payload))
	var b bytes.Buffer
	b.Grow(base64.StdEncoding.EncodedLen(len(payload)) + 256)
	b.WriteString("{\n  \"payload\": \"")
	b.WriteString(base64.StdEncoding.EncodeToString(payload))
	b.WriteString("\",\n  \"payloadType\": ")
	b.Write(quote(payloadType))
	b.WriteString(",\n  \"signatures\": [\n    {\n")
	if keyid != "" {
		b.WriteString("      \"keyid\": ")
		b.Write(quote(keyid))
		b.WriteString(",\n")
	}
	b.WriteString("      \"sig\": \"")
	b.WriteString(base64.StdEncoding.EncodeToString(sig))
	b.WriteString("\"\n    }\n  ]\n}\n")
	return b.Bytes(), nil
}

func quote(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// Opened is an envelope whose structure passed the fail-closed rules.
type Opened struct {
	PayloadType string
	Payload     []byte
	Alphabet    Alphabet
	sigs        [][]byte
	pae         []byte // PAE(PayloadType, Payload) when it was made with the payload
}

// Open applies the structural rules to a parsed envelope (a map from a strict JSON parse).
// Signature entries that are malformed are skipped, as the format requires; the list itself
// must hold 1..512 entries.
func Open(env any) (*Opened, error) {
	m, ok := env.(map[string]any)
	if !ok {
		return nil, errors.New("envelope is not a JSON object")
	}
	pt, ok := m["payloadType"].(string)
	if !ok || pt == "" {
		return nil, errors.New("payloadType must be a non-empty string")
	}
	p64, ok := m["payload"].(string)
	if !ok {
		return nil, errors.New("payload must be a string")
	}
	if DecodedLenBound(len(p64)) > MaxPayload+2 {
		return nil, fmt.Errorf("payload exceeds the %d byte budget", MaxPayload)
	}
	d, err := DecodePayload(pt, p64)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	return OpenDecoded(env, d)
}

// OpenDecoded is Open for a caller that already decoded the envelope's payload string with
// DecodePayload; it applies the remaining rules without decoding it again.
func OpenDecoded(env any, d *Decoded) (*Opened, error) {
	m, ok := env.(map[string]any)
	if !ok {
		return nil, errors.New("envelope is not a JSON object")
	}
	pt, ok := m["payloadType"].(string)
	if !ok || pt == "" {
		return nil, errors.New("payloadType must be a non-empty string")
	}
	if len(d.Payload) > MaxPayload {
		return nil, fmt.Errorf("payload exceeds the %d byte budget", MaxPayload)
	}
	list, ok := m["signatures"].([]any)
	if !ok || len(list) == 0 || len(list) > MaxSignatures {
		return nil, fmt.Errorf("signatures must be a list of 1..%d entries", MaxSignatures)
	}
	o := &Opened{PayloadType: pt, Payload: d.Payload, Alphabet: d.Alphabet}
	if d.payloadType == pt {
		o.pae = d.pae
	}
	for _, e := range list {
		em, ok := e.(map[string]any)
		if !ok {
			continue
		}
		s, ok := em["sig"].(string)
		if !ok {
			continue
		}
		sig, _, err := DecodeBase64(s)
		if err != nil || len(sig) != ed25519.SignatureSize {
			continue
		}
		o.sigs = append(o.sigs, sig)
	}
	return o, nil
}

// Verify reports whether any usable signature verifies under pub over PAE of the payload.
// A refused key never verifies.
func (o *Opened) Verify(pub ed25519.PublicKey) bool {
	if CheckPublicKey(pub) != nil {
		return false
	}
	pae := o.pae
	if pae == nil {
		pae = PAE(o.PayloadType, o.Payload)
	}
	for _, s := range o.sigs {
		if ed25519.Verify(pub, pae, s) {
			return true
		}
	}
	return false
}
