package pull

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/google/go-github/v62/github"
	"github.com/lensgate/lensgate/internal/digest"
)

// unlistedPaths names the changed files GitHub's file list of a pull request left out (it lists
// at most 3,000): the git trees of the merge base and of the head differ in exactly the files
// the pull request changes, so those not listed are the rest. Three calls: the compare that
// names the merge base, and the two recursive trees. A tree GitHub truncates (over 100,000
// entries) gives no names.
func (f Fetcher) unlistedPaths(ctx context.Context, c *github.Client, owner, repo string, pr *github.PullRequest, listed []*github.CommitFile) ([]string, error) {
	base, head := pr.GetBase().GetSHA(), pr.GetHead().GetSHA()
	var cmp *github.CommitsComparison
	err := f.Do(ctx, fmt.Sprintf("find the merge base of %s/%s#%d", owner, repo, pr.GetNumber()), func(ctx context.Context) error {
		var err error
		cmp, _, err = c.Repositories.CompareCommits(ctx, owner, repo, base, head, &github.ListOptions{PerPage: 1})
		return err
	})
	if err != nil {
		return nil, err
	}
	mergeBase := cmp.GetMergeBaseCommit().GetSHA()
	if mergeBase == "" {
		return nil, errors.New("the compare names no merge base")
	}
	blobs := func(sha string) (map[string]string, error) {
		var t *github.Tree
		err := f.Do(ctx, fmt.Sprintf("read the tree of %s in %s/%s", digest.Short(sha), owner, repo), func(ctx context.Context) error {
			var err error
			t, _, err = c.Git.GetTree(ctx, owner, repo, sha, true)
			return err
		})
		if err != nil {
			return nil, err
		}
		if t.GetTruncated() {
			return nil, errors.New("GitHub truncated the tree")
		}
		out := make(map[string]string, len(t.Entries))
		for _, e := range t.Entries {
			if e.GetType() == "blob" {
				out[e.GetPath()] = e.GetSHA()
			}
		}
		return out, nil
	}
	before, err := blobs(mergeBase)
	if err != nil {
		return nil, err
	}
	after, err := blobs(head)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, cf := range listed {
		known[cf.GetFilename()] = true
		if p := cf.GetPreviousFilename(); p != "" {
			known[p] = true
		}
	}
	var out []string
	for p, sha := range after {
		if before[p] != sha && !known[p] {
			out = append(out, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok && !known[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}
