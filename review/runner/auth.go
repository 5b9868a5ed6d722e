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
)

// Authentication: both sides hold the same token (a file of at least 32 bytes). The token
// never crosses the wire. Every request carries a time, a fresh nonce and an HMAC-SHA256 under
// the token over the method, path, time, nonce and the SHA-256 of the body; the runner refuses
// a request whose MAC does not verify, whose time is more than MaxSkew away from its clock, or
// whose nonce it has seen. Every response carries an HMAC over the request's nonce, the status
// and the SHA-256 of the response body, so the worker knows the answer comes from a holder of
// the token and answers this very request. The bodies are authenticated, not encrypted.
const (
	HeaderDate  = "Lensgate-Runner-Date"
	HeaderNonce = "Lensgate-Runner-Nonce"
	HeaderMAC   = "Lensgate-Runner-Mac"
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

func requestMAC(token []byte, method, path, date, nonce string, body []byte) string {
	sum := sha256.Sum256(body)
	m := hmac.New(sha256.New, token)
	fmt.Fprintf(m, "lensgate-runner-request\n%s\n%s\n%s\n%s\n%x", method, path, date, nonce, sum)
	return hex.EncodeToString(m.Sum(nil))
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

// precheck refuses, before the body is read, a request whose authentication headers are
// missing or malformed or whose time is not current.
func precheck(now time.Time, date, nonce, mac string) error {
	if date == "" || nonce == "" || mac == "" {
		return errors.New("the request is not authenticated")
	}
	if len(nonce) != 32 || !isHexN(nonce) || len(mac) != 64 || !isHexN(strings.ToLower(mac)) {
		return errors.New("the request's authentication headers are malformed")
	}
	secs, err := strconv.ParseInt(date, 10, 64)
	if err != nil {
		return errors.New("the request's time is malformed")
	}
	if d := now.Sub(time.Unix(secs, 0)); d > MaxSkew || d < -MaxSkew {
		return fmt.Errorf("the request's time is %s from the runner's clock (at most %s)", d.Round(time.Second), MaxSkew)
	}
	return nil
}

// check verifies a request's authentication and records its nonce.
func (n *nonceCache) check(token []byte, now time.Time, method, path, date, nonce, mac string, body []byte) error {
	if date == "" || nonce == "" || mac == "" {
		return errors.New("the request is not authenticated")
	}
	if len(nonce) != 32 || !isHexN(nonce) {
		return errors.New("the request's nonce is malformed")
	}
	want := requestMAC(token, method, path, date, nonce, body)
	if !hmac.Equal([]byte(strings.ToLower(mac)), []byte(want)) {
		return errors.New("the request's authentication does not verify (wrong token?)")
	}
	secs, err := strconv.ParseInt(date, 10, 64)
	if err != nil {
		return errors.New("the request's time is malformed")
	}
	at := time.Unix(secs, 0)
	if d := now.Sub(at); d > MaxSkew || d < -MaxSkew {
		return fmt.Errorf("the request's time is %s from the runner's clock (at most %s)", d.Round(time.Second), MaxSkew)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen == nil {
		n.seen = map[string]time.Time{}
	}
	if _, ok := n.seen[nonce]; ok {
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
	n.seen[nonce] = now
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
