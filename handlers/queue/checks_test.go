package queue

import (
	"context"
	"fmt"
	"testing"
)

// The in-memory records keep the newest write of each check run, never an older run's or a
// late in-progress write over a completed run; a write of unknown outcome replaces any record
// until the run it names or a newer one is recorded. They hold at most their bound,
// forgetting the least recently written first.
func TestMemoryChecks(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryChecks(3)
	key := func(i int) CheckKey { return CheckKey{App: 1, Repo: "R", Head: fmt.Sprint(i), Name: "lensgate"} }
	put := func(k CheckKey, r CheckRecord) {
		t.Helper()
		if err := m.PutCheck(ctx, k, r); err != nil {
			t.Fatal(err)
		}
	}
	get := func(k CheckKey) (CheckRecord, bool) {
		t.Helper()
		r, ok, err := m.Check(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return r, ok
	}
	for _, tc := range []struct {
		name     string
		old, new CheckRecord
		want     int64
		status   string
	}{
		{"completion", CheckRecord{ID: 5, Status: "in_progress"}, CheckRecord{ID: 5, Status: "completed"}, 5, "completed"},
		{"late in-progress write", CheckRecord{ID: 5, Status: "completed"}, CheckRecord{ID: 5, Status: "in_progress"}, 5, "completed"},
		{"older run", CheckRecord{ID: 6, Status: "in_progress"}, CheckRecord{ID: 5, Status: "completed"}, 6, "in_progress"},
		{"newer run", CheckRecord{ID: 5, Status: "completed"}, CheckRecord{ID: 6, Status: "in_progress"}, 6, "in_progress"},
		{"create begun over a completed run", CheckRecord{ID: 5, Status: "completed"}, CheckRecord{ID: 5, Status: CheckStatusUnknown}, 5, CheckStatusUnknown},
		{"write lost over a newer record", CheckRecord{ID: 6, Status: "completed"}, CheckRecord{ID: 0, Status: CheckStatusUnknown}, 0, CheckStatusUnknown},
		{"created run over its create", CheckRecord{ID: 0, Status: CheckStatusUnknown}, CheckRecord{ID: 7, Status: "in_progress"}, 7, "in_progress"},
		{"listed run over a lost write to it", CheckRecord{ID: 5, Status: CheckStatusUnknown}, CheckRecord{ID: 5, Status: "in_progress"}, 5, "in_progress"},
		{"older run over an unknown create", CheckRecord{ID: 5, Status: CheckStatusUnknown}, CheckRecord{ID: 4, Status: "completed"}, 5, CheckStatusUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := CheckKey{App: 1, Repo: "R", Head: tc.name, Name: "lensgate"}
			put(k, tc.old)
			put(k, tc.new)
			if r, _ := get(k); r.ID != tc.want || r.Status != tc.status {
				t.Fatalf("record %+v, want run %d %s", r, tc.want, tc.status)
			}
			_ = m.ForgetCheck(ctx, k)
			if _, ok := get(k); ok {
				t.Fatal("a forgotten record is still there")
			}
		})
	}
	for i := range 4 {
		put(key(i), CheckRecord{ID: int64(i + 1), Status: "completed"})
	}
	if _, ok := get(key(0)); ok {
		t.Fatal("the least recently written record is kept beyond the bound")
	}
	for i := 1; i < 4; i++ {
		if r, ok := get(key(i)); !ok || r.ID != int64(i+1) {
			t.Fatalf("record %d: %+v %v", i, r, ok)
		}
	}
	if _, ok := get(CheckKey{App: 2, Repo: "R", Head: "1", Name: "lensgate"}); ok {
		t.Fatal("another App's key has the record")
	}
}
