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

// The publisher judges failures by the shared classification, with a removed installation final
// and a bare error judged by the status of its response.
func TestClassify(t *testing.T) {
	resp := func(code int, h http.Header) *github.Response {
		if h == nil {
			h = http.Header{}
		}
		return &github.Response{Response: &http.Response{StatusCode: code, Header: h}}
	}
	after := 7 * time.Second
	cases := []struct {
		name  string
		resp  *github.Response
		err   error
		wait  time.Duration // the server-given wait; zero: the policy's backoff
		retry bool
	}{
		{"500", resp(500, nil), errors.New("x"), 0, true},
		{"422", resp(422, nil), errors.New("x"), 0, false},
		{"404", resp(404, nil), errors.New("x"), 0, false},
		{"403 permission", resp(403, nil), errors.New("x"), 0, false},
		{"403 secondary rate limit", resp(403, nil), &github.AbuseRateLimitError{RetryAfter: &after}, after, true},
		{"429 with Retry-After", resp(429, http.Header{"Retry-After": {"3"}}), errors.New("x"), 3 * time.Second, true},
		{"network error", nil, &url.Error{Op: "Post", URL: "x", Err: context.DeadlineExceeded}, 0, true},
		{"other error", nil, errors.New("bad request body"), 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := classify(tc.resp, tc.err)
			if v.Retry != tc.retry || v.After != tc.wait {
				t.Fatalf("classify = %+v, want retry %v after %v", v, tc.retry, tc.wait)
			}
		})
	}
}
