package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/policy"
)

// doctorCmd validates an .asdd.yml and explains every problem, not only the first, with its line
// and a hint. Keys accepted for ASDD compatibility but not acted on are listed as ignored.
type doctorCmd struct {
	Config string `default:".asdd.yml" placeholder:"FILE" help:"The .asdd.yml to check (a .yaga.toml or pyproject.toml is checked as a policy); default: .asdd.yml in the current directory."`
	Format string `default:"text" enum:"text,json" help:"Output format: text or json."`
	// Preset declares the operator's presets, so a lens using one is not taken for a lens the
	// builtin runtime cannot review.
	Preset map[string]string `placeholder:"NAME=RUNTIME" help:"Operator-defined preset, as given to review or serve: lenses whose preset is NAME are reviewed by RUNTIME. Repeatable."`
}

type doctorReport struct {
	file     string
	problems config.Problems
	ignored  []config.KeyRef
	plan     *policy.Plan
	defaults bool
}

func (c *doctorCmd) Run(e *env) error {
	path := resolvePath(c.Config)
	data, err := readConfig(path)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("doctor: %w", err))
	}
	rep := doctorReport{file: path}
	var pol config.Policy
	if config.IsRepoConfig(path) {
		repo, probs := config.CheckRepo(path, data)
		rep.problems, rep.ignored, rep.defaults, pol = probs, repo.Ignored, repo.PolicyDefaulted, repo.Policy
		if len(probs) == 0 {
			rep.problems = builtinPresetProblems(path, repo, c.Preset)
		}
	} else {
		p, err := config.ParseYAGATOML(path, data)
		if err != nil {
			rep.problems = asProblems(path, err)
		}
		pol = p
	}
	if len(rep.problems) == 0 {
		plan, err := policy.NewPlan(pol)
		if err != nil {
			rep.problems = config.Problems{{File: path, Message: err.Error()}}
		} else {
			rep.plan = &plan
		}
	}
	if c.Format == "json" {
		writeDoctorJSON(e.stdout, rep)
	} else {
		writeDoctorText(e.stdout, rep)
	}
	if len(rep.problems) > 0 {
		return exitWith(exitUsage, nil)
	}
	return nil
}

func readConfig(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// One byte over the cap lets the decoder report the size problem itself.
	return io.ReadAll(io.LimitReader(f, config.MaxRepoFileBytes+1))
}

func asProblems(path string, err error) config.Problems {
	if ps, ok := err.(config.Problems); ok {
		return ps
	}
	return config.Problems{{File: path, Message: err.Error()}}
}

func writeDoctorText(w io.Writer, rep doctorReport) {
	for _, p := range rep.problems {
		loc := rep.file
		if p.Line > 0 {
			loc = fmt.Sprintf("%s:%d", rep.file, p.Line)
			if p.Column > 0 {
				loc += fmt.Sprintf(":%d", p.Column)
			}
		}
		fmt.Fprintf(w, "%s: error: %s\n", loc, policy.SafeText(p.Message, 1000))
		if p.Hint != "" {
			fmt.Fprintf(w, "    hint: %s\n", policy.SafeText(p.Hint, 1000))
		}
	}
	for _, k := range rep.ignored {
		fmt.Fprintf(w, "%s:%d: ignored: %s is accepted for ASDD compatibility; lensgate does not act on it\n", rep.file, k.Line, k.Key)
	}
	if len(rep.problems) > 0 {
		fmt.Fprintf(w, "%d problem(s), %d ignored key(s): the configuration is not usable.\n", len(rep.problems), len(rep.ignored))
		return
	}
	src := "agent_review"
	if rep.defaults {
		src = "the default policy (no agent_review section)"
	}
	var names []string
	for _, it := range rep.plan.Items {
		names = append(names, fmt.Sprintf("%s (%s, %s)", it.Name, it.Role(), it.Publication))
	}
	fmt.Fprintf(w, "Policy from %s: %s; aggregation %s; plan digest %s.\n", src, strings.Join(names, ", "), rep.plan.Aggregation, rep.plan.Digest())
	fmt.Fprintf(w, "0 problems, %d ignored key(s): the configuration is valid.\n", len(rep.ignored))
}

func writeDoctorJSON(w io.Writer, rep doctorReport) {
	type jsonProblem struct {
		Line    int    `json:"line,omitempty"`
		Column  int    `json:"column,omitempty"`
		Key     string `json:"key,omitempty"`
		Message string `json:"message"`
		Hint    string `json:"hint,omitempty"`
	}
	type jsonIgnored struct {
		Key  string `json:"key"`
		Line int    `json:"line"`
	}
	out := struct {
		File       string        `json:"file"`
		Valid      bool          `json:"valid"`
		Problems   []jsonProblem `json:"problems"`
		Ignored    []jsonIgnored `json:"ignored"`
		PlanDigest string        `json:"plan_digest,omitempty"`
	}{File: rep.file, Valid: len(rep.problems) == 0, Problems: []jsonProblem{}, Ignored: []jsonIgnored{}}
	for _, p := range rep.problems {
		out.Problems = append(out.Problems, jsonProblem{p.Line, p.Column, p.Key, p.Message, p.Hint})
	}
	for _, k := range rep.ignored {
		out.Ignored = append(out.Ignored, jsonIgnored{k.Key, k.Line})
	}
	if rep.plan != nil {
		out.PlanDigest = rep.plan.Digest()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}
