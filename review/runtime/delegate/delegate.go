package delegate

import (
	"context"
	"fmt"
	"sort"

	"github.com/lensgate/lensgate/review/runtime"
)

// Name is the runtime's name.
const Name = "delegate"

// Runtime judges delegated lenses from the observation the App attached to the request.
type Runtime struct {
	presets map[string]Preset
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns the runtime with the built-in Codex preset and the given operator presets (an
// operator preset of the same name replaces the built-in one).
func New(presets ...Preset) (*Runtime, error) {
	rt := &Runtime{presets: map[string]Preset{CodexPreset: Codex()}}
	for _, p := range presets {
		if err := p.Validate(); err != nil {
			return nil, err
		}
		rt.presets[p.Name] = p
	}
	return rt, nil
}

// Name implements runtime.Runtime.
func (*Runtime) Name() string { return Name }

// Preset returns a preset by name.
func (r *Runtime) Preset(name string) (Preset, bool) {
	p, ok := r.presets[name]
	return p, ok
}

// PresetOfBot names the preset whose bot an account is, by login and user id ("" for none, and
// for a nil runtime).
func (r *Runtime) PresetOfBot(login string, id int64) string {
	if r == nil {
		return ""
	}
	for _, n := range r.PresetNames() {
		if p := r.presets[n]; p.Bot.Login == login && p.Bot.UserID == id {
			return n
		}
	}
	return ""
}

// PresetNames lists the presets in sorted order.
func (r *Runtime) PresetNames() []string {
	out := make([]string, 0, len(r.presets))
	for n := range r.presets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Review implements runtime.Runtime: one report per lens, from the observation alone.
func (r *Runtime) Review(_ context.Context, req *runtime.Request) (*runtime.Result, error) {
	res := &runtime.Result{}
	s := req.Subject
	for _, l := range req.Lenses {
		p, ok := r.presets[l.Preset]
		if !ok {
			res.Lenses = append(res.Lenses, runtime.LensReport{Lens: l.Name, Verdict: runtime.VerdictSkipped,
				Cause: fmt.Sprintf("no delegate preset %q is configured", l.Preset)})
			continue
		}
		if req.Delegation == nil {
			res.Lenses = append(res.Lenses, runtime.LensReport{Lens: l.Name, Verdict: runtime.VerdictSkipped,
				Cause: "delegated to " + p.Bot.Login + ", which only the GitHub App can ask"})
			continue
		}
		v := Evaluate(Input{
			Preset: p, Repo: s.Owner + "/" + s.Repo, Number: s.Number, Head: s.HeadSHA, Base: s.BaseSHA,
			Timeout: req.Settings.DelegateTimeout, OnFindings: req.Settings.OutcomeOnFindings[l.Name], Observed: req.Delegation,
		})
		res.Lenses = append(res.Lenses, Report(l.Name, v))
	}
	return res, nil
}

// Report turns a verdict into the lens report the pipeline maps onto an outcome.
func Report(lens string, v Verdict) runtime.LensReport {
	rep := runtime.LensReport{Lens: lens, Summary: v.Summary, Findings: v.Findings}
	switch v.Outcome {
	case Passed:
		rep.Verdict = runtime.VerdictOK
		if len(v.Findings) > 0 {
			rep.Verdict = runtime.VerdictConcerns
		}
	case Failed:
		rep.Verdict = runtime.VerdictRequestChanges
	default:
		rep.Verdict, rep.Cause = runtime.VerdictSkipped, v.Cause
	}
	return rep
}
