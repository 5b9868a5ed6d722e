package githubfake

import (
	"net/http"
	"strconv"
	"time"
)

// Fault is an injected failure for the next Times calls of one route.
type Fault struct {
	// Status is the HTTP status to answer with; 0 means answer normally after Delay.
	Status int
	// Times is how many calls the fault applies to (at least 1).
	Times int
	// RetryAfter, when > 0, is sent as the Retry-After header in seconds.
	RetryAfter int
	// SecondaryRateLimit answers 403 with GitHub's secondary rate limit message.
	SecondaryRateLimit bool
	// Delay holds the request before answering; a client deadline ends it early with no answer.
	Delay time.Duration
	// Message overrides the error message.
	Message string
	// PrimaryRateLimit answers 403 with the exhausted X-RateLimit-* headers of GitHub's primary
	// rate limit; RetryAfter then sets how far in the future the reset is (seconds).
	PrimaryRateLimit bool
	// AfterWrite performs the request first and then answers with Status, as GitHub does when
	// a write lands but the response is lost (a 502 from a proxy, a timeout).
	AfterWrite bool
}

// Inject queues a fault for route ("METHOD /route/{pattern}", as in Calls).
func (s *Server) Inject(route string, f Fault) {
	if f.Times < 1 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fc := f
	s.faults[route] = append(s.faults[route], &fc)
}

// FailNext answers the next n calls of route with status.
func (s *Server) FailNext(route string, status, n int) {
	s.Inject(route, Fault{Status: status, Times: n})
}

// SecondaryRateLimitNext answers the next n calls of route with GitHub's 403 secondary rate
// limit and a Retry-After of retryAfter seconds.
func (s *Server) SecondaryRateLimitNext(route string, retryAfter, n int) {
	s.Inject(route, Fault{Status: http.StatusForbidden, SecondaryRateLimit: true, RetryAfter: retryAfter, Times: n})
}

// DelayNext holds the next n calls of route for d before answering normally.
func (s *Server) DelayNext(route string, d time.Duration, n int) {
	s.Inject(route, Fault{Delay: d, Times: n})
}

// PendingFaults reports how many injected failures for route are not used up yet.
func (s *Server) PendingFaults(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.faults[route] {
		n += f.Times
	}
	return n
}

// takeFault consumes one use of the first queued fault of route. Callers hold s.mu.
func (s *Server) takeFault(route string) *Fault {
	q := s.faults[route]
	if len(q) == 0 {
		return nil
	}
	f := *q[0]
	q[0].Times--
	if q[0].Times <= 0 {
		q = q[1:]
	}
	if len(q) == 0 {
		delete(s.faults, route)
	} else {
		s.faults[route] = q
	}
	return &f
}

// delay holds the request; it reports true when the client gave up meanwhile.
func (f *Fault) delay(r *http.Request) bool {
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return true
		case <-t.C:
		}
	}
	return false
}

// fail writes the injected error response; it reports false when there is none to write.
func (f *Fault) fail(w http.ResponseWriter) bool {
	if f.Status == 0 {
		return false
	}
	if f.PrimaryRateLimit {
		reset := time.Now().Add(time.Duration(f.RetryAfter) * time.Second).Unix()
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Used", "5000")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
		w.Header().Set("X-RateLimit-Resource", "core")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(`{"message":"API rate limit exceeded for installation ID 1.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`))
		return true
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	msg := f.Message
	switch {
	case msg != "":
	case f.SecondaryRateLimit:
		msg = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID."
	case f.Status == http.StatusTooManyRequests:
		msg = "API rate limit exceeded"
	case f.Status >= 500:
		msg = "Server Error"
	default:
		msg = http.StatusText(f.Status)
	}
	if f.Status == http.StatusForbidden && !f.SecondaryRateLimit && f.RetryAfter == 0 && f.Message == "" {
		msg = "Resource not accessible by integration"
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(f.Status)
	body := `{"message":` + strconv.Quote(msg) + `,"documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`
	_, _ = w.Write([]byte(body))
	return true
}
