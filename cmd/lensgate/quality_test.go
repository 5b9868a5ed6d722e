package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/review"
)

// TestFeedbackAndStatsCommands: what the server recorded in the queue database is listed by
// lensgate feedback list and counted by lensgate stats; lensgate feedback clear forgets the
// repository's feedback and nothing else.
func TestFeedbackAndStatsCommands(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "queue.db")
	q, err := durable.Open(ctx, dsn, durable.Options{InsertOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	store, err := durable.NewFeedbackStore(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	f := review.Finding{ID: "LG-0123456789ab", Lens: "bugs", Path: "a.go", Title: "nil map write", Body: "m is nil"}
	if err := store.RecordFeedback(ctx, []review.Feedback{review.FeedbackOn("o/r", 4, f, review.FeedbackDismissed, "intended", "maintainer", now)}); err != nil {
		t.Fatal(err)
	}
	var evs []review.QualityEvent
	for i, k := range []review.QualityKind{review.QualityPosted, review.QualityFixed, review.QualityThumbsDown} {
		evs = append(evs, review.QualityEvent{Repo: "o/r", Number: 4, Lens: "bugs", FindingID: f.ID, Kind: k, At: now.Add(time.Duration(i) * time.Second)})
	}
	evs = append(evs, review.QualityEvent{Repo: "o/r", Number: 4, Lens: "bugs", FindingID: "LG-000000000002", Kind: review.QualityPosted, At: now})
	if err := store.RecordQuality(ctx, evs); err != nil {
		t.Fatal(err)
	}
	_ = q.Stop(ctx)

	cli := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(ctx, append(args, "--queue-dsn", dsn), &out, &errb); code != exitOK {
			t.Fatalf("lensgate %s: exit %d, %s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}
	if out := cli("feedback", "list", "--repo", "o/r"); !strings.Contains(out, "dismissed") || !strings.Contains(out, "LG-0123456789ab") ||
		!strings.Contains(out, "intended") || !strings.Contains(out, "#4") {
		t.Fatalf("feedback list:\n%s", out)
	}
	var stats struct {
		Days int
		Rows []struct {
			Repo, Lens                string
			Posted, Fixed, ThumbsDown int
			Addressed                 *float64
		}
	}
	if err := json.Unmarshal([]byte(cli("stats", "--repo", "o/r", "--json")), &stats); err != nil {
		t.Fatal(err)
	}
	if len(stats.Rows) != 1 || stats.Rows[0].Posted != 2 || stats.Rows[0].Fixed != 1 || stats.Rows[0].ThumbsDown != 1 ||
		stats.Rows[0].Addressed == nil || *stats.Rows[0].Addressed != 0.5 || stats.Days != 30 {
		t.Fatalf("stats %+v", stats)
	}
	if out := cli("stats"); !strings.Contains(out, "o/r") || !strings.Contains(out, "50%") {
		t.Fatalf("stats table:\n%s", out)
	}
	if out := cli("feedback", "clear", "--repo", "o/r"); !strings.Contains(out, "cleared 1 feedback entry of o/r") {
		t.Fatalf("clear: %s", out)
	}
	if out := cli("feedback", "list", "--repo", "o/r", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("after clear: %s", out)
	}
	var errb bytes.Buffer
	if code := run(ctx, []string{"feedback", "list", "--repo", "not a repo", "--queue-dsn", dsn}, &bytes.Buffer{}, &errb); code != exitUsage {
		t.Fatalf("a malformed --repo: exit %d", code)
	}
	if code := run(ctx, []string{"stats", "--queue-dsn", "memory"}, &bytes.Buffer{}, &errb); code != exitUsage || !strings.Contains(errb.String(), "memory queue") {
		t.Fatalf("the memory queue: exit %d, %s", code, errb.String())
	}
}

// lensgate review's text report lists what verification withdrew, with why.
func TestReviewTextListsWithdrawn(t *testing.T) {
	d := &review.Decision{Verification: review.Verification{Mode: "deterministic", Checked: 3, Withdrawn: []review.Withdrawal{{
		Finding: review.Finding{ID: "LG-0123456789ab", Lens: "bugs", Severity: review.SeverityHigh, Path: "a.go", Line: 40, Title: "off by one"},
		Check:   review.CheckLocation, Reason: "line 40 of a.go is not on the new side of the diff"}}}}
	var out bytes.Buffer
	printWithdrawn(&out, d)
	for _, want := range []string{"Withdrawn on verification (1 of 3 checked, review.verify: deterministic)", "a.go:40", "off by one",
		"location: line 40 of a.go is not on the new side of the diff"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	printWithdrawn(&out, &review.Decision{})
	if out.Len() != 0 {
		t.Fatalf("nothing withdrawn, yet: %q", out.String())
	}
}
