package handlers

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	metrics "github.com/rcrowley/go-metrics"
)

// goMetricsCollector exposes a go-metrics registry (where go-githubapp records its client and
// scheduler metrics) to Prometheus at scrape time. Names become lensgate_<name with dots as
// underscores>; a "[key:value]" suffix becomes a label; counters get _total, histograms
// become summaries.
type goMetricsCollector struct {
	reg metrics.Registry
}

// Describe sends nothing: the metric set grows as installations appear, so the collector is
// unchecked.
func (goMetricsCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c goMetricsCollector) Collect(ch chan<- prometheus.Metric) {
	c.reg.Each(func(name string, m any) {
		base, labels := splitMetricName(name)
		keys := make([]string, 0, len(labels))
		vals := make([]string, 0, len(labels))
		for _, kv := range labels {
			keys = append(keys, kv[0])
			vals = append(vals, kv[1])
		}
		var pm prometheus.Metric
		var err error
		switch v := m.(type) {
		case metrics.Counter:
			d := prometheus.NewDesc(base+"_total", "go-githubapp counter "+helpName(name), keys, nil)
			pm, err = prometheus.NewConstMetric(d, prometheus.CounterValue, float64(v.Count()), vals...)
		case metrics.Gauge:
			d := prometheus.NewDesc(base, "go-githubapp gauge "+helpName(name), keys, nil)
			pm, err = prometheus.NewConstMetric(d, prometheus.GaugeValue, float64(v.Value()), vals...)
		case metrics.GaugeFloat64:
			d := prometheus.NewDesc(base, "go-githubapp gauge "+helpName(name), keys, nil)
			pm, err = prometheus.NewConstMetric(d, prometheus.GaugeValue, v.Value(), vals...)
		case metrics.Histogram:
			s := v.Snapshot()
			qs := []float64{0.5, 0.9, 0.99}
			ps := s.Percentiles(qs)
			quant := make(map[float64]float64, len(qs))
			for i, q := range qs {
				quant[q] = ps[i]
			}
			d := prometheus.NewDesc(base, "go-githubapp histogram "+helpName(name), keys, nil)
			pm, err = prometheus.NewConstSummary(d, uint64(s.Count()), float64(s.Sum()), quant, vals...)
		default:
			return
		}
		if err == nil {
			ch <- pm
		}
	})
}

// splitMetricName turns "github.rate.remaining[installation:12]" into
// ("lensgate_github_rate_remaining", [["installation","12"]]).
func splitMetricName(name string) (string, [][2]string) {
	var labels [][2]string
	if i := strings.IndexByte(name, '['); i >= 0 && strings.HasSuffix(name, "]") {
		for _, part := range strings.Split(name[i+1:len(name)-1], ",") {
			k, v, ok := strings.Cut(part, ":")
			if ok {
				labels = append(labels, [2]string{sanitizeMetric(k), v})
			}
		}
		name = name[:i]
	}
	return "lensgate_" + sanitizeMetric(name), labels
}

func sanitizeMetric(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// helpName drops the label suffix so every sample of a family shares one help text.
func helpName(name string) string {
	if i := strings.IndexByte(name, '['); i >= 0 {
		return name[:i]
	}
	return name
}
