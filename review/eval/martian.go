package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lensgate/lensgate/review"
)

// The Martian code-review benchmark (github.com/withmartian/code-review-benchmark, MIT) keeps
// its golden comments in offline/golden_comments/<repository>.json: an array of pull requests,
// each with pr_title, url (the benchmark's copy of the pull request), optionally original_url
// (the upstream pull request) and comments, each with a comment text and a severity of Low,
// Medium, High or Critical. The comments carry no file or line, so imported cases can only be
// scored with a model judge.

// martianPR is one pull request of a golden-comment file. Keys this reader does not use (the
// file has free-form notes) are ignored.
type martianPR struct {
	Title       string           `json:"pr_title"`
	URL         string           `json:"url"`
	OriginalURL string           `json:"original_url"`
	Comments    []martianComment `json:"comments"`
}

type martianComment struct {
	Comment  string `json:"comment"`
	Severity string `json:"severity"`
}

// MartianOptions say where the benchmark's repositories are and which revisions of them hold
// each pull request.
type MartianOptions struct {
	// Repos is the directory the repositories are cloned into: the pull request
	// github.com/OWNER/NAME/pull/N is in Repos/NAME, unless RepoDirs names another directory
	// for NAME or OWNER/NAME.
	Repos    string
	RepoDirs map[string]string
	// Head and Base are the revisions of a pull request, with {number} replaced by its number
	// (defaults: refs/pull/{number}/head, which a mirror clone fetches, and HEAD, the default
	// branch). The change is reviewed from the merge base of the two, as GitHub shows it.
	Head, Base string
}

// ImportMartian reads golden-comment files and returns a corpus of their pull requests, and
// the problems found checking the local repositories (a missing repository or revision); those
// cases are still written, so the manifest is complete once the repositories are fetched.
func ImportMartian(ctx context.Context, files []string, opts MartianOptions) (*Corpus, []string, error) {
	if opts.Head == "" {
		opts.Head = "refs/pull/{number}/head"
	}
	if opts.Base == "" {
		opts.Base = "HEAD"
	}
	c := &Corpus{Version: ManifestVersion, Name: "martian-code-review-benchmark"}
	var warnings []string
	for _, name := range files {
		data, err := readBounded(name, maxManifestBytes)
		if err != nil {
			return nil, nil, fmt.Errorf("read the golden comments: %w", err)
		}
		var prs []martianPR
		if err := json.Unmarshal(data, &prs); err != nil {
			return nil, nil, fmt.Errorf("%s: not a golden-comment file (an array of pull requests): %w", name, err)
		}
		for i, pr := range prs {
			k, err := martianCase(pr, opts)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: pull request %d: %w", name, i+1, err)
			}
			if w := checkRevisions(ctx, k); w != "" {
				warnings = append(warnings, k.ID+": "+w)
			}
			c.Cases = append(c.Cases, *k)
		}
	}
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	return c, warnings, nil
}

// martianCase turns one pull request into a case.
func martianCase(pr martianPR, opts MartianOptions) (*Case, error) {
	owner, name, number, err := pullURL(pr.URL)
	if err != nil {
		return nil, err
	}
	if len(pr.Comments) == 0 {
		return nil, fmt.Errorf("%s has no comments", pr.URL)
	}
	dir := filepath.Join(opts.Repos, name)
	for _, key := range []string{owner + "/" + name, name} {
		if d, ok := opts.RepoDirs[key]; ok {
			dir = d
			break
		}
	}
	n := strconv.Itoa(number)
	k := &Case{
		ID: name + "-" + n, Title: pr.Title, Repo: dir, MergeBase: true,
		Head: strings.ReplaceAll(opts.Head, "{number}", n), Base: strings.ReplaceAll(opts.Base, "{number}", n),
		Provenance: &Provenance{Repository: "https://github.com/" + owner + "/" + name, URL: pr.URL,
			License: "golden comments: MIT (github.com/withmartian/code-review-benchmark)",
			Note:    "imported from the Martian code-review benchmark"},
	}
	if pr.OriginalURL != "" {
		k.Provenance.Note += "; upstream pull request " + pr.OriginalURL
	}
	for j, cm := range pr.Comments {
		sev, ok := martianSeverity[strings.ToLower(strings.TrimSpace(cm.Severity))]
		if !ok {
			return nil, fmt.Errorf("%s comment %d: severity %q is not Low, Medium, High or Critical", pr.URL, j+1, cm.Severity)
		}
		if strings.TrimSpace(cm.Comment) == "" {
			return nil, fmt.Errorf("%s comment %d has no text", pr.URL, j+1)
		}
		k.Golden = append(k.Golden, Golden{Description: cm.Comment, Severity: sev})
	}
	return k, nil
}

var martianSeverity = map[string]review.Severity{
	"critical": review.SeverityCritical, "high": review.SeverityHigh, "medium": review.SeverityMedium, "low": review.SeverityLow,
}

// pullURL reads https://github.com/OWNER/NAME/pull/N.
func pullURL(raw string) (owner, name string, number int, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host != "github.com" {
		return "", "", 0, fmt.Errorf("url %q is not a GitHub pull request URL", raw)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 4 || parts[2] != "pull" || parts[0] == "" || parts[1] == "" {
		return "", "", 0, fmt.Errorf("url %q is not https://github.com/OWNER/NAME/pull/N", raw)
	}
	number, err = strconv.Atoi(parts[3])
	if err != nil || number <= 0 {
		return "", "", 0, fmt.Errorf("url %q has no pull request number", raw)
	}
	return parts[0], parts[1], number, nil
}

// checkRevisions says what is missing to review a case ("" when nothing is).
func checkRevisions(ctx context.Context, k *Case) string {
	var missing []string
	for _, rev := range []string{k.Base, k.Head} {
		if strings.HasPrefix(rev, "-") {
			return fmt.Sprintf("revision %q starts with '-'", rev)
		}
		err := exec.CommandContext(ctx, "git", "-C", k.Repo, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}").Run()
		if err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				return fmt.Sprintf("cannot run git: %v", err)
			}
			missing = append(missing, rev)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("%s has no %s (clone it with git clone --mirror, which fetches refs/pull/*)", k.Repo, strings.Join(missing, " or "))
	}
	return ""
}
