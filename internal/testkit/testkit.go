// Package testkit holds the test helpers several packages' tests share. Product code never
// imports it.
package testkit

import (
	"bytes"
	"context"
	"sync"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/handlers/publication"
)

// SyncBuffer is a log sink safe for the goroutines of a running App.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// NotifyingPublisher passes every call to Next and sends the outcome of every Publish on Done,
// so a test waits for a publication instead of sleeping.
type NotifyingPublisher struct {
	Next publication.Publisher
	Done chan error
}

// Begin implements publication.Publisher.
func (n NotifyingPublisher) Begin(ctx context.Context, c *github.Client, p *publication.Publication) error {
	return n.Next.Begin(ctx, c, p)
}

// Abandon implements publication.Publisher.
func (n NotifyingPublisher) Abandon(ctx context.Context, c *github.Client, p *publication.Publication, why publication.Interruption) error {
	return n.Next.Abandon(ctx, c, p, why)
}

// TrackProgress passes the tracking of a review's progress to Next when it does that.
func (n NotifyingPublisher) TrackProgress(ctx context.Context, c *github.Client, p *publication.Publication) publication.ProgressTracker {
	if pt, ok := n.Next.(publication.ProgressTracking); ok {
		return pt.TrackProgress(ctx, c, p)
	}
	return nil
}

// MarkQueued passes a queued job to Next when it shows those.
func (n NotifyingPublisher) MarkQueued(ctx context.Context, c *github.Client, p *publication.Publication) error {
	if qm, ok := n.Next.(publication.QueueMarking); ok {
		return qm.MarkQueued(ctx, c, p)
	}
	return nil
}

// Unqueue passes a job that will not run to Next when it shows queued jobs.
func (n NotifyingPublisher) Unqueue(ctx context.Context, c *github.Client, p *publication.Publication, why string) error {
	if qm, ok := n.Next.(publication.QueueMarking); ok {
		return qm.Unqueue(ctx, c, p, why)
	}
	return nil
}

// Publish implements publication.Publisher.
func (n NotifyingPublisher) Publish(ctx context.Context, c *github.Client, p *publication.Publication) error {
	err := n.Next.Publish(ctx, c, p)
	n.Done <- err
	return err
}
