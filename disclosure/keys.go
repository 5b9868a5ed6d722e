package disclosure

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lensgate/lensgate/disclosure/dsse"
)

// Key files hold one line: "ed25519-seed:" + 64 hex characters of the 32-byte seed.
const keyFilePrefix = "ed25519-seed:"

// GenerateKey writes a new Ed25519 key file with 0600 permissions; it refuses to overwrite an
// existing file. It returns the public key.
func GenerateKey(path string, random io.Reader) (ed25519.PublicKey, error) {
	if random == nil {
		random = rand.Reader
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := io.ReadFull(random, seed); err != nil {
		return nil, fmt.Errorf("keygen: %w", err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("keygen: %w", err)
	}
	if _, err := fmt.Fprintf(f, "%s%s\n", keyFilePrefix, hex.EncodeToString(seed)); err != nil {
		f.Close()
		return nil, fmt.Errorf("keygen: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("keygen: close %s: %w", path, err)
	}
	return priv.Public().(ed25519.PublicKey), nil
}

// LoadPrivateKey reads a key file written by GenerateKey or a PKCS#8 PEM Ed25519 key.
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load key: %w", err)
	}
	return ParsePrivateKey(raw)
}

// ParsePrivateKey parses the contents of a key file: the keygen form or a PKCS#8 PEM Ed25519 key
// (as openssl genpkey -algorithm ed25519 writes). Bare 64 hex characters are refused: that is
// what a .publickey.hex file holds, and signing with a public value as the seed would give a
// key anyone can recompute.
func ParsePrivateKey(raw []byte) (ed25519.PrivateKey, error) {
	if blk, _ := pem.Decode(raw); blk != nil {
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("load key: %w", err)
		}
		priv, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, errors.New("load key: PEM key is not Ed25519")
		}
		return priv, nil
	}
	s := strings.TrimSpace(string(raw))
	s, prefixed := strings.CutPrefix(s, keyFilePrefix)
	if !prefixed {
		if b, err := hex.DecodeString(s); err == nil && len(b) == ed25519.PublicKeySize {
			return nil, errors.New("load key: this is 64 bare hex characters, the form of a public key; a signing key file starts with " + keyFilePrefix + " (lensgate keygen) or is PEM")
		}
		return nil, errors.New("load key: not an ed25519 key file (lensgate keygen or PKCS#8 PEM)")
	}
	seed, err := hex.DecodeString(s)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, errors.New("load key: not an ed25519 key file")
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// PublicKeyHex returns the 64 lowercase hex characters of the public half of priv.
func PublicKeyHex(priv ed25519.PrivateKey) string {
	return hex.EncodeToString(priv.Public().(ed25519.PublicKey))
}

// ParsePublicKey reads a public key given as 64 hex characters (surrounding whitespace
// allowed, as in a .publickey.hex file) and refuses malformed, non-canonical and low-order keys.
func ParsePublicKey(text []byte) (ed25519.PublicKey, error) {
	b, err := hex.DecodeString(string(bytes.TrimSpace(text)))
	if err != nil {
		return nil, errors.New("public key is not hex")
	}
	if err := dsse.CheckPublicKey(b); err != nil {
		return nil, err
	}
	return ed25519.PublicKey(b), nil
}
