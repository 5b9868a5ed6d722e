package publish

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

func TestRetryWait(t *testing.T) {
	r := Retry{Attempts: 4, Backoff: 100 * time.Millisecond, MaxWait: time.Minute}
	resp := func(code int, h http.Header) *github.Response {
		if h == nil {
			h = http.Header{}
		}
		return &github.Response{Response: &http.Response{StatusCode: code, Header: h}}
	}
	after := 7 * time.Second
	cases := []struct {
		name    string
		resp    *github.Response
		err     error
		attempt int
		wait    time.Duration
		retry   bool
	}{
		{"500", resp(500, nil), errors.New("x"), 1, 100 * time.Millisecond, true},
		{"502 third attempt doubles twice", resp(502, nil), errors.New("x"), 3, 400 * time.Millisecond, true},
		{"422", resp(422, nil), errors.New("x"), 1, 0, false},
		{"404", resp(404, nil), errors.New("x"), 1, 0, false},
		{"403 permission", resp(403, nil), errors.New("x"), 1, 0, false},
		{"403 secondary rate limit", resp(403, nil), &github.AbuseRateLimitError{RetryAfter: &after}, 1, after, true},
		{"429 with Retry-After", resp(429, http.Header{"Retry-After": {"3"}}), errors.New("x"), 1, 3 * time.Second, true},
		{"network error", nil, &url.Error{Op: "Post", URL: "x", Err: context.DeadlineExceeded}, 2, 200 * time.Millisecond, true},
		{"other error", nil, errors.New("bad request body"), 1, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wait, retry := r.retryWait(tc.resp, tc.err, tc.attempt)
			if retry != tc.retry || wait != tc.wait {
				t.Fatalf("retryWait = %v %v, want %v %v", wait, retry, tc.wait, tc.retry)
			}
		})
	}
}
