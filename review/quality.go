package review

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// QualityKind is one thing that happened to a finding, as the quality figures count it.
type QualityKind string

// The events the quality figures count.
const (
	QualityPosted     QualityKind = "posted"    // placed as an inline comment
	QualityFixed      QualityKind = "fixed"     // a posted finding gone after a push to its file
	QualityDismissed  QualityKind = "dismissed" // dismissed with a reason
	QualityThumbsUp   QualityKind = "thumbs_up"
	QualityThumbsDown QualityKind = "thumbs_down"
	QualityResolved   QualityKind = "resolved_unfixed" // its thread resolved while it stayed open
	QualityWithdrawn  QualityKind = "withdrawn"        // withdrawn on verification
	QualitySuppressed QualityKind = "suppressed"       // suppressed by earlier feedback
)

// QualityKinds lists every kind, in the order reports show them.
var QualityKinds = []QualityKind{QualityPosted, QualityFixed, QualityDismissed, QualityThumbsUp, QualityThumbsDown,
	QualityResolved, QualityWithdrawn, QualitySuppressed}

// Valid reports whether k is a known kind.
func (k QualityKind) Valid() bool {
	for _, q := range QualityKinds {
		if q == k {
			return true
		}
	}
	return false
}

// QualityKept is how long quality events are kept; the longest window a report can cover.
const QualityKept = 400 * 24 * time.Hour

// DefaultQualityWindow is the window the quality figures cover unless asked otherwise.
const DefaultQualityWindow = 30 * 24 * time.Hour

// QualityEvent is one event of one finding of one pull request.
type QualityEvent struct {
	Repo      string      `json:"repo"`
	Number    int         `json:"number"`
	Lens      string      `json:"lens"`
	FindingID string      `json:"findingId"`
	Kind      QualityKind `json:"kind"`
	At        time.Time   `json:"at"`
}

// QualityCounts are the events of one lens of one repository over a window.
type QualityCounts struct {
	Repo   string              `json:"repo"`
	Lens   string              `json:"lens"`
	Counts map[QualityKind]int `json:"counts"`
}

// AddressedRate is fixed / posted, and false when nothing was posted.
func (c QualityCounts) AddressedRate() (float64, bool) {
	if c.Counts[QualityPosted] == 0 {
		return 0, false
	}
	return float64(c.Counts[QualityFixed]) / float64(c.Counts[QualityPosted]), true
}

// QualityEvents are the events a decision itself states: what verification withdrew, what
// earlier feedback suppressed, and the findings this head fixed or that were dismissed. The
// publisher adds what it placed and what people said on GitHub.
func QualityEvents(repo string, number int, d *Decision, at time.Time) []QualityEvent {
	var out []QualityEvent
	add := func(f Finding, k QualityKind) {
		out = append(out, QualityEvent{Repo: repo, Number: number, Lens: f.Lens, FindingID: f.ID, Kind: k, At: at})
	}
	for _, w := range d.Verification.Withdrawn {
		add(w.Finding, QualityWithdrawn)
	}
	for _, s := range d.Verification.Suppressed {
		add(s.Finding, QualitySuppressed)
	}
	for _, f := range d.Findings {
		if f.Disposition == DispositionDismissed {
			add(f, QualityDismissed)
		}
	}
	return out
}

// SortQuality orders counts by repository, then lens.
func SortQuality(out []QualityCounts) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].Repo != out[j].Repo {
			return out[i].Repo < out[j].Repo
		}
		return out[i].Lens < out[j].Lens
	})
}

// MemoryFeedback is FeedbackStore in this process's memory, bounded: MaxFeedbackPerRepo
// entries per repository, maxMemoryEvents quality events, each pruned by age. The durable
// queue's database keeps the same across replicas and restarts.
type MemoryFeedback struct {
	now func() time.Time

	mu       sync.Mutex
	feedback map[string][]Feedback // by repository, oldest first
	events   []QualityEvent
	seen     map[qualityKey]bool
}

type qualityKey struct {
	repo    string
	number  int
	finding string
	kind    QualityKind
	lens    string
}

// maxMemoryEvents bounds the quality events kept in memory.
const maxMemoryEvents = 100_000

var _ FeedbackStore = (*MemoryFeedback)(nil)

// NewMemoryFeedback returns an empty store; now is the clock (time.Now when nil).
func NewMemoryFeedback(now func() time.Time) *MemoryFeedback {
	if now == nil {
		now = time.Now
	}
	return &MemoryFeedback{now: now, feedback: map[string][]Feedback{}, seen: map[qualityKey]bool{}}
}

// RecordFeedback implements FeedbackStore.
func (m *MemoryFeedback) RecordFeedback(_ context.Context, fbs []Feedback) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cutoff := m.now().Add(-FeedbackKept)
	for _, fb := range fbs {
		if !fb.Kind.Valid() || fb.Repo == "" || fb.FindingID == "" {
			return fmt.Errorf("feedback %q on %q of %s is malformed", fb.Kind, fb.FindingID, fb.Repo)
		}
		list := m.feedback[fb.Repo]
		dup := false
		for _, have := range list {
			if have.Number == fb.Number && have.FindingID == fb.FindingID && have.Kind == fb.Kind && have.By == fb.By {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		list = append(list, fb)
		kept := list[:0]
		for _, e := range list {
			if !e.At.Before(cutoff) {
				kept = append(kept, e)
			}
		}
		if len(kept) > MaxFeedbackPerRepo {
			kept = kept[len(kept)-MaxFeedbackPerRepo:]
		}
		m.feedback[fb.Repo] = kept
	}
	return nil
}

// ListFeedback implements FeedbackStore.
func (m *MemoryFeedback) ListFeedback(_ context.Context, repo string, limit int) ([]Feedback, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cutoff := m.now().Add(-FeedbackKept)
	list := m.feedback[repo]
	var out []Feedback
	for i := len(list) - 1; i >= 0 && len(out) < limit; i-- {
		if !list[i].At.Before(cutoff) && list[i].Kind.Suppresses() {
			out = append(out, list[i])
		}
	}
	return out, nil
}

// ClearFeedback implements FeedbackStore.
func (m *MemoryFeedback) ClearFeedback(_ context.Context, repo string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.feedback[repo])
	delete(m.feedback, repo)
	return n, nil
}

// RecordQuality implements FeedbackStore.
func (m *MemoryFeedback) RecordQuality(_ context.Context, evs []QualityEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range evs {
		if !e.Kind.Valid() || e.Repo == "" || e.FindingID == "" {
			return fmt.Errorf("quality event %q on %q of %s is malformed", e.Kind, e.FindingID, e.Repo)
		}
		k := qualityKey{repo: e.Repo, number: e.Number, finding: e.FindingID, kind: e.Kind}
		if m.seen[k] {
			continue
		}
		m.seen[k] = true
		m.events = append(m.events, e)
	}
	cutoff := m.now().Add(-QualityKept)
	drop := 0
	for drop < len(m.events) && (m.events[drop].At.Before(cutoff) || len(m.events)-drop > maxMemoryEvents) {
		e := m.events[drop]
		delete(m.seen, qualityKey{repo: e.Repo, number: e.Number, finding: e.FindingID, kind: e.Kind})
		drop++
	}
	m.events = m.events[drop:]
	return nil
}

// Quality implements FeedbackStore.
func (m *MemoryFeedback) Quality(_ context.Context, repo string, since time.Time) ([]QualityCounts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	type rl struct{ repo, lens string }
	by := map[rl]map[QualityKind]int{}
	for _, e := range m.events {
		if e.At.Before(since) || repo != "" && e.Repo != repo {
			continue
		}
		k := rl{e.Repo, e.Lens}
		if by[k] == nil {
			by[k] = map[QualityKind]int{}
		}
		by[k][e.Kind]++
	}
	out := make([]QualityCounts, 0, len(by))
	for k, c := range by {
		out = append(out, QualityCounts{Repo: k.repo, Lens: k.lens, Counts: c})
	}
	SortQuality(out)
	return out, nil
}
