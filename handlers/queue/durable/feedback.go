package durable

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/review"
)

const (
	sqlRecordFeedback = `INSERT INTO lensgate_feedback (repo, number, finding_id, kind, by_login, lens, rule, path, text, reason, at_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (repo, number, finding_id, kind, by_login) DO NOTHING`
	// sqlBoundFeedback keeps a repository's newest $2 entries: older ones than the $2-th
	// newest go (ties at the boundary stay).
	sqlBoundFeedback = `DELETE FROM lensgate_feedback WHERE repo = $1 AND at_ms < (
		SELECT at_ms FROM lensgate_feedback WHERE repo = $1 ORDER BY at_ms DESC LIMIT 1 OFFSET $2)`
	sqlPruneFeedback = `DELETE FROM lensgate_feedback WHERE at_ms < $1`
	sqlListFeedback  = `SELECT repo, number, finding_id, kind, by_login, lens, rule, path, text, reason, at_ms
		FROM lensgate_feedback WHERE repo = $1 AND at_ms >= $2 AND kind IN ('dismissed', 'thumbs_down', 'resolved_unfixed')
		ORDER BY at_ms DESC, finding_id LIMIT $3`
	sqlCountFeedback = `SELECT count(*) FROM lensgate_feedback WHERE repo = $1`
	sqlClearFeedback = `DELETE FROM lensgate_feedback WHERE repo = $1`
	sqlRecordQuality = `INSERT INTO lensgate_quality_event (repo, number, finding_id, kind, lens, at_ms) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (repo, number, finding_id, kind) DO NOTHING`
	sqlPruneQuality   = `DELETE FROM lensgate_quality_event WHERE at_ms < $1`
	sqlQualityAll     = `SELECT repo, lens, kind, count(*) FROM lensgate_quality_event WHERE at_ms >= $1 GROUP BY repo, lens, kind`
	sqlQualityForRepo = `SELECT repo, lens, kind, count(*) FROM lensgate_quality_event WHERE at_ms >= $1 AND repo = $2 GROUP BY repo, lens, kind`
)

// FeedbackStore is review.FeedbackStore kept in the durable queue's database: every replica
// suppresses what feedback seen by any replica rejected, and the quality figures count every
// replica's events. Entries older than review.FeedbackKept and quality events older than
// review.QualityKept are deleted by each process at most once per hour; a repository keeps its
// newest review.MaxFeedbackPerRepo entries.
type FeedbackStore struct {
	store sideStore
	now   func() time.Time

	mu       sync.Mutex
	prunedAt time.Time
}

var _ review.FeedbackStore = (*FeedbackStore)(nil)

// NewFeedbackStore returns the feedback kept in the database of q, a queue returned by Open.
// now is the clock (time.Now when nil).
func NewFeedbackStore(q queue.Queue, now func() time.Time) (*FeedbackStore, error) {
	if now == nil {
		now = time.Now
	}
	store, err := openSideStore(q)
	if err != nil {
		return nil, fmt.Errorf("durable queue: feedback: %w", err)
	}
	return &FeedbackStore{store: store, now: now}, nil
}

// RecordFeedback implements review.FeedbackStore.
func (f *FeedbackStore) RecordFeedback(ctx context.Context, fbs []review.Feedback) error {
	f.pruneSometimes(ctx)
	repos := map[string]bool{}
	for _, fb := range fbs {
		if !fb.Kind.Valid() || fb.Repo == "" || fb.FindingID == "" {
			return fmt.Errorf("durable queue: feedback %q on %q of %s is malformed", fb.Kind, fb.FindingID, fb.Repo)
		}
		if err := f.store.exec(ctx, sqlRecordFeedback, fb.Repo, int64(fb.Number), fb.FindingID, string(fb.Kind), fb.By, fb.Lens, fb.Rule,
			fb.Path, fb.Text, fb.Reason, fb.At.UnixMilli()); err != nil {
			return fmt.Errorf("durable queue: record feedback: %w", err)
		}
		repos[fb.Repo] = true
	}
	for repo := range repos {
		if err := f.store.exec(ctx, sqlBoundFeedback, repo, int64(review.MaxFeedbackPerRepo-1)); err != nil {
			return fmt.Errorf("durable queue: bound feedback of %s: %w", repo, err)
		}
	}
	return nil
}

// ListFeedback implements review.FeedbackStore.
func (f *FeedbackStore) ListFeedback(ctx context.Context, repo string, limit int) ([]review.Feedback, error) {
	var out []review.Feedback
	cutoff := f.now().Add(-review.FeedbackKept).UnixMilli()
	err := f.store.queryRows(ctx, sqlListFeedback, []any{repo, cutoff, int64(limit)}, func(scan func(...any) error) error {
		var fb review.Feedback
		var number, at int64
		var kind string
		if err := scan(&fb.Repo, &number, &fb.FindingID, &kind, &fb.By, &fb.Lens, &fb.Rule, &fb.Path, &fb.Text, &fb.Reason, &at); err != nil {
			return err
		}
		fb.Number, fb.Kind, fb.At = int(number), review.FeedbackKind(kind), time.UnixMilli(at).UTC()
		out = append(out, fb)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("durable queue: list feedback of %s: %w", repo, err)
	}
	return out, nil
}

// ClearFeedback implements review.FeedbackStore.
func (f *FeedbackStore) ClearFeedback(ctx context.Context, repo string) (int, error) {
	var n int64
	if err := f.store.queryOne(ctx, sqlCountFeedback, []any{repo}, &n); err != nil {
		return 0, fmt.Errorf("durable queue: count feedback of %s: %w", repo, err)
	}
	if err := f.store.exec(ctx, sqlClearFeedback, repo); err != nil {
		return 0, fmt.Errorf("durable queue: clear feedback of %s: %w", repo, err)
	}
	return int(n), nil
}

// RecordQuality implements review.FeedbackStore.
func (f *FeedbackStore) RecordQuality(ctx context.Context, evs []review.QualityEvent) error {
	f.pruneSometimes(ctx)
	for _, e := range evs {
		if !e.Kind.Valid() || e.Repo == "" || e.FindingID == "" {
			return fmt.Errorf("durable queue: quality event %q on %q of %s is malformed", e.Kind, e.FindingID, e.Repo)
		}
		if err := f.store.exec(ctx, sqlRecordQuality, e.Repo, int64(e.Number), e.FindingID, string(e.Kind), e.Lens, e.At.UnixMilli()); err != nil {
			return fmt.Errorf("durable queue: record quality event: %w", err)
		}
	}
	return nil
}

// Quality implements review.FeedbackStore.
func (f *FeedbackStore) Quality(ctx context.Context, repo string, since time.Time) ([]review.QualityCounts, error) {
	query, args := sqlQualityAll, []any{since.UnixMilli()}
	if repo != "" {
		query, args = sqlQualityForRepo, append(args, repo)
	}
	type rl struct{ repo, lens string }
	by := map[rl]map[review.QualityKind]int{}
	var order []rl
	err := f.store.queryRows(ctx, query, args, func(scan func(...any) error) error {
		var k rl
		var kind string
		var n int64
		if err := scan(&k.repo, &k.lens, &kind, &n); err != nil {
			return err
		}
		if by[k] == nil {
			by[k] = map[review.QualityKind]int{}
			order = append(order, k)
		}
		by[k][review.QualityKind(kind)] += int(n)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("durable queue: quality figures: %w", err)
	}
	out := make([]review.QualityCounts, 0, len(order))
	for _, k := range order {
		out = append(out, review.QualityCounts{Repo: k.repo, Lens: k.lens, Counts: by[k]})
	}
	review.SortQuality(out)
	return out, nil
}

// pruneSometimes deletes expired feedback and quality events at most once per hour. A failure
// is retried on the next write; it never refuses one.
func (f *FeedbackStore) pruneSometimes(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if now.Sub(f.prunedAt) < time.Hour {
		return
	}
	ok := f.store.exec(ctx, sqlPruneFeedback, now.Add(-review.FeedbackKept).UnixMilli()) == nil
	if f.store.exec(ctx, sqlPruneQuality, now.Add(-review.QualityKept).UnixMilli()) == nil && ok {
		f.prunedAt = now
	}
}
