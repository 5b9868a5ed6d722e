// Package digest holds the two digest helpers every part of lensgate shares: the lowercase hex
// SHA-256 that receipts, subjects and caches name content by, and the short form of a commit
// SHA or digest shown in messages and logs.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
)

// SHA256Hex is the lowercase hex SHA-256 of b.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:])
}

// ShortLen is how many characters of a SHA messages show.
const ShortLen = 12

// Short abbreviates a commit SHA or hex digest to ShortLen characters, as messages and log lines
// show it; a shorter string is returned as it is.
func Short(sha string) string {
	if len(sha) > ShortLen {
		return sha[:ShortLen]
	}
	return sha
}
