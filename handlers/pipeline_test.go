package handlers_test

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/handlers/worker"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// newPipeline is the real review pipeline with the offline builtin runtime.
func newPipeline(t testing.TB) *review.Pipeline {
	t.Helper()
	return review.NewPipeline(review.Options{
		Runtimes: runtime.NewRegistry(builtin.New(builtin.Options{})),
		Logger:   zerolog.Nop(),
		WorkRoot: t.TempDir(),
	})
}

func newTriager(t testing.TB) worker.Triager { return newPipeline(t) }
