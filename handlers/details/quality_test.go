package details_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/details"
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
