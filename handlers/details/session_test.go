package details_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestLogoutRevokesTheSession: logging out needs the session's CSRF token, and afterwards a
// copy of the session cookie taken before no longer opens a session.
func TestLogoutRevokesTheSession(t *testing.T) {
	st := newStack(t, stackOptions{})
	st.review(stackOptions{})
	cl := st.client()
	st.login(cl, reader)
	u, _ := url.Parse(st.srv.URL)
	var copied *http.Cookie
	for _, c := range cl.Jar.Cookies(u) {
		if c.Name == "lensgate_session" {
			copied = &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	if copied == nil {
		t.Fatal("no session cookie after login")
	}
	status, body, _ := get(t, cl, st.pageURL(""))
	token := hiddenValue(body, "csrf")
	if status != http.StatusOK || token == "" || !strings.Contains(body, `id="logout-form"`) {
		t.Fatalf("page: %d, log-out form with a token: %v", status, token != "")
	}
	logout := func(form url.Values) int {
		resp, err := cl.PostForm(st.srv.URL+"/api/github/logout", form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := logout(url.Values{}); s != http.StatusForbidden {
		t.Fatalf("log-out without the CSRF token: %d, want 403", s)
	}
	if s := logout(url.Values{"csrf": {token}}); s != http.StatusOK {
		t.Fatalf("log-out: %d", s)
	}
	thief := st.client()
	thief.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	thief.Jar.SetCookies(u, []*http.Cookie{copied})
	if status, _, _ := get(t, thief, st.pageURL("")); status != http.StatusFound {
		t.Fatalf("the session cookie copied before the log-out answered %d, want a login redirect", status)
	}
}
