package delegate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MarkerName names lensgate's hidden binding in a request comment.
const MarkerName = "lensgate-delegate:v1"

// MaxRequestBodyBytes bounds a request comment.
const MaxRequestBodyBytes = 1024

// Binding is what a request is for: the preset, the repository, the pull request and the exact
// head and base. ID is derived from the rest, so the same boundary always has the same id and a
// repeated attempt can recognise its own earlier request.
type Binding struct {
	Preset string
	Repo   string // owner/name
	Number int
	Head   string
	Base   string
}

// ID is the request id of the binding.
func (b Binding) ID() string {
	h := sha256.Sum256([]byte(strings.Join([]string{MarkerName, b.Preset, b.Repo, strconv.Itoa(b.Number), b.Head, b.Base}, "\x00")))
	return hex.EncodeToString(h[:8])
}

// Marker renders the hidden one-line marker of the binding.
func (b Binding) Marker() string {
	return fmt.Sprintf("<!-- %s preset=%s repository=%s pull-request=%d head-sha=%s base-sha=%s request-id=%s -->",
		MarkerName, b.Preset, b.Repo, b.Number, b.Head, b.Base, b.ID())
}

// RequestBody is the request comment: the preset's request text (or, for a reviewers request,
// a line saying whose review was requested), a blank line and the marker.
func RequestBody(p Preset, b Binding) string {
	first := p.RequestText
	if p.RequestVia == RequestReviewers && first == "" {
		first = "lensgate requested a review from " + p.Reviewer + "."
	}
	return first + "\n\n" + b.Marker()
}

var (
	markerRE = regexp.MustCompile(`<!-- lensgate-delegate:v1 preset=([a-z][a-z0-9-]{0,63}) repository=([A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}) pull-request=([1-9][0-9]{0,18}) head-sha=([0-9a-f]{40}) base-sha=([0-9a-f]{40}) request-id=([0-9a-f]{16}) -->`)
	// ErrNoMarker means a body carries no request marker at all.
	ErrNoMarker = errors.New("no request marker")
)

// ParseRequest reads the binding of a request comment body. A body that mentions the marker
// but does not have exactly one well-formed marker whose id matches its fields is an error: it
// is never taken for a request.
func ParseRequest(body string) (Binding, error) {
	if !strings.Contains(body, MarkerName) {
		return Binding{}, ErrNoMarker
	}
	if len(body) > MaxRequestBodyBytes {
		return Binding{}, fmt.Errorf("request comment exceeds %d bytes", MaxRequestBodyBytes)
	}
	if strings.Count(body, MarkerName) != 1 {
		return Binding{}, errors.New("request comment holds more than one marker")
	}
	m := markerRE.FindStringSubmatch(body)
	if m == nil {
		return Binding{}, errors.New("malformed request marker")
	}
	n, err := strconv.Atoi(m[3])
	if err != nil {
		return Binding{}, fmt.Errorf("request marker pull request: %w", err)
	}
	b := Binding{Preset: m[1], Repo: m[2], Number: n, Head: m[4], Base: m[5]}
	if b.ID() != m[6] {
		return Binding{}, errors.New("request marker id does not match its fields")
	}
	return b, nil
}
