package githubfake

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/google/go-github/v62/github"
)

// GitHub's caps that large pull requests run into.
const (
	// MaxDiffFiles is the most files GitHub renders in a pull request's diff media type; a
	// larger pull request answers 406.
	MaxDiffFiles = 300
	// MaxListedFiles is the most files the list-files endpoint of a pull request returns.
	MaxListedFiles = 3000
	// maxCompareFiles is the most files a compare lists.
	maxCompareFiles = 300
)

func (s *Server) routesThreads(mux *http.ServeMux) {
	s.handle(mux, "POST /repos/{owner}/{repo}/pulls/{number}/comments", authInstallation, s.createReviewCommentReply)
	s.handle(mux, "GET /repos/{owner}/{repo}/compare/{basehead}", authInstallation, s.compare)
	s.handle(mux, "POST /graphql", authInstallation, s.graphql)
	s.handle(mux, "GET /repos/{owner}/{repo}/git/trees/{sha}", authInstallation, s.getTree)
}

// getTree answers a recursive tree read for a pull request's base or head commit: the base
// holds every file the pull request modifies, renames away or removes, the head every file it
// leaves (with a different blob for a changed one), plus any file SetFile stored at that SHA.
// Files the pull request does not touch are left out of both, which a comparison of the two
// trees cannot tell from a repository that has them.
func (s *Server) getTree(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	sha := r.PathValue("sha")
	entries := map[string]string{}
	found := false
	for path, content := range st.files[sha] {
		found = true
		entries[path] = gitBlobSHA(content)
	}
	for _, pr := range st.pulls {
		switch sha {
		case pr.BaseSHA:
			found = true
			for _, f := range pr.Files {
				switch {
				case f.Status == "added":
				case f.PreviousFilename != "":
					entries[f.PreviousFilename] = gitBlobSHA("base:" + f.PreviousFilename)
				default:
					entries[f.Filename] = gitBlobSHA("base:" + f.Filename)
				}
			}
		case pr.HeadSHA:
			found = true
			for _, f := range pr.Files {
				if f.Status != "removed" {
					entries[f.Filename] = gitBlobSHA("head:" + f.Filename + "\x00" + f.Patch)
				}
			}
		}
	}
	if !found {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	t := &github.Tree{SHA: github.String(sha), Truncated: github.Bool(false)}
	for _, p := range paths {
		t.Entries = append(t.Entries, &github.TreeEntry{Path: github.String(p), Type: github.String("blob"),
			Mode: github.String("100644"), SHA: github.String(entries[p])})
	}
	writeJSON(w, http.StatusOK, t)
}

// AddReviewCommentReply adds a reply by user to the inline comment inReplyTo (the top comment
// of its thread), as a person answering lensgate's finding would.
func (s *Server) AddReviewCommentReply(fullName string, number int, inReplyTo int64, user, body string) ReviewComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	c := s.newReply(st, number, inReplyTo, user, body)
	if c == nil {
		s.t.Fatalf("githubfake: no review comment %d on %s#%d", inReplyTo, fullName, number)
		return ReviewComment{}
	}
	return *c
}

func (s *Server) newReply(st *repoState, number int, inReplyTo int64, user, body string) *ReviewComment {
	top := s.findReviewComment(st, number, inReplyTo)
	if top == nil {
		return nil
	}
	if top.InReplyTo != 0 {
		top = s.findReviewComment(st, number, top.InReplyTo)
	}
	c := &ReviewComment{ID: s.id(), Path: top.Path, Line: top.Line, Side: top.Side, Body: body, User: user,
		CommitID: top.CommitID, InReplyTo: top.ID}
	st.replies = append(st.replies, reply{number: number, c: c})
	return c
}

// findReviewComment finds an inline comment or reply of a pull request (nil if none).
func (s *Server) findReviewComment(st *repoState, number int, id int64) *ReviewComment {
	for _, rv := range st.reviews {
		if rv.Number != number {
			continue
		}
		for i := range rv.Comments {
			if rv.Comments[i].ID == id {
				return &rv.Comments[i]
			}
		}
	}
	for _, r := range st.replies {
		if r.number == number && r.c.ID == id {
			return r.c
		}
	}
	return nil
}

// ThreadResolved reports whether the review thread of the inline comment id is resolved.
func (s *Server) ThreadResolved(fullName string, number int, id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.findReviewComment(s.mustRepo(fullName), number, id)
	return c != nil && c.Resolved
}

// ResolveThread resolves the review thread of the inline comment id, as a person does in
// GitHub's interface. It reports whether the comment exists.
func (s *Server) ResolveThread(fullName string, number int, id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.findReviewComment(s.mustRepo(fullName), number, id)
	if c == nil {
		return false
	}
	c.Resolved = true
	return true
}

// Replies returns the replies to the inline comment id, oldest first.
func (s *Server) Replies(fullName string, number int, id int64) []ReviewComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ReviewComment
	for _, r := range s.mustRepo(fullName).replies {
		if r.number == number && r.c.InReplyTo == id {
			out = append(out, *r.c)
		}
	}
	return out
}

func (s *Server) createReviewCommentReply(w http.ResponseWriter, r *http.Request) {
	st, pr := s.pull(w, r)
	if pr == nil {
		return
	}
	var in struct {
		Body      string `json:"body"`
		InReplyTo int64  `json:"in_reply_to"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if in.InReplyTo == 0 {
		// New top-level comments outside a review are not used by lensgate.
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "in_reply_to is required by this fake")
		return
	}
	if in.Body == "" {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "body is missing")
		return
	}
	c := s.newReply(st, pr.Number, in.InReplyTo, s.BotLogin(), in.Body)
	if c == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	out := s.reviewCommentJSON(st, pr.Number, c)
	writeJSON(w, http.StatusCreated, out)
}

// snapshotHead records the files of a pull request at its current head, for compares.
func (st *repoState) snapshotHead(pr *PullRequest) {
	if pr.HeadSHA == "" {
		return
	}
	if st.heads == nil {
		st.heads = map[string][]File{}
	}
	st.heads[pr.HeadSHA] = append([]File(nil), pr.Files...)
}

// SetCompare fixes the files a compare of from...to lists, instead of the ones derived from
// the two heads' pull request files.
func (s *Server) SetCompare(fullName, from, to string, files []File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	if st.compares == nil {
		st.compares = map[string][]File{}
	}
	st.compares[from+"..."+to] = files
}

// ForcePush replaces a pull request's commits with one new head (a history rewrite): the
// earlier heads are no longer ancestors of it.
func (s *Server) ForcePush(fullName string, number int, headSHA string, diff []byte, files []File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	pr := s.mustPR(fullName, number)
	pr.HeadSHA, pr.Diff, pr.Files = headSHA, diff, files
	pr.Commits = []Commit{{SHA: headSHA, Message: "rewritten", Author: pr.User}}
	normalizePR(pr)
	st.snapshotHead(pr)
}

// compare answers GET /compare/{base}...{head} for heads of the repository's pull requests:
// "ahead" when base is an earlier commit of the pull request whose head is head, "identical"
// for the same commit, "diverged" otherwise. Files are those whose patch differs between the
// two heads (or the ones SetCompare fixed), with the newer head's patch.
func (s *Server) compare(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	base, head, ok := strings.Cut(r.PathValue("basehead"), "...")
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	from, okFrom := st.heads[base]
	to, okTo := st.heads[head]
	for _, pr := range st.pulls {
		if pr.BaseSHA == base && pr.HeadSHA == head {
			// The pull request's own compare: its base is the merge base.
			files := pr.Files
			if len(files) > maxCompareFiles {
				files = files[:maxCompareFiles]
			}
			out := &github.CommitsComparison{Status: github.String("ahead"), AheadBy: github.Int(len(pr.Commits)),
				BehindBy: github.Int(0), TotalCommits: github.Int(len(pr.Commits)), Files: []*github.CommitFile{},
				BaseCommit:      &github.RepositoryCommit{SHA: github.String(base)},
				MergeBaseCommit: &github.RepositoryCommit{SHA: github.String(base)}}
			for _, f := range files {
				out.Files = append(out.Files, commitFileJSON(f))
			}
			writeJSON(w, http.StatusOK, out)
			return
		}
	}
	if !okFrom || !okTo {
		writeError(w, http.StatusNotFound, "Not Found", "No common ancestor between "+base+" and "+head+".")
		return
	}
	status, ahead := "diverged", 0
	if base == head {
		status = "identical"
	} else {
		for _, pr := range st.pulls {
			bi, hi := -1, -1
			for i, c := range pr.Commits {
				if c.SHA == base {
					bi = i
				}
				if c.SHA == head {
					hi = i
				}
			}
			if bi >= 0 && hi > bi {
				status, ahead = "ahead", hi-bi
			}
		}
	}
	files, fixed := st.compares[base+"..."+head]
	if !fixed && status != "identical" {
		old := map[string]string{}
		for _, f := range from {
			old[f.Filename] = f.Patch
		}
		seen := map[string]bool{}
		for _, f := range to {
			seen[f.Filename] = true
			if p, ok := old[f.Filename]; !ok || p != f.Patch {
				files = append(files, f)
			}
		}
		for _, f := range from {
			if !seen[f.Filename] {
				files = append(files, File{Filename: f.Filename, Status: "removed"})
			}
		}
	}
	if len(files) > maxCompareFiles {
		files = files[:maxCompareFiles]
	}
	out := &github.CommitsComparison{
		Status: github.String(status), AheadBy: github.Int(ahead), BehindBy: github.Int(0),
		TotalCommits: github.Int(ahead), Files: []*github.CommitFile{},
		BaseCommit:      &github.RepositoryCommit{SHA: github.String(base)},
		MergeBaseCommit: &github.RepositoryCommit{SHA: github.String(base)},
	}
	for _, f := range files {
		out.Files = append(out.Files, commitFileJSON(f))
	}
	writeJSON(w, http.StatusOK, out)
}

func commitFileJSON(f File) *github.CommitFile {
	status := f.Status
	if status == "" {
		status = "modified"
	}
	add, del := f.Additions, f.Deletions
	if add == 0 && del == 0 {
		add, del = countChanges(f.Patch)
	}
	cf := &github.CommitFile{
		Filename: github.String(f.Filename), Status: github.String(status),
		Additions: github.Int(add), Deletions: github.Int(del),
		Changes: github.Int(add + del), SHA: github.String(gitBlobSHA(f.Patch)),
	}
	if f.Patch != "" {
		cf.Patch = github.String(f.Patch)
	}
	if f.PreviousFilename != "" {
		cf.PreviousFilename = github.String(f.PreviousFilename)
	}
	return cf
}

// threadID is the GraphQL node id of the review thread an inline comment starts.
func threadID(commentID int64) string { return fmt.Sprintf("PRRT_fake%d", commentID) }

// graphql answers the two GraphQL operations lensgate uses: the review threads of a pull
// request (paged, first comment's database id) and resolveReviewThread.
func (s *Server) graphql(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	gqlError := func(msg string) {
		writeJSON(w, http.StatusOK, map[string]any{"errors": []map[string]any{{"message": msg}}})
	}
	str := func(k string) string { v, _ := in.Variables[k].(string); return v }
	switch {
	case strings.Contains(in.Query, "resolveReviewThread"):
		id := str("threadId")
		n, err := strconv.ParseInt(strings.TrimPrefix(id, "PRRT_fake"), 10, 64)
		if err != nil || !strings.HasPrefix(id, "PRRT_fake") {
			gqlError("Could not resolve to a node with the global id of '" + id + "'")
			return
		}
		for _, st := range s.repos {
			for _, rv := range st.reviews {
				for i := range rv.Comments {
					if rv.Comments[i].ID == n {
						rv.Comments[i].Resolved = true
						writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"resolveReviewThread": map[string]any{
							"thread": map[string]any{"id": id, "isResolved": true}}}})
						return
					}
				}
			}
		}
		gqlError("Could not resolve to a node with the global id of '" + id + "'")
	case strings.Contains(in.Query, "reviewThreads"):
		st, ok := s.repos[str("owner")+"/"+str("name")]
		num, _ := in.Variables["number"].(float64)
		if !ok {
			gqlError("Could not resolve to a Repository with the name '" + str("owner") + "/" + str("name") + "'.")
			return
		}
		var nodes []map[string]any
		for _, rv := range st.reviews {
			if rv.Number != int(num) {
				continue
			}
			for _, c := range rv.Comments {
				nodes = append(nodes, map[string]any{"id": threadID(c.ID), "isResolved": c.Resolved,
					"comments": map[string]any{"nodes": []map[string]any{{"databaseId": c.ID}}}})
			}
		}
		start := 0
		if after := str("after"); after != "" {
			start, _ = strconv.Atoi(after)
		}
		first := 100
		if f, ok := in.Variables["first"].(float64); ok && f > 0 && f < 100 {
			first = int(f)
		}
		start = min(start, len(nodes))
		end := min(start+first, len(nodes))
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"repository": map[string]any{"pullRequest": map[string]any{
			"reviewThreads": map[string]any{"nodes": nonNil(nodes[start:end]),
				"pageInfo": map[string]any{"hasNextPage": end < len(nodes), "endCursor": strconv.Itoa(end)}}}}}})
	default:
		gqlError("this fake answers reviewThreads and resolveReviewThread only")
	}
}
