package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/review"
)

type planned struct {
	c    review.InlineComment
	fp   string
	lens string
	// start is the first line of a multi-line comment (a suggestion's range), 0 otherwise.
	start int
	// extra is rendered after the cleaned body: the suggestion block or its plain-text form.
	extra string
}

// inlinePlan is what one run places inline and what it moves to the summaries.
type inlinePlan struct {
	post  []planned
	moved []string // rendered list items
	// held are the comments kept out of the review by review.min_inline_severity and
	// review.max_inline_comments (rendered list items): the advisory comment lists them collapsed.
	held    []string
	skipped int // already posted by an earlier run
	lenses  []string
	// placed holds the path:line of every comment that sits inline: posted by this run or
	// by an earlier one.
	placed map[string]bool
}

func placeKey(path string, line int) string { return fmt.Sprintf("%s:%d", path, line) }

// fingerprint is the comment's identity across runs: the pipeline's fingerprint, or one
// derived from what the comment says and where, but not from its line number.
func fingerprint(c review.InlineComment) string {
	if c.Fingerprint != "" {
		return oneLine(c.Fingerprint, 128)
	}
	sum := sha256.Sum256([]byte(c.Path + "\x00" + c.Side + "\x00" + c.Body))
	return hex.EncodeToString(sum[:12])
}

// inlineFooter names the lens under an inline comment. It is the publisher's own markup, after
// the cleaned body, so its HTML is not escaped with the body's.
func inlineFooter(lens string) string {
	if lens == "" {
		return "<sub>lensgate</sub>\n\n"
	}
	return "<sub>lensgate " + oneLine(lens, 64) + " lens</sub>\n\n"
}

func movedLine(c review.InlineComment, why string) string {
	return fmt.Sprintf("- %s %s (%s)\n", code(fmt.Sprintf("%s:%d", c.Path, c.Line), 210), oneLine(c.Body, maxFindingDetail), why)
}

// inlineIndex is what the App's review comments say: the first inline comment of each
// fingerprint, and the fingerprints whose thread already has the App's closing reply.
type inlineIndex struct {
	top    map[string]int64
	closed map[string]bool
}

// postedFingerprints lists the fingerprints of the App's inline comments on the pull request
// and counts those created on the reviewed head. It indexes them in r.inline.
func (r *run) postedFingerprints(ctx context.Context) (map[string]bool, int, error) {
	seen := map[string]bool{}
	onHead := 0
	idx := inlineIndex{top: map[string]int64{}, closed: map[string]bool{}}
	defer func() { r.inline = idx }()
	err := r.p.call(ctx, "list review comments", func(ctx context.Context) (*github.Response, error) {
		clear(seen)
		clear(idx.top)
		clear(idx.closed)
		onHead = 0
		opts := &github.PullRequestListCommentsOptions{ListOptions: github.ListOptions{Page: 1, PerPage: 100}} // the worker's URL, so a repeat is a 304
		for page := 0; page < maxListPages; page++ {
			cs, resp, err := r.gh.PullRequests.ListComments(ctx, r.info.owner, r.info.repo, r.info.number, opts)
			if err != nil {
				return resp, err
			}
			for _, c := range cs {
				if c.GetUser().GetLogin() != r.info.botLogin {
					continue
				}
				if fp := pull.HiddenValue(c.GetBody(), pull.MarkerClosed); fp != "" {
					idx.closed[fp] = true
				}
				if fp := pull.HiddenValue(c.GetBody(), markerFP); fp != "" {
					if old, ok := idx.top[fp]; !ok || c.GetID() < old {
						idx.top[fp] = c.GetID()
					}
					seen[fp] = true
					commit := c.GetOriginalCommitID()
					if commit == "" {
						commit = c.GetCommitID()
					}
					if commit == r.info.headSHA {
						onHead++
					}
				}
			}
			if resp.NextPage == 0 {
				return resp, nil
			}
			opts.Page = resp.NextPage
		}
		return nil, nil
	}, nil)
	return seen, onHead, err
}

// planInline decides which inline comments to post: not already posted, from a lens that
// publishes inline, on a line of the diff, at most 30 per head. The rest move to the summaries.
func (r *run) planInline(ctx context.Context, s *review.Subject, d *review.Decision, counts *pull.PullCounts) (inlinePlan, error) {
	plan := inlinePlan{placed: map[string]bool{}}
	closed := false
	for _, f := range d.Findings {
		closed = closed || !f.Open()
	}
	if len(d.Inline) == 0 && !closed {
		return plan, nil
	}
	posted, onHead, err := map[string]bool{}, 0, error(nil)
	if counts == nil || counts.ReviewComments > 0 {
		// Without a review comment on the pull request nothing was posted before.
		posted, onHead, err = r.postedFingerprints(ctx)
	}
	if err != nil {
		// Without the list a re-run could repeat comments: place nothing inline this time.
		for _, c := range d.Inline {
			plan.moved = append(plan.moved, movedLine(c, "inline comments unavailable"))
		}
		return plan, err
	}
	lines := linesFromSubject(s)
	thisRun := map[string]bool{}
	lensSet := map[string]bool{}
	floor, limit := r.info.quality.MinInlineRank(), r.info.quality.InlineCap()
	for _, c := range bySeverity(d.Inline) {
		if c.Side == "" {
			c.Side = "RIGHT"
		}
		fp := fingerprint(c)
		if posted[fp] || thisRun[fp] {
			plan.skipped++
			if posted[fp] {
				plan.placed[placeKey(c.Path, c.Line)] = true
			}
			continue
		}
		thisRun[fp] = true
		lens := c.Lens
		if lens == "" {
			lens = r.lensByFinding(c.Path, c.Line)
		}
		if mode, ok := r.info.publication[lens]; lens != "" && ok && mode != config.PublicationInline && mode != config.PublicationReview {
			continue // that lens publishes elsewhere; its findings are in the comment
		}
		sug := renderSuggestion(lines, c)
		start := 0
		if sug.applicable {
			c.Line = sug.end
			if sug.start < sug.end {
				start = sug.start
			}
		}
		switch {
		case c.Severity.Rank() >= 0 && c.Severity.Rank() < floor:
			// A comment without a severity (a reviewer that gives none) is not held by the floor.
			plan.held = append(plan.held, movedLine(c, "below review.min_inline_severity"))
		case !lines.has(c.Path, c.Line, c.Side):
			plan.moved = append(plan.moved, movedLine(c, "line not in the diff"))
		case onHead+len(plan.post) >= limit && limit < maxInlinePerRun:
			// Like the hard cap below, it holds per head: a re-run posts no more.
			plan.held = append(plan.held, movedLine(c, fmt.Sprintf("over review.max_inline_comments (%d)", limit)))
		case onHead+len(plan.post) >= maxInlinePerRun:
			// The cap holds per head, not per run: a re-run of the same head does not post the
			// next 30 of the overflow.
			plan.moved = append(plan.moved, movedLine(c, "over 30 inline comments"))
		default:
			plan.post = append(plan.post, planned{c: c, fp: fp, lens: lens, start: start, extra: sug.text})
			if lens != "" {
				lensSet[lens] = true
			}
		}
	}
	for l := range lensSet {
		plan.lenses = append(plan.lenses, l)
	}
	sort.Strings(plan.lenses)
	return plan, nil
}

func (plan inlinePlan) runKey(head string) string {
	fps := make([]string, 0, len(plan.post))
	for _, p := range plan.post {
		fps = append(fps, p.fp)
	}
	sort.Strings(fps)
	sum := sha256.Sum256([]byte(head + "\x00" + strings.Join(fps, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// postReview creates the run's one review. A 422 (GitHub would not place a comment) re-reads
// the files, drops what no longer fits, and tries again; whatever cannot be placed moves to
// the summaries. A create whose answer was lost is found by its run key, not repeated.
func (r *run) postReview(ctx context.Context, d *review.Decision, plan *inlinePlan) {
	event := pdp.EventComment
	if r.p.allowRequestChanges && d.Gate.State == review.OutcomeFailed {
		event = pdp.EventRequestChanges
	}
	for round := 0; round < 3 && len(plan.post) > 0; round++ {
		key := plan.runKey(r.info.headSHA)
		var b strings.Builder
		fmt.Fprintf(&b, "lensgate: %d comment(s) on changed lines. The advisory comment has the full picture; lensgate never approves or merges.\n\n", len(plan.post))
		for _, l := range d.Lenses {
			if l.Publication == config.PublicationReview {
				fmt.Fprintf(&b, "- **%s**: %s %s\n", oneLine(l.Name, 64), outcomeIcon(l.Outcome), oneLine(l.Summary, 300))
			}
		}
		b.WriteString("\n" + markerReview + key + markerEnd)
		req := &github.PullRequestReviewRequest{
			CommitID: github.String(r.info.headSHA), Event: github.String(event), Body: github.String(b.String()),
		}
		for _, p := range plan.post {
			dc := &github.DraftReviewComment{
				Path: github.String(p.c.Path), Line: github.Int(p.c.Line), Side: github.String(p.c.Side),
				Body: github.String(truncate(clean(p.c.Body), 50000) + truncate(p.extra, 10000) + "\n\n" + inlineFooter(p.lens) + markerFP + p.fp + markerEnd),
			}
			if p.start > 0 {
				dc.StartLine, dc.StartSide = github.Int(p.start), github.String(p.c.Side)
			}
			req.Comments = append(req.Comments, dc)
		}
		if !r.authorize(ctx, pdp.Action{Kind: pdp.KindReviewCreate, Target: "review", ReviewEvent: event, Lenses: plan.lenses}) {
			for _, p := range plan.post {
				plan.moved = append(plan.moved, movedLine(p.c, "review not allowed"))
			}
			plan.post = nil
			return
		}
		err := r.content(ctx, "create review", func(ctx context.Context) (*github.Response, error) {
			_, resp, err := r.gh.PullRequests.CreateReview(ctx, r.info.owner, r.info.repo, r.info.number, req)
			return resp, err
		}, func(ctx context.Context) (bool, error) { return r.reviewExists(ctx, key) })
		var ce *CallError
		if err == nil {
			for _, p := range plan.post {
				plan.placed[placeKey(p.c.Path, p.c.Line)] = true
			}
			return
		}
		if !errors.As(err, &ce) || ce.Status != http.StatusUnprocessableEntity {
			r.fail(err)
			for _, p := range plan.post {
				plan.moved = append(plan.moved, movedLine(p.c, "review could not be posted"))
			}
			plan.post = nil
			return
		}
		r.notes = append(r.notes, "GitHub refused an inline comment (422); re-checked the diff and retried")
		fresh, ferr := r.filePatches(ctx)
		if ferr != nil {
			r.fail(ferr)
			fresh = nil
		}
		var keep []planned
		for _, p := range plan.post {
			if fresh != nil && fresh.has(p.c.Path, p.c.Line, p.c.Side) {
				keep = append(keep, p)
				continue
			}
			plan.moved = append(plan.moved, movedLine(p.c, "GitHub could not place it on the diff"))
		}
		if len(keep) == len(plan.post) {
			// Nothing identifiable: GitHub does not say which comment it refused. Halve the set so
			// the placeable part still gets through, the rest goes to the summary.
			half := len(keep) / 2
			for _, p := range keep[half:] {
				plan.moved = append(plan.moved, movedLine(p.c, "GitHub refused the review"))
			}
			keep = keep[:half]
		}
		plan.post = keep
	}
	// Rounds exhausted: what GitHub still refused is listed, not lost.
	for _, p := range plan.post {
		plan.moved = append(plan.moved, movedLine(p.c, "GitHub refused the review"))
	}
	plan.post = nil
}

// reviewExists finds a review of this App carrying the run key.
func (r *run) reviewExists(ctx context.Context, key string) (bool, error) {
	found := false
	err := r.p.call(ctx, "list reviews", func(ctx context.Context) (*github.Response, error) {
		opts := &github.ListOptions{PerPage: 100}
		for page := 0; page < maxListPages; page++ {
			rs, resp, err := r.gh.PullRequests.ListReviews(ctx, r.info.owner, r.info.repo, r.info.number, opts)
			if err != nil {
				return resp, err
			}
			for _, rv := range rs {
				if rv.GetUser().GetLogin() == r.info.botLogin && strings.Contains(rv.GetBody(), markerReview+key+markerEnd) {
					found = true
				}
			}
			if resp.NextPage == 0 {
				return resp, nil
			}
			opts.Page = resp.NextPage
		}
		return nil, nil
	}, nil)
	return found, err
}

// filePatches reads the pull request's files as GitHub has them now.
func (r *run) filePatches(ctx context.Context) (diffLines, error) {
	patches := map[string]string{}
	err := r.p.call(ctx, "list files", func(ctx context.Context) (*github.Response, error) {
		clear(patches)
		opts := &github.ListOptions{PerPage: 100}
		for page := 0; page < 30; page++ {
			fs, resp, err := r.gh.PullRequests.ListFiles(ctx, r.info.owner, r.info.repo, r.info.number, opts)
			if err != nil {
				return resp, err
			}
			for _, f := range fs {
				patches[f.GetFilename()] = f.GetPatch()
			}
			if resp.NextPage == 0 {
				return resp, nil
			}
			opts.Page = resp.NextPage
		}
		return nil, nil
	}, nil)
	if err != nil {
		return nil, err
	}
	return linesFromFiles(patches), nil
}

// reactions adds one reaction per lens whose publication is reaction.
func (r *run) reactions(ctx context.Context, d *review.Decision) {
	for _, l := range d.Lenses {
		if l.Publication != config.PublicationReaction {
			continue
		}
		content := "eyes"
		switch l.Outcome {
		case review.OutcomePassed:
			content = "+1"
		case review.OutcomeFailed:
			content = "confused"
		}
		if !r.authorize(ctx, pdp.Action{Kind: pdp.KindReactionAdd, Target: "reaction:" + content, Reaction: content, Lenses: []string{l.Name}}) {
			continue
		}
		r.fail(r.content(ctx, "add reaction", func(ctx context.Context) (*github.Response, error) {
			_, resp, err := r.gh.Reactions.CreateIssueReaction(ctx, r.info.owner, r.info.repo, r.info.number, content)
			return resp, err
		}, nil))
	}
}
