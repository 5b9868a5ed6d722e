package dsse

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
)

func testKey() ed25519.PrivateKey {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

func TestPAE(t *testing.T) {
	got := PAE(PayloadType, []byte(`{"a":1}`))
	want := "DSSEv1 28 application/vnd.in-toto+json 7 {\"a\":1}"
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := PAE("", nil); string(got) != "DSSEv1 0  0 " {
		t.Fatalf("empty PAE %q", got)
	}
}

func TestKeyIDOfCorpusKey(t *testing.T) {
	pub := testKey().Public().(ed25519.PublicKey)
	if h := hex.EncodeToString(pub); h != "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8" {
		t.Fatalf("public key %s", h)
	}
	if got := KeyID(pub); got != "SHA256:lbmsoA0yIEcEiVDRnMWuzm+nV+3ZEEpVIURqFoeSspg" {
		t.Fatalf("keyid %s", got)
	}
}

func TestDecodeBase64Canonical(t *testing.T) {
	tests := []struct {
		in    string
		ok    bool
		alpha Alphabet
	}{
		{"aGk=", true, Standard},
		{"", true, Standard},
		{"-_8=", true, URLSafe},
		{"+/8=", true, Standard},
		{"aGk", false, 0},      // unpadded
		{"aGl=", false, 0},     // non-zero padding bits
		{"aG k=", false, 0},    // space
		{"aGk=\n", false, 0},   // trailing newline
		{"aG\nk=", false, 0},   // embedded newline
		{"aGk=\r\n", false, 0}, // CRLF
		{"a+_k", false, 0},     // mixed alphabets
		{"aGk==", false, 0},
	}
	for _, tt := range tests {
		_, alpha, err := DecodeBase64(tt.in)
		if (err == nil) != tt.ok || alpha != tt.alpha {
			t.Errorf("%q: err=%v alpha=%v, want ok=%v alpha=%v", tt.in, err, alpha, tt.ok, tt.alpha)
		}
	}
	if _, err := DecodeStdBase64("-_8="); err == nil {
		t.Error("URL-safe text accepted as standard")
	}
}

func TestCheckPublicKeyRefuses(t *testing.T) {
	mustHex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	withSign := func(b []byte) []byte {
		c := bytes.Clone(b)
		c[31] |= 0x80
		return c
	}
	bad := map[string][]byte{
		"short":              make([]byte, 31),
		"long":               make([]byte, 33),
		"identity":           mustHex("0100000000000000000000000000000000000000000000000000000000000000"),
		"order 2":            mustHex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
		"order 4":            make([]byte, 32),
		"order 8 a":          mustHex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
		"order 8 b":          mustHex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
		"y = p":              mustHex("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
		"y = p+1 (identity)": mustHex("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
		"y = 2^255-1":        mustHex("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
	}
	for _, k := range []string{"identity", "order 2", "order 4", "order 8 a", "order 8 b"} {
		bad[k+" signed"] = withSign(bad[k])
	}
	for name, k := range bad {
		if err := CheckPublicKey(k); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if err := CheckPublicKey(testKey().Public().(ed25519.PublicKey)); err != nil {
		t.Errorf("valid key refused: %v", err)
	}
	// y = p-1 is the order-2 point; y = p-2 is an ordinary canonical value.
	if err := CheckPublicKey(mustHex("ebffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")); err != nil && strings.Contains(err.Error(), "canonical") {
		t.Errorf("y = p-2 called non-canonical: %v", err)
	}
}

func parse(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSignOpenVerify(t *testing.T) {
	priv := testKey()
	pub := priv.Public().(ed25519.PublicKey)
	env, err := Sign(PayloadType, []byte(`{"x":1}`), priv, KeyID(pub))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(env, []byte("}\n")) || !bytes.Contains(env, []byte("\n  \"payloadType\"")) {
		t.Errorf("envelope layout:\n%s", env)
	}
	o, err := Open(parse(t, env))
	if err != nil {
		t.Fatal(err)
	}
	if !o.Verify(pub) {
		t.Fatal("own signature does not verify")
	}
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x20}, 32)).Public().(ed25519.PublicKey)
	if o.Verify(other) {
		t.Fatal("verifies under a foreign key")
	}
	noKeyID, _ := Sign(PayloadType, []byte(`{}`), priv, "")
	if bytes.Contains(noKeyID, []byte("keyid")) {
		t.Error("empty keyid was written")
	}
}

func envelopeWith(payload string, sigs []any) map[string]any {
	return map[string]any{"payload": payload, "payloadType": PayloadType, "signatures": sigs}
}

func TestOpenFailsClosed(t *testing.T) {
	good := map[string]any{"sig": base64.StdEncoding.EncodeToString(make([]byte, 64))}
	many := make([]any, MaxSignatures+1)
	for i := range many {
		many[i] = good
	}
	big := base64.StdEncoding.EncodeToString(make([]byte, MaxPayload+1))
	tests := map[string]any{
		"not an object":          []any{},
		"no signatures":          envelopeWith("e30=", []any{}),
		"signatures not a list":  envelopeWith("e30=", nil),
		"513 signatures":         envelopeWith("e30=", many),
		"payload not canonical":  envelopeWith("e30=\n", []any{good}),
		"payload over budget":    envelopeWith(big, []any{good}),
		"payload missing":        map[string]any{"payloadType": PayloadType, "signatures": []any{good}},
		"payloadType empty":      map[string]any{"payload": "e30=", "payloadType": "", "signatures": []any{good}},
		"payloadType not string": map[string]any{"payload": "e30=", "payloadType": 1.0, "signatures": []any{good}},
	}
	for name, env := range tests {
		if _, err := Open(env); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	if _, err := Open(envelopeWith("e30=", many[:MaxSignatures])); err != nil {
		t.Errorf("512 signatures refused: %v", err)
	}
}

func TestOpenSkipsMalformedSignatureEntries(t *testing.T) {
	priv := testKey()
	pub := priv.Public().(ed25519.PublicKey)
	payload := []byte(`{}`)
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(priv, PAE(PayloadType, payload)))
	env := envelopeWith(base64.StdEncoding.EncodeToString(payload), []any{
		"not an object", map[string]any{"sig": 5.0}, map[string]any{"sig": sig + "\n"},
		map[string]any{"sig": "AAAA"}, map[string]any{"keyid": "x", "sig": sig},
	})
	o, err := Open(env)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Verify(pub) {
		t.Fatal("the good entry after malformed ones did not verify")
	}
}

func FuzzOpen(f *testing.F) {
	priv := testKey()
	env, _ := Sign(PayloadType, []byte(`{"a":"b"}`), priv, "k")
	f.Add(env)
	f.Add([]byte(`{"payload":"","payloadType":"x","signatures":[{"sig":""}]}`))
	pub := priv.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		if o, err := Open(v); err == nil {
			_ = o.Verify(pub)
			if len(o.Payload) > MaxPayload {
				t.Fatal("payload over budget")
			}
		}
	})
}

// BenchmarkOpenVerify is the signature floor of a receipt verification: opening a typical
// 2 KiB envelope and one Ed25519 verification over its PAE.
func BenchmarkOpenVerify(b *testing.B) {
	priv := testKey()
	pub := priv.Public().(ed25519.PublicKey)
	env, _ := Sign(PayloadType, bytes.Repeat([]byte("x"), 2048), priv, KeyID(pub))
	var v any
	if err := json.Unmarshal(env, &v); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	n := 0
	for b.Loop() {
		o, err := Open(v)
		if err != nil || !o.Verify(pub) {
			b.Fatal("does not verify")
		}
		n++
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(n), "cpu-ns/op")
}

// DecodePayload takes what DecodeBase64 takes, gives the same bytes, and the PAE message that
// Verify signs over is exactly PAE of them.
func FuzzDecodePayload(f *testing.F) {
	for _, s := range []string{"", "e30=", "e30", "e3 0=", "-_-_", "+/+/", "YQ==", "YR==", "YQ==YQ==", "e30=\n", strings.Repeat("QUJD", 400)} {
		f.Add(PayloadType, s)
	}
	f.Add("", "YWJj")
	f.Add(strings.Repeat("t", 100), "YWJj")
	f.Fuzz(func(t *testing.T, payloadType, p64 string) {
		want, walpha, werr := DecodeBase64(p64)
		d, err := DecodePayload(payloadType, p64)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: DecodePayload error %v, DecodeBase64 error %v", p64, err, werr)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(d.Payload, want) || d.Alphabet != walpha {
			t.Fatalf("%q: %q %v, want %q %v", p64, d.Payload, d.Alphabet, want, walpha)
		}
		if !bytes.Equal(d.pae, PAE(payloadType, want)) {
			t.Fatalf("%q: PAE %q", p64, d.pae)
		}
		if cap(d.Payload) != len(d.Payload) {
			t.Fatalf("%q: the payload's capacity reaches past it", p64)
		}
	})
}
