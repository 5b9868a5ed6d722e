package details_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/review"
)

// TestRepositoryQualityPage: /details/{owner}/{repo} shows the quality figures of the
// repository's lenses over the window asked, under the pull request page's access rules: a
// reader sees them, someone who cannot read the repository gets the same 404 as for a missing
// one, an anonymous reader is sent to log in; /metrics exports the same figures.
func TestRepositoryQualityPage(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	src := func(_ context.Context, repo string, since time.Time) ([]details.QualityRow, error) {
		mu.Lock()
		asked = append(asked, repo)
		mu.Unlock()
		if repo != "" && repo != fixtureRepo {
			return nil, nil
		}
		return []details.QualityRow{
			{Repo: fixtureRepo, Lens: "bugs", Posted: 8, Fixed: 6, Dismissed: 1, ThumbsUp: 2, ThumbsDown: 1, Withdrawn: 3, Suppressed: 2},
			{Repo: fixtureRepo, Lens: "style", Posted: 0, Withdrawn: 1},
		}, nil
	}
	st := newStack(t, stackOptions{quality: src})
	page := st.srv.URL + details.RepoPath("Codertocat", "Hello-World")

	anon := st.client()
	anon.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if code, _, h := get(t, anon, page); code != http.StatusFound || !strings.Contains(h.Get("Location"), "/api/github/auth") {
		t.Fatalf("anonymous: %d %v", code, h)
	}
	outsider := st.client()
	st.login(outsider, stranger)
	if code, _, _ := get(t, outsider, page); code != http.StatusNotFound {
		t.Fatalf("a user who cannot read the repository: %d", code)
	}
	c := st.client()
	st.login(c, reader)
	code, body, _ := get(t, c, page+"?days=7")
	if code != http.StatusOK {
		t.Fatalf("reader: %d\n%s", code, body)
	}
	for _, want := range []string{`id="days">7<`, `>bugs<`, "<td>75 %</td>", `id="total"`, "<td>8</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	mu.Lock()
	last := asked[len(asked)-1]
	mu.Unlock()
	if last != fixtureRepo {
		t.Fatalf("figures asked for %q", last)
	}
	if code, _, _ := get(t, c, page+"?days=0"); code != http.StatusNotFound {
		t.Fatalf("days=0: %d", code)
	}

	resp, err := http.Get(st.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`lensgate_review_quality_findings{event="posted",lens="bugs",repo="Codertocat/Hello-World"} 8`,
		`lensgate_review_quality_addressed_ratio{lens="bugs",repo="Codertocat/Hello-World"} 0.75`,
		`lensgate_review_quality_read_failed 0`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(metrics), `lensgate_review_quality_addressed_ratio{lens="style"`) {
		t.Error("an addressed rate is exported for a lens that posted nothing")
	}
}

// withdrawingReviewer is plantedReviewer whose review also withdrew a finding on verification
// and suppressed one by earlier feedback.
type withdrawingReviewer struct{ plantedReviewer }

func (w withdrawingReviewer) Review(ctx context.Context, s *review.Subject, cfg *config.Repo) (*review.Decision, error) {
	d, err := w.plantedReviewer.Review(ctx, s, cfg)
	if err != nil {
		return nil, err
	}
	d.Verification = review.Verification{Mode: config.VerifyDeterministic, Checked: 2,
		Withdrawn: []review.Withdrawal{{Finding: review.Finding{ID: "LG-aaaaaaaaaaaa", Lens: "security", Severity: review.SeverityHigh,
			Path: "main.go", Line: 90, Title: "Hallucinated overflow"}, Check: review.CheckLocation, Reason: "line 90 of main.go is not on the new side of the diff"}},
		Suppressed: []review.Suppression{{Finding: review.Finding{ID: "LG-bbbbbbbbbbbb", Lens: "security", Severity: review.SeverityLow,
			Title: "Style <b>nit</b>"}, Reason: "the same finding was dismissed on #1"}},
	}
	return d, nil
}

// TestHeldFindingsOnThePage: a finding withdrawn on verification and one suppressed by earlier
// feedback are listed on the pull request's page with why (escaped), and on no comment of the
// pull request.
func TestHeldFindingsOnThePage(t *testing.T) {
	o := stackOptions{reviewer: withdrawingReviewer{}}
	st := newStack(t, o)
	st.review(o)
	c := st.client()
	st.login(c, reader)
	code, body, _ := get(t, c, st.pageURL(""))
	if code != http.StatusOK {
		t.Fatalf("page: %d", code)
	}
	for _, want := range []string{`id="held"`, "Hallucinated overflow", "withdrawn on verification (location)",
		"line 90 of main.go is not on the new side of the diff", "suppressed by earlier feedback", "Style &lt;b&gt;nit&lt;/b&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, cm := range st.gh.Comments(fixtureRepo, fixturePR) {
		if strings.Contains(cm.Body, "Hallucinated overflow") || strings.Contains(cm.Body, "Style") {
			t.Fatalf("a held finding is in a comment of the pull request:\n%s", cm.Body)
		}
	}
	for _, rc := range st.gh.ReviewComments(fixtureRepo, fixturePR) {
		if strings.Contains(rc.Body, "Hallucinated") {
			t.Fatal("a held finding was placed inline")
		}
	}
}
