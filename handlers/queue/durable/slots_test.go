package durable

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
)

func slotsOn(t testing.TB, q queue.Queue) *WriteSlots {
	t.Helper()
	s, err := NewWriteSlots(context.Background(), q)
	if err != nil {
		t.Fatalf("NewWriteSlots: %v", err)
	}
	return s
}

// takeSlot waits for installation's slot the way the publisher does.
func takeSlot(ctx context.Context, s *WriteSlots, inst int64, spacing, hold time.Duration) (func(context.Context), error) {
	for {
		release, wait, err := s.TakeWriteSlot(ctx, inst, spacing, hold)
		if err != nil || release != nil {
			return release, err
		}
		time.Sleep(max(wait, time.Millisecond))
	}
}

// TestWriteSlotsAreExclusiveAcrossReplicas: writers on two replicas sharing one database never
// hold one installation's slot at the same time, and every writer gets its turn; another
// installation's slot is its own.
func TestWriteSlotsAreExclusiveAcrossReplicas(t *testing.T) {
	const perWriter, writers = 8, 3
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			dsn := be.dsn(t)
			var replicas []*WriteSlots
			for range 2 {
				opts := testOptions()
				opts.InsertOnly = true
				replicas = append(replicas, slotsOn(t, open(t, dsn, opts)))
			}
			ctx := context.Background()
			var inside [2]atomic.Int32 // writers holding installation 1's and 2's slot
			var overlaps, writes atomic.Int32
			var wg sync.WaitGroup
			errs := make(chan error, 2*writers*2)
			for r, s := range replicas {
				for w := range writers {
					for inst := int64(1); inst <= 2; inst++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for range perWriter {
								release, err := takeSlot(ctx, s, inst, 0, time.Minute)
								if err != nil {
									errs <- fmt.Errorf("replica %d writer %d: %w", r, w, err)
									return
								}
								if inside[inst-1].Add(1) != 1 {
									overlaps.Add(1)
								}
								writes.Add(1)
								time.Sleep(time.Millisecond) // the write
								inside[inst-1].Add(-1)
								release(ctx)
							}
						}()
					}
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if n := overlaps.Load(); n != 0 {
				t.Errorf("%d writes held an installation's slot while another writer held it", n)
			}
			if n, want := writes.Load(), int32(2*writers*2*perWriter); n != want {
				t.Errorf("%d writes, want %d", n, want)
			}
		})
	}
}

// TestWriteSlotWaits: a slot held by one replica makes the other wait at most the spacing; after
// the release the slot stays taken for the spacing; a claim never released frees once its hold
// has passed; installations do not share slots.
func TestWriteSlotWaits(t *testing.T) {
	const spacing = time.Minute
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			dsn := be.dsn(t)
			opts := testOptions()
			opts.InsertOnly = true
			a, b := slotsOn(t, open(t, dsn, opts)), slotsOn(t, open(t, dsn, opts))
			ctx := context.Background()

			release, wait, err := a.TakeWriteSlot(ctx, 7, spacing, time.Hour)
			if err != nil || release == nil || wait != 0 {
				t.Fatalf("first claim: release %v, wait %v, err %v; want the slot", release != nil, wait, err)
			}
			got, wait, err := b.TakeWriteSlot(ctx, 7, spacing, time.Hour)
			if err != nil || got != nil {
				t.Fatalf("second replica took a held slot (err %v)", err)
			}
			if wait <= 0 || wait > spacing+time.Millisecond {
				t.Errorf("wait while held = %v, want in (0, %v]", wait, spacing)
			}
			if r, _, err := b.TakeWriteSlot(ctx, 8, spacing, time.Hour); err != nil || r == nil {
				t.Fatalf("another installation's slot is not free: err %v", err)
			}

			release(ctx)
			got, wait, err = b.TakeWriteSlot(ctx, 7, spacing, time.Hour)
			if err != nil || got != nil {
				t.Fatalf("slot free right after its release (err %v); want it taken for the spacing", err)
			}
			if wait < spacing-time.Second || wait > spacing+time.Millisecond {
				t.Errorf("wait after the release = %v, want about %v", wait, spacing)
			}

			// A holder that dies never releases: its hold frees the slot.
			if r, _, err := a.TakeWriteSlot(ctx, 9, spacing, time.Millisecond); err != nil || r == nil {
				t.Fatalf("claim of installation 9: err %v", err)
			}
			time.Sleep(20 * time.Millisecond) // well past the 1 ms hold
			if r, _, err := b.TakeWriteSlot(ctx, 9, spacing, time.Hour); err != nil || r == nil {
				t.Fatalf("slot of a claim whose hold ended is not free: err %v", err)
			}
		})
	}
}

// BenchmarkWriteSlot measures what the shared spacing adds to one content write: the claim of
// a free slot and its release, on each database.
//
//	go test -run '^$' -bench WriteSlot -benchtime 200x ./handlers/queue/durable/
func BenchmarkWriteSlot(b *testing.B) {
	for _, be := range backends(b) {
		b.Run(be.name, func(b *testing.B) {
			opts := testOptions()
			opts.InsertOnly = true
			s := slotsOn(b, open(b, be.dsn(b), opts))
			ctx := context.Background()
			inst := int64(0)
			for b.Loop() {
				inst++ // a fresh installation each time: the slot is free, nothing waits
				release, _, err := s.TakeWriteSlot(ctx, inst, time.Second, time.Minute)
				if err != nil || release == nil {
					b.Fatalf("claim: %v", err)
				}
				release(ctx)
			}
		})
	}
}
