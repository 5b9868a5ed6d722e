package retry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/google/go-github/v62/github"
)

// RetryAfter reads a Retry-After header, in seconds or as an HTTP date, relative to now.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// HTTPStatus judges an HTTP answer by its status: 408, 429 and 5xx are transient (after the
// server's Retry-After when it gives one); 2xx–4xx otherwise are final.
func HTTPStatus(status int, h http.Header) Verdict {
	if status != http.StatusRequestTimeout && status != http.StatusTooManyRequests && status < 500 {
		return Final()
	}
	if d, ok := RetryAfter(h, time.Now()); ok {
		return After(d)
	}
	return Backoff()
}

// Network judges an error that carries no HTTP answer: a network error or an attempt's own
// timeout is transient; anything else is final.
func Network(err error) Verdict {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return Backoff()
	}
	return Final()
}

// GitHub judges an error of a go-github call: primary and secondary rate limits wait as GitHub
// asks (Retry-After, or the reset time of the primary limit); 408, 429 and 5xx back off; a
// network error or timeout backs off; any other answer (404, 422, …) is final.
func GitHub(err error) Verdict {
	var abuse *github.AbuseRateLimitError
	if errors.As(err, &abuse) {
		if d := abuse.GetRetryAfter(); d > 0 {
			return After(d)
		}
		// GitHub's guidance without a Retry-After: wait at least a minute.
		return After(time.Minute)
	}
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		return After(time.Until(rl.Rate.Reset.Time) + time.Second)
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		// A secondary limit go-github did not recognise by its message still names its wait.
		if er.Response.StatusCode == http.StatusForbidden {
			if d, ok := RetryAfter(er.Response.Header, time.Now()); ok {
				return After(d)
			}
		}
		return HTTPStatus(er.Response.StatusCode, er.Response.Header)
	}
	return Network(err)
}
