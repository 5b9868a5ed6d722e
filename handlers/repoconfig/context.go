package repoconfig

import (
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/lensgate/lensgate/handlers/pull"
	"github.com/lensgate/lensgate/review/modelctx"
)

// ContextSources says where a pull request's model context is read, under the same trust rules
// as .asdd.yml: the repository's instruction files at the base commit (never the head), the
// organisation repository's files on its default branch when the repository has none (as for
// .asdd.yml, and only when the organisation fallback is enabled), the head's code for the
// enclosing functions, and the repository's own issues.
func (l *ConfigLoader) ContextSources(f pull.Fetcher, client *github.Client, owner, repo, baseSHA, headSHA string) *modelctx.Sources {
	src := &modelctx.Sources{
		Base:   pull.ContentsTree{Fetch: f, Client: client, Owner: owner, Repo: repo, Ref: baseSHA},
		Head:   pull.ContentsTree{Fetch: f, Client: client, Owner: owner, Repo: repo, Ref: headSHA},
		Issues: pull.IssueReader{Fetch: f, Client: client, Owner: owner, Repo: repo},
	}
	if l.orgRepo != "" && !strings.EqualFold(repo, l.orgRepo) {
		src.Org = pull.ContentsTree{Fetch: f, Client: client, Owner: owner, Repo: l.orgRepo}
		src.OrgName = owner + "/" + l.orgRepo
	}
	return src
}
