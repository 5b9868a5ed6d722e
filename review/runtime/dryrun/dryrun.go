// Package dryrun is the runtime used when no reviewer is configured: it reviews nothing and
// says so, so every lens it is given stays pending rather than passing.
package dryrun

import (
	"context"

	"github.com/lensgate/lensgate/review/runtime"
)

// Name is the runtime's name.
const Name = "dryrun"

// Runtime records that no runtime was configured.
type Runtime struct {
	// Reason explains why nothing reviewed the change (default: no runtime configured).
	Reason string
}

// Name implements runtime.Runtime.
func (r Runtime) Name() string { return Name }

// Review implements runtime.Runtime: every lens is skipped with the reason.
func (r Runtime) Review(_ context.Context, req *runtime.Request) (*runtime.Result, error) {
	reason := r.Reason
	if reason == "" {
		reason = "dry run: no review runtime is configured for this lens"
	}
	if req.Kind == runtime.KindTriage {
		return &runtime.Result{Triage: &runtime.Triage{Labels: nil, Comment: ""}}, nil
	}
	res := &runtime.Result{}
	for _, l := range req.Lenses {
		res.Lenses = append(res.Lenses, runtime.LensReport{
			Lens: l.Name, Verdict: runtime.VerdictSkipped, Cause: reason,
			Summary: "Dry run: nothing reviewed this lens.",
		})
	}
	return res, nil
}
