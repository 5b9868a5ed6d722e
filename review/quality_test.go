package review

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The in-memory store keeps a repository's newest MaxFeedbackPerRepo entries, once each, lists
// only what suppresses, forgets what is older than FeedbackKept, and counts each quality event
// once.
func TestMemoryFeedbackBounds(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	m := NewMemoryFeedback(func() time.Time { return now })
	ctx := context.Background()
	var fbs []Feedback
	for i := 0; i < MaxFeedbackPerRepo+5; i++ {
		f := Finding{ID: fmt.Sprintf("LG-%012x", i), Lens: "l"}
		fbs = append(fbs, FeedbackOn("o/r", 1, f, FeedbackThumbsDown, "", "bob", now.Add(time.Duration(i)*time.Second)))
	}
	fbs = append(fbs, fbs[len(fbs)-1], FeedbackOn("o/r", 1, Finding{ID: "LG-ffffffffffff"}, FeedbackThumbsUp, "", "carol", now))
	if err := m.RecordFeedback(ctx, fbs); err != nil {
		t.Fatal(err)
	}
	got, _ := m.ListFeedback(ctx, "o/r", 10_000)
	if len(got) != MaxFeedbackPerRepo-1 || got[0].FindingID != fbs[MaxFeedbackPerRepo+4].FindingID {
		// The thumbs-up is kept (it counts) but not listed: it suppresses nothing.
		t.Fatalf("%d listed, newest %s", len(got), got[0].FindingID)
	}
	now = now.Add(FeedbackKept + time.Hour)
	if got, _ := m.ListFeedback(ctx, "o/r", 10); len(got) != 0 {
		t.Fatalf("expired feedback listed: %d", len(got))
	}
	if err := m.RecordFeedback(ctx, []Feedback{{Repo: "o/r", Kind: "maybe", FindingID: "x"}}); err == nil {
		t.Fatal("a malformed entry was kept")
	}
	ev := QualityEvent{Repo: "o/r", Number: 1, Lens: "l", FindingID: "LG-000000000001", Kind: QualityPosted, At: now}
	if err := m.RecordQuality(ctx, []QualityEvent{ev, ev}); err != nil {
		t.Fatal(err)
	}
	counts, _ := m.Quality(ctx, "", now.Add(-time.Hour))
	if len(counts) != 1 || counts[0].Counts[QualityPosted] != 1 {
		t.Fatalf("counts %+v", counts)
	}
	if _, ok := counts[0].AddressedRate(); !ok {
		t.Fatal("no addressed rate with a posted finding")
	}
}
