package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// TestShutdownAnswersNoRequestBegunBefore holds net/http to what closing new connections on a
// stop relies on: a request whose header completes after Shutdown began is not answered, so a
// connection that has not sent a whole request carries nothing the stop would still serve.
func TestShutdownAnswersNoRequestBegunBefore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "served")
	})}
	began := make(chan struct{})
	srv.RegisterOnShutdown(func() { close(began) })
	go func() { _ = srv.Serve(ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Bounds a hang, not a speed.
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	// A whole request first, so the server has read from this connection before the stop.
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Shutdown(ctx) }()
	<-began
	if _, err := io.WriteString(c, "\r\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Errorf("request completed after Shutdown began answered %q; closing new connections on a stop would lose it", b)
	}
	if err := <-stopped; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestNewConnsEndsShutdown: Shutdown closes connections without a whole request at once instead
// of waiting until they are 5 s old, so it ends within a shorter deadline.
func TestNewConnsEndsShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
	var fresh newConns
	fresh.watch(srv)
	go func() { _ = srv.Serve(ln) }()
	quiet, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	partial, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer partial.Close()
	if _, err := io.WriteString(partial, "GET / HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	// Below net/http's 5 s: without the closing, Shutdown reports the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for name, c := range map[string]net.Conn{"without a byte": quiet, "with part of a request": partial} {
		_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // bounds a hang
		if n, err := c.Read(make([]byte, 1)); !closedConn(n, err) {
			t.Errorf("connection %s: read %d bytes, %v; want it closed", name, n, err)
		}
	}
}

// closedConn reports whether a read of n bytes ending in err shows the peer closed the
// connection: EOF, or a reset when the peer closed it with bytes unread.
func closedConn(n int, err error) bool {
	return n == 0 && (err == io.EOF || errors.Is(err, syscall.ECONNRESET))
}
