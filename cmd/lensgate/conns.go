package main

import (
	"net"
	"net/http"
	"sync"
)

// newConns closes, when an http.Server shuts down, the connections that have not sent a whole
// request. Shutdown closes idle keep-alive connections but waits for such a connection until it
// is 5 s old, whatever the shutdown timeout: a client's spare connection (an HTTP client under
// load dials more than it uses; a load balancer connects ahead) would hold the stop and fail it
// with nothing in flight. net/http drops a request whose header arrives after Shutdown began, so
// closing these connections at once loses nothing it would have served.
type newConns struct {
	mu       sync.Mutex
	conns    map[net.Conn]struct{} // in http.StateNew
	stopping bool
}

// watch sets srv up to close its new connections when it shuts down.
func (n *newConns) watch(srv *http.Server) {
	n.conns = make(map[net.Conn]struct{})
	srv.ConnState = n.track
	// Shutdown sets itself shutting down and closes the listeners before it calls this.
	srv.RegisterOnShutdown(n.stop)
}

func (n *newConns) track(c net.Conn, st http.ConnState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case st != http.StateNew:
		delete(n.conns, c)
	case n.stopping:
		// Accepted just before the listener closed.
		_ = c.Close()
	default:
		n.conns[c] = struct{}{}
	}
}

func (n *newConns) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopping = true
	for c := range n.conns {
		_ = c.Close()
		delete(n.conns, c)
	}
}
