package durable

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
)

const (
	sqlRememberOrgAbsent = `INSERT INTO lensgate_org_config_absent (installation_id, owner, until_ms) VALUES ($1, $2, $3)
		ON CONFLICT (installation_id, owner) DO UPDATE SET until_ms = excluded.until_ms`
	sqlOrgAbsent = `SELECT until_ms FROM lensgate_org_config_absent
		WHERE installation_id = $1 AND owner = $2 AND until_ms > $3`
	sqlForgetOrgAbsent      = `DELETE FROM lensgate_org_config_absent WHERE installation_id = $1 AND owner = $2`
	sqlForgetOrgAbsentOwner = `DELETE FROM lensgate_org_config_absent WHERE owner = $1`
	sqlPruneOrgAbsent       = `DELETE FROM lensgate_org_config_absent WHERE until_ms < $1`
)

// OrgConfigAbsence is handlers.OrgConfigAbsence kept in the durable queue's database: every
// replica skips the read of an owner's organisation configuration another replica found
// missing, and a push received by any replica makes every replica read it again. Expired rows
// are deleted by each process at most once per hour.
type OrgConfigAbsence struct {
	store sideStore
	now   func() time.Time

	mu       sync.Mutex
	prunedAt time.Time
}

// NewOrgConfigAbsence returns the absences kept in the database of q, a queue returned by
// Open, creating their table if needed. now is the clock of pruning (time.Now when nil).
func NewOrgConfigAbsence(ctx context.Context, q queue.Queue, now func() time.Time) (*OrgConfigAbsence, error) {
	if now == nil {
		now = time.Now
	}
	store, err := openSideStore(q)
	if err != nil {
		return nil, fmt.Errorf("durable queue: organisation configuration absences: %w", err)
	}
	return &OrgConfigAbsence{store: store, now: now}, nil
}

// OrgConfigAbsent implements handlers.OrgConfigAbsence.
func (a *OrgConfigAbsence) OrgConfigAbsent(ctx context.Context, installation int64, owner string, now time.Time) (bool, error) {
	var until int64
	err := a.store.queryOne(ctx, sqlOrgAbsent, []any{installation, owner, now.UnixMilli()}, &until)
	switch {
	case errors.Is(err, errNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("durable queue: read organisation configuration absence: %w", err)
	}
	return true, nil
}

// RememberOrgConfigAbsent implements handlers.OrgConfigAbsence.
func (a *OrgConfigAbsence) RememberOrgConfigAbsent(ctx context.Context, installation int64, owner string, until time.Time) error {
	a.pruneSometimes(ctx)
	if err := a.store.exec(ctx, sqlRememberOrgAbsent, installation, owner, until.UnixMilli()); err != nil {
		return fmt.Errorf("durable queue: remember organisation configuration absence: %w", err)
	}
	return nil
}

// ForgetOrgConfigAbsent implements handlers.OrgConfigAbsence.
func (a *OrgConfigAbsence) ForgetOrgConfigAbsent(ctx context.Context, installation int64, owner string) error {
	var err error
	if installation == 0 {
		err = a.store.exec(ctx, sqlForgetOrgAbsentOwner, owner)
	} else {
		err = a.store.exec(ctx, sqlForgetOrgAbsent, installation, owner)
	}
	if err != nil {
		return fmt.Errorf("durable queue: forget organisation configuration absence: %w", err)
	}
	return nil
}

// pruneSometimes deletes expired rows, at most once an hour per process; a failure is
// retried on a later write.
func (a *OrgConfigAbsence) pruneSometimes(ctx context.Context) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if now.Sub(a.prunedAt) < time.Hour {
		return
	}
	if err := a.store.exec(ctx, sqlPruneOrgAbsent, now.UnixMilli()); err == nil {
		a.prunedAt = now
	}
}
