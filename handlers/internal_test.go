package handlers

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	metrics "github.com/rcrowley/go-metrics"
)

func TestSplitMetricName(t *testing.T) {
	tests := []struct {
		in     string
		name   string
		labels [][2]string
	}{
		{"github.requests", "lensgate_github_requests", nil},
		{"github.requests.2xx", "lensgate_github_requests_2xx", nil},
		{"github.rate.remaining[installation:12]", "lensgate_github_rate_remaining", [][2]string{{"installation", "12"}}},
		{"github.handler.error[event:pull_request]", "lensgate_github_handler_error", [][2]string{{"event", "pull_request"}}},
	}
	for _, tt := range tests {
		name, labels := splitMetricName(tt.in)
		if name != tt.name || !slices.Equal(labels, tt.labels) {
			t.Errorf("splitMetricName(%q) = %q %v", tt.in, name, labels)
		}
	}
}

func TestGoMetricsBridge(t *testing.T) {
	gm := metrics.NewRegistry()
	metrics.GetOrRegisterCounter("github.requests", gm).Inc(3)
	metrics.GetOrRegisterGauge("github.rate.remaining[installation:7]", gm).Update(4999)
	metrics.GetOrRegisterHistogram("github.event.age", gm, metrics.NewUniformSample(10)).Update(12)
	reg := prometheus.NewRegistry()
	reg.MustRegister(goMetricsCollector{reg: gm})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				got[mf.GetName()] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				got[mf.GetName()+"{"+m.GetLabel()[0].GetValue()+"}"] = m.GetGauge().GetValue()
			case m.Summary != nil:
				got[mf.GetName()] = float64(m.GetSummary().GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"lensgate_github_requests_total":    3,
		"lensgate_github_rate_remaining{7}": 4999,
		"lensgate_github_event_age":         1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
