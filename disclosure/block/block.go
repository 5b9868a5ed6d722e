package block

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Wire constants. They are part of the format and must not change.
const (
	Begin   = "<!-- proofbundle:agent-review:begin -->"
	End     = "<!-- proofbundle:agent-review:end -->"
	Token   = "<!-- proofbundle:agent-review:disclosure -->"
	SelfRef = "<selfref>"
)

// Refusals. Each one means the body is ambiguous and no digest may be claimed for it.
var (
	ErrUnbalanced   = errors.New("disclosure markers are unbalanced")
	ErrDuplicated   = errors.New("more than one disclosure block")
	ErrEndFirst     = errors.New("end marker precedes begin marker")
	ErrNoBlock      = errors.New("body has no disclosure block")
	ErrNotUTF8      = errors.New("body is not valid UTF-8")
	ErrBlockInvalid = errors.New("block must start with the begin marker and end with the end marker")
)

// span locates the single block; ok is false when the body has none.
func span(body string) (s, e int, ok bool, err error) {
	if !utf8.ValidString(body) {
		return 0, 0, false, ErrNotUTF8
	}
	nb, ne := strings.Count(body, Begin), strings.Count(body, End)
	switch {
	case nb != ne:
		return 0, 0, false, ErrUnbalanced
	case nb > 1:
		return 0, 0, false, ErrDuplicated
	case nb == 0:
		return 0, 0, false, nil
	}
	s = strings.Index(body, Begin)
	e = strings.Index(body, End) + len(End)
	if e <= s {
		return 0, 0, false, ErrEndFirst
	}
	return s, e, true, nil
}

// BodyCore returns the body with its disclosure block (markers included) replaced by Token, or
// the body unchanged when it has no block.
func BodyCore(body string) ([]byte, error) {
	s, e, ok, err := span(body)
	if err != nil {
		return nil, err
	}
	if !ok {
		return []byte(body), nil
	}
	out := make([]byte, 0, len(body)-(e-s)+len(Token))
	out = append(out, body[:s]...)
	out = append(out, Token...)
	return append(out, body[e:]...), nil
}

// BodyCoreDigest is the lowercase hex SHA-256 of BodyCore.
func BodyCoreDigest(body string) (string, error) {
	b, err := BodyCore(body)
	if err != nil {
		return "", err
	}
	return hexSum(b), nil
}

var (
	reDigest = regexp.MustCompile(`sha256:[0-9a-f]{64}`)
	reLabel  = regexp.MustCompile(`\[[0-9a-f]{12}\]\(`)
)

// DisclosureCore returns the block's inner text with LF stripped at both ends and the receipt
// digest masked, since the digest cannot be part of its own preimage.
func DisclosureCore(body string) ([]byte, error) {
	inner, err := Inner(body)
	if err != nil {
		return nil, err
	}
	inner = strings.Trim(inner, "\n")
	inner = reDigest.ReplaceAllLiteralString(inner, "sha256:"+SelfRef)
	inner = reLabel.ReplaceAllLiteralString(inner, "["+SelfRef+"](")
	return []byte(inner), nil
}

// DisclosureCoreDigest is the lowercase hex SHA-256 of DisclosureCore.
func DisclosureCoreDigest(body string) (string, error) {
	b, err := DisclosureCore(body)
	if err != nil {
		return "", err
	}
	return hexSum(b), nil
}

// Inner returns the text between the markers of the single block; a body without a block is
// refused.
func Inner(body string) (string, error) {
	s, e, ok, err := span(body)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", ErrNoBlock
	}
	return body[s+len(Begin) : e-len(End)], nil
}

// Placeholder is an empty block, used to fix the body core before the real block exists.
const Placeholder = Begin + "\n\n" + End

// Prepare appends an empty block to a body that has none, keeping the author's text as an exact
// prefix. A body that already has a block is returned unchanged; an ambiguous one is refused.
func Prepare(body string) (string, error) {
	_, _, ok, err := span(body)
	if err != nil {
		return "", err
	}
	if ok {
		return body, nil
	}
	return body + separator(body) + Placeholder + "\n", nil
}

// separator leaves one blank line between the author's text and the block.
func separator(body string) string {
	switch {
	case body == "" || strings.HasSuffix(body, "\n\n"):
		return ""
	case strings.HasSuffix(body, "\n"):
		return "\n"
	}
	return "\n\n"
}

// Splice puts block into body: it replaces the existing block, or appends one when the body has
// none. Author text outside the block is kept byte for byte, and the body core of the result
// equals the body core of Prepare(body), so a digest signed over the prepared body still holds.
func Splice(body, block string) (string, error) {
	prepared, err := Prepare(body)
	if err != nil {
		return "", err
	}
	block = strings.Trim(block, "\n")
	if !strings.HasPrefix(block, Begin) || !strings.HasSuffix(block, End) ||
		strings.Count(block, Begin) != 1 || strings.Count(block, End) != 1 {
		return "", ErrBlockInvalid
	}
	s, e, _, _ := span(prepared)
	out := prepared[:s] + block + prepared[e:]
	before, _ := BodyCore(prepared)
	after, err := BodyCore(out)
	if err != nil || string(before) != string(after) {
		return "", errors.New("splicing would change the body core digest")
	}
	return out, nil
}

func hexSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
