package review

import (
	"context"
	"fmt"
	"strings"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/modelctx"
	"github.com/lensgate/lensgate/review/pathglob"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// ContextSettings turns a repository's context section into the context builder's settings.
func ContextSettings(c config.Context) modelctx.Settings {
	s := modelctx.Settings{Instructions: modelctx.InstructionMode(c.Instructions), Code: c.EnclosingCode, Issues: c.LinkedIssues,
		MaxTokens: c.MaxTokens}
	if len(c.InstructionPaths) > 0 {
		s.Instructions, s.Paths = modelctx.InstructionsPaths, c.InstructionPaths
	}
	if s.Instructions == "" {
		s.Instructions = modelctx.InstructionsAuto
	}
	if c.MaxTokens <= 0 {
		// No budget: neither linked issues nor enclosing code.
		s.Code, s.Issues = false, false
	}
	return s
}

// gatherContext reads, once per review, the material the model requests' context is built
// from, when a model lens will be sent the change and the subject says where to read.
func (r *reviewRun) gatherContext(ctx context.Context) {
	src := r.subj.ContextSources
	if src == nil || !r.usesPaid || !r.intake.Passed || r.wd == nil {
		return
	}
	req := modelctx.Request{Owner: r.subj.Owner, Repo: r.subj.Repo, Title: r.subj.Title, Body: r.subj.Body,
		Settings: ContextSettings(r.cfg.Context)}
	var full, byName []string
	for _, g := range r.cfg.Models.ExcludePaths {
		full = append(full, g)
		if !containsSlash(g) {
			byName = append(byName, g)
		}
	}
	set, base := pathglob.Compile(full), pathglob.Compile(byName)
	for _, f := range r.subj.Files {
		if excluded(set, base, f.Path) {
			continue // never read for a model
		}
		req.Changed = append(req.Changed, modelctx.ChangedFile{Path: f.Path, Removed: f.Status == FileRemoved, Binary: f.Binary, Size: f.SizeBytes})
	}
	r.material = modelctx.Gather(ctx, *src, req)
	for _, n := range r.material.Notes {
		r.log.Info().Str("context", n).Msg("model context incomplete")
	}
}

// partContext is the context of one model request: built for the files the model view gives
// it, with every secret the builtin detectors recognise in its untrusted data replaced, as in
// the diff. The manifest's digests stay those of the text as read, which a reader can check
// against the repository.
func (r *reviewRun) partContext(files []diff.File) *modelctx.Context {
	c := modelctx.Build(r.material, files)
	if c == nil {
		return nil
	}
	red := builtin.NewRedactor(r.secretRules)
	for i := range c.Issues {
		c.Issues[i].Title, c.Issues[i].Body = red.Text(c.Issues[i].Title), red.Text(c.Issues[i].Body)
	}
	for i := range c.Code {
		c.Code[i].Text = red.Text(c.Code[i].Text)
	}
	return c
}

// recordContext puts the review's context manifest in the decision, and its digest on the run
// of every lens whose requests were given context.
func (r *reviewRun) recordContext(dec *Decision) {
	if r.usesPaid {
		set := ContextSettings(r.cfg.Context)
		for _, f := range r.subj.Files {
			for _, p := range []string{f.Path, f.PreviousPath} {
				if p != "" && modelctx.IsInstructionPath(p, set) && !containsString(dec.ChangedInstructions, p) {
					dec.ChangedInstructions = append(dec.ChangedInstructions, p)
				}
			}
		}
	}
	if r.manifest.Empty() {
		return
	}
	d, err := r.manifest.Digest()
	if err != nil {
		r.log.Error().Err(err).Msg("context manifest")
		return
	}
	m := r.manifest
	dec.Context = &m
	dec.ContextDigest = d
	for i := range dec.Runs {
		if r.withContext[dec.Runs[i].Lens] {
			dec.Runs[i].ContextDigest = d
		}
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ContextLines say, for the comment and the check, what context the model lenses were given
// and whether the change edits instruction files (whose edits never steer their own review).
func ContextLines(d *Decision) []string {
	var out []string
	if m := d.Context; m != nil {
		out = append(out, fmt.Sprintf("Model context: %d instruction file(s) from the base branch, %d range(s) of enclosing code, %d linked issue(s); "+
			"context manifest `sha256:%s` (on the details page and bound by the receipt).", len(m.Instructions), len(m.Code), len(m.Issues), d.ContextDigest))
	}
	if n := len(d.ChangedInstructions); n > 0 {
		names := make([]string, 0, min(n, 10))
		for i, p := range d.ChangedInstructions {
			if i == 10 {
				names = append(names, fmt.Sprintf("and %d more", n-10))
				break
			}
			names = append(names, "`"+mdCode(DisplayPath(p))+"`")
		}
		out = append(out, "This pull request changes repository instruction files ("+strings.Join(names, ", ")+
			"); the review applied the base branch's versions, never the changed ones.")
	}
	return out
}
