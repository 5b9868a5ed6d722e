package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/eval"
	"github.com/lensgate/lensgate/review/runtime/openai"
)

// evalCmd measures the review against a corpus of pull requests with known defects.
type evalCmd struct {
	Run           evalRunCmd     `cmd:"" default:"withargs" help:"Review every case of a corpus and print recall, precision, F1, comments per pull request, tokens, cost and wall time (the default)."`
	ImportMartian evalMartianCmd `cmd:"" name:"import-martian" help:"Write a corpus manifest from golden-comment files of the Martian code-review benchmark, for repositories cloned locally."`
}

// evalRunCmd runs an evaluation.
type evalRunCmd struct {
	Corpus   string            `required:"" placeholder:"FILE" help:"Corpus manifest (YAML or JSON; see docs/evaluation.md)."`
	Config   string            `placeholder:"FILE" help:"Configuration every case is reviewed with, over the corpus's; default: the corpus's, else each case's base revision's .asdd.yml, else the built-in default policy."`
	Runtime  string            `placeholder:"NAME" help:"Default runtime for lenses whose preset names none (builtin, openai, dryrun, or an adapter name)."`
	Adapters string            `placeholder:"DIR" help:"Directory of operator-installed review adapters, enabled as exec runtimes."`
	Preset   map[string]string `placeholder:"NAME=RUNTIME" help:"Operator-defined preset, as for lensgate review. Repeatable."`
	Window   int               `default:"5" help:"A finding matches a known defect when it is on the same file within this many lines of it."`
	Judge    bool              `help:"Confirm every match with a model judge at the OpenAI-compatible endpoint (ASDD_MODEL_URL, ASDD_RUNTIME_TOKEN); needed for known defects without a path."`
	// JudgeModel is the judge's model; default ASDD_MODEL.
	JudgeModel      string  `name:"judge-model" placeholder:"MODEL" help:"Model of the judge (default: ASDD_MODEL)."`
	PricePrompt     float64 `name:"price-prompt" placeholder:"PRICE" help:"Price of one million prompt tokens, for the cost column."`
	PriceCompletion float64 `name:"price-completion" placeholder:"PRICE" help:"Price of one million completion tokens, for the cost column."`
	Format          string  `default:"table" enum:"table,json" help:"Output format: table or json."`
	JSONOut         string  `name:"json-out" placeholder:"FILE" help:"Also write the JSON report to FILE."`
}

// Run implements the command. Exit 0: the evaluation ran; 2: unusable input.
func (c *evalRunCmd) Run(e *env) error {
	corpus, err := eval.Load(c.Corpus)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if c.Window < 0 {
		return exitWith(exitUsage, errors.New("--window must be 0 or more"))
	}
	if c.PricePrompt < 0 || c.PriceCompletion < 0 {
		return exitWith(exitUsage, errors.New("prices must be 0 or more"))
	}
	rc := &reviewCmd{Adapters: c.Adapters, Preset: c.Preset}
	reg, err := rc.registry(config.DefaultRepo())
	if err != nil {
		return exitWith(exitUsage, err)
	}
	opts := eval.Options{
		Pipeline: review.NewPipeline(review.Options{Runtimes: reg, Logger: zerolog.New(e.stderr).Level(zerolog.ErrorLevel),
			EnableHint: "for openai set ASDD_MODEL_URL and ASDD_RUNTIME_TOKEN, for an adapter pass --adapters DIR", Version: version}),
		Config: c.loadConfig(e),
		Window: c.Window,
		Prices: eval.Prices{PromptPerMillion: c.PricePrompt, CompletionPerMillion: c.PriceCompletion},
		Progress: func(r eval.CaseResult) {
			fmt.Fprintf(e.stderr, "%s: %d of %d known defect(s) found, %d finding(s)\n", review.PlainText(r.ID), r.Matched, r.Golden, r.Findings)
		},
	}
	if c.Judge {
		if opts.Judge, err = c.judge(); err != nil {
			return exitWith(exitUsage, err)
		}
	}
	rep, err := eval.Run(e.ctx, corpus, opts)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if c.JSONOut != "" {
		f, err := os.Create(c.JSONOut)
		if err != nil {
			return exitWith(exitUsage, fmt.Errorf("--json-out: %w", err))
		}
		werr := rep.WriteJSON(f)
		if err := errors.Join(werr, f.Close()); err != nil {
			return exitWith(exitUsage, fmt.Errorf("--json-out: %w", err))
		}
	}
	if c.Format == "json" {
		return rep.WriteJSON(e.stdout)
	}
	return rep.WriteTable(e.stdout)
}

// loadConfig reads a case's configuration as lensgate review does: --config, else the corpus's
// or the case's file, else the base revision's .asdd.yml, else the default; --runtime applies to
// all of them.
func (c *evalRunCmd) loadConfig(e *env) func(ctx context.Context, repo, base, file string) (*config.Repo, error) {
	return func(ctx context.Context, repo, base, file string) (*config.Repo, error) {
		if c.Config != "" {
			file = c.Config
		}
		rc := &reviewCmd{Repo: repo, Base: base, Config: file}
		cfg, err := rc.loadConfig(&env{ctx: ctx, stdout: e.stdout, stderr: e.stderr})
		if err != nil {
			return nil, err
		}
		if c.Runtime != "" {
			cfg.Runtime = c.Runtime
		}
		return cfg, nil
	}
}

// judge is the model judge at the OpenAI-compatible endpoint of the environment.
func (c *evalRunCmd) judge() (eval.Judge, error) {
	url, tok := os.Getenv("ASDD_MODEL_URL"), os.Getenv("ASDD_RUNTIME_TOKEN")
	if url == "" || tok == "" {
		return nil, errors.New("--judge needs an OpenAI-compatible endpoint: set ASDD_MODEL_URL and ASDD_RUNTIME_TOKEN")
	}
	model := c.JudgeModel
	if model == "" {
		model = os.Getenv("ASDD_MODEL")
	}
	if model == "" {
		return nil, errors.New("--judge needs a model: pass --judge-model or set ASDD_MODEL")
	}
	rt, err := openai.New(openai.Options{BaseURL: url, Token: tok, Model: model})
	if err != nil {
		return nil, err
	}
	return eval.ModelJudge{Runtime: rt, Name: model}, nil
}

// evalMartianCmd imports golden comments of the Martian code-review benchmark.
type evalMartianCmd struct {
	Files []string          `arg:"" placeholder:"FILE" help:"Golden-comment files (offline/golden_comments/*.json of the benchmark)."`
	Repos string            `required:"" placeholder:"DIR" help:"Directory the benchmark's repositories are cloned into: github.com/OWNER/NAME/pull/N is reviewed in DIR/NAME."`
	Repo  map[string]string `placeholder:"NAME=DIR" help:"Local directory of the repository NAME (or OWNER/NAME), over --repos. Repeatable."`
	Head  string            `default:"refs/pull/{number}/head" help:"Head revision of a pull request; {number} is its number."`
	Base  string            `default:"HEAD" help:"Base branch of a pull request; the change is reviewed from its merge base with the head."`
	Out   string            `placeholder:"FILE" help:"Write the manifest to FILE (default: standard output)."`
}

// Run implements the command. Missing repositories or revisions are listed on standard error;
// the manifest still holds their cases.
func (c *evalMartianCmd) Run(e *env) error {
	repos, err := filepath.Abs(c.Repos)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	corpus, warnings, err := eval.ImportMartian(e.ctx, c.Files, eval.MartianOptions{Repos: repos, RepoDirs: c.Repo, Head: c.Head, Base: c.Base})
	if err != nil {
		return exitWith(exitUsage, err)
	}
	for _, w := range warnings {
		fmt.Fprintf(e.stderr, "lensgate: %s\n", review.PlainText(w))
	}
	out := e.stdout
	if c.Out != "" {
		f, err := os.Create(c.Out)
		if err != nil {
			return exitWith(exitUsage, err)
		}
		defer f.Close()
		out = f
	}
	if err := corpus.WriteYAML(out); err != nil {
		return exitWith(exitUsage, err)
	}
	fmt.Fprintf(e.stderr, "%d case(s) with %d golden comment(s); score them with lensgate eval --judge\n", len(corpus.Cases), countGolden(corpus))
	return nil
}

func countGolden(c *eval.Corpus) int {
	n := 0
	for _, k := range c.Cases {
		n += len(k.Golden)
	}
	return n
}
