package durable

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lensgate/lensgate/review"
)

// TestFeedbackStore: two replicas on one database share feedback and quality events; the same
// feedback is kept once, a repository keeps its newest review.MaxFeedbackPerRepo entries, old
// entries stop suppressing and are pruned, and clear forgets one repository's only.
func TestFeedbackStore(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			dsn := be.dsn(t)
			clock := &testClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
			stores := make([]*FeedbackStore, 2)
			for i := range stores {
				opts := testOptions()
				opts.InsertOnly = true
				s, err := NewFeedbackStore(open(t, dsn, opts), clock.now)
				if err != nil {
					t.Fatal(err)
				}
				stores[i] = s
			}
			ctx := context.Background()
			f := review.Finding{ID: "LG-000000000001", Lens: "bugs", Rule: "r", Path: "a.go", Title: "t", Body: "b"}
			fb := review.FeedbackOn("o/r", 1, f, review.FeedbackDismissed, "not here", "bob", clock.now())
			for i := 0; i < 2; i++ {
				if err := stores[i].RecordFeedback(ctx, []review.Feedback{fb, review.FeedbackOn("o/r", 1, f, review.FeedbackThumbsUp, "", "carol", clock.now())}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := stores[1].ListFeedback(ctx, "o/r", 10)
			if err != nil || len(got) != 1 || got[0].Kind != review.FeedbackDismissed || got[0].Reason != "not here" || got[0].By != "bob" ||
				got[0].Number != 1 || !got[0].At.Equal(clock.now()) {
				t.Fatalf("listed %+v %v (want the dismissal once; a thumbs-up does not suppress)", got, err)
			}
			// Bounded per repository: the newest entries stay.
			var many []review.Feedback
			for i := 0; i < review.MaxFeedbackPerRepo+20; i++ {
				g := f
				g.ID = fmt.Sprintf("LG-%012x", i+2)
				many = append(many, review.FeedbackOn("o/big", 1, g, review.FeedbackThumbsDown, "", "bob", clock.now().Add(time.Duration(i)*time.Second)))
			}
			if err := stores[0].RecordFeedback(ctx, many); err != nil {
				t.Fatal(err)
			}
			big, err := stores[0].ListFeedback(ctx, "o/big", 10_000)
			if err != nil || len(big) != review.MaxFeedbackPerRepo || big[0].FindingID != many[len(many)-1].FindingID {
				t.Fatalf("bounded: %d entries, newest %v, %v", len(big), big[0].FindingID, err)
			}
			// Quality events are counted once per pull request, finding and kind.
			ev := review.QualityEvent{Repo: "o/r", Number: 1, Lens: "bugs", FindingID: f.ID, Kind: review.QualityPosted, At: clock.now()}
			fixed := ev
			fixed.Kind = review.QualityFixed
			for i := 0; i < 2; i++ {
				if err := stores[i].RecordQuality(ctx, []review.QualityEvent{ev, fixed}); err != nil {
					t.Fatal(err)
				}
			}
			counts, err := stores[1].Quality(ctx, "o/r", clock.now().Add(-time.Hour))
			if err != nil || len(counts) != 1 || counts[0].Counts[review.QualityPosted] != 1 || counts[0].Counts[review.QualityFixed] != 1 {
				t.Fatalf("quality %+v %v", counts, err)
			}
			if rate, ok := counts[0].AddressedRate(); !ok || rate != 1 {
				t.Fatalf("addressed rate %v %v", rate, ok)
			}
			if all, err := stores[0].Quality(ctx, "", clock.now().Add(-time.Hour)); err != nil || len(all) != 1 {
				t.Fatalf("every repository: %+v %v", all, err)
			}
			// Old feedback stops suppressing and is pruned.
			clock.set(clock.now().Add(review.FeedbackKept + time.Hour))
			if got, err := stores[0].ListFeedback(ctx, "o/r", 10); err != nil || len(got) != 0 {
				t.Fatalf("expired feedback listed: %+v %v", got, err)
			}
			if err := stores[0].RecordFeedback(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if n, err := stores[0].ClearFeedback(ctx, "o/r"); err != nil || n != 0 {
				t.Fatalf("after pruning, %d entries of o/r left (%v)", n, err)
			}
			if err := stores[0].RecordFeedback(ctx, []review.Feedback{review.FeedbackOn("o/r", 2, f, review.FeedbackResolved, "", "", clock.now())}); err != nil {
				t.Fatal(err)
			}
			if n, err := stores[1].ClearFeedback(ctx, "o/r"); err != nil || n != 1 {
				t.Fatalf("cleared %d, %v", n, err)
			}
			if err := stores[0].RecordFeedback(ctx, []review.Feedback{{Repo: "o/r", Kind: "bogus", FindingID: "x"}}); err == nil {
				t.Fatal("a malformed entry was accepted")
			}
		})
	}
}
