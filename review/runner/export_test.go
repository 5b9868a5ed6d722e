package runner

import (
	"net/http"
	"strconv"
	"time"
)

// SignedRequestForTest returns the headers of an authenticated request with body.
func SignedRequestForTest(token []byte, method, path string, body []byte) (http.Header, []byte) {
	return SignedRequestAtForTest(token, method, path, body, time.Now())
}

// SignedRequestAtForTest is SignedRequestForTest with the request's time at.
func SignedRequestAtForTest(token []byte, method, path string, body []byte, at time.Time) (http.Header, []byte) {
	date, nonce := strconv.FormatInt(at.Unix(), 10), newNonce()
	h := http.Header{}
	h.Set(HeaderDate, date)
	h.Set(HeaderNonce, nonce)
	h.Set(HeaderDigest, bodyDigest(body))
	if len(body) > 0 {
		h.Set("Expect", "100-continue") // as the worker sends it
	}
	h.Set(HeaderMAC, requestMAC(token, method, path, date, nonce, int64(len(body)), bodyDigest(body)))
	return h, body
}
