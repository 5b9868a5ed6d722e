package githubfake

import (
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// LoadResult is what one open-loop run of webhook deliveries measured.
type LoadResult struct {
	// Latencies holds every request's answer time, sorted.
	Latencies []time.Duration
	// Codes counts answers by status code; -1 counts transport errors.
	Codes map[int]int
	// Sent is how long sending took; len(Latencies)/Sent is the rate actually offered.
	Sent time.Duration
}

// Quantile returns the q-th quantile (0..1) of the latencies.
func (r LoadResult) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.Latencies[int(q*float64(len(r.Latencies)-1))]
}

// Non2xx counts answers that were not 2xx, transport errors included.
func (r LoadResult) Non2xx() int {
	n := 0
	for c, k := range r.Codes {
		if c/100 != 2 {
			n += k
		}
	}
	return n
}

// SendOpenLoop sends reqs at rate per second. It is an open loop: every request has its own
// send time, so a slow answer never lowers the offered rate. before(i), when not nil, runs just
// before request i is sent (to push the head its webhook announces, as GitHub does first).
// Build and sign the requests before calling it, so the measurement is the server's.
func SendOpenLoop(client *http.Client, reqs []*http.Request, rate int, before func(i int)) LoadResult {
	lat := make([]time.Duration, len(reqs))
	codes := make([]int, len(reqs))
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(max(rate, 1))
	start := time.Now()
	for i := range reqs {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if before != nil {
				before(i)
			}
			t0 := time.Now()
			resp, err := client.Do(reqs[i])
			lat[i] = time.Since(t0)
			if err != nil {
				codes[i] = -1
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	sent := time.Since(start)
	wg.Wait()
	slices.Sort(lat)
	res := LoadResult{Latencies: lat, Codes: map[int]int{}, Sent: sent}
	for _, c := range codes {
		res.Codes[c]++
	}
	return res
}
