package githubfake

import (
	"net/http"
	"strconv"
	"time"
)

// GitHub's limits as the fake applies them.
const (
	// DefaultContentLimit is how many content-creating requests (comments, reviews, review
	// comments, reactions) one installation may make in a minute before GitHub answers with its
	// secondary rate limit. WithContentLimit(0) turns the limit off.
	DefaultContentLimit = 80
	// DefaultRateLimit is an installation's hourly request budget on github.com, reported in
	// X-RateLimit-* headers; go-github refuses requests itself once they report none left.
	DefaultRateLimit = 5000
)

// WithRateLimit sets each installation's hourly request budget (GitHub Enterprise Cloud gives an
// installation 15,000).
func WithRateLimit(n int) Option { return func(s *Server) { s.rateLimit = n } }

// WithContentLimit sets how many content-creating requests an installation may make in a
// rolling minute (0: unlimited).
func WithContentLimit(n int) Option { return func(s *Server) { s.contentLimit = n } }

// contentRoutes create content: GitHub's secondary rate limit counts them apart from reads.
var contentRoutes = map[string]bool{
	"POST /repos/{owner}/{repo}/issues/{number}/comments":       true,
	"POST /repos/{owner}/{repo}/pulls/{number}/reviews":         true,
	"POST /repos/{owner}/{repo}/pulls/{number}/comments":        true,
	"POST /repos/{owner}/{repo}/issues/{number}/reactions":      true,
	"POST /repos/{owner}/{repo}/issues/comments/{id}/reactions": true,
	"POST /repos/{owner}/{repo}/pulls/comments/{id}/reactions":  true,
}

// contentLimited answers a content-creating request over the limit with GitHub's secondary rate
// limit (403 and Retry-After until the oldest request of the minute leaves the window) and
// reports whether it did. The request is counted when it passes. The window runs on the wall
// clock, like GitHub's.
func (s *Server) contentLimited(w http.ResponseWriter, route string, installation int64) bool {
	if s.contentLimit <= 0 || !contentRoutes[route] {
		return false
	}
	s.mu.Lock()
	now := time.Now()
	recent := s.content[installation]
	for len(recent) > 0 && now.Sub(recent[0]) >= time.Minute {
		recent = recent[1:]
	}
	limited := len(recent) >= s.contentLimit
	if !limited {
		recent = append(recent, now)
	}
	s.content[installation] = recent
	retry := 1
	if limited {
		retry = max(1, int(time.Minute-now.Sub(recent[0])+time.Second-1)/int(time.Second))
	}
	s.mu.Unlock()
	if !limited {
		return false
	}
	f := Fault{Status: http.StatusForbidden, SecondaryRateLimit: true, RetryAfter: retry}
	f.fail(w)
	return true
}

// rateHeaders sets GitHub's primary rate-limit headers for an installation's request; counted is
// false for a 304, which GitHub does not count.
func (s *Server) rateHeaders(h http.Header, installation int64, counted bool) {
	s.mu.Lock()
	now := time.Now()
	if now.After(s.rateReset) {
		s.rateUsed, s.rateReset = map[int64]int{}, now.Add(time.Hour).Truncate(time.Second)
	}
	if counted {
		s.rateUsed[installation]++
	}
	used, reset := s.rateUsed[installation], s.rateReset
	s.mu.Unlock()
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.rateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, s.rateLimit-used)))
	h.Set("X-RateLimit-Used", strconv.Itoa(used))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

// cacheHeaders sets what github.com sends on every GET answer, 200 and 304 alike.
func cacheHeaders(h http.Header, r *http.Request, etag string) {
	if r.Header.Get("Authorization") != "" {
		h.Set("Cache-Control", "private, max-age=60, s-maxage=60")
	} else {
		h.Set("Cache-Control", "public, max-age=60, s-maxage=60")
	}
	h.Set("ETag", etag)
	h.Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
}
