package worker

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/internal/digest"
)

// A read is compared with the event by head, updated_at and, within the same second, the body.
func TestReadAgeAgainstTheEvent(t *testing.T) {
	at := time.Date(2026, 12, 5, 12, 0, 5, 0, time.UTC)
	pr := func(head string, updated time.Time, body string) *github.PullRequest {
		return &github.PullRequest{Head: &github.PullRequestBranch{SHA: github.String(head)},
			UpdatedAt: &github.Timestamp{Time: updated}, Body: github.String(body)}
	}
	seen := queue.Extra{UpdatedAt: at, BodyDigest: digest.SHA256Hex([]byte("edited"))}
	tests := []struct {
		name string
		pr   *github.PullRequest
		seen queue.Extra
		want readAge
	}{
		{"the event's state", pr("b", at, "edited"), seen, readCurrent},
		{"changed since, same head", pr("b", at.Add(time.Second), "later"), seen, readCurrent},
		{"older head, older time: lag", pr("a", at.Add(-time.Second), "edited"), seen, readOlder},
		{"same head, older time: an edit not shown yet", pr("b", at.Add(-time.Second), "before"), seen, readOlder},
		{"another head, later time: a newer push", pr("c", at.Add(time.Second), "edited"), seen, readNewer},
		{"same second, body before the edit", pr("b", at, "before"), seen, readUnknown},
		{"same second, another head", pr("a", at, "edited"), seen, readUnknown},
		{"no timestamps: the head decides", pr("b", time.Time{}, ""), queue.Extra{}, readCurrent},
		{"no timestamps, another head", pr("a", at, ""), queue.Extra{}, readUnknown},
	}
	for _, tt := range tests {
		if got := ageOf(tt.pr, "b", tt.seen); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestFirstReadSettle: a fresh job waits before its first read and stops waiting with its
// context; a job that waited in the queue, or carries no time, does not wait.
func TestFirstReadSettle(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := settle(done, time.Now(), time.Minute); err == nil {
		t.Fatal("a fresh job whose context ended went on to read")
	}
	if err := settle(done, time.Now().Add(-time.Minute), time.Minute); err != nil {
		t.Fatalf("a job queued a minute ago waited: %v", err)
	}
	if err := settle(done, time.Time{}, time.Minute); err != nil {
		t.Fatalf("a job without an enqueue time waited: %v", err)
	}
	if err := settle(done, time.Now(), 0); err != nil {
		t.Fatalf("a job without time to spare waited: %v", err)
	}
}
