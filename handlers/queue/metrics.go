package queue

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the queue's Prometheus collectors. Every Queue implementation records the same
// names so dashboards do not depend on which queue a deployment runs.
type Metrics struct {
	// Depth is the number of queued (not yet running) jobs.
	Depth prometheus.Gauge
	// Running is the number of jobs being worked on.
	Running prometheus.Gauge
	// Age observes, when a job starts, how long it waited since it was enqueued.
	Age prometheus.Histogram
	// Enqueued counts accepted jobs.
	Enqueued prometheus.Counter
	// Dropped counts refused or abandoned jobs by reason: "full", "stopped", "abandoned".
	Dropped *prometheus.CounterVec
	// Coalesced counts jobs that replaced a queued job of the same key.
	Coalesced prometheus.Counter
	// Duplicates counts deliveries refused because their id was already seen.
	Duplicates prometheus.Counter
	// Superseded counts running jobs cancelled because a newer head arrived.
	Superseded prometheus.Counter
	// Panics counts handler panics that were recovered.
	Panics prometheus.Counter
	// Finished counts completed jobs by result: "ok", "error", "permanent", "cancelled", "panic".
	Finished *prometheus.CounterVec
}

// NewMetrics creates the queue collectors and registers them with reg when reg is not nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lensgate_queue_depth", Help: "Review jobs waiting for a worker.",
		}),
		Running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lensgate_queue_running", Help: "Review jobs being worked on.",
		}),
		Age: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lensgate_queue_job_age_seconds",
			Help:    "Time a review job waited between enqueue and start.",
			Buckets: []float64{.001, .01, .1, .5, 1, 5, 15, 60, 300, 900},
		}),
		Enqueued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lensgate_queue_enqueued_total", Help: "Review jobs accepted.",
		}),
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lensgate_queue_dropped_total", Help: "Review jobs refused or abandoned, by reason.",
		}, []string{"reason"}),
		Coalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lensgate_queue_coalesced_total", Help: "Queued review jobs replaced by a newer job for the same subject.",
		}),
		Duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lensgate_queue_duplicate_deliveries_total", Help: "Webhook deliveries ignored because their id was already accepted.",
		}),
		Superseded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lensgate_queue_superseded_total", Help: "Running review jobs cancelled because a newer head arrived.",
		}),
		Panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lensgate_queue_panics_total", Help: "Review job panics recovered.",
		}),
		Finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lensgate_queue_finished_total", Help: "Review jobs finished, by result.",
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.Depth, m.Running, m.Age, m.Enqueued, m.Dropped, m.Coalesced,
			m.Duplicates, m.Superseded, m.Panics, m.Finished)
	}
	return m
}
