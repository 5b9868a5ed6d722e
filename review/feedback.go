package review

import (
	"context"
	"fmt"
	"time"
)

// FeedbackKind is what people said about a published finding.
type FeedbackKind string

// Kinds of feedback. Every kind but a thumbs-up suppresses later findings like the one it is
// about.
const (
	// FeedbackDismissed: a person with write access dismissed the finding, with a reason.
	FeedbackDismissed FeedbackKind = "dismissed"
	// FeedbackThumbsDown: a 👎 reaction on the finding's inline comment.
	FeedbackThumbsDown FeedbackKind = "thumbs_down"
	// FeedbackThumbsUp: a 👍 reaction on the finding's inline comment.
	FeedbackThumbsUp FeedbackKind = "thumbs_up"
	// FeedbackResolved: the inline comment's thread was resolved while the finding stayed open.
	FeedbackResolved FeedbackKind = "resolved_unfixed"
)

// Suppresses reports whether this kind of feedback keeps later findings like it unpublished.
func (k FeedbackKind) Suppresses() bool {
	return k == FeedbackDismissed || k == FeedbackThumbsDown || k == FeedbackResolved
}

// Valid reports whether k is a known kind.
func (k FeedbackKind) Valid() bool { return k.Suppresses() || k == FeedbackThumbsUp }

// Bounds of the feedback a repository keeps.
const (
	// MaxFeedbackPerRepo bounds the feedback entries kept per repository; the oldest go first.
	MaxFeedbackPerRepo = 500
	// FeedbackKept is how long an entry suppresses: feedback older than this is pruned.
	FeedbackKept = 180 * 24 * time.Hour
	// maxFeedbackText bounds the finding text an entry keeps to compare later findings with.
	maxFeedbackText = 600
	// nearIdentical is the least word overlap (similarity) at which a later finding's text
	// counts as the text people rejected.
	nearIdentical = 0.8
)

// Feedback is one piece of feedback on one finding of a repository: what the finding was and
// what was said about it.
type Feedback struct {
	Repo      string `json:"repo"` // owner/name
	Number    int    `json:"number"`
	FindingID string `json:"findingId"`
	Lens      string `json:"lens"`
	Rule      string `json:"rule,omitempty"`
	Path      string `json:"path,omitempty"`
	// Text is the finding's title and message, bounded.
	Text   string       `json:"text"`
	Kind   FeedbackKind `json:"kind"`
	Reason string       `json:"reason,omitempty"`
	By     string       `json:"by,omitempty"`
	At     time.Time    `json:"at"`
}

// FeedbackOn is the feedback entry of kind k about finding f of pull request number of repo.
func FeedbackOn(repo string, number int, f Finding, k FeedbackKind, reason, by string, at time.Time) Feedback {
	return Feedback{Repo: repo, Number: number, FindingID: f.ID, Lens: f.Lens, Rule: f.Rule, Path: f.Path,
		Text: boundText(f.Title+" "+f.Body, maxFeedbackText), Kind: k, Reason: boundText(reason, maxReasonBytes), By: by, At: at}
}

// Suppression is a finding that was not published because earlier feedback on the repository
// rejected one like it.
type Suppression struct {
	Finding  Finding  `json:"finding"`
	Feedback Feedback `json:"feedback"`
	Reason   string   `json:"reason"`
}

// FeedbackStore keeps each repository's feedback on findings and the events the quality
// figures count. Implementations bound and prune what they keep.
type FeedbackStore interface {
	// RecordFeedback keeps entries; the same repository, pull request, finding, kind and
	// person are kept once.
	RecordFeedback(ctx context.Context, fb []Feedback) error
	// ListFeedback returns a repository's entries that may suppress, newest first, at most limit.
	ListFeedback(ctx context.Context, repo string, limit int) ([]Feedback, error)
	// ClearFeedback forgets a repository's entries and reports how many there were.
	ClearFeedback(ctx context.Context, repo string) (int, error)
	// RecordQuality keeps events; the same repository, pull request, finding and kind are
	// counted once.
	RecordQuality(ctx context.Context, ev []QualityEvent) error
	// Quality counts the events since a time, per repository and lens; repo "" counts every
	// repository.
	Quality(ctx context.Context, repo string, since time.Time) ([]QualityCounts, error)
}

// matchFeedback finds the feedback that suppresses f, found on pull request number of the
// same repository: feedback on the same finding elsewhere, on a finding of the same lens and
// rule on the same path, or on one of the same lens with near-identical text. Feedback on this
// very finding of this pull request is not a match: the pull request's own record of it
// (dismissed, already posted) decides.
func matchFeedback(fbs []Feedback, number int, f Finding) (Feedback, string, bool) {
	text := f.Title + " " + f.Body
	for _, fb := range fbs {
		if !fb.Kind.Suppresses() || fb.Lens != f.Lens || fb.Number == number && fb.FindingID == f.ID {
			continue
		}
		switch {
		case fb.FindingID == f.ID:
			return fb, fmt.Sprintf("the same finding was %s on #%d", fb.Kind.verb(), fb.Number), true
		case fb.Rule != "" && fb.Rule == f.Rule && f.Path != "" && fb.Path == f.Path:
			return fb, fmt.Sprintf("a finding of rule %s on this file was %s on #%d", fb.Rule, fb.Kind.verb(), fb.Number), true
		case similarity(fb.Text, text) >= nearIdentical:
			return fb, fmt.Sprintf("a near-identical finding was %s on #%d", fb.Kind.verb(), fb.Number), true
		}
	}
	return Feedback{}, "", false
}

func (k FeedbackKind) verb() string {
	switch k {
	case FeedbackDismissed:
		return "dismissed"
	case FeedbackThumbsDown:
		return "voted down"
	case FeedbackResolved:
		return "resolved without a fix"
	case FeedbackThumbsUp:
		return "voted up"
	}
	return string(k)
}

// suppress removes from results the findings earlier feedback on the repository rejected. A
// blocking finding is never suppressed: feedback lowers noise, it does not change a gate. A
// store that cannot be read suppresses nothing.
func (r *reviewRun) suppress(ctx context.Context, results []LensResult, v *Verification) {
	store := r.p.opts.Feedback
	if store == nil || r.subj.Local || r.subj.Owner == "" {
		return
	}
	repo := r.subj.Owner + "/" + r.subj.Repo
	fbs, err := store.ListFeedback(ctx, repo, MaxFeedbackPerRepo)
	if err != nil {
		r.log.Warn().Err(err).Msg("earlier feedback unreadable; nothing suppressed")
		return
	}
	if len(fbs) == 0 {
		return
	}
	for i := range results {
		lr := &results[i]
		if lr.Outcome == OutcomePending {
			continue
		}
		keep := lr.Findings[:0:0]
		for _, f := range lr.Findings {
			if !f.Severity.Blocks() {
				if fb, why, ok := matchFeedback(fbs, r.subj.Number, f); ok {
					v.Suppressed = append(v.Suppressed, Suppression{Finding: f, Feedback: fb, Reason: why})
					continue
				}
			}
			keep = append(keep, f)
		}
		lr.Findings = keep
	}
}
