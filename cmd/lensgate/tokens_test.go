package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/review"
)

// TestDailyTokensFollowTheQueue: serve counts the daily token cap in the durable queue's
// database when it has one, so two servers on one database share it; in memory with the memory
// queue; and not at all when the cap is off.
func TestDailyTokensFollowTheQueue(t *testing.T) {
	ctx := context.Background()
	if l, err := dailyTokens(ctx, 0, nil, zerolog.Nop()); err != nil || l != nil {
		t.Fatalf("cap off: %v %v", l, err)
	}
	if l, err := dailyTokens(ctx, 100, nil, zerolog.Nop()); err != nil {
		t.Fatal(err)
	} else if _, ok := l.(*review.TokenLedger); !ok {
		t.Fatalf("memory queue: %T", l)
	}

	dsn := "sqlite://" + filepath.Join(t.TempDir(), "queue.db")
	var ledgers []review.DailyTokens
	for range 2 {
		q, err := durable.Open(ctx, dsn, durable.Options{InsertOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Stop(ctx) })
		l, err := dailyTokens(ctx, 100, q, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := l.(*durable.TokenLedger); !ok {
			t.Fatalf("durable queue: %T", l)
		}
		ledgers = append(ledgers, l)
	}
	if r, err := ledgers[0].Reserve(ctx, 1, 80); err != nil || !r.Granted {
		t.Fatalf("%+v %v", r, err)
	}
	r, err := ledgers[1].Reserve(ctx, 1, 30)
	if err != nil || r.Granted || !strings.Contains(r.Cause, "80 used today") {
		t.Fatalf("the second server's reservation: %+v %v", r, err)
	}
	if _, err := dailyTokens(ctx, 100, queue.NewMemory(queue.MemoryOptions{}), zerolog.Nop()); err == nil {
		t.Fatal("a durable ledger on a memory queue")
	}
}
