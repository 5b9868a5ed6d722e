package handlers_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/webhook"
)

// unsigned starts a POST whose body the test writes through the returned pipe.
func (e *env) unsigned(length int64) (*io.PipeWriter, chan *http.Response) {
	e.t.Helper()
	pr, pw := io.Pipe()
	// A test that fails midway still ends the request, so the server's close does not wait on it.
	e.t.Cleanup(func() { _ = pw.CloseWithError(errors.New("test over")) })
	req, err := http.NewRequest(http.MethodPost, e.http.URL+handlers.RouteHook, pr)
	if err != nil {
		e.t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", "d-unsigned")
	req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("ab", 32))
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			done <- nil
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp
	}()
	return pw, done
}

// Bodies whose signature is not checked yet hold memory on anyone's behalf: beyond the bound,
// requests get 503 with Retry-After before their body is read, and the bound is given back
// once a signature is checked.
func TestUnverifiedBodiesAreBounded(t *testing.T) {
	const limit = 1 << 20
	e := newEnv(t, func(_ *config.Server, o *handlers.Options) { o.MaxUnverifiedBytes = limit })
	const size = 700 << 10
	held := func() float64 { return e.metric("lensgate_webhook_unverified_bytes", nil) }
	first, firstDone := e.unsigned(size)
	// Half the body is in flight; the second request is sent only once the server holds the
	// first one's reservation (the write alone may end in socket buffers before that).
	write(t, first, size/2)
	e.waitFor("the first body's reservation", func() bool { return held() == size })
	second, secondDone := e.unsigned(size)
	resp := response(t, "second request", secondDone)
	_ = second.Close()
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second unverified body beyond the bound: %+v, want 503 with Retry-After", resp)
	}
	write(t, first, size-size/2)
	_ = first.Close()
	if resp := response(t, "first request", firstDone); resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("first body (bad signature): %+v, want 400", resp)
	}
	if got := held(); got != 0 {
		t.Fatalf("%v bytes still reserved after the answer", got)
	}
	// The bound is free again: a signed delivery of the same size is taken.
	e.addFixturePR(readmeDiff)
	payload := fixture(t, "pull_request.opened.payload.json")
	payload = append(payload, bytes.Repeat([]byte(" "), size-len(payload))...)
	if code, body := e.send("pull_request", "d-after", payload); code != http.StatusAccepted {
		t.Fatalf("signed delivery after the flood: %d %q", code, body)
	}
	if got := e.metric("lensgate_webhook_rejected_total", map[string]string{"reason": "busy"}); got != 1 {
		t.Fatalf("busy rejections %v, want 1", got)
	}
}

// bodyDeadline bounds each step of a hand-written request, so a server that stops reading fails
// the test instead of hanging the package.
const bodyDeadline = 30 * time.Second

// write sends n body bytes through the pipe within bodyDeadline.
func write(t *testing.T, w *io.PipeWriter, n int) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := w.Write(bytes.Repeat([]byte("x"), n))
		errc <- err
	}()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(bodyDeadline):
		_ = w.CloseWithError(fmt.Errorf("test deadline"))
		t.Fatalf("the server read no %d body bytes within %v", n, bodyDeadline)
	}
}

// response waits bodyDeadline for a request's answer.
func response(t *testing.T, what string, done chan *http.Response) *http.Response {
	t.Helper()
	select {
	case resp := <-done:
		return resp
	case <-time.After(bodyDeadline):
		t.Fatalf("no answer to the %s within %v", what, bodyDeadline)
		return nil
	}
}

// A client still sending an oversized body reads the 413 instead of a connection reset, with
// or without a Content-Length.
func TestOversizedBodyGetsReadable413(t *testing.T) {
	e := newEnv(t)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			conn, err := net.Dial("tcp", e.http.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			size := webhook.MaxWebhookBytes + 4<<20
			head := "POST " + handlers.RouteHook + " HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: pull_request\r\nX-GitHub-Delivery: d-big\r\n" +
				"X-Hub-Signature-256: sha256=" + strings.Repeat("ab", 32) + "\r\n"
			if chunked {
				head += "Transfer-Encoding: chunked\r\n\r\n"
			} else {
				head += fmt.Sprintf("Content-Length: %d\r\n\r\n", size)
			}
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			block := bytes.Repeat([]byte("x"), 1<<20)
			for sent := 0; sent < size; sent += len(block) {
				var err error
				if chunked {
					_, err = fmt.Fprintf(conn, "%x\r\n%s\r\n", len(block), block)
				} else {
					_, err = conn.Write(block)
				}
				if err != nil {
					t.Fatalf("sending failed after %d MiB: %v", sent>>20, err)
				}
			}
			if chunked {
				_, _ = io.WriteString(conn, "0\r\n\r\n")
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no readable answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "limited to") {
				t.Fatalf("answer %d %q", resp.StatusCode, body)
			}
		})
	}
}
