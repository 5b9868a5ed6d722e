package githubfake

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/google/go-github/v62/github"
)

func (s *Server) routesTeams(mux *http.ServeMux) {
	s.handle(mux, "GET /orgs/{org}/teams/{team_slug}/memberships/{username}", authInstallation, s.getTeamMembership)
}

// SetTeamMember makes login a member of the team org/slug with state "active" or "pending"
// (GitHub's states; an invitation not yet accepted is pending). The role is always member.
func (s *Server) SetTeamMember(org, slug, login, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(org + "/" + slug)
	if s.teams[key] == nil {
		s.teams[key] = map[string]string{}
	}
	s.teams[key][strings.ToLower(login)] = state
}

// getTeamMembership answers as GitHub does: the membership (role, state, url) of a member,
// child teams aside, and 404 for a team it does not know or a user who is not a member.
func (s *Server) getTeamMembership(w http.ResponseWriter, r *http.Request) {
	org, slug, user := r.PathValue("org"), r.PathValue("team_slug"), r.PathValue("username")
	state, ok := s.teams[strings.ToLower(org+"/"+slug)][strings.ToLower(user)]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, &github.Membership{
		URL:   github.String(s.apiURL("/organizations/1/team/1/memberships/%s", user)),
		Role:  github.String("member"),
		State: github.String(state),
	})
}

// DismissReview dismisses a review as a maintainer does: its state becomes DISMISSED.
func (s *Server) DismissReview(fullName string, number int, reviewID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rv := range s.mustRepo(fullName).reviews {
		if rv.ID == reviewID && rv.Number == number {
			rv.State = "DISMISSED"
		}
	}
}

// ReviewEventPayload is the pull_request_review webhook of a stored review with the given action
// ("submitted", "edited", "dismissed").
func (s *Server) ReviewEventPayload(fullName string, number int, reviewID int64, action string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	for _, rv := range st.reviews {
		if rv.ID == reviewID {
			ev := map[string]any{
				"action": action, "review": s.reviewJSON(st, rv), "pull_request": s.prJSON(st, st.pulls[number]),
				"repository": s.repoJSON(st), "installation": map[string]any{"id": s.installationID}, "sender": s.userJSON(rv.User),
			}
			b, _ := json.Marshal(ev)
			return b
		}
	}
	return nil
}
