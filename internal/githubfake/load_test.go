package githubfake

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestSendOpenLoop(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1)%4 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	reqs := make([]*http.Request, 20)
	for i := range reqs {
		req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		reqs[i] = req
	}
	var before atomic.Int32
	res := SendOpenLoop(srv.Client(), reqs, 1000, func(int) { before.Add(1) })
	if before.Load() != 20 || len(res.Latencies) != 20 {
		t.Fatalf("before ran %d times, %d latencies", before.Load(), len(res.Latencies))
	}
	if res.Codes[http.StatusAccepted] != 15 || res.Codes[http.StatusServiceUnavailable] != 5 || res.Non2xx() != 5 {
		t.Errorf("codes %v, non-2xx %d", res.Codes, res.Non2xx())
	}
	for i := 1; i < len(res.Latencies); i++ {
		if res.Latencies[i] < res.Latencies[i-1] {
			t.Fatal("latencies not sorted")
		}
	}
	if res.Quantile(0) != res.Latencies[0] || res.Quantile(1) != res.Latencies[19] || res.Quantile(0.5) != res.Latencies[9] {
		t.Error("quantiles do not index the sorted latencies")
	}
	if (LoadResult{}).Quantile(0.5) != 0 {
		t.Error("empty result has a quantile")
	}
	// A refused connection counts as -1 and not 2xx.
	srv.Close()
	res = SendOpenLoop(&http.Client{}, reqs[:2], 100, nil)
	if res.Codes[-1] != 2 || res.Non2xx() != 2 {
		t.Errorf("transport errors: %v", res.Codes)
	}
}
