package runner

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lensgate/lensgate/internal/digest"
)

// Authentication: both sides hold the same token (a file of at least 32 bytes). The token
// never crosses the wire. Every request carries a time, a fresh nonce, the SHA-256 of its body,
// its length (Content-Length) and an HMAC-SHA256 under the token over the method, path, time,
// nonce, length and digest. All of it is in the headers, so the runner verifies the MAC, the
// time and the nonce before it reads a byte of the body: a sender without the token costs it the
// headers and nothing else. The body is then read to its declared length and must have the
// declared digest. Every response carries an HMAC over the request's nonce, the status and the
// SHA-256 of the response body, so the worker knows the answer comes from a holder of the token
// and answers this very request. The bodies are authenticated, not encrypted.
const (
	HeaderDate  = "Lensgate-Runner-Date"
	HeaderNonce = "Lensgate-Runner-Nonce"
	HeaderMAC   = "Lensgate-Runner-Mac"
	// HeaderDigest is the hex SHA-256 of the request body.
	HeaderDigest = "Lensgate-Runner-Body-Digest"
	// MaxSkew is how far a request's time may be from the runner's clock.
	MaxSkew = 2 * time.Minute
	// MinTokenBytes is the shortest token accepted.
	MinTokenBytes = 32
	maxNonces     = 200000
)

// LoadToken reads a shared token file: its content without surrounding white space, at least
// MinTokenBytes long.
func LoadToken(file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("runner token: %w", err)
	}
	t := bytes.TrimSpace(b)
	if len(t) < MinTokenBytes {
		return nil, fmt.Errorf("runner token %s: %d bytes, want at least %d (for example: openssl rand -hex 32)", file, len(t), MinTokenBytes)
	}
	return t, nil
}

func requestMAC(token []byte, method, path, date, nonce string, length int64, digest string) string {
	m := hmac.New(sha256.New, token)
	fmt.Fprintf(m, "lensgate-runner-request-v2\n%s\n%s\n%s\n%s\n%d\n%s", method, path, date, nonce, length, digest)
	return hex.EncodeToString(m.Sum(nil))
}

// bodyDigest is the hex SHA-256 of a request body, as HeaderDigest carries it.
func bodyDigest(body []byte) string {
	return digest.SHA256Hex(body)
}

func responseMAC(token []byte, nonce string, status int, body []byte) string {
	sum := sha256.Sum256(body)
	m := hmac.New(sha256.New, token)
	fmt.Fprintf(m, "lensgate-runner-response\n%s\n%d\n%x", nonce, status, sum)
	return hex.EncodeToString(m.Sum(nil))
}

func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b)
}

// nonceCache remembers the nonces of the last MaxSkew*2, so a captured request cannot be
// replayed while its time is still accepted.
type nonceCache struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// authHeaders are what a request declares about itself before its body.
type authHeaders struct {
	method, path, date, nonce, mac, digest string
	// length is the declared Content-Length (-1 when none was declared).
	length int64
}

// check verifies a request's authentication from its headers alone and records its nonce. It
// does constant work whatever the sender declares.
func (n *nonceCache) check(token []byte, now time.Time, h authHeaders) error {
	if h.date == "" || h.nonce == "" || h.mac == "" || h.digest == "" {
		return errors.New("the request is not authenticated")
	}
	if len(h.nonce) != 32 || !isHexN(h.nonce) || len(h.mac) != 64 || !isHexN(strings.ToLower(h.mac)) ||
		len(h.digest) != 64 || !isHexN(h.digest) {
		return errors.New("the request's authentication headers are malformed")
	}
	if h.length < 0 {
		return errors.New("the request declares no Content-Length")
	}
	want := requestMAC(token, h.method, h.path, h.date, h.nonce, h.length, h.digest)
	if !hmac.Equal([]byte(strings.ToLower(h.mac)), []byte(want)) {
		return errors.New("the request's authentication does not verify (wrong token?)")
	}
	secs, err := strconv.ParseInt(h.date, 10, 64)
	if err != nil {
		return errors.New("the request's time is malformed")
	}
	if d := now.Sub(time.Unix(secs, 0)); d > MaxSkew || d < -MaxSkew {
		return fmt.Errorf("the request's time is %s from the runner's clock (at most %s)", d.Round(time.Second), MaxSkew)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen == nil {
		n.seen = map[string]time.Time{}
	}
	if _, ok := n.seen[h.nonce]; ok {
		return errors.New("the request replays an earlier nonce")
	}
	if len(n.seen) >= maxNonces {
		for k, t := range n.seen {
			if now.Sub(t) > 2*MaxSkew {
				delete(n.seen, k)
			}
		}
		if len(n.seen) >= maxNonces {
			return errors.New("the runner is taking too many requests to remember their nonces; try again")
		}
	}
	n.seen[h.nonce] = now
	return nil
}

func isHexN(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
