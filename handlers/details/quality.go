package details

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/rs/zerolog"
)

// QualityRow is what happened to one lens's findings on one repository over a window.
type QualityRow struct {
	Repo string
	Lens string
	// Posted counts inline comments placed; Fixed the posted findings gone after a push to
	// their file; Resolved the threads resolved while the finding stayed open.
	Posted, Fixed, Dismissed, ThumbsUp, ThumbsDown, Resolved, Withdrawn, Suppressed int
}

// AddressedRate is Fixed / Posted, and false when nothing was posted.
func (q QualityRow) AddressedRate() (float64, bool) {
	if q.Posted == 0 {
		return 0, false
	}
	return float64(q.Fixed) / float64(q.Posted), true
}

// QualitySource returns the quality rows of a repository ("" for every repository) since a time.
type QualitySource func(ctx context.Context, repo string, since time.Time) ([]QualityRow, error)

// Bounds of the repository page's window, in days.
const (
	DefaultQualityDays = 30
	MaxQualityDays     = 400
)

// RepoPath is the quality page of a repository.
func RepoPath(owner, repo string) string { return Route + owner + "/" + repo }

// repoView is the repository page.
type repoView struct {
	Owner, Repo string
	Days        int
	Rows        []QualityRow
	Total       QualityRow
	Viewer      string
	CSRF        string
	// Unavailable says why there are no figures (no store on this server).
	Unavailable string
}

// serveRepo answers /details/{owner}/{repo}: the quality figures of the repository's lenses
// over a window (?days=N, 1 to MaxQualityDays), to whoever may read the pull request pages.
func (h *Handler) serveRepo(w http.ResponseWriter, r *http.Request) {
	t := target{owner: r.PathValue("owner"), repo: r.PathValue("repo")}
	if !reName.MatchString(t.owner) || !reName.MatchString(t.repo) {
		h.notFound(w, r)
		return
	}
	days := DefaultQualityDays
	if s := r.URL.Query().Get("days"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxQualityDays {
			h.notFound(w, r)
			return
		}
		days = n
	}
	if h.limited(w, r) {
		return
	}
	ctx, cancel := h.context(r, t)
	defer cancel()
	a := h.checkAccess(w, r, t, ctx)
	if a == nil {
		return
	}
	v := repoView{Owner: t.owner, Repo: t.repo, Days: days, Viewer: a.login}
	if s := h.viewer(r); s != nil {
		v.CSRF = h.csrfToken(s)
	}
	if h.o.Quality == nil {
		v.Unavailable = "This server keeps no quality figures."
	} else {
		rows, err := h.o.Quality(ctx, t.owner+"/"+t.repo, h.o.Now().Add(-time.Duration(days)*24*time.Hour))
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("details page: quality figures unreadable")
			h.unavailable(w)
			return
		}
		v.Rows, v.Total = rows, totalRow(rows)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.repoPage.Execute(w, v); err != nil && !errors.Is(err, context.Canceled) {
		zerolog.Ctx(ctx).Error().Err(err).Msg("details page: render failed")
	}
}

func totalRow(rows []QualityRow) QualityRow {
	var t QualityRow
	for _, r := range rows {
		t.Posted += r.Posted
		t.Fixed += r.Fixed
		t.Dismissed += r.Dismissed
		t.ThumbsUp += r.ThumbsUp
		t.ThumbsDown += r.ThumbsDown
		t.Resolved += r.Resolved
		t.Withdrawn += r.Withdrawn
		t.Suppressed += r.Suppressed
	}
	return t
}
