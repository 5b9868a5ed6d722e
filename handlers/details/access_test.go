package details_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/githubfake"
)

// TestPrivateRepositoryWithPublicReposIsA404: with public_repos on, an anonymous reader of a
// private repository that has the App gets exactly the answer of a repository without it: a
// 404 (offering the login), not a login redirect.
func TestPrivateRepositoryWithPublicReposIsA404(t *testing.T) {
	o := stackOptions{publicRepos: true}
	st := newStack(t, o)
	st.review(o)
	anon := st.client()
	anon.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	installed := "/details/" + fixtureRepo + "/2"
	absent := "/details/nobody/nothing/2"
	s1, b1, _ := get(t, anon, st.srv.URL+installed)
	s2, b2, _ := get(t, anon, st.srv.URL+absent)
	if s1 != http.StatusNotFound || s2 != http.StatusNotFound {
		t.Fatalf("private repository with the App: %d, repository without: %d; want 404 for both", s1, s2)
	}
	// The bodies differ only by the requested path, which the login link carries back.
	if strings.ReplaceAll(b1, "Codertocat%2FHello-World", "nobody%2Fnothing") != b2 {
		t.Fatalf("the two 404 pages differ:\n%s\n---\n%s", b1, b2)
	}
	if !strings.Contains(b1, `id="login"`) {
		t.Fatal("the 404 does not offer the login")
	}
}

// reviewPR adds pull request number of the fixture repository with its own head and delivers
// its opened webhook.
func (st *stack) reviewPR(number int, head string) {
	st.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(st.payload(stackOptions{}), &m); err != nil {
		st.t.Fatal(err)
	}
	m["number"] = number
	pr := m["pull_request"].(map[string]any)
	pr["number"] = number
	pr["id"] = 900000 + number
	pr["node_id"] = fmt.Sprintf("PR_other%d", number)
	pr["head"].(map[string]any)["sha"] = head
	payload, err := json.Marshal(m)
	if err != nil {
		st.t.Fatal(err)
	}
	if _, _, err := st.gh.AddFromPullRequestEvent(payload, []byte(fixtureDiff)); err != nil {
		st.t.Fatal(err)
	}
	req, err := githubfake.WebhookRequest(st.srv.URL+handlers.RouteHook, "pull_request", fmt.Sprintf("d-%d", time.Now().UnixNano()), st.gh.WebhookSecret(), payload)
	if err != nil {
		st.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		st.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	st.wait(fmt.Sprintf("review of #%d", number))
}

// TestHeadOfAnotherPullRequestIsNotShown: the page and the downloads of #2 do not show a head
// that belongs to #3, though #3's gate check run exists on it.
func TestHeadOfAnotherPullRequestIsNotShown(t *testing.T) {
	st := newStack(t, stackOptions{})
	st.review(stackOptions{})
	other := strings.Repeat("3", 40)
	st.reviewPR(3, other)
	st.gateRun(other)
	cl := st.client()
	st.login(cl, reader)
	if status, _, _ := get(t, cl, st.pageURL(fixtureHead)); status != http.StatusOK {
		t.Fatalf("#2's own head: %d", status)
	}
	for _, u := range []string{st.pageURL(other), st.pageURL(other) + "/receipt.json"} {
		if status, body, _ := get(t, cl, u); status != http.StatusNotFound {
			t.Fatalf("%s: %d, want 404; body:\n%.300s", u, status, body)
		}
	}
	three := st.srv.URL + "/details/" + fixtureRepo + "/3/" + other
	if status, _, _ := get(t, cl, three); status != http.StatusOK {
		t.Fatalf("#3's own head: %d", status)
	}
}

// TestReceiptGapsAreEscapedOnce: markup in a pending lens's cause reaches the receipt's gaps
// as the runtime wrote it and is escaped once on the page (shown as text, not as "&lt;").
func TestReceiptGapsAreEscapedOnce(t *testing.T) {
	o := stackOptions{reviewer: plantedReviewer{markup: func(f string) string { return "<b>" + f + "</b>" }}}
	st := newStack(t, o)
	st.review(o)
	cl := st.client()
	st.login(cl, reader)
	_, body, _ := get(t, cl, st.pageURL(""))
	i := strings.Index(body, `id="receipt-gaps"`)
	if i < 0 {
		t.Fatalf("no receipt gaps on the page:\n%s", body)
	}
	gaps := body[i:]
	gaps = gaps[:strings.Index(gaps, "</ul>")]
	if strings.Contains(gaps, "&amp;lt;") || !strings.Contains(gaps, "runtime timed out &lt;b&gt;cause&lt;/b&gt;") {
		t.Fatalf("the receipt's gaps are not escaped exactly once:\n%s", gaps)
	}
}
