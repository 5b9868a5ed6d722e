package handlers

import (
	"container/list"
	"net/http"
	"strings"
	"sync"

	"github.com/gregjones/httpcache"
	"github.com/palantir/go-githubapp/githubapp"
)

// Conditional requests: GitHub answers a GET whose If-None-Match names the current ETag with
// 304 Not Modified, which does not count against the rate limit. The client keeps the last
// responses in a bounded cache and revalidates every one before use, so a repeated read (the
// pull request before the body write, the configuration of the base branch, the same head's
// commits) costs a 304. Responses are stored by URL and every use is revalidated with the
// asking installation's own token, so a stored body is only ever returned when GitHub says
// that token reads exactly it.
const (
	maxCacheBytes      = 32 << 20
	maxCacheEntryBytes = 2 << 20
)

// responseCache is an httpcache.Cache bounded in bytes, forgetting the least recently used.
type responseCache struct {
	mu    sync.Mutex
	items map[string]*list.Element
	order *list.List // front: most recent
	bytes int
	limit int
}

type cacheEntry struct {
	key  string
	data []byte
}

func newResponseCache(limit int) *responseCache {
	return &responseCache{items: map[string]*list.Element{}, order: list.New(), limit: limit}
}

func (c *responseCache) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).data, true
}

func (c *responseCache) Set(key string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
	if len(data) > maxCacheEntryBytes || len(data) > c.limit {
		return // a large diff is read again rather than crowd out everything else
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, data: data})
	c.bytes += len(data)
	for c.bytes > c.limit {
		c.remove(c.order.Back().Value.(*cacheEntry).key)
	}
}

func (c *responseCache) Delete(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
}

func (c *responseCache) remove(key string) {
	if e, ok := c.items[key]; ok {
		c.bytes -= len(e.Value.(*cacheEntry).data)
		c.order.Remove(e)
		delete(c.items, key)
	}
}

// conditionalRequests revalidates repeated GETs through cache. A diff or patch is fetched
// around it: it shares the pull request's URL (only Accept differs), and storing it would
// push the pull request's own entry out.
//
// go-githubapp's WithClientCaching(alwaysValidate) is not used for two reasons: it stores diffs
// under the pull request's key, and it only rewrites a max-age directive, so an answer whose
// freshness comes from Expires (or a future directive) would still be served unasked.
func conditionalRequests(cache httpcache.Cache) githubapp.ClientMiddleware {
	return func(next http.RoundTripper) http.RoundTripper {
		cached := &httpcache.Transport{Transport: revalidateAlways{next}, Cache: cache}
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if a := r.Header.Get("Accept"); strings.Contains(a, ".diff") || strings.Contains(a, ".patch") {
				return next.RoundTrip(r)
			}
			return cached.RoundTrip(r)
		})
	}
}

// revalidateAlways makes every answer one to revalidate before reuse, whatever freshness GitHub
// gave it. GitHub sends "Cache-Control: private, max-age=60, s-maxage=60" on 200s and repeats it
// on 304s; httpcache copies a 304's headers onto the stored answer, so the 304s are rewritten as
// well, or the stored answer would count as fresh for another minute after the first 304. Expires
// goes too (it sets freshness when no max-age does), and with it any stale-if-error, so a
// failed read is never answered from the store either.
type revalidateAlways struct{ next http.RoundTripper }

func (t revalidateAlways) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp != nil {
		resp.Header.Set("Cache-Control", "no-cache")
		resp.Header.Del("Expires")
	}
	return resp, err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
