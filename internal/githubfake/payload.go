package githubfake

import (
	"fmt"

	"github.com/google/go-github/v62/github"
)

// AddFromPullRequestEvent adds the repository and pull request a pull_request webhook payload
// describes (same ids, node ids, refs, SHAs, title, body, author, labels), so the state the
// handler reads matches the event it received. diff becomes the pull request's diff. It
// returns the repository's full name and the pull request as stored.
func (s *Server) AddFromPullRequestEvent(payload, diff []byte) (string, PullRequest, error) {
	ev, err := github.ParseWebHook("pull_request", payload)
	if err != nil {
		return "", PullRequest{}, fmt.Errorf("parse pull_request payload: %w", err)
	}
	pe, ok := ev.(*github.PullRequestEvent)
	if !ok || pe.GetRepo() == nil || pe.GetPullRequest() == nil {
		return "", PullRequest{}, fmt.Errorf("payload is not a pull_request event with a repository")
	}
	repo, p := pe.GetRepo(), pe.GetPullRequest()
	s.AddRepo(Repo{
		Owner: repo.GetOwner().GetLogin(), Name: repo.GetName(), DefaultBranch: repo.GetDefaultBranch(),
		Private: repo.GetPrivate(), ID: repo.GetID(), NodeID: repo.GetNodeID(),
	})
	var labels []string
	for _, l := range p.Labels {
		labels = append(labels, l.GetName())
	}
	pr := s.AddPullRequest(repo.GetFullName(), PullRequest{
		Number: p.GetNumber(), ID: p.GetID(), NodeID: p.GetNodeID(), Title: p.GetTitle(), Body: p.GetBody(),
		User: p.GetUser().GetLogin(), Draft: p.GetDraft(), State: p.GetState(),
		HeadSHA: p.GetHead().GetSHA(), HeadRef: p.GetHead().GetRef(),
		BaseSHA: p.GetBase().GetSHA(), BaseRef: p.GetBase().GetRef(),
		Labels: labels, Diff: diff,
	})
	return repo.GetFullName(), pr, nil
}
