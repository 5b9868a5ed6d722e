package details

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lensgate/lensgate/review/pdp"
)

func appendRecords(t *testing.T, sink *pdp.FileSink, repo string, pr, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		_, err := sink.Append(context.Background(), pdp.Record{Schema: pdp.AuditSchema, Kind: "decision", Action: "check_run.create",
			Target: pdp.Target{Repo: repo, PR: pr, Commit: fmt.Sprintf("%040d", i)}, Outcome: pdp.Verdict{Verdict: "allow"}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestLedgerIndexReadsOnlyWhatIsNew: the first view verifies and indexes the whole ledger;
// later views read no line again but the appended ones, and only their own pull request's
// records; an in-place edit is noticed and breaks the chain; a view whose request ended reads
// nothing.
func TestLedgerIndexReadsOnlyWhatIsNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := pdp.OpenFileSink(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	appendRecords(t, sink, "o/r", 2, 3)
	appendRecords(t, sink, "o/r", 3, 40)
	appendRecords(t, sink, "O/R", 2, 2)

	x := newLedgerIndex(path)
	ctx := context.Background()
	res, err := x.read(ctx, "o/r", 2, 200)
	if err != nil {
		t.Fatal(err)
	}
	if res.total != 5 || len(res.records) != 5 || res.chain != 45 || res.broken != nil || x.linesRead != 45 {
		t.Fatalf("first read: total %d shown %d chain %d broken %v lines %d", res.total, len(res.records), res.chain, res.broken, x.linesRead)
	}
	for _, r := range res.records {
		if r.Target.PR != 2 {
			t.Fatalf("a record of PR %d in PR 2's view", r.Target.PR)
		}
	}
	if res, err = x.read(ctx, "o/r", 2, 3); err != nil || x.linesRead != 45 || len(res.records) != 3 || res.total != 5 {
		t.Fatalf("second read: %v, %d lines parsed in all, %d shown of %d", err, x.linesRead, len(res.records), res.total)
	}
	appendRecords(t, sink, "o/r", 2, 1)
	if res, err = x.read(ctx, "o/r", 2, 200); err != nil || x.linesRead != 46 || res.total != 6 || res.chain != 46 || res.broken != nil {
		t.Fatalf("after an append: %v, %d lines parsed, total %d chain %d broken %v", err, x.linesRead, res.total, res.chain, res.broken)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	x2 := newLedgerIndex(path)
	if _, err := x2.read(cancelled, "o/r", 2, 200); err == nil || x2.linesRead != 0 {
		t.Fatalf("ended request: %v, %d lines parsed", err, x2.linesRead)
	}

	// An edit of the last record in place (same size) is seen: the chain is verified again.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := len(b) - 20
	b[i] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if res, err = x.read(ctx, "o/r", 2, 200); err != nil || res.broken == nil || x.linesRead != 46+46 {
		t.Fatalf("after an edit: %v, broken %v, %d lines parsed", err, res.broken, x.linesRead)
	}
}

// BenchmarkLedgerIndexFirstRead: what the first view after a start pays once, to verify and
// index the whole ledger (later views read only what was appended).
func BenchmarkLedgerIndexFirstRead(b *testing.B) {
	for _, mib := range []int{16, 64} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "audit.jsonl")
			FillLedgerForTest(b, path, "o/r", mib<<20)
			for b.Loop() {
				if _, err := newLedgerIndex(path).read(context.Background(), "o/r", 2, maxAuditShown); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
