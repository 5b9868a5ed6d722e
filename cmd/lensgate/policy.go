package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/policy"
)

// policyCmd groups the named-lens policy commands. Their output, error documents and exit codes
// follow YAGA's "gate agent-review policy" so that adapters written for it work unchanged.
type policyCmd struct {
	Check    policyCheckCmd    `cmd:"" help:"Validate a policy file and summarise it."`
	Plan     policyPlanCmd     `cmd:"" help:"Print the lens plan and its plan_digest."`
	Template policyTemplateCmd `cmd:"" help:"Print a receipt scaffold with every lens pending."`
	Evaluate policyEvaluateCmd `cmd:"" help:"Evaluate a receipt against the policy (exit 0 passed, 1 failed or pending)."`
}

type policyFileFlag struct {
	File string `required:"" placeholder:"FILE" help:"Policy file: .asdd.yml, .yaga.toml or pyproject.toml."`
}

type policyCheckCmd struct {
	policyFileFlag
	Format string `default:"text" help:"Output format: text or json."`
}

type policyPlanCmd struct {
	policyFileFlag
	Format string `default:"text" help:"Output format: text or json."`
}

type policyTemplateCmd struct {
	policyFileFlag
}

type policyEvaluateCmd struct {
	policyFileFlag
	Results string `required:"" placeholder:"FILE" help:"Receipt (results) JSON file."`
	Format  string `default:"text" help:"Output format: text, json or github."`
}

// fail writes the error document for format to stderr and exits 2 with nothing on stdout.
// Problems of an .asdd.yml, a file YAGA does not read, are lensgate's own: in text they are
// listed one per line as doctor lists them; json and github keep YAGA's one-message document.
func policyFail(e *env, err error, format string) error {
	var rp repoProblems
	if errors.As(err, &rp) && policy.FoldFormat(format) == policy.FormatText {
		fmt.Fprintf(e.stderr, "lensgate configuration error: %d problem(s) in %s\n", len(rp), rp[0].File)
		for _, p := range rp {
			line := p.String()
			if p.Line == 0 {
				line = p.File + ": " + line
			}
			fmt.Fprintf(e.stderr, "  %s\n", policy.SafeText(line, 1000))
		}
		return exitWith(exitUsage, nil)
	}
	fmt.Fprint(e.stderr, policy.RenderError(err, policy.FoldFormat(format)))
	return exitWith(exitUsage, nil)
}

// repoProblems are the problems of an .asdd.yml policy file.
type repoProblems config.Problems

// Error is the one-line message of the json and github error documents.
func (rp repoProblems) Error() string {
	parts := make([]string, len(rp))
	for i, p := range rp {
		if p.Line > 0 {
			parts[i] = fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
		} else {
			parts[i] = fmt.Sprintf("%s: %s", p.File, p.Message)
		}
	}
	return strings.Join(parts, "; ")
}

// checkRepoFile checks an .asdd.yml as doctor does, with the builtin preset check when
// presets is set; it returns nil when the file is usable or cannot be read (the policy reader
// reports that in YAGA's words).
func checkRepoFile(path string, presets bool) error {
	data, err := readConfig(path)
	if err != nil {
		return nil
	}
	repo, probs := config.CheckRepo(path, data)
	if len(probs) == 0 && presets {
		probs = builtinPresetProblems(path, repo, nil)
	}
	if len(probs) > 0 {
		return repoProblems(probs)
	}
	return nil
}

// resolvePath expands a leading ~ and resolves the path to an absolute one with symlinks
// followed, as the messages quote it.
func resolvePath(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

func loadPlan(file string) (policy.Plan, error) {
	if path := resolvePath(file); config.IsRepoConfig(path) {
		if err := checkRepoFile(path, false); err != nil {
			return policy.Plan{}, err
		}
	}
	pol, err := policy.ReadPolicyFile(resolvePath(file))
	if err != nil {
		return policy.Plan{}, err
	}
	return policy.NewPlan(pol)
}

func (c *policyCheckCmd) Run(e *env) error {
	// An .asdd.yml also says which runtime reviews its lenses: a lens the builtin runtime has no
	// checks for would stay pending on every review, so the check refuses it.
	if path := resolvePath(c.File); config.IsRepoConfig(path) {
		if err := checkRepoFile(path, true); err != nil {
			return policyFail(e, err, c.Format)
		}
	}
	return renderPlan(e, c.File, c.Format, policy.RenderCheck)
}

func (c *policyPlanCmd) Run(e *env) error {
	return renderPlan(e, c.File, c.Format, policy.RenderPlan)
}

// renderPlan loads the policy in file and prints render's view of its plan in format (text or
// json); errors are reported as YAGA does, in the requested format.
func renderPlan(e *env, file, format string, render func(policy.Plan, policy.Format) string) error {
	plan, err := loadPlan(file)
	if err != nil {
		return policyFail(e, err, format)
	}
	f, err := policy.ParseFormat(format, policy.FormatText, policy.FormatJSON)
	if err != nil {
		return policyFail(e, err, format)
	}
	fmt.Fprint(e.stdout, render(plan, f))
	return nil
}

func (c *policyTemplateCmd) Run(e *env) error {
	plan, err := loadPlan(c.File)
	if err != nil {
		return policyFail(e, err, string(policy.FormatText))
	}
	fmt.Fprint(e.stdout, policy.RenderTemplate(plan))
	return nil
}

func (c *policyEvaluateCmd) Run(e *env) error {
	plan, err := loadPlan(c.File)
	if err != nil {
		return policyFail(e, err, c.Format)
	}
	receipt, err := policy.ReadReceiptFile(resolvePath(c.Results))
	if err != nil {
		return policyFail(e, err, c.Format)
	}
	ev, err := policy.Evaluate(plan, receipt)
	if err != nil {
		return policyFail(e, err, c.Format)
	}
	f, err := policy.ParseFormat(c.Format, policy.FormatText, policy.FormatJSON, policy.FormatGitHub)
	if err != nil {
		return policyFail(e, err, c.Format)
	}
	fmt.Fprint(e.stdout, policy.RenderEvaluation(ev, f))
	if !ev.Passed() {
		return exitWith(exitNegative, nil)
	}
	return nil
}
