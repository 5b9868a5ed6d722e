package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/lensgate/lensgate/review"
)

// Report is the result of an evaluation: the figures per lens and overall, and every case.
type Report struct {
	Corpus string `json:"corpus,omitempty"`
	// Cases counts the cases; Clean those without golden findings.
	Cases int `json:"cases"`
	Clean int `json:"clean"`
	// Window is the line window of location matching.
	Window int    `json:"window"`
	Prices Prices `json:"prices"`
	// Judge is what the model judge spent (nil without one); its cost is not in the lenses'.
	Judge   *JudgeUsage  `json:"judge,omitempty"`
	Overall Summary      `json:"overall"`
	Lenses  []Summary    `json:"lenses"`
	Results []CaseResult `json:"results"`
}

// JudgeUsage is what the judge spent.
type JudgeUsage struct {
	Model  string  `json:"model"`
	Calls  int     `json:"calls"`
	Tokens Tokens  `json:"tokens"`
	Cost   float64 `json:"cost"`
}

// Summary is the figures of one lens, or of all lenses together.
type Summary struct {
	// Lens is empty for the overall summary.
	Lens string `json:"lens,omitempty"`
	Counts
	Rates
	// CommentsPerPR is the mean number of findings reported per case.
	CommentsPerPR float64 `json:"commentsPerPR"`
	Tokens        Tokens  `json:"tokens"`
	Cost          float64 `json:"cost"`
	// WallSeconds is the review time: of whole reviews overall, of the lens's runtime calls
	// for a lens (lenses run at once, so these do not add up to the overall time).
	WallSeconds float64 `json:"wallSeconds"`
	// Pending counts the cases in which the lens reached no outcome (and so reported nothing).
	Pending int `json:"pending"`
}

// summarise adds up the case results.
func summarise(c *Corpus, opts Options, results []CaseResult, j *judging) *Report {
	r := &Report{Corpus: c.Name, Cases: len(results), Window: opts.Window, Prices: opts.Prices, Results: results}
	for _, cr := range results {
		if cr.Golden == 0 {
			r.Clean++
		}
		r.Overall.Counts.add(cr.Counts)
		r.Overall.Tokens.add(cr.Tokens.Prompt, cr.Tokens.Completion, cr.Tokens.Estimated)
		r.Overall.WallSeconds += cr.WallSeconds
		for _, l := range cr.Lenses {
			if l.Pending != "" {
				r.Overall.Pending++
				break
			}
		}
	}
	r.Overall.finish(len(results), opts.Prices)
	for _, name := range lensNames(results) {
		s := Summary{Lens: name}
		for _, cr := range results {
			for _, l := range cr.Lenses {
				if l.Name != name {
					continue
				}
				s.Counts.add(l.Counts)
				s.Tokens.add(l.Tokens.Prompt, l.Tokens.Completion, l.Tokens.Estimated)
				s.WallSeconds += l.WallSeconds
				if l.Pending != "" {
					s.Pending++
				}
			}
		}
		s.finish(len(results), opts.Prices)
		r.Lenses = append(r.Lenses, s)
	}
	if j.judge != nil {
		r.Judge = &JudgeUsage{Model: j.judge.Model(), Calls: j.calls, Tokens: j.tokens, Cost: opts.Prices.Cost(j.tokens)}
	}
	return r
}

func (s *Summary) finish(cases int, p Prices) {
	s.Rates = s.Counts.rates()
	if cases > 0 {
		s.CommentsPerPR = float64(s.Findings) / float64(cases)
	}
	s.Cost = p.Cost(s.Tokens)
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteTable writes the report for a terminal: the figures per lens and overall, then one line
// per case. Case identifiers and lens names come from the corpus and the policy, and are
// printed through review.PlainText.
func (r *Report) WriteTable(w io.Writer) error {
	name := r.Corpus
	if name == "" {
		name = "corpus"
	}
	golden := r.Overall.Golden
	fmt.Fprintf(w, "%s: %d case(s), %d known defect(s), %d clean; matched by path and line ±%d", review.PlainText(name),
		r.Cases, golden, r.Clean, r.Window)
	if r.Judge != nil {
		fmt.Fprintf(w, ", confirmed by the judge %s", review.PlainText(r.Judge.Model))
	}
	fmt.Fprintf(w, "\nPrices per 1M tokens: prompt %g, completion %g\n\n", r.Prices.PromptPerMillion, r.Prices.CompletionPerMillion)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "LENS\tDEFECTS\tFOUND\tFINDINGS\tFALSE+\tRECALL\tPRECISION\tF1\tCOMMENTS/PR\tTOKENS\tCOST\tWALL s\tPENDING\t")
	row := func(label string, s Summary) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%.2f\t%s\t%.4f\t%.2f\t%d\t\n", review.PlainText(label), s.Golden, s.Matched,
			s.Findings, s.Unmatched, rate(s.Recall), rate(s.Precision), rate(s.F1), s.CommentsPerPR, tokens(s.Tokens), s.Cost,
			s.WallSeconds, s.Pending)
	}
	for _, s := range r.Lenses {
		row(s.Lens, s)
	}
	row("overall", r.Overall)
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Judge != nil {
		fmt.Fprintf(w, "\nJudge: %d call(s), %s tokens, cost %.4f\n", r.Judge.Calls, tokens(r.Judge.Tokens), r.Judge.Cost)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tDEFECTS\tFOUND\tFINDINGS\tFALSE+\tGATE\tWALL s\tPENDING")
	for _, c := range r.Results {
		pending := "-"
		for _, l := range c.Lenses {
			if l.Pending != "" {
				pending = review.PlainText(l.Name + ": " + l.Pending)
				break
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%.2f\t%s\n", review.PlainText(c.ID), c.Golden, c.Matched, c.Findings, c.Unmatched,
			c.Gate, c.WallSeconds, pending)
	}
	return tw.Flush()
}

// rate prints a rate with three decimals, or "-" when it is undefined.
func rate(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

func tokens(t Tokens) string {
	s := strconv.Itoa(t.Total)
	if t.Estimated {
		s += "~"
	}
	return s
}
