package githubfake

import (
	"crypto/sha1" //nolint:gosec // git object ids are SHA-1 by definition
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/go-github/v62/github"
)

// GitHub's documented limits on check-run output.
const (
	MaxAnnotationsPerRequest = 50
	MaxOutputChars           = 65535
)

var (
	checkStatuses    = map[string]bool{"queued": true, "in_progress": true, "completed": true, "waiting": true, "requested": true, "pending": true}
	checkConclusions = map[string]bool{"action_required": true, "cancelled": true, "failure": true, "neutral": true, "success": true, "skipped": true, "stale": true, "timed_out": true}
	annotationLevels = map[string]bool{"notice": true, "warning": true, "failure": true}
)

func gitBlobSHA(content string) string {
	h := sha1.New() //nolint:gosec
	fmt.Fprintf(h, "blob %d\x00", len(content))
	_, _ = io.WriteString(h, content)
	return hex.EncodeToString(h.Sum(nil))
}

// checkOutputErrors validates an output object the way GitHub does. Lengths are counted in
// bytes, which is at least as strict as GitHub's character count.
func checkOutputErrors(o *github.CheckRunOutput) []string {
	if o == nil {
		return nil
	}
	var errs []string
	if o.GetTitle() == "" {
		errs = append(errs, "output.title is missing")
	}
	if o.Summary == nil {
		errs = append(errs, "output.summary is missing")
	}
	if len(o.GetSummary()) > MaxOutputChars {
		errs = append(errs, fmt.Sprintf("Only %d characters are allowed; %d were supplied.", MaxOutputChars, len(o.GetSummary())))
	}
	if len(o.GetText()) > MaxOutputChars {
		errs = append(errs, fmt.Sprintf("Only %d characters are allowed; %d were supplied.", MaxOutputChars, len(o.GetText())))
	}
	if len(o.Annotations) > MaxAnnotationsPerRequest {
		errs = append(errs, fmt.Sprintf("Only %d annotations are allowed per request; %d were supplied.", MaxAnnotationsPerRequest, len(o.Annotations)))
	}
	for i, a := range o.Annotations {
		if a.GetPath() == "" || a.StartLine == nil || a.EndLine == nil || a.GetMessage() == "" || !annotationLevels[a.GetAnnotationLevel()] {
			errs = append(errs, fmt.Sprintf("annotation %d is missing path, start_line, end_line, message or a valid annotation_level", i))
		}
	}
	return errs
}

func applyOutput(c *CheckRun, o *github.CheckRunOutput) {
	if o == nil {
		return
	}
	c.Title = o.GetTitle()
	c.Summary = o.GetSummary()
	if o.Text != nil {
		c.Text = o.GetText()
	}
	// GitHub appends annotations across updates of one run.
	for _, a := range o.Annotations {
		c.Annotations = append(c.Annotations, Annotation{
			Path: a.GetPath(), StartLine: a.GetStartLine(), EndLine: a.GetEndLine(),
			Level: a.GetAnnotationLevel(), Message: a.GetMessage(), Title: a.GetTitle(), RawDetails: a.GetRawDetails(),
		})
	}
}

func (s *Server) suiteFor(st *repoState, sha string) *CheckSuite {
	for _, su := range st.suites {
		if su.HeadSHA == sha {
			return su
		}
	}
	su := &CheckSuite{ID: s.id(), HeadSHA: sha}
	st.suites = append(st.suites, su)
	return su
}

func validateStatus(status, conclusion string) []string {
	var errs []string
	if status != "" && !checkStatuses[status] {
		errs = append(errs, "status is not included in the list")
	}
	if conclusion != "" && !checkConclusions[conclusion] {
		errs = append(errs, "conclusion is not included in the list")
	}
	if status == "completed" && conclusion == "" {
		errs = append(errs, "conclusion is required when status is completed")
	}
	return errs
}

func (s *Server) createCheckRun(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	var in github.CreateCheckRunOptions
	if !decodeBody(w, r, &in) {
		return
	}
	status := in.GetStatus()
	if status == "" {
		status = "queued"
	}
	if in.GetConclusion() != "" {
		status = "completed"
	}
	errs := validateStatus(status, in.GetConclusion())
	if in.Name == "" || in.HeadSHA == "" {
		errs = append(errs, "name and head_sha are required")
	}
	errs = append(errs, checkOutputErrors(in.Output)...)
	if len(errs) > 0 {
		writeError(w, http.StatusUnprocessableEntity, "Invalid request.", errs...)
		return
	}
	now := s.now().UTC().Truncate(time.Second)
	c := &CheckRun{
		ID: s.id(), Name: in.Name, HeadSHA: in.HeadSHA, Status: status, Conclusion: in.GetConclusion(),
		ExternalID: in.GetExternalID(), DetailsURL: in.GetDetailsURL(), SuiteID: s.suiteFor(st, in.HeadSHA).ID,
		StartedAt: now,
	}
	if in.StartedAt != nil {
		c.StartedAt = in.StartedAt.Time
	}
	if status == "completed" {
		c.CompletedAt = now
	}
	applyOutput(c, in.Output)
	st.checkRuns = append(st.checkRuns, c)
	s.observeCheckRun(c)
	writeJSON(w, http.StatusCreated, s.checkRunJSON(st, c))
}

func (s *Server) findCheckRun(w http.ResponseWriter, r *http.Request) (*repoState, *CheckRun) {
	st := s.repo(w, r)
	if st == nil {
		return nil, nil
	}
	id := pathID(r)
	for _, c := range st.checkRuns {
		if c.ID == id {
			return st, c
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
	return nil, nil
}

func (s *Server) updateCheckRun(w http.ResponseWriter, r *http.Request) {
	st, c := s.findCheckRun(w, r)
	if c == nil {
		return
	}
	var in github.UpdateCheckRunOptions
	if !decodeBody(w, r, &in) {
		return
	}
	status := in.GetStatus()
	if in.GetConclusion() != "" {
		status = "completed"
	}
	conclusion := in.GetConclusion()
	errs := validateStatus(status, conclusion)
	errs = append(errs, checkOutputErrors(in.Output)...)
	if len(errs) > 0 {
		writeError(w, http.StatusUnprocessableEntity, "Invalid request.", errs...)
		return
	}
	if in.Name != "" {
		c.Name = in.Name
	}
	switch {
	case status != "" && status != "completed" && c.Status == "completed":
		// Like GitHub: a completed check run is not reopened; it keeps its status and
		// conclusion (a re-run is a new check run).
	case status != "":
		c.Status = status
		if status != "completed" {
			c.Conclusion, c.CompletedAt = "", time.Time{}
		}
	}
	if conclusion != "" {
		c.Conclusion = conclusion
	}
	if status == "completed" {
		c.CompletedAt = s.now().UTC().Truncate(time.Second)
		if in.CompletedAt != nil {
			c.CompletedAt = in.CompletedAt.Time
		}
	}
	if in.ExternalID != nil {
		c.ExternalID = in.GetExternalID()
	}
	if in.DetailsURL != nil {
		c.DetailsURL = in.GetDetailsURL()
	}
	applyOutput(c, in.Output)
	c.Updates++
	s.observeCheckRun(c)
	writeJSON(w, http.StatusOK, s.checkRunJSON(st, c))
}

func (s *Server) getCheckRun(w http.ResponseWriter, r *http.Request) {
	if st, c := s.findCheckRun(w, r); c != nil {
		writeJSON(w, http.StatusOK, s.checkRunJSON(st, c))
	}
}

func (s *Server) listAnnotations(w http.ResponseWriter, r *http.Request) {
	_, c := s.findCheckRun(w, r)
	if c == nil {
		return
	}
	out := make([]*github.CheckRunAnnotation, 0, len(c.Annotations))
	for _, a := range c.Annotations {
		out = append(out, &github.CheckRunAnnotation{
			Path: github.String(a.Path), StartLine: github.Int(a.StartLine), EndLine: github.Int(a.EndLine),
			AnnotationLevel: github.String(a.Level), Message: github.String(a.Message),
			Title: github.String(a.Title), RawDetails: github.String(a.RawDetails),
		})
	}
	writePage(w, r, out)
}

func (s *Server) listCheckRunsForRef(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	ref := r.PathValue("ref")
	sha := ref
	for _, p := range st.pulls {
		if p.HeadRef == ref {
			sha = p.HeadSHA
		}
	}
	q := r.URL.Query()
	name, status, filter := q.Get("check_name"), q.Get("status"), q.Get("filter")
	var matched []*CheckRun
	for _, c := range st.checkRuns {
		if c.HeadSHA != sha || (name != "" && c.Name != name) || (status != "" && c.Status != status) {
			continue
		}
		matched = append(matched, c)
	}
	// filter=latest (the default) keeps the most recent run per name.
	if filter != "all" {
		latest := map[string]*CheckRun{}
		var order []string
		for _, c := range matched {
			if _, ok := latest[c.Name]; !ok {
				order = append(order, c.Name)
			}
			latest[c.Name] = c
		}
		matched = matched[:0]
		for _, n := range order {
			matched = append(matched, latest[n])
		}
	}
	lo, hi := page(w, r, len(matched))
	runs := make([]*github.CheckRun, 0, hi-lo)
	for _, c := range matched[lo:hi] {
		runs = append(runs, s.checkRunJSON(st, c))
	}
	writeJSON(w, http.StatusOK, &github.ListCheckRunsResults{Total: github.Int(len(matched)), CheckRuns: runs})
}

func (s *Server) listCheckSuitesForRef(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	ref := r.PathValue("ref")
	suites := []*github.CheckSuite{}
	for _, su := range st.suites {
		if su.HeadSHA == ref {
			suites = append(suites, &github.CheckSuite{ID: github.Int64(su.ID), HeadSHA: github.String(su.HeadSHA), App: s.appJSON()})
		}
	}
	writeJSON(w, http.StatusOK, &github.ListCheckSuiteResults{Total: github.Int(len(suites)), CheckSuites: suites})
}

func (s *Server) rerequestCheckRun(w http.ResponseWriter, r *http.Request) {
	_, c := s.findCheckRun(w, r)
	if c == nil {
		return
	}
	s.rerequests = append(s.rerequests, Rerequest{Kind: "check_run", ID: c.ID})
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte("{}"))
}

func (s *Server) rerequestCheckSuite(w http.ResponseWriter, r *http.Request) {
	st := s.repo(w, r)
	if st == nil {
		return
	}
	id := pathID(r)
	for _, su := range st.suites {
		if su.ID == id {
			su.Rerun++
			s.rerequests = append(s.rerequests, Rerequest{Kind: "check_suite", ID: id})
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte("{}"))
			return
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
}

// WithCheckRunObserver has fn called with every check run as a create or update leaves it, at
// the moment it is written: benchmarks time what the App shows without polling. fn runs under
// the fake's lock, so it must return quickly and must not call the Server.
func WithCheckRunObserver(fn func(CheckRun)) Option {
	return func(s *Server) { s.checkObserver = fn }
}

func (s *Server) observeCheckRun(c *CheckRun) {
	if s.checkObserver != nil {
		cp := *c
		cp.Annotations = nil // not the observer's to hold
		s.checkObserver(cp)
	}
}
