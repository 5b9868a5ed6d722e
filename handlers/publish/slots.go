package publish

import (
	"context"
	"time"

	"github.com/rs/zerolog"
)

// WriteSlots is the content-write slot of each installation, shared by every process that
// publishes for it, so that two replicas never write content for one installation within the
// spacing of each other. durable.WriteSlots keeps the slots in the durable queue's database.
type WriteSlots interface {
	// TakeWriteSlot claims installation's slot for one write if it is free. The claim holds
	// the slot until release is called, and the slot then frees spacing later; a claim never
	// released (its process died) frees hold after it was taken. When the slot is not free,
	// release is nil and wait says how long to wait before asking again.
	TakeWriteSlot(ctx context.Context, installation int64, spacing, hold time.Duration) (release func(context.Context), wait time.Duration, err error)
}

// releaseTimeout bounds the release of a slot, which runs even when the job was cancelled.
const releaseTimeout = 5 * time.Second

// takeSlot waits for installation's shared write slot and returns its release. The hold is the
// write's own deadline plus the spacing: a claim whose process died cannot free the slot
// before its write could still have reached GitHub. When the slots cannot be read, the
// process's own pacer spaces the write instead, so publishing goes on with the database down.
func (p *Publisher) takeSlot(ctx context.Context, installation int64) (func(), error) {
	spacing := p.pace.spacing
	for {
		release, wait, err := p.slots.TakeWriteSlot(ctx, installation, spacing, p.callTimeout+spacing)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			zerolog.Ctx(ctx).Warn().Err(err).Int64("installation_id", installation).
				Msg("shared write slots unavailable; spacing this write within this process")
			return func() {}, p.pace.wait(ctx, installation)
		case release != nil:
			return func() {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
				defer cancel()
				release(rctx)
			}, nil
		}
		if err := p.pace.sleep(ctx, max(wait, time.Millisecond)); err != nil {
			return nil, err
		}
	}
}
