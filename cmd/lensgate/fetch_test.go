package main

import (
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/queue/durable"
)

// Workers that share their process with the webhook handlers fetch at River's pace; worker
// replicas and the web role take the queue's default.
func TestFetchCooldownByRole(t *testing.T) {
	for _, tc := range []struct {
		role string
		want time.Duration
	}{
		{handlers.RoleAll, durable.SharedFetchCooldown},
		{handlers.RoleWorker, 0},
		{handlers.RoleWeb, 0},
	} {
		if got := fetchCooldown(tc.role); got != tc.want {
			t.Errorf("fetchCooldown(%q) = %v, want %v", tc.role, got, tc.want)
		}
	}
	if durable.SharedFetchCooldown < 50*time.Millisecond {
		t.Errorf("SharedFetchCooldown = %v; a fetch more often than every 50ms takes the webhooks' CPU", durable.SharedFetchCooldown)
	}
}
