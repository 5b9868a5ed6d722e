package handlers

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// scriptedGitHub answers each request with the next scripted answer and records what it was asked.
type scriptedGitHub struct {
	t       *testing.T
	answers []scriptedAnswer
	asked   []http.Header
}

type scriptedAnswer struct {
	status int
	etag   string
	body   string
	header map[string]string
}

func (g *scriptedGitHub) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(g.asked) >= len(g.answers) {
		g.t.Fatalf("request %d not scripted: %s", len(g.asked)+1, r.URL)
	}
	a := g.answers[len(g.asked)]
	g.asked = append(g.asked, r.Header.Clone())
	h := http.Header{}
	// What github.com sends on every authenticated GET, on 200s and on 304s alike.
	h.Set("Cache-Control", "private, max-age=60, s-maxage=60")
	h.Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
	h.Set("ETag", a.etag)
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("Content-Type", "application/json; charset=utf-8")
	for k, v := range a.header {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: a.status, Status: http.StatusText(a.status), Header: h, Request: r,
		Body: io.NopCloser(strings.NewReader(a.body)), ContentLength: int64(len(a.body)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

func cachedGet(t *testing.T, rt http.RoundTripper) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://api.github.com/repos/o/r/pulls/1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.github.v3+json")
	req.Header.Set("Authorization", "token installation-token")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestStoredAnswersAreAlwaysRevalidated plays GitHub's exact header sequence: a 200 with
// max-age=60, ETag and Vary, then a 304 repeating those headers, then a changed resource. Every
// read must reach GitHub, and after the change the new body must be returned.
func TestStoredAnswersAreAlwaysRevalidated(t *testing.T) {
	gh := &scriptedGitHub{t: t, answers: []scriptedAnswer{
		{status: http.StatusOK, etag: `"v1"`, body: `{"head":"a"}`},
		{status: http.StatusNotModified, etag: `"v1"`},
		{status: http.StatusNotModified, etag: `"v1"`},
		{status: http.StatusOK, etag: `"v2"`, body: `{"head":"b"}`},
		{status: http.StatusNotModified, etag: `"v2"`},
	}}
	rt := conditionalRequests(newResponseCache(maxCacheBytes))(gh)
	want := []struct {
		ifNoneMatch, body string
	}{
		{"", `{"head":"a"}`},
		{`"v1"`, `{"head":"a"}`},
		{`"v1"`, `{"head":"a"}`}, // within the 304's max-age=60: still asked
		{`"v1"`, `{"head":"b"}`},
		{`"v2"`, `{"head":"b"}`},
	}
	for i, w := range want {
		status, body := cachedGet(t, rt)
		if len(gh.asked) != i+1 {
			t.Fatalf("read %d was answered from the store without asking GitHub (%d requests reached it)", i+1, len(gh.asked))
		}
		if got := gh.asked[i].Get("If-None-Match"); got != w.ifNoneMatch {
			t.Errorf("read %d: If-None-Match = %q, want %q", i+1, got, w.ifNoneMatch)
		}
		if status != http.StatusOK || body != w.body {
			t.Errorf("read %d: %d %s, want 200 %s", i+1, status, body, w.body)
		}
	}
}

// TestFreshnessFromExpiresIsIgnored: an answer without max-age whose Expires lies in the future
// is revalidated too.
func TestFreshnessFromExpiresIsIgnored(t *testing.T) {
	expires := map[string]string{"Cache-Control": "private", "Expires": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}
	gh := &scriptedGitHub{t: t, answers: []scriptedAnswer{
		{status: http.StatusOK, etag: `"v1"`, body: `{"n":1}`, header: expires},
		{status: http.StatusNotModified, etag: `"v1"`, header: expires},
		{status: http.StatusOK, etag: `"v2"`, body: `{"n":2}`, header: expires},
	}}
	rt := conditionalRequests(newResponseCache(maxCacheBytes))(gh)
	for i, want := range []string{`{"n":1}`, `{"n":1}`, `{"n":2}`} {
		if _, body := cachedGet(t, rt); body != want || len(gh.asked) != i+1 {
			t.Fatalf("read %d: body %s after %d requests, want %s after %d", i+1, body, len(gh.asked), want, i+1)
		}
	}
}

// TestFailedReadIsNotAnsweredFromTheStore: a 502 after a stored answer that allowed
// stale-if-error reaches the caller as a 502, not as the stored body.
func TestFailedReadIsNotAnsweredFromTheStore(t *testing.T) {
	staleIfError := map[string]string{"Cache-Control": "private, max-age=60, stale-if-error=3600"}
	gh := &scriptedGitHub{t: t, answers: []scriptedAnswer{
		{status: http.StatusOK, etag: `"v1"`, body: `{"n":1}`, header: staleIfError},
		{status: http.StatusBadGateway, etag: `"v1"`, body: `{"message":"Server Error"}`, header: staleIfError},
	}}
	rt := conditionalRequests(newResponseCache(maxCacheBytes))(gh)
	cachedGet(t, rt)
	if status, body := cachedGet(t, rt); status != http.StatusBadGateway {
		t.Fatalf("failed read answered %d %s, want the 502", status, body)
	}
}
