package pull

import (
	"slices"
	"testing"

	"github.com/google/go-github/v62/github"
)

func rv(login, state, commit string) *github.PullRequestReview {
	return &github.PullRequestReview{User: &github.User{Login: github.String(login)}, State: github.String(state), CommitID: github.String(commit)}
}

// Each reviewer's latest state counts, as GitHub counts it; only approvals of the head, by
// someone other than the author and not a bot, stand.
func TestApprovers(t *testing.T) {
	head, old := "h", "o"
	reviews := []*github.PullRequestReview{
		rv("alice", "APPROVED", head),
		rv("alice", "COMMENTED", head), // a comment keeps the approval
		rv("bob", "APPROVED", head),
		rv("bob", "CHANGES_REQUESTED", head), // cancels bob's approval
		rv("carol", "APPROVED", head),
		rv("carol", "DISMISSED", head), // dismissed
		rv("dave", "APPROVED", old),    // another commit
		rv("Author", "APPROVED", head), // the author
		rv("ci[bot]", "APPROVED", head),
		rv("erin", "CHANGES_REQUESTED", head),
		rv("Erin", "APPROVED", head), // logins are case-insensitive: the later approval stands
		rv("frank", "PENDING", head),
	}
	got := Approvers(reviews, head, "author")
	if want := []string{"alice", "Erin"}; !slices.Equal(got, want) {
		t.Fatalf("approvers %v, want %v", got, want)
	}
	if got := Approvers(reviews, "", "author"); len(got) != 0 {
		t.Fatalf("approvers of no head %v", got)
	}
}

// A CODEOWNERS line GitHub would reject is skipped; the rest applies, the last match wins.
func TestParseCodeOwners(t *testing.T) {
	rules := ParseCodeOwners("# comment\n* @org/all\n\n/docs/ @writer docs@example.com\nbad[ @x\n*.go @gopher @org/go\n")
	if len(rules) != 3 {
		t.Fatalf("%d rules, want 3", len(rules))
	}
	for path, want := range map[string]string{"main.go": "@gopher", "docs/a.md": "@writer", "README.md": "@org/all", "docs/x.go": "@gopher"} {
		r, err := rules.Match(path)
		if err != nil || r == nil || r.Owners[0].String() != want {
			t.Errorf("%s: %+v %v, want %s", path, r, err, want)
		}
	}
	if r, _ := rules.Match("docs/a.md"); r.LineNumber != 4 || r.Owners[1].String() != "docs@example.com" {
		t.Errorf("docs rule %+v", r)
	}
}
