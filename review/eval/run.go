package eval

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review"
)

// Options configure an evaluation.
type Options struct {
	// Pipeline reviews each case: the same pipeline lensgate review runs, with the runtimes the
	// caller enabled.
	Pipeline *review.Pipeline
	// Config returns the configuration a case is reviewed with. file is the corpus's or the
	// case's configuration file, absolute ("" when neither names one: the caller then reads the
	// base revision's, as lensgate review does).
	Config func(ctx context.Context, repo, base, file string) (*config.Repo, error)
	// Window is how many lines a finding may be from a golden finding (negative: DefaultWindow).
	Window int
	// Judge, when set, must confirm every match, and alone can match golden findings that have
	// no path.
	Judge Judge
	// Prices turn tokens into cost.
	Prices Prices
	// Progress, when set, is told each case as it finishes.
	Progress func(CaseResult)
}

// Prices are what a model provider charges, in a currency of the operator's choice, per
// million tokens.
type Prices struct {
	PromptPerMillion     float64 `json:"promptPerMillion"`
	CompletionPerMillion float64 `json:"completionPerMillion"`
}

// Cost is the price of tokens.
func (p Prices) Cost(t Tokens) float64 {
	return float64(t.Prompt)/1e6*p.PromptPerMillion + float64(t.Completion)/1e6*p.CompletionPerMillion
}

// Tokens are model tokens; Estimated is set when some count is lensgate's estimate because the
// server reported none.
type Tokens struct {
	Prompt     int  `json:"prompt"`
	Completion int  `json:"completion"`
	Total      int  `json:"total"`
	Estimated  bool `json:"estimated,omitempty"`
}

func (t *Tokens) add(prompt, completion int, estimated bool) {
	t.Prompt += prompt
	t.Completion += completion
	t.Total = t.Prompt + t.Completion
	t.Estimated = t.Estimated || estimated
}

// CaseResult is what the review of one case found, against its golden findings.
type CaseResult struct {
	ID string `json:"id"`
	Counts
	// Lenses are the counts of each lens of the case's policy.
	Lenses   []LensCase      `json:"lenses"`
	Defects  []GoldenResult  `json:"defects"`
	Reported []FindingResult `json:"reported"`
	Tokens   Tokens          `json:"tokens"`
	// WallSeconds is the time the review took (building a fixture is not counted).
	WallSeconds float64 `json:"wallSeconds"`
	Gate        string  `json:"gate"`
}

// LensCase is one lens's share of a case.
type LensCase struct {
	Name string `json:"name"`
	Counts
	Tokens      Tokens  `json:"tokens"`
	WallSeconds float64 `json:"wallSeconds"`
	// Pending is the cause when the lens reached no outcome (it then reported nothing).
	Pending string `json:"pending,omitempty"`
}

// GoldenResult is a golden finding and the finding that matched it (-1: missed).
type GoldenResult struct {
	Golden
	MatchedBy int `json:"matchedBy"`
}

// FindingResult is one reported finding and the golden finding it matched (-1: none).
type FindingResult struct {
	Lens     string          `json:"lens"`
	Severity review.Severity `json:"severity"`
	Path     string          `json:"path,omitempty"`
	Line     int             `json:"line,omitempty"`
	Title    string          `json:"title"`
	Matches  int             `json:"matches"`
}

// Run reviews every case of the corpus and scores it.
func Run(ctx context.Context, c *Corpus, opts Options) (*Report, error) {
	if opts.Pipeline == nil || opts.Config == nil {
		return nil, errors.New("eval: a pipeline and a configuration loader are required")
	}
	if opts.Window < 0 {
		opts.Window = DefaultWindow
	}
	if opts.Judge == nil {
		for _, k := range c.Cases {
			for _, g := range k.Golden {
				if !g.Located() {
					return nil, fmt.Errorf("case %s: a golden finding has no path: it can only be matched by a model judge (--judge)", k.ID)
				}
			}
		}
	}
	j := newJudging(opts.Judge)
	var results []CaseResult
	for i := range c.Cases {
		res, err := runCase(ctx, c, &c.Cases[i], opts, j)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Cases[i].ID, err)
		}
		if opts.Progress != nil {
			opts.Progress(*res)
		}
		results = append(results, *res)
	}
	return summarise(c, opts, results, j), nil
}

// runCase reviews one case and scores it overall and per lens.
func runCase(ctx context.Context, c *Corpus, k *Case, opts Options, j *judging) (*CaseResult, error) {
	co, err := prepare(ctx, c, k)
	if err != nil {
		return nil, err
	}
	if co.cleanup != nil {
		defer co.cleanup()
	}
	subj, err := review.LocalSubject(ctx, co.dir, co.base, co.head)
	if err != nil {
		return nil, err
	}
	cfgFile := c.resolve(k.Config)
	if cfgFile == "" {
		cfgFile = c.resolve(c.Config)
	}
	cfg, err := opts.Config(ctx, co.dir, co.base, cfgFile)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	// The walkthrough is no finding: the lenses alone are scored and costed.
	cfg.Walkthrough.Enabled = false
	started := time.Now()
	dec, err := opts.Pipeline.Review(ctx, subj, cfg)
	if err != nil {
		return nil, fmt.Errorf("review: %w", err)
	}
	wall := time.Since(started)
	return scoreCase(ctx, k, dec, wall, opts.Window, j.confirmer(k.ID))
}

// prepare finds the change of a case: a fixture built into a throw-away repository, or revisions
// of a local repository.
func prepare(ctx context.Context, c *Corpus, k *Case) (*checkout, error) {
	if k.Fixture != "" {
		return buildFixture(ctx, c.resolve(k.Fixture), k.Title)
	}
	co := &checkout{dir: c.resolve(k.Repo), base: k.Base, head: k.Head}
	if k.MergeBase {
		if strings.HasPrefix(k.Base, "-") || strings.HasPrefix(k.Head, "-") {
			return nil, errors.New("a revision may not start with '-'")
		}
		out, err := exec.CommandContext(ctx, "git", "-C", co.dir, "merge-base", "--end-of-options", k.Base, k.Head).Output()
		if err != nil {
			return nil, fmt.Errorf("merge base of %s and %s in %s: %w", k.Base, k.Head, co.dir, err)
		}
		co.base = strings.TrimSpace(string(out))
	}
	return co, nil
}

// scoreCase matches a decision's open findings against a case's golden findings, overall and
// for each lens.
func scoreCase(ctx context.Context, k *Case, dec *review.Decision, wall time.Duration, window int, confirm confirmer) (*CaseResult, error) {
	var findings []review.Finding
	for _, f := range dec.Findings {
		if f.Open() {
			findings = append(findings, f)
		}
	}
	counts, matched, err := score(ctx, k.Golden, findings, window, confirm)
	if err != nil {
		return nil, err
	}
	res := &CaseResult{ID: k.ID, Counts: counts, WallSeconds: wall.Seconds(), Gate: string(dec.Gate.State)}
	res.Tokens.add(dec.Tokens.Prompt, dec.Tokens.Completion, dec.Tokens.Estimated)
	res.Reported = make([]FindingResult, len(findings))
	for i, f := range findings {
		res.Reported[i] = FindingResult{Lens: f.Lens, Severity: f.Severity, Path: f.Path, Line: f.Line, Title: f.Title, Matches: -1}
	}
	for gi, fi := range matched {
		res.Defects = append(res.Defects, GoldenResult{Golden: k.Golden[gi], MatchedBy: fi})
		if fi >= 0 {
			res.Reported[fi].Matches = gi
		}
	}
	for _, l := range dec.Lenses {
		lc, err := scoreLens(ctx, k, dec, l, findings, window, confirm)
		if err != nil {
			return nil, err
		}
		res.Lenses = append(res.Lenses, lc)
	}
	return res, nil
}

// scoreLens scores one lens: its findings against the golden findings in its scope (those that
// name it, and those that name no lens).
func scoreLens(ctx context.Context, k *Case, dec *review.Decision, l review.LensResult, all []review.Finding, window int, confirm confirmer) (LensCase, error) {
	var golden []Golden
	for _, g := range k.Golden {
		if g.Lens == "" || g.Lens == l.Name {
			golden = append(golden, g)
		}
	}
	var findings []review.Finding
	for _, f := range all {
		if f.Lens == l.Name {
			findings = append(findings, f)
		}
	}
	counts, _, err := score(ctx, golden, findings, window, confirm)
	if err != nil {
		return LensCase{}, err
	}
	lc := LensCase{Name: l.Name, Counts: counts}
	if l.Outcome == review.OutcomePending {
		lc.Pending = l.Cause
		if lc.Pending == "" {
			lc.Pending = "no outcome"
		}
	}
	if l.Tokens != nil && !l.Tokens.Earlier {
		lc.Tokens.add(l.Tokens.Prompt, l.Tokens.Completion, l.Tokens.Estimated)
	}
	for _, r := range dec.Runs {
		if r.Lens == l.Name && !r.Started.IsZero() && r.Finished.After(r.Started) {
			lc.WallSeconds += r.Finished.Sub(r.Started).Seconds()
		}
	}
	return lc, nil
}

// lensNames lists the lenses of every case, sorted.
func lensNames(results []CaseResult) []string {
	var names []string
	for _, r := range results {
		for _, l := range r.Lenses {
			if !slices.Contains(names, l.Name) {
				names = append(names, l.Name)
			}
		}
	}
	slices.Sort(names)
	return names
}
