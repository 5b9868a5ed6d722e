package githubfake

import (
	"encoding/base64"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

// routes registers every implemented endpoint. Route keys (for Calls and faults) are the
// pattern strings without the /api/v3 prefix.
func (s *Server) routes(mux *http.ServeMux) {
	s.routesApp(mux)
	s.routesOAuth(mux)
	s.routesThreads(mux)
	s.routesTeams(mux)
	s.handle(mux, "GET /repos/{owner}/{repo}", authAny, s.getRepo)
	s.handle(mux, "GET /repos/{owner}/{repo}/contents/{path...}", authInstallation, s.getContents)
	s.handle(mux, "GET /repos/{owner}/{repo}/collaborators/{user}/permission", authInstallation, s.getPermission)

	s.handle(mux, "GET /repos/{owner}/{repo}/pulls", authInstallation, s.listPulls)
	s.handle(mux, "GET /repos/{owner}/{repo}/pulls/{number}", authInstallation, s.getPull)
	s.handle(mux, "PATCH /repos/{owner}/{repo}/pulls/{number}", authInstallation, s.editPull)
	s.handle(mux, "GET /repos/{owner}/{repo}/pulls/{number}/files", authInstallation, s.listPullFiles)
	s.handle(mux, "GET /repos/{owner}/{repo}/pulls/{number}/commits", authInstallation, s.listPullCommits)
	s.handle(mux, "GET /repos/{owner}/{repo}/commits/{sha}/pulls", authInstallation, s.listPullsForCommit)

	s.handle(mux, "GET /repos/{owner}/{repo}/pulls/{number}/reviews", authInstallation, s.listReviews)
	s.handle(mux, "POST /repos/{owner}/{repo}/pulls/{number}/reviews", authInstallation, s.createReview)
	s.handle(mux, "POST /repos/{owner}/{repo}/pulls/{number}/reviews/{id}/events", authInstallation, s.submitReview)
	s.handle(mux, "GET /repos/{owner}/{repo}/pulls/{number}/reviews/{id}/comments", authInstallation, s.listReviewCommentsOfReview)
	s.handle(mux, "GET /repos/{owner}/{repo}/pulls/{number}/comments", authInstallation, s.listReviewComments)
	s.handle(mux, "POST /repos/{owner}/{repo}/pulls/{number}/requested_reviewers", authInstallation, s.requestReviewers)

	s.handle(mux, "GET /repos/{owner}/{repo}/issues/{number}", authInstallation, s.getIssue)
	s.handle(mux, "PATCH /repos/{owner}/{repo}/issues/{number}", authInstallation, s.editIssue)
	s.handle(mux, "GET /repos/{owner}/{repo}/issues/{number}/comments", authInstallation, s.listComments)
	s.handle(mux, "POST /repos/{owner}/{repo}/issues/{number}/comments", authInstallation, s.createComment)
	s.handle(mux, "PATCH /repos/{owner}/{repo}/issues/comments/{id}", authInstallation, s.editComment)
	s.handle(mux, "DELETE /repos/{owner}/{repo}/issues/comments/{id}", authInstallation, s.deleteComment)
	s.handle(mux, "GET /repos/{owner}/{repo}/issues/{number}/labels", authInstallation, s.listLabels)
	s.handle(mux, "POST /repos/{owner}/{repo}/issues/{number}/labels", authInstallation, s.addLabels)
	s.handle(mux, "DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}", authInstallation, s.removeLabel)
	s.handle(mux, "GET /repos/{owner}/{repo}/labels", authInstallation, s.listRepoLabels)

	s.handle(mux, "POST /repos/{owner}/{repo}/issues/{number}/reactions", authInstallation, s.reactIssue)
	s.handle(mux, "GET /repos/{owner}/{repo}/issues/{number}/reactions", authInstallation, s.listIssueReactions)
	s.handle(mux, "POST /repos/{owner}/{repo}/issues/comments/{id}/reactions", authInstallation, s.reactComment)
	s.handle(mux, "POST /repos/{owner}/{repo}/pulls/comments/{id}/reactions", authInstallation, s.reactReviewComment)

	s.handle(mux, "POST /repos/{owner}/{repo}/check-runs", authInstallation, s.createCheckRun)
	s.handle(mux, "PATCH /repos/{owner}/{repo}/check-runs/{id}", authInstallation, s.updateCheckRun)
	s.handle(mux, "GET /repos/{owner}/{repo}/check-runs/{id}", authInstallation, s.getCheckRun)
	s.handle(mux, "GET /repos/{owner}/{repo}/check-runs/{id}/annotations", authInstallation, s.listAnnotations)
	s.handle(mux, "POST /repos/{owner}/{repo}/check-runs/{id}/rerequest", authInstallation, s.rerequestCheckRun)
	s.handle(mux, "GET /repos/{owner}/{repo}/commits/{ref}/check-runs", authInstallation, s.listCheckRunsForRef)
	s.handle(mux, "GET /repos/{owner}/{repo}/commits/{ref}/check-suites", authInstallation, s.listCheckSuitesForRef)
	s.handle(mux, "POST /repos/{owner}/{repo}/check-suites/{id}/rerequest", authInstallation, s.rerequestCheckSuite)
}

// repo resolves {owner}/{repo}; it writes 404 and returns nil when unknown.
func (s *Server) repo(w http.ResponseWriter, r *http.Request) *repoState {
	st, ok := s.repos[r.PathValue("owner")+"/"+r.PathValue("repo")]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil
	}
	return st
}

func (s *Server) pull(w http.ResponseWriter, r *http.Request) (*repoState, *PullRequest) {
	st := s.repo(w, r)
	if st == nil {
		return nil, nil
	}
	n, err := strconv.Atoi(r.PathValue("number"))
	pr, ok := st.pulls[n]
	if err != nil || !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, nil
	}
	return st, pr
}

// issueOrPull resolves {number} to an issue or a pull request (GitHub's issue endpoints
// accept both). It returns the body and labels to edit.
func (s *Server) issueOrPull(w http.ResponseWriter, r *http.Request) (*repoState, int, *string, *[]string) {
	st := s.repo(w, r)
	if st == nil {
		return nil, 0, nil, nil
	}
	n, err := strconv.Atoi(r.PathValue("number"))
	if err == nil {
		if is, ok := st.issues[n]; ok {
			return st, n, &is.Body, &is.Labels
		}
		if pr, ok := st.pulls[n]; ok {
			return st, n, &pr.Body, &pr.Labels
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
	return nil, 0, nil, nil
}

func pathID(r *http.Request) int64 {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return -1
	}
	return id
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request) {
	if st := s.repo(w, r); st != nil {
		writeJSON(w, http.StatusOK, s.repoJSON(st))
	}
}

// listDirectory answers a directory's listing like GitHub (files with their size, then
// subdirectories), or reports false when no file lies under dir ("" is the root).
func (s *Server) listDirectory(w http.ResponseWriter, files map[string]string, dir string) bool {
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	seen := map[string]bool{}
	var out []*github.RepositoryContent
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok || rest == "" {
			continue
		}
		name, sub, isDir := strings.Cut(rest, "/")
		_ = sub
		if seen[name] {
			continue
		}
		seen[name] = true
		e := &github.RepositoryContent{Name: github.String(name), Path: github.String(prefix + name)}
		if isDir {
			e.Type, e.Size = github.String("dir"), github.Int(0)
		} else {
			e.Type, e.Size, e.SHA = github.String("file"), github.Int(len(files[p])), github.String(gitBlobSHA(files[p]))
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return false
	}
	writeJSON(w, http.StatusOK, out)
	return true
}

// maxInlineContent is the largest file the contents API returns with its content.
const maxInlineContent = 1 << 20

func (s *Server) getContents(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = st.DefaultBranch
	}
	path := strings.TrimSuffix(r.PathValue("path"), "/")
	content, ok := st.files[ref][path]
	if !ok && s.listDirectory(w, st.files[ref], path) {
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "application/vnd.github.v3.raw") ||
		strings.Contains(r.Header.Get("Accept"), "application/vnd.github.raw") {
		w.Header().Set("Content-Type", "application/vnd.github.raw")
		_, _ = w.Write([]byte(content))
		return
	}
	name := path
	if i := strings.LastIndex(path, "/"); i >= 0 {
		name = path[i+1:]
	}
	rc := &github.RepositoryContent{
		Type:     github.String("file"),
		Encoding: github.String("none"),
		Size:     github.Int(len(content)),
		Name:     github.String(name),
		Path:     github.String(path),
		Content:  github.String(""),
		SHA:      github.String(gitBlobSHA(content)),
	}
	// Like GitHub: a file over 1 MB comes without content (encoding "none"); the raw media type
	// still serves it.
	if len(content) <= maxInlineContent {
		rc.Encoding, rc.Content = github.String("base64"), github.String(base64.StdEncoding.EncodeToString([]byte(content)))
	}
	writeJSON(w, http.StatusOK, rc)
}

func (s *Server) getPermission(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	user := r.PathValue("user")
	perm, ok := st.permissions[user]
	if !ok {
		perm = "none"
		if !st.Private {
			perm = "read"
		}
	}
	writeJSON(w, http.StatusOK, &github.RepositoryPermissionLevel{
		Permission: github.String(perm),
		User:       s.userJSON(user),
	})
}

func (s *Server) sortedPulls(st *repoState) []*PullRequest {
	prs := make([]*PullRequest, 0, len(st.pulls))
	for _, p := range st.pulls {
		prs = append(prs, p)
	}
	sort.Slice(prs, func(i, j int) bool { return prs[i].Number > prs[j].Number })
	return prs
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head, base := q.Get("head"), q.Get("base")
	var out []pullAnswer
	for _, p := range s.sortedPulls(st) {
		p = s.shown(st, p)
		if state != "all" && p.State != state {
			continue
		}
		if base != "" && p.BaseRef != base {
			continue
		}
		if head != "" && head != st.Owner+":"+p.HeadRef && head != p.HeadRef {
			continue
		}
		out = append(out, s.prJSON(st, p))
	}
	if q.Get("direction") == "asc" {
		sort.Slice(out, func(i, j int) bool { return out[i].GetNumber() < out[j].GetNumber() })
	}
	writePage(w, r, out)
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request) {
	st, pr := s.pull(w, r)
	if pr == nil {
		return
	}
	accept := r.Header.Get("Accept")
	if (strings.Contains(accept, "diff") || strings.Contains(accept, "patch")) && len(pr.Files) > MaxDiffFiles {
		// GitHub refuses to render the diff of a pull request this large.
		writeError(w, http.StatusNotAcceptable, "Sorry, the diff exceeded the maximum number of files (300). Consider using 'List pull requests files' API or locally cloning the repository instead.")
		return
	}
	switch {
	case strings.Contains(accept, "diff"):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(pr.Diff)
	case strings.Contains(accept, "patch"):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(pr.Diff)
	default:
		writeJSON(w, http.StatusOK, s.prJSON(st, s.shown(st, pr)))
	}
}

func (s *Server) editPull(w http.ResponseWriter, r *http.Request) {
	st, pr := s.pull(w, r)
	if pr == nil {
		return
	}
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "state is not a valid value")
		return
	}
	if in.Body != nil && len(*in.Body) > maxCommentBody {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "body is too long (maximum is 65536 characters)")
		return
	}
	if in.Title != nil {
		pr.Title = *in.Title
	}
	if in.Body != nil {
		pr.Body = *in.Body
	}
	if in.State != nil {
		pr.State = *in.State
	}
	if in.Base != nil {
		pr.BaseRef = *in.Base
	}
	s.revised(st, pr)
	writeJSON(w, http.StatusOK, s.prJSON(st, pr))
}

func (s *Server) listPullFiles(w http.ResponseWriter, r *http.Request) {
	_, pr := s.pull(w, r)
	if pr == nil {
		return
	}
	files := pr.Files
	if len(files) > MaxListedFiles {
		files = files[:MaxListedFiles] // GitHub lists at most 3,000 files of a pull request
	}
	out := make([]*github.CommitFile, 0, len(files))
	for _, f := range files {
		cf := &github.CommitFile{
			Filename: github.String(f.Filename), Status: github.String(f.Status),
			Additions: github.Int(f.Additions), Deletions: github.Int(f.Deletions),
			Changes: github.Int(f.Additions + f.Deletions), SHA: github.String(gitBlobSHA(f.Patch)),
		}
		if f.Patch != "" {
			cf.Patch = github.String(f.Patch)
		}
		if f.PreviousFilename != "" {
			cf.PreviousFilename = github.String(f.PreviousFilename)
		}
		out = append(out, cf)
	}
	writePage(w, r, out)
}

func (s *Server) listPullCommits(w http.ResponseWriter, r *http.Request) {
	_, pr := s.pull(w, r)
	if pr == nil {
		return
	}
	out := make([]*github.RepositoryCommit, 0, len(pr.Commits))
	for _, c := range pr.Commits {
		out = append(out, &github.RepositoryCommit{
			SHA: github.String(c.SHA),
			Commit: &github.Commit{
				SHA: github.String(c.SHA), Message: github.String(c.Message),
				Author: &github.CommitAuthor{Name: github.String(c.Author)},
			},
			Author: s.userJSON(c.Author),
		})
	}
	writePage(w, r, out)
}

func (s *Server) listPullsForCommit(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	sha := r.PathValue("sha")
	var out []pullAnswer
	for _, p := range s.sortedPulls(st) {
		hit := p.HeadSHA == sha
		for _, c := range p.Commits {
			hit = hit || c.SHA == sha
		}
		if hit {
			out = append(out, s.prJSON(st, p))
		}
	}
	writePage(w, r, out)
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	st, n, _, _ := s.issueOrPull(w, r)
	if st != nil {
		writeJSON(w, http.StatusOK, s.issueJSON(st, n))
	}
}

func (s *Server) editIssue(w http.ResponseWriter, r *http.Request) {
	st, n, body, labels := s.issueOrPull(w, r)
	if st == nil {
		return
	}
	var in struct {
		Title  *string   `json:"title"`
		Body   *string   `json:"body"`
		State  *string   `json:"state"`
		Labels *[]string `json:"labels"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Body != nil && len(*in.Body) > maxCommentBody {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "body is too long (maximum is 65536 characters)")
		return
	}
	if in.Body != nil {
		*body = *in.Body
	}
	if in.Labels != nil {
		*labels = append([]string(nil), (*in.Labels)...)
	}
	if is, ok := st.issues[n]; ok {
		if in.Title != nil {
			is.Title = *in.Title
		}
		if in.State != nil {
			is.State = *in.State
		}
	} else if pr := st.pulls[n]; pr != nil {
		if in.Title != nil {
			pr.Title = *in.Title
		}
		if in.State != nil {
			pr.State = *in.State
		}
		s.revised(st, pr)
	}
	writeJSON(w, http.StatusOK, s.issueJSON(st, n))
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	st, n, _, _ := s.issueOrPull(w, r)
	if st == nil {
		return
	}
	var out []issueCommentJSON
	for _, c := range st.comments {
		if c.Number == n {
			out = append(out, s.commentJSON(st, c))
		}
	}
	writePage(w, r, out)
}

// maxCommentBody is GitHub's limit on a comment body.
const maxCommentBody = 65536

func (s *Server) createComment(w http.ResponseWriter, r *http.Request) {
	st, n, _, _ := s.issueOrPull(w, r)
	if st == nil {
		return
	}
	var in struct {
		Body *string `json:"body"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Body == nil || *in.Body == "" {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "body is missing")
		return
	}
	if len(*in.Body) > maxCommentBody {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "body is too long (maximum is 65536 characters)")
		return
	}
	c := s.newComment(n, s.BotLogin(), *in.Body)
	st.comments = append(st.comments, c)
	writeJSON(w, http.StatusCreated, s.commentJSON(st, c))
	s.requested(st, n, c)
}

func (s *Server) findComment(w http.ResponseWriter, r *http.Request) (*repoState, int) {
	st := s.repo(w, r)
	if st == nil {
		return nil, -1
	}
	id := pathID(r)
	for i, c := range st.comments {
		if c.ID == id {
			return st, i
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
	return nil, -1
}

func (s *Server) editComment(w http.ResponseWriter, r *http.Request) {
	st, i := s.findComment(w, r)
	if st == nil {
		return
	}
	var in struct {
		Body *string `json:"body"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Body == nil || *in.Body == "" || len(*in.Body) > maxCommentBody {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "body is missing or too long")
		return
	}
	c := st.comments[i]
	if c.User != s.BotLogin() {
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	c.Body = *in.Body
	c.UpdatedAt = s.now().UTC().Truncate(time.Second)
	writeJSON(w, http.StatusOK, s.commentJSON(st, c))
}

func (s *Server) deleteComment(w http.ResponseWriter, r *http.Request) {
	st, i := s.findComment(w, r)
	if st == nil {
		return
	}
	st.comments = append(st.comments[:i], st.comments[i+1:]...)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listLabels(w http.ResponseWriter, r *http.Request) {
	st, _, _, labels := s.issueOrPull(w, r)
	if st == nil {
		return
	}
	writeJSON(w, http.StatusOK, labelsJSON(*labels))
}

func (s *Server) addLabels(w http.ResponseWriter, r *http.Request) {
	st, _, _, labels := s.issueOrPull(w, r)
	if st == nil {
		return
	}
	var in []string
	if !decodeBody(w, r, &in) {
		return
	}
	for _, l := range in {
		if strings.TrimSpace(l) == "" {
			writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "label name is empty")
			return
		}
	}
	for _, l := range in {
		st.labels[l] = true
		if !contains(*labels, l) {
			*labels = append(*labels, l)
		}
	}
	s.pullRevised(st, r)
	writeJSON(w, http.StatusOK, labelsJSON(*labels))
}

func (s *Server) removeLabel(w http.ResponseWriter, r *http.Request) {
	st, _, _, labels := s.issueOrPull(w, r)
	if st == nil {
		return
	}
	name := r.PathValue("name")
	if !contains(*labels, name) {
		writeError(w, http.StatusNotFound, "Label does not exist")
		return
	}
	var keep []string
	for _, l := range *labels {
		if l != name {
			keep = append(keep, l)
		}
	}
	*labels = keep
	s.pullRevised(st, r)
	writeJSON(w, http.StatusOK, labelsJSON(keep))
}

func (s *Server) listRepoLabels(w http.ResponseWriter, r *http.Request) {
	if st := s.repo(w, r); st != nil {
		writeJSON(w, http.StatusOK, labelsJSON(sortedKeys(st.labels)))
	}
}

var reactionContents = map[string]bool{"+1": true, "-1": true, "laugh": true, "confused": true, "heart": true, "hooray": true, "rocket": true, "eyes": true}

func (s *Server) react(w http.ResponseWriter, r *http.Request, st *repoState, subject string) {
	var in struct {
		Content string `json:"content"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if !reactionContents[in.Content] {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "content is not a valid reaction")
		return
	}
	for _, x := range st.reactions {
		// GitHub answers 200 with the existing reaction when the same user reacts twice.
		if x.Subject == subject && x.Content == in.Content && x.User == s.BotLogin() {
			writeJSON(w, http.StatusOK, &github.Reaction{ID: github.Int64(x.ID), Content: github.String(x.Content), User: s.botUser()})
			return
		}
	}
	x := &Reaction{ID: s.id(), Subject: subject, Content: in.Content, User: s.BotLogin(), CreatedAt: s.now().UTC().Truncate(time.Second)}
	st.reactions = append(st.reactions, x)
	writeJSON(w, http.StatusCreated, &github.Reaction{ID: github.Int64(x.ID), Content: github.String(x.Content), User: s.botUser()})
}

func (s *Server) reactIssue(w http.ResponseWriter, r *http.Request) {
	if st, n, _, _ := s.issueOrPull(w, r); st != nil {
		s.react(w, r, st, "issue/"+strconv.Itoa(n))
	}
}

func (s *Server) listIssueReactions(w http.ResponseWriter, r *http.Request) {
	st, n, _, _ := s.issueOrPull(w, r)
	if st == nil {
		return
	}
	out := []reactionJSON{}
	for _, x := range st.reactions {
		if x.Subject == "issue/"+strconv.Itoa(n) {
			out = append(out, reactionJSON{Reaction: &github.Reaction{ID: github.Int64(x.ID), Content: github.String(x.Content), User: s.userJSON(x.User)},
				CreatedAt: timestamp(x.CreatedAt)})
		}
	}
	writePage(w, r, out)
}

func (s *Server) reactComment(w http.ResponseWriter, r *http.Request) {
	if st, i := s.findComment(w, r); st != nil {
		s.react(w, r, st, "comment/"+strconv.FormatInt(st.comments[i].ID, 10))
	}
}

func (s *Server) reactReviewComment(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	id := pathID(r)
	for _, rv := range st.reviews {
		for _, c := range rv.Comments {
			if c.ID == id {
				s.react(w, r, st, "review_comment/"+strconv.FormatInt(id, 10))
				return
			}
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// nonNil keeps empty lists as [] rather than null, as GitHub does.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}
