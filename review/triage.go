package review

import (
	"context"
	"strings"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/runtime"
)

// maxTriageComment bounds the triage comment.
const maxTriageComment = 1500

// Triage labels an issue through the repository's default runtime. Labels outside
// triage_labels are dropped; a failing runtime yields no labels and the cause (fail closed).
func (p *Pipeline) Triage(ctx context.Context, subj *Subject, cfg *config.Repo) (*TriageDecision, error) {
	if subj == nil {
		return nil, unusable("no subject")
	}
	if cfg == nil {
		return nil, unusable("no repository configuration")
	}
	if subj.Kind != KindIssue {
		return nil, unusable("subject kind %q is not an issue", subj.Kind)
	}
	name := p.defaultRuntime(cfg)
	td := &TriageDecision{Runtime: name, Labels: []string{}}
	rt, ok := p.opts.Runtimes.Get(name)
	if !ok {
		td.Cause = "runtime " + name + " is not enabled on this server"
		return td, nil
	}
	req := &runtime.Request{
		Kind: runtime.KindTriage,
		Subject: runtime.Subject{
			Owner: subj.Owner, Repo: subj.Repo, Number: subj.Number, Title: subj.Title, Body: subj.Body,
			Author: subj.Author, Labels: subj.Labels,
		},
		Settings: runtime.Settings{TriageLabels: cfg.TriageLabels, Model: cfg.Models.Reviewer, TimeoutSeconds: cfg.Review.TimeoutSeconds},
	}
	if !p.free[name] {
		wd, err := newWorkDir(p.opts.WorkRoot, subj, nil, map[string]string{"pr_number": itoa(subj.Number)})
		if err != nil {
			td.Cause = "could not prepare the work directory: " + err.Error()
			return td, nil
		}
		defer wd.Close()
		req.WorkDir = wd.path
	}
	start := p.opts.Now()
	res, err := safeReview(ctx, rt, req, cfg.Review.TimeoutSeconds)
	run := Run{Lens: "triage", Runtime: name, Started: start, Finished: p.opts.Now(), Outcome: OutcomePassed}
	switch {
	case err != nil:
		td.Cause = boundText(err.Error(), 500)
	case res.Triage == nil:
		td.Cause = "runtime " + name + " returned no triage result"
	default:
		run.Model = res.Model
		allowed := map[string]string{}
		for _, l := range cfg.TriageLabels {
			allowed[strings.ToLower(l)] = l
		}
		seen := map[string]bool{}
		for _, l := range res.Triage.Labels {
			if canon, ok := allowed[strings.ToLower(strings.TrimSpace(l))]; ok && !seen[canon] {
				seen[canon] = true
				td.Labels = append(td.Labels, canon)
			}
		}
		td.Comment = mdText(boundText(res.Triage.Comment, maxTriageComment))
	}
	if td.Cause != "" {
		run.Outcome, run.Cause = OutcomePending, td.Cause
		p.opts.Logger.Warn().Str("runtime", name).Str("cause", td.Cause).Msg("triage failed")
	}
	td.Runs = []Run{run}
	return td, nil
}
