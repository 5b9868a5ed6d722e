package review

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
)

// The gate waits for a code owner's approval of each changed protected file when the policy
// requires it, says what is needed of whom, and never turns a failed gate into a pending one.
func TestOwnerApprovalGate(t *testing.T) {
	cfg := config.DefaultRepo()
	cfg.ProtectedPaths = []string{".github/**"}
	cfg.ProtectedPathsRequire = config.RequireCodeOwnerApproval
	files := []File{{Path: ".github/workflows/ci.yml"}, {Path: "README.md"}}
	ci := ApprovalFile{Path: ".github/workflows/ci.yml", Owners: []string{"@octo/infra"}}
	approved := ci
	approved.ApprovedBy = "alice"
	passed := Gate{State: OutcomePassed, Reason: "the required lenses passed"}
	cases := []struct {
		name   string
		cfg    *config.Repo
		oa     *OwnerApproval
		gate   Gate
		state  Outcome
		reason string
	}{
		{"missing", cfg, &OwnerApproval{Source: ".github/CODEOWNERS", Files: []ApprovalFile{ci}}, passed, OutcomePending,
			"needs an approving review from a code owner of .github/workflows/ci.yml: @octo/infra"},
		{"approved", cfg, &OwnerApproval{Source: ".github/CODEOWNERS", Files: []ApprovalFile{approved}}, passed, OutcomePassed, "the required lenses passed"},
		{"failed stays failed", cfg, &OwnerApproval{Source: "CODEOWNERS", Files: []ApprovalFile{ci}},
			Gate{State: OutcomeFailed, Reason: "required lens(es) failed: security"}, OutcomeFailed,
			"required lens(es) failed: security\nneeds an approving review from a code owner of .github/workflows/ci.yml: @octo/infra"},
		{"no CODEOWNERS", cfg, &OwnerApproval{Files: []ApprovalFile{{Path: ".github/workflows/ci.yml"}}}, passed, OutcomePending,
			"needs an approving review from a code owner of .github/workflows/ci.yml, but the base branch has no CODEOWNERS file"},
		{"no owner", cfg, &OwnerApproval{Source: "docs/CODEOWNERS", Files: []ApprovalFile{{Path: ".github/workflows/ci.yml"}}}, passed, OutcomePending,
			"needs an approving review from a code owner of .github/workflows/ci.yml, but docs/CODEOWNERS on the base branch names none"},
		{"unreadable", cfg, &OwnerApproval{Cause: "list the pull request's reviews: 502"}, passed, OutcomePending,
			"code-owner approval could not be checked: list the pull request's reviews: 502"},
		{"no forge", cfg, nil, passed, OutcomePending,
			"code-owner approval of .github/workflows/ci.yml cannot be checked without the forge's reviews"},
		{"not required", config.DefaultRepo(), nil, passed, OutcomePassed, "the required lenses passed"},
		{"author's own file", cfg, &OwnerApproval{Source: "CODEOWNERS", Files: []ApprovalFile{{Path: ".github/workflows/ci.yml", Owners: []string{"@Mona"}}}},
			passed, OutcomePending,
			"needs an approving review from a code owner of .github/workflows/ci.yml other than the pull request's author, but CODEOWNERS on the base branch names no other"},
		{"e-mail owners only", cfg, &OwnerApproval{Source: "CODEOWNERS", Files: []ApprovalFile{{Path: ".github/workflows/ci.yml", Owners: []string{"ops@example.com"}}}},
			passed, OutcomePending, "needs an approving review from a code owner of .github/workflows/ci.yml, but CODEOWNERS on the base branch " +
				"names its owners by e-mail only (ops@example.com), which cannot be matched to reviewers: name users or teams"},
		{"author not named", cfg, &OwnerApproval{Source: "CODEOWNERS", Files: []ApprovalFile{{Path: ".github/workflows/ci.yml", Owners: []string{"@mona", "@octo/infra"}}}},
			passed, OutcomePending, "needs an approving review from a code owner of .github/workflows/ci.yml: @octo/infra"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.gate
			ownerApprovalGate(&g, c.cfg, &Subject{Files: files, OwnerApproval: c.oa, Author: "mona"})
			if g.State != c.state || g.Reason != c.reason {
				t.Fatalf("gate %s %q, want %s %q", g.State, g.Reason, c.state, c.reason)
			}
			if blocked := slices.Contains(g.BlockingPending, OwnerApprovalName); blocked != (c.reason != c.gate.Reason) {
				t.Fatalf("blocking pending %v", g.BlockingPending)
			}
		})
	}
}

// A long list of unapproved files is bounded in the gate's reason.
func TestOwnerApprovalGateBounded(t *testing.T) {
	cfg := config.DefaultRepo()
	cfg.ProtectedPaths = []string{"**"}
	cfg.ProtectedPathsRequire = config.RequireCodeOwnerApproval
	oa := &OwnerApproval{Source: "CODEOWNERS"}
	var files []File
	for i := range 30 {
		p := fmt.Sprintf("f%02d.go", i)
		files = append(files, File{Path: p})
		oa.Files = append(oa.Files, ApprovalFile{Path: p, Owners: []string{"@o"}})
	}
	g := Gate{State: OutcomePassed}
	ownerApprovalGate(&g, cfg, &Subject{Files: files, OwnerApproval: oa})
	lines := strings.Split(g.Reason, "\n")
	if len(lines) != maxApprovalLines+1 || lines[len(lines)-1] != "and 10 more protected file(s)" {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}
