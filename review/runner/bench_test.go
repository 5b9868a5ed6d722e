package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runner"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// BenchmarkReviewAndObserve: one review with the builtin runtime, its receipt signed and its
// observation signed, in the worker's own process and through a runner on a unix socket. The
// difference is what the split costs per review (two round trips, the request encoded twice).
func BenchmarkReviewAndObserve(b *testing.B) {
	cfg := config.DefaultRepo()
	receiptKey := seedKey(1)
	sign := func(d *review.Decision, subj *review.Subject) *disclosure.Receipt {
		p := review.Predicate(d, subj, time.Now())
		disc, err := disclosure.Disclose(subj.Body, p, disclosure.Signer{Key: receiptKey})
		if err != nil {
			b.Fatal(err)
		}
		return disc.Receipt
	}
	b.Run("in-process", func(b *testing.B) {
		p := review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(builtin.New(builtin.Options{})), Logger: zerolog.Nop()})
		witness := observation.Signer{Key: seedKey(7)}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			subj := subject()
			d, err := p.Review(context.Background(), subj, cfg)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := review.SignObservation(d, sign(d, subj), "v", witness, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("runner", func(b *testing.B) {
		model, _ := fakeModel(b)
		addr, _, _ := startRunner(b, model, token)
		s := newSplit(b, addr, token)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			subj := subject()
			d, err := s.pipe.Review(context.Background(), subj, cfg)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := runner.RunOf(d.Session).Observe(context.Background(), sign(d, subj).Envelope, nil, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
