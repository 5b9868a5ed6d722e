package main

import (
	"fmt"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// otherRuntimes are the runtimes lensgate ships besides builtin; a preset naming one of them
// is not the builtin runtime's concern.
var otherRuntimes = map[string]bool{"openai": true, "dryrun": true, "delegate": true}

// builtinPresetProblems finds the lenses of a repository configuration that would run on the
// builtin runtime although it has no checks for them: such a lens stays pending on every review,
// and a required one keeps the gate pending for ever. A preset close to a builtin preset is
// reported as a typo even when the lens name would pick checks. operator maps operator-defined
// presets to runtimes (--preset NAME=RUNTIME), which the repository file cannot know.
func builtinPresetProblems(file string, repo *config.Repo, operator map[string]string) config.Problems {
	var out config.Problems
	for _, l := range repo.Policy.Lenses {
		rt := repo.Runtime
		switch {
		case l.Preset == builtin.Name:
			rt = builtin.Name
		case otherRuntimes[l.Preset]:
			rt = l.Preset
		case operator[l.Preset] != "":
			rt = operator[l.Preset]
		}
		if rt != builtin.Name && rt != "" {
			continue // another runtime (or "generic", the operator's choice) reviews it
		}
		key := "agent_review.agents." + l.Name + ".preset"
		groups := builtin.Groups(runtime.Lens{Name: l.Name, Preset: l.Preset})
		known := builtin.Describe(l.Preset) != ""
		switch {
		case len(groups) == 0:
			out = append(out, config.Problem{File: file, Key: key,
				Message: fmt.Sprintf("lens %s: %s", l.Name, builtin.NoChecks(l.Preset)),
				Hint:    "set runtime: (or the lens's preset) to a model runtime, or choose a preset the built-in runtime checks"})
		case !known && l.Preset != builtin.Name && config.Nearest(l.Preset, builtin.Presets()) != "":
			out = append(out, config.Problem{File: file, Key: key,
				Message: fmt.Sprintf("lens %s: %s", l.Name, builtin.NoChecks(l.Preset)),
				Hint:    fmt.Sprintf("without a fix it is reviewed by the checks for its name (%s)", builtin.Describe(l.Name))})
		}
	}
	return out
}
