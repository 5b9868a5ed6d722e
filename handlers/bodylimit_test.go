package handlers_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
)

// unsigned starts a POST whose body the test writes through the returned pipe.
func (e *env) unsigned(length int64) (*io.PipeWriter, chan *http.Response) {
	e.t.Helper()
	pr, pw := io.Pipe()
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
	first, firstDone := e.unsigned(size)
	// Half the body is in flight, so the first request holds its reservation.
	if _, err := first.Write(bytes.Repeat([]byte("x"), size/2)); err != nil {
		t.Fatal(err)
	}
	second, secondDone := e.unsigned(size)
	resp := <-secondDone
	_ = second.Close()
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second unverified body beyond the bound: %+v, want 503 with Retry-After", resp)
	}
	if _, err := first.Write(bytes.Repeat([]byte("x"), size-size/2)); err != nil {
		t.Fatal(err)
	}
	_ = first.Close()
	if resp := <-firstDone; resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("first body (bad signature): %+v, want 400", resp)
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
			size := handlers.MaxWebhookBytes + 4<<20
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
