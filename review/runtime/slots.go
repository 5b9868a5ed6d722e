package runtime

import "context"

// Slots bounds the model calls of a review that are in flight at once. The pipeline hands one
// to every request (Request.Slots); it counts against the review's own bound and the process's
// bounds per installation and in all.
type Slots interface {
	// Acquire waits for a free slot, or until ctx ends (then it returns ctx's error). The
	// caller calls release exactly once when its call is over.
	Acquire(ctx context.Context) (release func(), err error)
}

// Paced is implemented by a runtime that takes a slot of Request.Slots for every model call it
// makes itself, so that the pipeline does not hold one for the whole request. The pipeline
// holds a slot around each request of any other runtime that is not free.
type Paced interface {
	PacesCalls()
}

// AcquireSlot takes a slot of s; a nil s has no bound.
func AcquireSlot(ctx context.Context, s Slots) (func(), error) {
	if s == nil {
		return func() {}, nil
	}
	return s.Acquire(ctx)
}
