package githubfake

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

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

// StampPullRequestEvent makes a pull_request webhook payload show the pull request as the fake
// holds it when the payload names its current head: its updated_at and body, as GitHub's payload
// of that event would (test fixtures carry timestamps from long before). A payload of another
// head, of an unknown pull request, of another event or one that does not parse is returned as
// is. The same payload is stamped the same way every time, so a redelivery stays byte for byte
// the same.
func (s *Server) StampPullRequestEvent(event string, payload []byte) []byte {
	if event != "pull_request" {
		return payload
	}
	key := sha256.Sum256(payload)
	s.mu.Lock()
	out, ok := s.stamped[key]
	s.mu.Unlock()
	if ok {
		return out
	}
	var ev map[string]any
	if json.Unmarshal(payload, &ev) != nil {
		return payload
	}
	pr, _ := ev["pull_request"].(map[string]any)
	repo, _ := ev["repository"].(map[string]any)
	head, _ := pr["head"].(map[string]any)
	name, _ := repo["full_name"].(string)
	number, _ := pr["number"].(float64)
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur *PullRequest
	if st := s.repos[name]; st != nil {
		cur = st.pulls[int(number)]
	}
	if cur == nil || head == nil || head["sha"] != cur.HeadSHA {
		return payload
	}
	pr["updated_at"], pr["body"] = cur.UpdatedAt.UTC().Format(time.RFC3339), cur.Body
	out, err := json.Marshal(ev)
	if err != nil {
		return payload
	}
	s.stamped[key] = out
	return out
}
