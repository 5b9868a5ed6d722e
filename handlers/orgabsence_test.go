package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/repoconfig"
)

// The in-memory absences hold per installation and owner until their time, and at most their
// bound: beyond it the one expiring soonest goes.
func TestMemoryOrgConfigAbsence(t *testing.T) {
	ctx := context.Background()
	a := repoconfig.NewMemoryOrgConfigAbsence(2)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	absent := func(inst int64, owner string, at time.Time) bool {
		t.Helper()
		ok, err := a.OrgConfigAbsent(ctx, inst, owner, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	_ = a.RememberOrgConfigAbsent(ctx, 1, "octo", now.Add(time.Minute))
	_ = a.RememberOrgConfigAbsent(ctx, 1, "other", now.Add(3*time.Minute))
	if !absent(1, "octo", now) || absent(2, "octo", now) || absent(1, "third", now) {
		t.Fatal("an absence is taken for another installation or owner")
	}
	if absent(1, "octo", now.Add(time.Minute)) {
		t.Fatal("an absence holds past its time")
	}
	_ = a.RememberOrgConfigAbsent(ctx, 1, "octo", now.Add(2*time.Minute))
	_ = a.RememberOrgConfigAbsent(ctx, 2, "octo", now.Add(4*time.Minute))
	if absent(1, "octo", now) || !absent(1, "other", now) || !absent(2, "octo", now) {
		t.Fatal("beyond the bound the soonest to expire is not the one forgotten")
	}
	_ = a.RememberOrgConfigAbsent(ctx, 1, "octo", now.Add(5*time.Minute))
	_ = a.ForgetOrgConfigAbsent(ctx, 0, "octo")
	if absent(1, "octo", now) || absent(2, "octo", now) {
		t.Fatal("forgetting an owner for every installation left one")
	}
}
