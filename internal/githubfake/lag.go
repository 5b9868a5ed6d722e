package githubfake

import (
	"net/http"
	"strconv"
	"time"
)

// DefaultReadLag is how long a pull request read shows its state from before a push or an edit,
// as GitHub's replicas do when a webhook outruns the REST API. WithReadLag(0) turns it off.
const DefaultReadLag = 300 * time.Millisecond

// WithReadLag sets the read-after-write lag: for d after a push or an edit of a pull request
// (through the API or the test helpers), reads of it show it as it was before. Other resources
// (files, comments, check runs) are not delayed.
func WithReadLag(d time.Duration) Option { return func(s *Server) { s.readLag = d } }

// prView is the pull request as reads show it from at on.
type prView struct {
	at time.Time
	pr PullRequest
}

// revised stamps a change of pr and records what reads show after the lag; s.mu is held. The
// lag runs on the wall clock, not the fake's clock, so a test with a fixed clock still sees
// its writes.
func (s *Server) revised(st *repoState, pr *PullRequest) {
	pr.UpdatedAt = s.now().UTC().Truncate(time.Second)
	s.recordView(st, pr, time.Now())
}

func (s *Server) recordView(st *repoState, pr *PullRequest, at time.Time) {
	if st.views == nil {
		st.views = map[int][]prView{}
	}
	st.views[pr.Number] = append(st.views[pr.Number], prView{at: at, pr: clonePR(pr)})
}

// shown is the pull request as a read shows it now: pr itself, or the pull request as it was
// after the newest change older than the lag; s.mu is held. A change that records no view
// (labels, say) shows once the recorded ones are past the lag.
func (s *Server) shown(st *repoState, pr *PullRequest) *PullRequest {
	views := st.views[pr.Number]
	if s.readLag <= 0 || len(views) == 0 {
		return pr
	}
	cutoff := time.Now().Add(-s.readLag)
	i := 0
	for j, v := range views {
		if !v.at.After(cutoff) {
			i = j
		}
	}
	st.views[pr.Number] = views[i:] // older changes can no longer be shown
	if i == len(views)-1 {
		return pr
	}
	c := clonePR(&views[i].pr)
	return &c
}

// CatchUp ends the read lag of every change made so far, as GitHub's replicas catching up.
func (s *Server) CatchUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.repos {
		for n, views := range st.views {
			if len(views) > 0 {
				st.views[n] = views[len(views)-1:]
			}
		}
	}
}

// pullRevised records a change of the pull request the request's {number} names, if it is one
// (labels are shared with issues); s.mu is held.
func (s *Server) pullRevised(st *repoState, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("number"))
	if pr := st.pulls[n]; err == nil && pr != nil {
		s.revised(st, pr)
	}
}
