package durable

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the queue's Prometheus series. They work unregistered (nil Registerer).
type metrics struct {
	reg         prometheus.Registerer
	collectors  []prometheus.Collector
	enqueued    *prometheus.CounterVec
	enqueueTime prometheus.Histogram
	jobs        *prometheus.CounterVec
	jobTime     *prometheus.HistogramVec
	deadLetters *prometheus.CounterVec
	superseded  prometheus.Counter
	resumed     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, byState func(context.Context) (map[string]float64, error)) *metrics {
	m := &metrics{
		reg: reg,
		enqueued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lensgate_durable_queue_enqueued_total",
			Help: "Enqueue calls by result: queued, coalesced, duplicate, replay, full, error.",
		}, []string{"result"}),
		enqueueTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "lensgate_durable_queue_enqueue_seconds",
			Help:    "Time to accept a job at the webhook (one database transaction).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lensgate_durable_queue_jobs_finished_total",
			Help: "Job attempts by outcome: completed, retry, superseded, permanent, discarded.",
		}, []string{"outcome"}),
		jobTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lensgate_durable_queue_job_seconds",
			Help:    "Duration of job attempts by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.01, 3, 12),
		}, []string{"outcome"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lensgate_durable_queue_dead_letters_total",
			Help: "Jobs given up on by this replica: permanent failure, attempts exhausted or workers_died (its workers died MaxAttempts times).",
		}, []string{"reason"}),
		superseded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lensgate_durable_queue_superseded_total",
			Help: "Older jobs cancelled because a newer head or re-run arrived.",
		}),
		resumed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lensgate_durable_queue_resumed_total",
			Help: "Running jobs taken over by this replica because their worker stopped renewing the job's lease (it died).",
		}),
	}
	m.collectors = []prometheus.Collector{m.enqueued, m.enqueueTime, m.jobs, m.jobTime, m.deadLetters, m.superseded, m.resumed,
		&stateCollector{count: byState, desc: prometheus.NewDesc("lensgate_durable_queue_jobs",
			"Jobs in the database by River state; discarded is the dead-letter backlog.", []string{"state"}, nil)}}
	if reg != nil {
		for _, c := range m.collectors {
			// A second queue in the same registry (tests) keeps its series unregistered.
			_ = reg.Register(c)
		}
	}
	return m
}

func (m *metrics) observeEnqueue(res enqueueResult, took time.Duration) {
	m.enqueued.WithLabelValues(string(res)).Inc()
	if res == resultQueued || res == resultCoalesced || res == resultDuplicate || res == resultReplay {
		m.enqueueTime.Observe(took.Seconds())
	}
}

func (m *metrics) finished(outcome string, took time.Duration) {
	m.jobs.WithLabelValues(outcome).Inc()
	if took > 0 {
		m.jobTime.WithLabelValues(outcome).Observe(took.Seconds())
	}
}

func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}

// stateCollector counts jobs by state at scrape time, so every replica reports the shared
// backlog, including jobs discarded by another replica or by River's rescuer.
type stateCollector struct {
	count func(context.Context) (map[string]float64, error)
	desc  *prometheus.Desc
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	counts, err := c.count(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, state := range []string{"available", "pending", "scheduled", "running", "retryable", "completed", "cancelled", "discarded"} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, counts[state], state)
	}
}
