package review

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// Intake check names.
const (
	CheckDiffSize   = "diff-size"
	CheckSpec       = "spec"
	CheckLane       = "lane"
	CheckOpenPRs    = "open-prs"
	CheckDisclosure = "disclosure"
)

// disclosureRE is a ticked checkbox ("- [x]" or "[x]") on a line that says who wrote the change.
var disclosureRE = regexp.MustCompile(`(?im)^[ \t]*(-[ \t]*)?\[[xX]\].*(human|agent|\bAI\b|assist)`)

// runIntake runs the spend gate. Checks that need forge metadata (labels, the body checkbox,
// the author's open pull requests) are skipped for a local subject. The lane and disclosure
// checks are ASDD's intake floors: they apply to repositories that adopted an .asdd.yml, not to
// one that merely installed lensgate and runs on the defaults.
func runIntake(s *Subject, cfg *config.Repo, changed []runtime.Changed, overBudget []Gap, diffLines int) Intake {
	var msgs []IntakeMessage
	add := func(check string, passed bool, msg string) {
		msgs = append(msgs, IntakeMessage{Check: check, Passed: passed, Message: msg})
	}
	if len(overBudget) > 0 {
		msgs = append(msgs, IntakeMessage{
			Check: CheckDiffSize, Passed: true,
			Message: fmt.Sprintf("This change has %d diff lines, over the review budget of %d "+
				"(review.max_diff_lines): %d file(s) were not sent to the model reviewer and are listed as "+
				"coverage gaps. Split the change, or ask a maintainer to raise the budget.",
				diffLines, cfg.Review.MaxDiffLines, len(overBudget)),
		})
	}
	if cfg.RequireSpec && !hasLabel(s.Labels, "chore") {
		if builtin.HasSpec(cfg.SpecPaths, changed, s.Body) {
			add(CheckSpec, true, "")
		} else {
			add(CheckSpec, false, "This repository is spec-driven (require_spec): add a spec under "+
				strings.Join(cfg.SpecPaths, ", ")+" in this change, or name an existing spec path in the "+
				"description (for example a line \"Spec: docs/specs/my-change.md\").")
		}
	}
	adopted := cfg.Source != ""
	if !s.Local && s.IsPullRequest() && adopted {
		lanes := cfg.Lanes
		if len(lanes) == 0 {
			lanes = config.DefaultLanes()
		}
		n := 0
		for _, l := range s.Labels {
			if hasLabel(lanes, l) {
				n++
			}
		}
		if n == 1 {
			add(CheckLane, true, "")
		} else {
			add(CheckLane, false, fmt.Sprintf("Add exactly one lane label: one of %s (found %d).",
				strings.Join(lanes, ", "), n))
		}
		if disclosureRE.MatchString(s.Body) {
			add(CheckDisclosure, true, "")
		} else {
			add(CheckDisclosure, false, "Say who wrote this change: tick the \"human\" or the "+
				"\"AI-assisted\" box of the pull request template in the description.")
		}
	}
	if !s.Local && cfg.MaxOpenPRsPerAuthor > 0 && s.OpenPRsByAuthor > cfg.MaxOpenPRsPerAuthor {
		add(CheckOpenPRs, false, fmt.Sprintf("You have %d open pull requests here; the limit is %d. "+
			"Land or close some before opening more.", s.OpenPRsByAuthor, cfg.MaxOpenPRsPerAuthor))
	}
	in := Intake{Passed: true, Messages: msgs}
	for _, m := range msgs {
		if !m.Passed {
			in.Passed = false
		}
	}
	return in
}

func hasLabel(labels []string, want string) bool {
	for _, l := range labels {
		if strings.EqualFold(l, want) {
			return true
		}
	}
	return false
}

// IntakeOf runs the intake checks alone, as the review of subj under cfg would: the App asks
// them before it asks another review bot, which spends that bot's quota.
func IntakeOf(subj *Subject, cfg *config.Repo) Intake {
	diffBytes := subj.Diff
	if len(diffBytes) == 0 {
		diffBytes = patchesToDiff(subj.Files)
	}
	files := diff.Parse(diffBytes)
	total := 0
	for i := range files {
		total += files[i].Lines
	}
	return runIntake(subj, cfg, changedFiles(subj.Files, files), nil, total)
}

// Problems names the checks that did not pass ("" when intake passed).
func (in Intake) Problems() string { return intakeProblems(in) }
