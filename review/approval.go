package review

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/pathglob"
)

// OwnerApprovalName is the gate's name for the code-owner approval requirement in the lists of
// blocking items (Gate.BlockingPending).
const OwnerApprovalName = "code-owner approval"

// OwnerApproval is what the forge shows of code-owner approval of the changed protected files
// (protected_paths_require: code_owner_approval). The caller reads CODEOWNERS from the base
// branch and the reviews of the head; the pipeline only judges the result.
type OwnerApproval struct {
	// Source is the CODEOWNERS file read ("" when none exists on the base branch).
	Source string
	// Files are the changed protected files, in the order of ProtectedChanged.
	Files []ApprovalFile
	// Cause, when set, says why approvals could not be read: the requirement is then unmet.
	Cause string
}

// ApprovalFile is one changed protected file, its code owners and the owner who approved it.
type ApprovalFile struct {
	Path string
	// Owners are the owners CODEOWNERS names for the file ("@login", "@org/team", e-mail), in
	// its order; empty when no line owns the file.
	Owners []string
	// ApprovedBy is the login of a code owner whose approval of the head counts ("" when none).
	ApprovedBy string
}

// ProtectedChanged lists the changed files (by head path, or base path for a rename away) that
// match protected_paths.
func ProtectedChanged(cfg *config.Repo, files []File) []string {
	if cfg == nil || len(cfg.ProtectedPaths) == 0 {
		return nil
	}
	set := pathglob.Compile(cfg.ProtectedPaths)
	var out []string
	for _, f := range files {
		switch {
		case set.Match(f.Path):
			out = append(out, f.Path)
		case f.PreviousPath != "" && set.Match(f.PreviousPath):
			out = append(out, f.PreviousPath)
		}
	}
	return out
}

// maxApprovalLines bounds the files the gate's reason names one by one.
const maxApprovalLines = 20

// ownerApprovalGate applies protected_paths_require to a gate: when the policy requires a code
// owner's approval and a changed protected file lacks one, a passed gate becomes pending and the
// reason says what is needed of whom. A failed gate stays failed; the need is added to its reason.
func ownerApprovalGate(g *Gate, cfg *config.Repo, subj *Subject) {
	if !cfg.CodeOwnerApproval() {
		return
	}
	protected := ProtectedChanged(cfg, subj.Files)
	if len(protected) == 0 {
		return
	}
	var needs []string
	oa := subj.OwnerApproval
	switch {
	case oa == nil:
		needs = []string{"code-owner approval of " + strings.Join(protected, ", ") + " cannot be checked without the forge's reviews"}
	case oa.Cause != "":
		needs = []string{"code-owner approval could not be checked: " + oa.Cause}
	default:
		needs = missingApprovals(oa, subj.Author)
	}
	if len(needs) == 0 {
		return
	}
	if len(needs) > maxApprovalLines {
		needs = append(needs[:maxApprovalLines], fmt.Sprintf("and %d more protected file(s)", len(needs)-maxApprovalLines))
	}
	g.BlockingPending = append(g.BlockingPending, OwnerApprovalName)
	text := strings.Join(needs, "\n")
	if g.State == OutcomeFailed {
		g.Reason += "\n" + text
		return
	}
	if g.State == OutcomePassed {
		g.State, g.Reason = OutcomePending, text
		return
	}
	g.Reason += "\n" + text
}

// missingApprovals says, per protected file without an owner's approval, who must approve. The
// pull request's author is not named: their own approval never counts.
func missingApprovals(oa *OwnerApproval, author string) []string {
	var out []string
	for _, f := range oa.Files {
		owners := slices.DeleteFunc(slices.Clone(f.Owners), func(o string) bool { return author != "" && strings.EqualFold(o, "@"+author) })
		need := "needs an approving review from a code owner of " + f.Path
		switch {
		case f.ApprovedBy != "":
		case oa.Source == "":
			out = append(out, need+", but the base branch has no CODEOWNERS file")
		case len(f.Owners) == 0:
			out = append(out, need+", but "+oa.Source+" on the base branch names none")
		case len(owners) == 0:
			out = append(out, need+" other than the pull request's author, but "+oa.Source+" on the base branch names no other")
		case !slices.ContainsFunc(owners, func(o string) bool { return strings.HasPrefix(o, "@") }):
			out = append(out, need+", but "+oa.Source+" on the base branch names its owners by e-mail only ("+
				strings.Join(owners, " ")+"), which cannot be matched to reviewers: name users or teams")
		default:
			out = append(out, need+": "+strings.Join(owners, " "))
		}
	}
	return out
}
