package githubfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/google/go-github/v62/github"
)

var reviewStates = map[string]string{
	"COMMENT":         "COMMENTED",
	"REQUEST_CHANGES": "CHANGES_REQUESTED",
	"APPROVE":         "APPROVED",
	"":                "PENDING",
}

// commentTarget checks one draft comment against the pull request's diff, as GitHub does
// before creating any part of a review.
func commentTarget(pr *PullRequest, c *github.DraftReviewComment) (ReviewComment, error) {
	rc := ReviewComment{Path: c.GetPath(), Body: c.GetBody()}
	if rc.Body == "" {
		return rc, fmt.Errorf("body is missing")
	}
	var patch *File
	for i := range pr.Files {
		if pr.Files[i].Filename == rc.Path {
			patch = &pr.Files[i]
		}
	}
	if patch == nil {
		return rc, fmt.Errorf("Path could not be resolved")
	}
	pl := parsePatch(patch.Patch)
	switch {
	case c.Line != nil:
		rc.Line = c.GetLine()
		rc.Side = c.GetSide()
		if rc.Side == "" {
			rc.Side = "RIGHT"
		}
		lines := pl.right
		if rc.Side == "LEFT" {
			lines = pl.left
		} else if rc.Side != "RIGHT" {
			return rc, fmt.Errorf("side is not a valid value")
		}
		if !lines[rc.Line] {
			return rc, fmt.Errorf("Line could not be resolved")
		}
		if c.StartLine != nil {
			rc.StartLine = c.GetStartLine()
			if rc.StartLine >= rc.Line || !lines[rc.StartLine] {
				return rc, fmt.Errorf("Start line could not be resolved")
			}
		}
	case c.Position != nil:
		rc.Position = c.GetPosition()
		if rc.Position < 1 || rc.Position > pl.positions {
			return rc, fmt.Errorf("Position could not be resolved")
		}
	default:
		return rc, fmt.Errorf("line or position is required")
	}
	return rc, nil
}

func (s *Server) createReview(w http.ResponseWriter, r *http.Request) {
	st, pr := s.pull(w, r)
	if pr == nil {
		return
	}
	var in github.PullRequestReviewRequest
	if !decodeBody(w, r, &in) {
		return
	}
	state, ok := reviewStates[in.GetEvent()]
	if !ok {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable Entity", "event is not a valid value")
		return
	}
	if (in.GetEvent() == "REQUEST_CHANGES" || in.GetEvent() == "COMMENT") && in.GetBody() == "" && len(in.Comments) == 0 {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable Entity", "Review body is required for this event")
		return
	}
	rv := &Review{
		ID: s.id(), Number: pr.Number, User: s.BotLogin(), Event: in.GetEvent(), State: state,
		Body: in.GetBody(), CommitID: in.GetCommitID(),
	}
	if rv.CommitID == "" {
		rv.CommitID = pr.HeadSHA
	}
	if state != "PENDING" {
		rv.SubmittedAt = s.now().UTC().Truncate(time.Second)
	}
	rv.NodeID = fmt.Sprintf("PRR_fake%d", rv.ID)
	var errs []string
	for _, c := range in.Comments {
		rc, err := commentTarget(pr, c)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		rc.ID = s.id()
		rc.ReviewID = rv.ID
		rc.User = rv.User
		rc.CommitID = rv.CommitID
		rv.Comments = append(rv.Comments, rc)
	}
	if len(errs) > 0 {
		// GitHub rejects the whole review when any comment cannot be placed.
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable Entity", errs...)
		return
	}
	st.reviews = append(st.reviews, rv)
	writeJSON(w, http.StatusOK, s.reviewJSON(st, rv))
}

func (s *Server) findReview(w http.ResponseWriter, r *http.Request) (*repoState, *Review) {
	st, pr := s.pull(w, r)
	if pr == nil {
		return nil, nil
	}
	id := pathID(r)
	for _, rv := range st.reviews {
		if rv.ID == id && rv.Number == pr.Number {
			return st, rv
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
	return nil, nil
}

func (s *Server) submitReview(w http.ResponseWriter, r *http.Request) {
	st, rv := s.findReview(w, r)
	if rv == nil {
		return
	}
	var in struct {
		Body  string `json:"body"`
		Event string `json:"event"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	state, ok := reviewStates[in.Event]
	if !ok || in.Event == "" || rv.State != "PENDING" {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable Entity", "review cannot be submitted")
		return
	}
	rv.Event, rv.State = in.Event, state
	rv.SubmittedAt = s.now().UTC().Truncate(time.Second)
	if in.Body != "" {
		rv.Body = in.Body
	}
	writeJSON(w, http.StatusOK, s.reviewJSON(st, rv))
}

func (s *Server) listReviews(w http.ResponseWriter, r *http.Request) {
	st, pr := s.pull(w, r)
	if pr == nil {
		return
	}
	var out []*github.PullRequestReview
	for _, rv := range st.reviews {
		if rv.Number == pr.Number {
			out = append(out, s.reviewJSON(st, rv))
		}
	}
	writePage(w, r, out)
}

func (s *Server) listReviewCommentsOfReview(w http.ResponseWriter, r *http.Request) {
	st, rv := s.findReview(w, r)
	if rv == nil {
		return
	}
	out := make([]*github.PullRequestComment, 0, len(rv.Comments))
	for i := range rv.Comments {
		out = append(out, s.reviewCommentJSON(st, rv.Number, &rv.Comments[i]))
	}
	writePage(w, r, out)
}

func (s *Server) listReviewComments(w http.ResponseWriter, r *http.Request) {
	st, pr := s.pull(w, r)
	if pr == nil {
		return
	}
	out := []*github.PullRequestComment{}
	for _, rv := range st.reviews {
		if rv.Number != pr.Number {
			continue
		}
		for i := range rv.Comments {
			out = append(out, s.reviewCommentJSON(st, rv.Number, &rv.Comments[i]))
		}
	}
	for _, rp := range st.replies {
		if rp.number == pr.Number {
			out = append(out, s.reviewCommentJSON(st, rp.number, rp.c))
		}
	}
	writePage(w, r, out)
}

func (s *Server) deliveryJSON(d *HookDelivery, full bool) *github.HookDelivery {
	out := &github.HookDelivery{
		ID: github.Int64(d.ID), GUID: github.String(d.GUID), DeliveredAt: &github.Timestamp{Time: d.DeliveredAt},
		Redelivery: github.Bool(d.Redelivery), Duration: ptr(0.1),
		Status: github.String(http.StatusText(d.StatusCode)), StatusCode: github.Int(d.StatusCode),
		Event: github.String(d.Event), Action: github.String(d.Action),
		InstallationID: github.Int64(s.installationID), RepositoryID: github.Int64(d.RepoID),
	}
	if full {
		raw := json.RawMessage(d.Payload)
		if len(raw) == 0 {
			raw = json.RawMessage("{}")
		}
		out.Request = &github.HookRequest{
			Headers:    map[string]string{"X-GitHub-Event": d.Event, "X-GitHub-Delivery": d.GUID},
			RawPayload: &raw,
		}
	}
	return out
}

// listDeliveries pages newest first with GitHub's cursor links.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	ds := append([]*HookDelivery(nil), s.deliveries...)
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].DeliveredAt.After(ds[j].DeliveredAt) })
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 || per > 100 {
		per = 30
	}
	start, err := strconv.Atoi(q.Get("cursor"))
	if err != nil || start < 0 || start > len(ds) {
		start = 0
	}
	end := start + per
	if end > len(ds) {
		end = len(ds)
	}
	if end < len(ds) {
		w.Header().Set("Link", fmt.Sprintf(`<%s?per_page=%d&cursor=%d>; rel="next"`, s.apiURL("/app/hook/deliveries"), per, end))
	}
	out := make([]*github.HookDelivery, 0, end-start)
	for _, d := range ds[start:end] {
		out = append(out, s.deliveryJSON(d, false))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request) {
	id := pathID(r)
	for _, d := range s.deliveries {
		if d.ID == id {
			writeJSON(w, http.StatusOK, s.deliveryJSON(d, true))
			return
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
}

func (s *Server) redeliver(w http.ResponseWriter, r *http.Request) {
	id := pathID(r)
	for _, d := range s.deliveries {
		if d.ID == id {
			s.redeliveries = append(s.redeliveries, id)
			writeJSON(w, http.StatusAccepted, map[string]string{})
			return
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
}

func ptr[T any](v T) *T { return &v }
