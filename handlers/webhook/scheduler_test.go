package webhook

import (
	"context"
	"testing"

	"github.com/palantir/go-githubapp/githubapp"
)

// TestSchedulerRefusesUncheckedDeliveries: the dispatcher has no secret of its own, so a delivery
// that did not come through hookHandler (no checked signature in its context) is refused before
// any handler sees it.
func TestSchedulerRefusesUncheckedDeliveries(t *testing.T) {
	ran := false
	s := hookScheduler{replays: newReplayGuard(10)}
	err := s.Schedule(context.Background(), githubapp.Dispatch{
		Handler:   handlerFunc(func() { ran = true }),
		EventType: "pull_request", DeliveryID: "d-1", Payload: []byte(`{}`),
	})
	if err == nil || ran {
		t.Fatalf("Schedule without a checked signature: err %v, handler ran %v", err, ran)
	}
}

// handlerFunc is an event handler that only records that it ran.
type handlerFunc func()

func (handlerFunc) Handles() []string { return []string{"pull_request"} }
func (f handlerFunc) Handle(context.Context, string, string, []byte) error {
	f()
	return nil
}
