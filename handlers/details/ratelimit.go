package details

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the per-client view limit.
const (
	DefaultViewsPerMinute = 60
	viewBurst             = 20
	// maxClients bounds the limiters kept; idle ones are dropped first.
	maxClients = 10000
	clientIdle = 10 * time.Minute
)

// clientLimits keeps one token bucket per client: a logged-in reader by login, anyone else by
// IP address (behind a reverse proxy every anonymous reader is the proxy's address).
type clientLimits struct {
	perMinute int
	mu        sync.Mutex
	clients   map[string]*clientLimit
}

type clientLimit struct {
	lim  *rate.Limiter
	seen time.Time
}

func newClientLimits(perMinute int) *clientLimits {
	if perMinute <= 0 {
		perMinute = DefaultViewsPerMinute
	}
	return &clientLimits{perMinute: perMinute, clients: map[string]*clientLimit{}}
}

// allow takes one view from the client's bucket; false with the wait when it is empty.
func (c *clientLimits) allow(key string, now time.Time) (bool, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.clients[key]
	if !ok {
		if len(c.clients) >= maxClients {
			c.evict(now)
		}
		cl = &clientLimit{lim: rate.NewLimiter(rate.Limit(float64(c.perMinute)/60), viewBurst)}
		c.clients[key] = cl
	}
	cl.seen = now
	r := cl.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// evict drops the limiters idle for clientIdle, or all of them when none is (a flood of
// addresses must not grow the map without bound).
func (c *clientLimits) evict(now time.Time) {
	for k, cl := range c.clients {
		if now.Sub(cl.seen) > clientIdle {
			delete(c.clients, k)
		}
	}
	if len(c.clients) >= maxClients {
		clear(c.clients)
	}
}

// clientKey names the client of a request for the limit.
func (h *Handler) clientKey(r *http.Request) string {
	if s := h.viewer(r); s != nil {
		return "login:" + s.Login
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// limited answers 429 when the client has used its views; it reports whether it did.
func (h *Handler) limited(w http.ResponseWriter, r *http.Request) bool {
	ok, wait := h.limits.allow(h.clientKey(r), h.o.Now())
	if ok {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte("Too many page views from this client; wait a minute and reload.\n"))
	return true
}
