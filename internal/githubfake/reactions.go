package githubfake

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/go-github/v62/github"
)

// reactionJSON is a stored reaction as GitHub's reaction object.
func (s *Server) reactionJSON(x *Reaction) reactionJSON {
	return reactionJSON{
		Reaction: &github.Reaction{ID: github.Int64(x.ID), NodeID: github.String(fmt.Sprintf("REA_%d", x.ID)),
			Content: github.String(x.Content), User: s.userJSON(x.User)},
		CreatedAt: timestamp(x.CreatedAt),
	}
}

// listReviewCommentReactions answers GET /repos/{owner}/{repo}/pulls/comments/{id}/reactions:
// the reactions on one review comment, oldest first, optionally of one content only (GitHub's
// content query parameter; another value is refused with 422), paginated. An unknown comment
// is a 404.
func (s *Server) listReviewCommentReactions(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	content := r.URL.Query().Get("content")
	if content != "" && !reactionContents[content] {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "content is not a valid reaction")
		return
	}
	id := pathID(r)
	found := false
	for _, rv := range st.reviews {
		for _, c := range rv.Comments {
			found = found || c.ID == id
		}
	}
	for _, r := range st.replies {
		found = found || r.c.ID == id // a reply in a thread is a review comment too
	}
	if !found {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	subject := "review_comment/" + strconv.FormatInt(id, 10)
	out := []reactionJSON{}
	for _, x := range st.reactions {
		if x.Subject == subject && (content == "" || x.Content == content) {
			out = append(out, s.reactionJSON(x))
		}
	}
	writePage(w, r, out)
}
