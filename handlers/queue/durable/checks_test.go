package durable

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
)

func checkRecordsOn(t testing.TB, q queue.Queue, clock func() time.Time) *CheckRecords {
	t.Helper()
	c, err := NewCheckRecords(context.Background(), q, clock)
	if err != nil {
		t.Fatalf("NewCheckRecords: %v", err)
	}
	return c
}

func mustCheck(t testing.TB, c queue.CheckRecords, key queue.CheckKey) (queue.CheckRecord, bool) {
	t.Helper()
	rec, found, err := c.Check(context.Background(), key)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rec, found
}

func mustPut(t testing.TB, c queue.CheckRecords, key queue.CheckKey, rec queue.CheckRecord) {
	t.Helper()
	if err := c.PutCheck(context.Background(), key, rec); err != nil {
		t.Fatalf("PutCheck: %v", err)
	}
}

// The gate check records are shared by replicas on one database: a run one replica wrote is
// found by another, and the newer write wins whatever order the two replicas write in.
// Another repository, head, check name or App has no record; a forgotten record and one
// older than CheckRecordsKept are gone.
func TestCheckRecordsAcrossReplicas(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			dsn := be.dsn(t)
			clock := &testClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
			opts := testOptions()
			opts.InsertOnly = true
			a := checkRecordsOn(t, open(t, dsn, opts), clock.now)
			b := checkRecordsOn(t, open(t, dsn, opts), clock.now)
			key := queue.CheckKey{App: 7, Repo: "R_1", Head: "abc", Name: "lensgate"}

			if _, found := mustCheck(t, b, key); found {
				t.Fatal("a record before any write")
			}
			mustPut(t, a, key, queue.CheckRecord{ID: 10, Status: "in_progress", Title: "review in progress", At: clock.now()})
			rec, found := mustCheck(t, b, key)
			if !found || rec.ID != 10 || rec.Status != "in_progress" || rec.Title != "review in progress" || !rec.At.Equal(clock.now()) {
				t.Fatalf("replica b reads %+v (found %v), want run 10 in progress", rec, found)
			}
			mustPut(t, b, key, queue.CheckRecord{ID: 10, Status: "completed", Title: "passed", Annotations: 3, At: clock.now()})
			// A late in-progress write to the completed run, and a write to an older run, lose.
			mustPut(t, a, key, queue.CheckRecord{ID: 10, Status: "in_progress", Title: "late", At: clock.now()})
			mustPut(t, a, key, queue.CheckRecord{ID: 9, Status: "completed", Title: "older run", At: clock.now()})
			if rec, _ := mustCheck(t, a, key); rec.ID != 10 || rec.Status != "completed" || rec.Title != "passed" || rec.Annotations != 3 {
				t.Fatalf("after late writes: %+v, want run 10 completed with 3 annotations", rec)
			}
			// A re-run's new run replaces it.
			mustPut(t, b, key, queue.CheckRecord{ID: 11, Status: "in_progress", Title: "review in progress", At: clock.now()})
			if rec, _ := mustCheck(t, a, key); rec.ID != 11 || rec.Status != "in_progress" {
				t.Fatalf("after a new run: %+v, want run 11", rec)
			}
			for _, other := range []queue.CheckKey{
				{App: 8, Repo: key.Repo, Head: key.Head, Name: key.Name},
				{App: key.App, Repo: "R_2", Head: key.Head, Name: key.Name},
				{App: key.App, Repo: key.Repo, Head: "abd", Name: key.Name},
				{App: key.App, Repo: key.Repo, Head: key.Head, Name: "lensgate / security"},
			} {
				if rec, found := mustCheck(t, b, other); found {
					t.Fatalf("%+v has the record %+v of %+v", other, rec, key)
				}
			}
			if err := a.ForgetCheck(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			if _, found := mustCheck(t, b, key); found {
				t.Fatal("a forgotten record is still there")
			}
			mustPut(t, a, key, queue.CheckRecord{ID: 12, Status: "completed", At: clock.now()})
			clock.set(clock.now().Add(CheckRecordsKept + time.Minute))
			if _, found := mustCheck(t, b, key); found {
				t.Fatal("a record older than CheckRecordsKept is returned")
			}
			// The first write of the new day prunes it.
			fresh := queue.CheckKey{App: 7, Repo: "R_1", Head: "new", Name: "lensgate"}
			mustPut(t, b, fresh, queue.CheckRecord{ID: 13, Status: "in_progress", At: clock.now()})
			var rows int
			rq := b.store
			if err := rq.queryOne(context.Background(), `SELECT count(*) FROM lensgate_check`, nil, &rows); err != nil {
				t.Fatal(err)
			}
			if rows != 1 {
				t.Fatalf("rows after the prune = %d, want 1", rows)
			}
		})
	}
}

// The database orders the writes of one key as queue.Supersedes does, for every pair of run
// ids and statuses, a write of unknown outcome included.
func TestCheckRecordsOrderAsSupersedes(t *testing.T) {
	statuses := []string{"in_progress", "completed", queue.CheckStatusUnknown}
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			opts := testOptions()
			opts.InsertOnly = true
			c := checkRecordsOn(t, open(t, be.dsn(t), opts), nil)
			for _, oldStatus := range statuses {
				for _, id := range []int64{4, 5, 6} {
					for _, newStatus := range statuses {
						old := queue.CheckRecord{ID: 5, Status: oldStatus, Title: "old", At: time.Now()}
						rec := queue.CheckRecord{ID: id, Status: newStatus, Title: "new", At: time.Now()}
						key := queue.CheckKey{App: 1, Repo: "R", Head: fmt.Sprintf("%s-%d-%s", oldStatus, id, newStatus), Name: "lensgate"}
						mustPut(t, c, key, old)
						mustPut(t, c, key, rec)
						want := old
						if queue.Supersedes(rec, old) {
							want = rec
						}
						if got, _ := mustCheck(t, c, key); got.ID != want.ID || got.Status != want.Status || got.Title != want.Title {
							t.Errorf("run 5 %s, then run %d %s: record %+v, want %+v", oldStatus, id, newStatus, got, want)
						}
					}
				}
			}
		})
	}
}

// A queue that is not a durable one has no database for the records.
func TestCheckRecordsNeedADurableQueue(t *testing.T) {
	if _, err := NewCheckRecords(context.Background(), queue.NewMemory(queue.MemoryOptions{}), nil); err == nil {
		t.Fatal("gate check records on the memory queue")
	}
}

// The organisation configuration absences are shared by replicas: an absence one replica
// remembered holds for another until it expires or is forgotten, for that installation and
// owner only; forgetting an owner without an installation forgets it for every installation.
func TestOrgConfigAbsenceAcrossReplicas(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			dsn := be.dsn(t)
			ctx := context.Background()
			opts := testOptions()
			opts.InsertOnly = true
			newAbsence := func() *OrgConfigAbsence {
				a, err := NewOrgConfigAbsence(ctx, open(t, dsn, opts), nil)
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			a, b := newAbsence(), newAbsence()
			now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			absent := func(s *OrgConfigAbsence, inst int64, owner string, at time.Time) bool {
				t.Helper()
				ok, err := s.OrgConfigAbsent(ctx, inst, owner, at)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			for _, r := range []struct {
				inst  int64
				owner string
			}{{1, "octo"}, {2, "octo"}, {1, "other"}} {
				if err := a.RememberOrgConfigAbsent(ctx, r.inst, r.owner, now.Add(5*time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			if !absent(b, 1, "octo", now) || absent(b, 3, "octo", now) || absent(b, 1, "third", now) {
				t.Fatal("replica b does not see exactly what replica a remembered")
			}
			if absent(b, 1, "octo", now.Add(5*time.Minute)) {
				t.Fatal("an absence holds past its time")
			}
			if err := b.ForgetOrgConfigAbsent(ctx, 1, "other"); err != nil {
				t.Fatal(err)
			}
			if absent(a, 1, "other", now) || !absent(a, 1, "octo", now) {
				t.Fatal("forgetting one owner of an installation forgot the wrong one")
			}
			if err := b.ForgetOrgConfigAbsent(ctx, 0, "octo"); err != nil {
				t.Fatal(err)
			}
			if absent(a, 1, "octo", now) || absent(a, 2, "octo", now) {
				t.Fatal("forgetting an owner for every installation left one")
			}
		})
	}
}
