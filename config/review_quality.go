package config

import "fmt"

// Verification modes of review.verify: what a model lens's finding must pass before it is
// published.
const (
	// VerifyOff publishes model findings as the model gave them.
	VerifyOff = "off"
	// VerifyDeterministic checks each finding against the diff: its path and line are on the
	// new side, a code snippet it quotes is in the file, and no other lens reported it.
	VerifyDeterministic = "deterministic"
	// VerifyModel adds a second, independent model call that must confirm each finding that
	// passed the deterministic checks against the code it points at.
	VerifyModel = "model"
)

// Defaults of the review quality settings.
const (
	DefaultVerify            = VerifyDeterministic
	DefaultMinInlineSeverity = "warn"
	DefaultMaxInlineComments = 10
	// MaxInlineComments is the most review.max_inline_comments allows: GitHub's secondary rate
	// limits make a larger review unreliable, and the publisher never posts more than this per head.
	MaxInlineComments = 30
)

// ReviewQuality is what keeps a review's comments few and true (the review section's
// verify, min_inline_severity and max_inline_comments keys).
type ReviewQuality struct {
	// Verify is off, deterministic or model.
	Verify string
	// MinInlineSeverity is the least severe finding placed inline, in the model answer's words
	// (block, warn) or on lensgate's scale (critical, high, medium, low). Notes (info) are
	// never placed inline; a finding below the floor is listed in the advisory comment.
	MinInlineSeverity string
	// MaxInlineComments bounds the inline comments of one review, most severe first; the rest
	// are listed, collapsed, in the advisory comment.
	MaxInlineComments int
}

// minInlineSeverities maps every accepted min_inline_severity to its severity rank
// (disclosure/severity: critical 4 … low 1).
var minInlineSeverities = map[string]int{
	"block": 3, "warn": 2,
	"critical": 4, "high": 3, "medium": 2, "low": 1,
}

// MinInlineRank is the severity rank (critical 4 … low 1) of MinInlineSeverity; the default's
// rank when it is unset.
func (q ReviewQuality) MinInlineRank() int {
	if r, ok := minInlineSeverities[q.MinInlineSeverity]; ok {
		return r
	}
	return minInlineSeverities[DefaultMinInlineSeverity]
}

// InlineCap is MaxInlineComments within 1..MaxInlineComments (the default when unset).
func (q ReviewQuality) InlineCap() int {
	switch {
	case q.MaxInlineComments <= 0:
		return DefaultMaxInlineComments
	case q.MaxInlineComments > MaxInlineComments:
		return MaxInlineComments
	}
	return q.MaxInlineComments
}

// VerifyMode is Verify, the default when unset.
func (q ReviewQuality) VerifyMode() string {
	if q.Verify == "" {
		return DefaultVerify
	}
	return q.Verify
}

// defaultReviewQuality is every default of ReviewQuality.
func defaultReviewQuality() ReviewQuality {
	return ReviewQuality{Verify: DefaultVerify, MinInlineSeverity: DefaultMinInlineSeverity, MaxInlineComments: DefaultMaxInlineComments}
}

// reviewQualityFields are the review section's quality keys.
func reviewQualityFields() []*field {
	sev := make([]string, 0, len(minInlineSeverities))
	for _, s := range []string{"block", "warn", "critical", "high", "medium", "low"} {
		if _, ok := minInlineSeverities[s]; !ok {
			panic(fmt.Sprintf("config: severity %q has no rank", s))
		}
		sev = append(sev, s)
	}
	return []*field{
		strField("verify", false, []string{VerifyOff, VerifyDeterministic, VerifyModel}, func(r *Repo, v string) { r.Review.Quality.Verify = v }),
		strField("min_inline_severity", false, sev, func(r *Repo, v string) { r.Review.Quality.MinInlineSeverity = v }),
		intField("max_inline_comments", false, 1, MaxInlineComments, func(r *Repo, v int) { r.Review.Quality.MaxInlineComments = v }),
	}
}
