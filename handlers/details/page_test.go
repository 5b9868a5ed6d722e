package details_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/internal/githubfake"
)

func TestCheckRunAndCommentLinkThePage(t *testing.T) {
	st := newStack(t, stackOptions{})
	st.review(stackOptions{})
	cr := st.gateRun(fixtureHead)
	if want := st.pageURL(fixtureHead); cr.DetailsURL != want {
		t.Fatalf("details_url %q, want %q", cr.DetailsURL, want)
	}
	var sticky string
	for _, c := range st.gh.Comments(fixtureRepo, fixturePR) {
		if strings.HasPrefix(c.Body, "<!-- lensgate:advisory -->") {
			sticky = c.Body
		}
	}
	if !strings.Contains(sticky, "[Details]("+st.pageURL("")+")") {
		t.Fatalf("advisory comment does not link the page:\n%s", sticky)
	}
	if !strings.Contains(sticky, "<!-- lensgate:heads "+fixtureHead+" -->") {
		t.Fatalf("advisory comment does not name the reviewed head:\n%s", sticky)
	}
}

func TestAccess(t *testing.T) {
	st := newStack(t, stackOptions{})
	st.review(stackOptions{})

	anon := st.client()
	anon.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := anon.Get(st.pageURL(""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), "/api/github/auth?return=") {
		t.Fatalf("anonymous reader: %d Location %q, want a login redirect", resp.StatusCode, resp.Header.Get("Location"))
	}

	cases := []struct {
		login      string
		wantStatus int
		wantText   string
	}{
		{writer, http.StatusOK, `id="lenses"`},
		{reader, http.StatusOK, `id="lenses"`},
		{stranger, http.StatusNotFound, "There is no page here, or you cannot see it."},
	}
	for _, c := range cases {
		t.Run(c.login, func(t *testing.T) {
			cl := st.client()
			st.login(cl, c.login)
			status, body, hdr := get(t, cl, st.pageURL(""))
			if status != c.wantStatus || !strings.Contains(body, c.wantText) {
				t.Fatalf("status %d, want %d with %q; body:\n%s", status, c.wantStatus, c.wantText, body)
			}
			if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
				t.Fatalf("CSP %q", csp)
			}
			// The same vague answer for a pull request that does not exist and a repository
			// without the App: nothing tells them apart from a missing permission.
			if c.login == stranger {
				for _, u := range []string{st.srv.URL + "/details/" + fixtureRepo + "/999", st.srv.URL + "/details/nobody/nothing/1"} {
					s2, b2, _ := get(t, cl, u)
					if s2 != http.StatusNotFound || b2 != body {
						t.Fatalf("%s: %d, want the same 404 page", u, s2)
					}
				}
			}
		})
	}
}

func TestSessionCookieIsSignedAndHttpOnly(t *testing.T) {
	st := newStack(t, stackOptions{})
	st.review(stackOptions{})
	cl := st.client()
	st.login(cl, reader)
	u, _ := url.Parse(st.srv.URL)
	var sess *http.Cookie
	for _, c := range cl.Jar.Cookies(u) {
		if c.Name == "lensgate_session" {
			sess = c
		}
	}
	if sess == nil {
		t.Fatal("no session cookie after login")
	}
	// The jar hides attributes; read them from a fresh login's Set-Cookie.
	raw := st.loginSetCookie(reader)
	for _, want := range []string{"HttpOnly", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(raw, want) {
			t.Fatalf("Set-Cookie %q lacks %s", raw, want)
		}
	}
	// A forged session (a login changed in the value) is not a session.
	body, sig, _ := strings.Cut(sess.Value, ".")
	forged := &http.Cookie{Name: "lensgate_session", Value: body[:len(body)-1] + flip(body[len(body)-1]) + "." + sig}
	cl2 := st.client()
	cl2.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cl2.Jar.SetCookies(u, []*http.Cookie{forged})
	resp, err := cl2.Get(st.pageURL(""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("forged session answered %d, want a login redirect", resp.StatusCode)
	}
}

func flip(b byte) string {
	if b == 'A' {
		return "B"
	}
	return "A"
}

// loginSetCookie logs in without a jar and returns the session's Set-Cookie header.
func (st *stack) loginSetCookie(login string) string {
	st.t.Helper()
	cl := st.client()
	var found string
	cl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.Response != nil {
			for _, h := range req.Response.Header.Values("Set-Cookie") {
				if strings.HasPrefix(h, "lensgate_session=") {
					found = h
				}
			}
		}
		return nil
	}
	st.login(cl, login)
	return found
}

func TestPublicRepositoryWithoutLogin(t *testing.T) {
	o := stackOptions{public: true, publicRepos: true}
	st := newStack(t, o)
	st.review(o)
	status, body, _ := get(t, st.client(), st.pageURL(""))
	if status != http.StatusOK || !strings.Contains(body, "Viewing a public repository without login.") {
		t.Fatalf("status %d; body:\n%s", status, body)
	}
	if strings.Contains(body, `id="rerun-form"`) {
		t.Fatal("an anonymous reader is offered the re-run")
	}
}

func TestStaleHeadOffersRerunToWritersOnly(t *testing.T) {
	st := newStack(t, stackOptions{})
	st.review(stackOptions{})
	// A push whose webhook never arrived, long enough ago for GitHub's replicas to show it.
	st.gh.Push(fixtureRepo, fixturePR, newHead, []byte(fixtureDiff+"+TODO: more\n"), nil)
	st.gh.CatchUp()

	rc := st.client()
	st.login(rc, reader)
	_, body, _ := get(t, rc, st.pageURL(""))
	if !strings.Contains(body, `id="stale"`) || strings.Contains(body, `id="rerun-form"`) {
		t.Fatalf("reader: want the stale banner without the re-run form; body:\n%s", body)
	}

	wc := st.client()
	st.login(wc, writer)
	_, body, _ = get(t, wc, st.pageURL(""))
	if !strings.Contains(body, `id="rerun-form"`) {
		t.Fatalf("writer: no re-run form; body:\n%s", body)
	}
	token := hiddenValue(body, "csrf")
	post := func(c *http.Client, form url.Values, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, st.pageURL("")+"/rerun", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		defer func() { c.CheckRedirect = nil }()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post(wc, url.Values{}, ""); s != http.StatusForbidden {
		t.Fatalf("POST without a CSRF token: %d, want 403", s)
	}
	if s := post(wc, url.Values{"csrf": {token}}, "http://evil.example"); s != http.StatusForbidden {
		t.Fatalf("POST from another origin: %d, want 403", s)
	}
	if s := post(wc, url.Values{"csrf": {token}}, "null"); s != http.StatusForbidden {
		t.Fatalf("POST with Origin: null: %d, want 403", s)
	}
	if s := post(rc, url.Values{"csrf": {token}}, ""); s != http.StatusForbidden {
		t.Fatalf("reader with the writer's token: %d, want 403", s)
	}
	if s := post(wc, url.Values{"csrf": {token}}, st.srv.URL); s != http.StatusSeeOther {
		t.Fatalf("writer's re-run: %d, want 303", s)
	}
	st.wait("re-run of the new head")
	if cr := st.gateRun(newHead); cr.Status != "completed" {
		t.Fatalf("new head's gate check run: %+v", cr)
	}
	_, body, _ = get(t, wc, st.pageURL(""))
	if strings.Contains(body, `id="stale"`) {
		t.Fatal("still stale after the re-run")
	}
	// The history shows both heads and what superseded what.
	if !strings.Contains(body, newHead[:12]) || !strings.Contains(body, fixtureHead[:12]) || !strings.Contains(body, "new head "+newHead) {
		t.Fatalf("history lacks the heads or the supersession; body:\n%s", body)
	}
}

func TestReceiptDownloadIsTheExactEnvelope(t *testing.T) {
	st := newStack(t, stackOptions{})
	st.review(stackOptions{})
	cl := st.client()
	st.login(cl, reader)
	status, body, hdr := get(t, cl, st.pageURL(fixtureHead)+"/receipt.json")
	if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Disposition"), "attachment") {
		t.Fatalf("download: %d %v", status, hdr)
	}
	text := st.gateRun(fixtureHead).Text
	i := strings.Index(text, "```json\n")
	j := strings.Index(text[i+8:], "\n```")
	if want := text[i+8:i+8+j] + "\n"; body != want {
		t.Fatalf("downloaded bytes differ from the published envelope")
	}
	_ = githubfake.OAuthClientID
}

// BenchmarkPageView: one logged-in page view of a reviewed pull request against the fake
// GitHub, with the GitHub requests it costs.
func BenchmarkPageView(b *testing.B) {
	st := newStack(b, stackOptions{})
	st.review(stackOptions{})
	cl := st.client()
	st.login(cl, reader)
	st.gh.ResetCalls()
	b.ResetTimer()
	for b.Loop() {
		if status, _, _ := get(b, cl, st.pageURL("")); status != http.StatusOK {
			b.Fatalf("status %d", status)
		}
	}
	b.ReportMetric(float64(st.gh.TotalCalls())/float64(b.N), "github-calls/op")
}

// BenchmarkPageViewLedger: a logged-in page view with an audit ledger of 16 and 64 MiB of
// other pull requests' records, plus this one's.
func BenchmarkPageViewLedger(b *testing.B) {
	for _, mib := range []int{16, 64} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			o := stackOptions{ledgerBytes: mib << 20, viewsPerMinute: 1 << 30}
			st := newStack(b, o)
			st.review(o)
			cl := st.client()
			st.login(cl, reader)
			b.ResetTimer()
			for b.Loop() {
				if status, body, _ := get(b, cl, st.pageURL("")); status != http.StatusOK || !strings.Contains(body, `id="audit-chain"`) {
					b.Fatalf("status %d", status)
				}
			}
		})
	}
}

// TestViewsAreRateLimitedPerClient: a client that asks for more pages than its burst gets 429
// with a Retry-After; another client is still served.
func TestViewsAreRateLimitedPerClient(t *testing.T) {
	o := stackOptions{public: true, publicRepos: true}
	st := newStack(t, o)
	st.review(o)
	anon := st.client()
	limited := 0
	for i := 0; i < 40; i++ {
		resp, err := anon.Get(st.pageURL(""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			limited++
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		}
	}
	if limited == 0 {
		t.Fatal("40 views in a row from one client were all served")
	}
	cl := st.client()
	st.login(cl, reader)
	if status, _, _ := get(t, cl, st.pageURL("")); status != http.StatusOK {
		t.Fatalf("a logged-in reader after another client's burst: %d", status)
	}
}

func TestPolicyProblemsAndFileAreShown(t *testing.T) {
	st := newStack(t, stackOptions{})
	// The base branch's policy has keys .asdd.yml does not know: the gate fails unreviewed and
	// says why.
	st.gh.SetFile(fixtureRepo, "master", ".asdd.yml", "version: 1\nlenses:\n  - name: security\n")
	st.review(stackOptions{})
	cl := st.client()
	st.login(cl, reader)
	_, body, _ := get(t, cl, st.pageURL(""))
	i := strings.Index(body, `<ul id="policy-problems">`)
	if i < 0 {
		t.Fatalf("no policy problems on the page:\n%s", body)
	}
	problems := body[i : i+strings.Index(body[i:], "</ul>")]
	if !strings.Contains(problems, ".asdd.yml") {
		t.Fatalf("problems do not name the file: %s", problems)
	}
	if !strings.Contains(body, `/Codertocat/Hello-World/blob/master/.asdd.yml"><code>.asdd.yml</code>`) || !strings.Contains(body, "unknown key &#34;version&#34;") {
		t.Fatalf("the policy file is not linked at its ref:\n%s", body[strings.Index(body, `id="policy"`):][:800])
	}
}

// The page reads GitHub through the server's cache, which revalidates every stored answer: read
// twice before the review (a 200, then a 304 that repeats GitHub's max-age=60), the page still
// checks the receipt against the body as GitHub serves it after lensgate's own body write.
func TestPageChecksTheLiveBody(t *testing.T) {
	st := newStack(t, stackOptions{})
	c := st.client()
	st.login(c, writer)
	get(t, c, st.pageURL(""))
	get(t, c, st.pageURL(""))
	st.review(stackOptions{})
	st.gh.CatchUp() // GitHub's replicas show lensgate's body write by now
	_, body, _ := get(t, c, st.pageURL(""))
	if !strings.Contains(body, "the server's verifier says ok") || !strings.Contains(body, "The pull request body as GitHub serves it now was checked too.") {
		t.Fatalf("the server's check is not ok against the current body; body:\n%s", body)
	}
}
