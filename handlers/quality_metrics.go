package handlers

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensgate/lensgate/handlers/details"
)

// qualityScrapeTimeout bounds the read of the quality figures one scrape makes.
const qualityScrapeTimeout = 5 * time.Second

// qualityCollector exports the review quality figures of every repository and lens over the
// details page's default window, read from the feedback store at each scrape (so every replica
// on a durable queue reports the same figures). Its series grow with repositories × lenses.
type qualityCollector struct {
	src       details.QualitySource
	now       func() time.Time
	events    *prometheus.Desc
	addressed *prometheus.Desc
	failed    *prometheus.Desc
}

func newQualityCollector(src details.QualitySource, now func() time.Time) *qualityCollector {
	return &qualityCollector{
		src: src, now: now,
		events: prometheus.NewDesc("lensgate_review_quality_findings",
			"Findings of a repository's lens over the last 30 days, by what became of them: posted (inline), fixed, dismissed, thumbs_up, thumbs_down, resolved_unfixed, withdrawn (on verification), suppressed (by earlier feedback).",
			[]string{"repo", "lens", "event"}, nil),
		addressed: prometheus.NewDesc("lensgate_review_quality_addressed_ratio",
			"Fixed / posted inline comments of a repository's lens over the last 30 days (absent when none was posted).",
			[]string{"repo", "lens"}, nil),
		failed: prometheus.NewDesc("lensgate_review_quality_read_failed",
			"1 when this scrape could not read the quality figures.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *qualityCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.events
	ch <- c.addressed
	ch <- c.failed
}

// Collect implements prometheus.Collector.
func (c *qualityCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), qualityScrapeTimeout)
	defer cancel()
	rows, err := c.src(ctx, "", c.now().Add(-details.DefaultQualityDays*24*time.Hour))
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, failed)
	for _, r := range rows {
		for _, e := range []struct {
			name string
			n    int
		}{{"posted", r.Posted}, {"fixed", r.Fixed}, {"dismissed", r.Dismissed}, {"thumbs_up", r.ThumbsUp}, {"thumbs_down", r.ThumbsDown},
			{"resolved_unfixed", r.Resolved}, {"withdrawn", r.Withdrawn}, {"suppressed", r.Suppressed}} {
			ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(e.n), r.Repo, r.Lens, e.name)
		}
		if rate, ok := r.AddressedRate(); ok {
			ch <- prometheus.MustNewConstMetric(c.addressed, prometheus.GaugeValue, rate, r.Repo, r.Lens)
		}
	}
}
