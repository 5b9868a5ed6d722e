package githubfake

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Repo describes a repository to add.
type Repo struct {
	Owner         string
	Name          string
	DefaultBranch string // "main" when empty
	Private       bool
	// ID and NodeID are generated when zero (set them to match a webhook payload).
	ID     int64
	NodeID string
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// PullRequest is a pull request as tests set it up and read it back.
type PullRequest struct {
	Number  int
	ID      int64
	NodeID  string
	Title   string
	Body    string
	User    string
	Draft   bool
	State   string // "open" (default) or "closed"
	Merged  bool
	HeadSHA string
	HeadRef string
	// HeadRepo is the full name of the fork the head is in ("" for the repository itself).
	HeadRepo string
	BaseSHA  string
	BaseRef  string
	Labels   []string
	// Diff is served byte for byte for the diff media type. When empty it is assembled from Files.
	Diff []byte
	// Files are served by the files endpoint. When empty they are derived from Diff.
	Files []File
	// Commits are served by the commits endpoint; one commit at HeadSHA when empty.
	Commits []Commit
	// CreatedAt and UpdatedAt are set by the fake: UpdatedAt moves with every push and edit.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// File is one changed file of a pull request.
type File struct {
	Filename         string
	PreviousFilename string
	Status           string // added, modified, removed, renamed
	Additions        int
	Deletions        int
	Patch            string
}

// Commit is one commit of a pull request.
type Commit struct {
	SHA     string
	Message string
	Author  string
}

// Issue is a plain issue.
type Issue struct {
	Number int
	ID     int64
	NodeID string
	Title  string
	Body   string
	User   string
	State  string
	Labels []string
}

// Comment is an issue or pull request conversation comment.
type Comment struct {
	ID        int64
	NodeID    string
	Number    int
	Body      string
	User      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CheckRun is a check run with its accumulated output.
type CheckRun struct {
	ID          int64
	Name        string
	HeadSHA     string
	Status      string
	Conclusion  string
	ExternalID  string
	DetailsURL  string
	Title       string
	Summary     string
	Text        string
	Annotations []Annotation
	SuiteID     int64
	StartedAt   time.Time
	CompletedAt time.Time
	// Updates counts PATCH requests applied to this run.
	Updates int
}

// Annotation is a check-run annotation.
type Annotation struct {
	Path       string
	StartLine  int
	EndLine    int
	Level      string
	Message    string
	Title      string
	RawDetails string
}

// CheckSuite groups the App's check runs for one head SHA.
type CheckSuite struct {
	ID      int64
	HeadSHA string
	Rerun   int
}

// Review is a pull request review with its inline comments.
type Review struct {
	ID       int64
	NodeID   string
	Number   int
	User     string
	Event    string // the event requested: COMMENT, REQUEST_CHANGES, APPROVE or "" (pending)
	State    string // COMMENTED, CHANGES_REQUESTED, APPROVED, PENDING
	Body     string
	CommitID string
	Comments []ReviewComment
	// SubmittedAt is when the review was submitted (zero while pending).
	SubmittedAt time.Time
}

// ReviewComment is an inline comment.
type ReviewComment struct {
	ID        int64
	ReviewID  int64
	Path      string
	Line      int
	Side      string
	StartLine int
	Position  int
	Body      string
	User      string
	CommitID  string
	// InReplyTo is the thread's top comment for a reply (0 for the top comment itself).
	InReplyTo int64
	// Resolved is set on a thread's top comment once the thread is resolved.
	Resolved bool
}

type reply struct {
	number int
	c      *ReviewComment
}

// Reaction is a reaction on an issue, a pull request or a comment.
type Reaction struct {
	ID        int64
	Subject   string // "issue/N", "comment/ID" or "review_comment/ID"
	Content   string
	User      string
	CreatedAt time.Time
}

// HookDelivery is one recorded App webhook delivery, for catch-up tests.
type HookDelivery struct {
	ID          int64
	GUID        string
	Event       string
	Action      string
	StatusCode  int
	DeliveredAt time.Time
	Redelivery  bool
	RepoID      int64
	Payload     []byte
}

type repoState struct {
	Repo
	id          int64
	nodeID      string
	files       map[string]map[string]string // ref -> path -> content
	nextNumber  int
	pulls       map[int]*PullRequest
	issues      map[int]*Issue
	comments    []*Comment
	checkRuns   []*CheckRun
	suites      []*CheckSuite
	reviews     []*Review
	reactions   []*Reaction
	labels      map[string]bool
	permissions map[string]string
	// reviewRequests are the reviewers requested through the API, by pull request.
	reviewRequests map[int][]string
	replies        []reply
	heads          map[string][]File // head SHA -> the pull request's files at it
	compares       map[string][]File // "from...to" -> files SetCompare fixed
	// views are the recent changes of each pull request, for the read-after-write lag.
	views map[int][]prView
}

// claimNumber returns n, or the next free number when n is 0, and keeps later numbers past it:
// issues and pull requests share one sequence per repository.
func (st *repoState) claimNumber(n int) int {
	if n == 0 {
		n = st.nextNumber
	}
	if n >= st.nextNumber {
		st.nextNumber = n + 1
	}
	return n
}

// AddRepo adds a repository and returns its numeric id.
func (s *Server) AddRepo(r Repo) int64 {
	if r.DefaultBranch == "" {
		r.DefaultBranch = "main"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.repos[r.FullName()]; ok {
		return st.id
	}
	id := r.ID
	if id == 0 {
		id = s.id()
	}
	nodeID := r.NodeID
	if nodeID == "" {
		nodeID = fmt.Sprintf("R_fake%d", id)
	}
	s.repos[r.FullName()] = &repoState{
		Repo:        r,
		id:          id,
		nodeID:      nodeID,
		files:       map[string]map[string]string{},
		nextNumber:  1,
		pulls:       map[int]*PullRequest{},
		issues:      map[int]*Issue{},
		labels:      map[string]bool{},
		permissions: map[string]string{},

		reviewRequests: map[int][]string{},
	}
	return id
}

// RepoNodeID returns the node id of a repository ("" if unknown).
func (s *Server) RepoNodeID(fullName string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.repos[fullName]; ok {
		return st.nodeID
	}
	return ""
}

func (s *Server) mustRepo(fullName string) *repoState {
	st, ok := s.repos[fullName]
	if !ok {
		s.t.Fatalf("githubfake: unknown repository %s (call AddRepo first)", fullName)
		return nil
	}
	return st
}

// SetFile stores a file's content at a ref (branch name or SHA) for the Contents API.
func (s *Server) SetFile(fullName, ref, path, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	if st.files[ref] == nil {
		st.files[ref] = map[string]string{}
	}
	st.files[ref][strings.TrimPrefix(path, "/")] = content
}

// DeleteFile removes a file from a ref (nothing when it is not there).
func (s *Server) DeleteFile(fullName, ref, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mustRepo(fullName).files[ref], strings.TrimPrefix(path, "/"))
}

// SetPermission sets a collaborator's permission (admin, maintain, write, triage, read, none).
func (s *Server) SetPermission(fullName, user, permission string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustRepo(fullName).permissions[user] = permission
}

// AddPullRequest adds a pull request and returns it with defaults filled in (number, ids,
// refs, files derived from the diff).
func (s *Server) AddPullRequest(fullName string, pr PullRequest) PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	pr.Number = st.claimNumber(pr.Number)
	if pr.ID == 0 {
		pr.ID = s.id()
	}
	if pr.NodeID == "" {
		pr.NodeID = fmt.Sprintf("PR_fake%d", pr.ID)
	}
	if pr.State == "" {
		pr.State = "open"
	}
	if pr.User == "" {
		pr.User = "octocat"
	}
	if pr.BaseRef == "" {
		pr.BaseRef = st.DefaultBranch
	}
	if pr.HeadRef == "" {
		pr.HeadRef = fmt.Sprintf("feature-%d", pr.Number)
	}
	normalizePR(&pr)
	for _, l := range pr.Labels {
		st.labels[l] = true
	}
	pr.CreatedAt = s.now().UTC().Truncate(time.Second)
	pr.UpdatedAt = pr.CreatedAt
	p := pr
	st.pulls[pr.Number] = &p
	st.snapshotHead(&p)
	// A new pull request is shown at once.
	s.recordView(st, &p, time.Time{})
	return clonePR(&p)
}

func normalizePR(pr *PullRequest) {
	if len(pr.Files) == 0 && len(pr.Diff) > 0 {
		pr.Files = FilesFromDiff(pr.Diff)
	}
	if len(pr.Diff) == 0 && len(pr.Files) > 0 {
		pr.Diff = DiffFromFiles(pr.Files)
	}
	for i := range pr.Files {
		f := &pr.Files[i]
		if f.Status == "" {
			f.Status = "modified"
		}
		if f.Additions == 0 && f.Deletions == 0 {
			f.Additions, f.Deletions = countChanges(f.Patch)
		}
	}
	if len(pr.Commits) == 0 && pr.HeadSHA != "" {
		pr.Commits = []Commit{{SHA: pr.HeadSHA, Message: pr.Title, Author: pr.User}}
	}
}

// Push moves a pull request's head to a new SHA with a new diff (files derived when nil), as
// a synchronize would.
func (s *Server) Push(fullName string, number int, headSHA string, diff []byte, files []File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.mustPR(fullName, number)
	pr.HeadSHA = headSHA
	pr.Diff = diff
	pr.Files = files
	pr.Commits = append(pr.Commits, Commit{SHA: headSHA, Message: "push", Author: pr.User})
	normalizePR(pr)
	st := s.mustRepo(fullName)
	st.snapshotHead(pr)
	s.revised(st, pr)
}

func (s *Server) mustPR(fullName string, number int) *PullRequest {
	pr, ok := s.mustRepo(fullName).pulls[number]
	if !ok {
		s.t.Fatalf("githubfake: unknown pull request %s#%d", fullName, number)
		return nil
	}
	return pr
}

// PullRequest returns a copy of a pull request's current state.
func (s *Server) PullRequest(fullName string, number int) PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return clonePR(s.mustPR(fullName, number))
}

// PullBody returns a pull request's body as stored.
func (s *Server) PullBody(fullName string, number int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mustPR(fullName, number).Body
}

// SetPullBody replaces a pull request's body, as its author editing it would.
func (s *Server) SetPullBody(fullName string, number int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.mustPR(fullName, number)
	pr.Body = body
	s.revised(s.mustRepo(fullName), pr)
}

// EditPullBody changes a pull request's body with edit in one step, as its author saving an edit
// of the body they see would.
func (s *Server) EditPullBody(fullName string, number int, edit func(body string) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.mustPR(fullName, number)
	pr.Body = edit(pr.Body)
	s.revised(s.mustRepo(fullName), pr)
}

// SetLabels replaces the labels of a pull request, as a maintainer labelling it would.
func (s *Server) SetLabels(fullName string, number int, labels ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	pr := s.mustPR(fullName, number)
	pr.Labels = append([]string(nil), labels...)
	s.revised(st, pr)
	for _, l := range labels {
		st.labels[l] = true
	}
}

// AddIssue adds a plain issue and returns it with defaults filled in.
func (s *Server) AddIssue(fullName string, is Issue) Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	is.Number = st.claimNumber(is.Number)
	is.ID = s.id()
	is.NodeID = fmt.Sprintf("I_fake%d", is.ID)
	if is.State == "" {
		is.State = "open"
	}
	if is.User == "" {
		is.User = "octocat"
	}
	c := is
	c.Labels = append([]string(nil), is.Labels...)
	st.issues[is.Number] = &c
	return is
}

// IssueBody returns an issue's (or pull request's) body.
func (s *Server) IssueBody(fullName string, number int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	if is, ok := st.issues[number]; ok {
		return is.Body
	}
	return s.mustPR(fullName, number).Body
}

// Labels returns the labels on an issue or pull request.
func (s *Server) Labels(fullName string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	if is, ok := st.issues[number]; ok {
		return append([]string(nil), is.Labels...)
	}
	return append([]string(nil), s.mustPR(fullName, number).Labels...)
}

// AddComment adds a conversation comment by user (use BotLogin for one the App wrote earlier).
func (s *Server) AddComment(fullName string, number int, user, body string) Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mustRepo(fullName)
	c := s.newComment(number, user, body)
	st.comments = append(st.comments, c)
	return *c
}

func (s *Server) newComment(number int, user, body string) *Comment {
	id := s.id()
	now := s.now().UTC().Truncate(time.Second)
	return &Comment{ID: id, NodeID: fmt.Sprintf("IC_fake%d", id), Number: number, Body: body, User: user, CreatedAt: now, UpdatedAt: now}
}

// Comments returns the conversation comments of an issue or pull request, oldest first.
func (s *Server) Comments(fullName string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.mustRepo(fullName).comments {
		if c.Number == number {
			out = append(out, *c)
		}
	}
	return out
}

// CheckRuns returns the check runs for a head SHA ("" for all), in creation order.
func (s *Server) CheckRuns(fullName, headSHA string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, c := range s.mustRepo(fullName).checkRuns {
		if headSHA == "" || c.HeadSHA == headSHA {
			cc := *c
			cc.Annotations = append([]Annotation(nil), c.Annotations...)
			out = append(out, cc)
		}
	}
	return out
}

// CheckSuites returns the App's check suites of a repository.
func (s *Server) CheckSuites(fullName string) []CheckSuite {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckSuite
	for _, c := range s.mustRepo(fullName).suites {
		out = append(out, *c)
	}
	return out
}

// Reviews returns the reviews of a pull request with their inline comments.
func (s *Server) Reviews(fullName string, number int) []Review {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Review
	for _, r := range s.mustRepo(fullName).reviews {
		if r.Number == number {
			rr := *r
			rr.Comments = append([]ReviewComment(nil), r.Comments...)
			out = append(out, rr)
		}
	}
	return out
}

// ReviewComments returns all inline comments of a pull request.
func (s *Server) ReviewComments(fullName string, number int) []ReviewComment {
	var out []ReviewComment
	for _, r := range s.Reviews(fullName, number) {
		out = append(out, r.Comments...)
	}
	return out
}

// Reactions returns the reactions on a subject ("issue/N", "comment/ID", "review_comment/ID").
func (s *Server) Reactions(fullName, subject string) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Reaction
	for _, r := range s.mustRepo(fullName).reactions {
		if r.Subject == subject {
			out = append(out, *r)
		}
	}
	return out
}

// AddHookDelivery records an App webhook delivery, listed by GET /app/hook/deliveries.
func (s *Server) AddHookDelivery(d HookDelivery) HookDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.ID == 0 {
		d.ID = s.id()
	}
	if d.DeliveredAt.IsZero() {
		d.DeliveredAt = s.now().UTC()
	}
	if d.StatusCode == 0 {
		d.StatusCode = http.StatusOK
	}
	dd := d
	s.deliveries = append(s.deliveries, &dd)
	return d
}

// Redeliveries lists the delivery ids whose redelivery was requested, in order.
func (s *Server) Redeliveries() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.redeliveries...)
}

// Rerequests lists the check run and check suite re-runs requested through the API.
func (s *Server) Rerequests() []Rerequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Rerequest(nil), s.rerequests...)
}

func clonePR(p *PullRequest) PullRequest {
	c := *p
	c.Labels = append([]string(nil), p.Labels...)
	c.Diff = append([]byte(nil), p.Diff...)
	c.Files = append([]File(nil), p.Files...)
	c.Commits = append([]Commit(nil), p.Commits...)
	return c
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
