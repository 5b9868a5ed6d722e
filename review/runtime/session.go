package runtime

import (
	"context"
	"sync"
)

// Session is the scope of one review for runtimes that keep state across its calls, such as
// a runner in another process that records every call of the review before it signs what it
// saw. The pipeline makes one per review, fills in what the review declares before its first
// call, and hands it to every call through the context.
type Session struct {
	// DiffDigest is the SHA-256 (hex) of the whole diff the review covers, and PlanDigest the
	// plan digest of its policy: what the receipt will declare.
	DiffDigest string
	PlanDigest string
	// Blobs gives, by path, the git blob SHA of a changed file at the head as the forge
	// reported it, for the files digest of a call.
	Blobs map[string]string

	mu   sync.Mutex
	vals map[any]any
}

// Value returns the session's value for key, making it with mk on first use.
func (s *Session) Value(key any, mk func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.vals[key]; ok {
		return v
	}
	if s.vals == nil {
		s.vals = map[any]any{}
	}
	v := mk()
	s.vals[key] = v
	return v
}

// Lookup returns the session's value for key, or nil.
func (s *Session) Lookup(key any) any {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.vals[key]
}

type sessionKey struct{}

// WithSession returns a context that carries s to the runtimes.
func WithSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// SessionFrom returns the session of a call, or nil.
func SessionFrom(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

// Remaining is implemented by a Budget that can say how many tokens the review may still
// spend; a negative answer means no cap.
type Remaining interface {
	Remaining() int
}
