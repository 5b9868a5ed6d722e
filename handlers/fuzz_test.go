package handlers_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/internal/githubfake"
)

// FuzzWebhook sends signed arbitrary bodies under every handled event type: the endpoint must
// answer with a client error, an acknowledgement or back-pressure, never a server error or a
// crash.
func FuzzWebhook(f *testing.F) {
	seeds := map[string]string{
		"pull_request":              "pull_request.opened.payload.json",
		"issues":                    "issues.opened.with-installation.payload.json",
		"issue_comment":             "issue_comment.created.on-pull-request.with-installation.payload.json",
		"check_run":                 "check_run.rerequested.rfc3339.payload.json",
		"check_suite":               "check_suite.rerequested.payload.json",
		"installation":              "installation.created.payload.json",
		"installation_repositories": "installation_repositories.added.payload.json",
		"ping":                      "ping.with-app_id.payload.json",
	}
	for ev, file := range seeds {
		f.Add(ev, fixture(f, file))
	}
	f.Add("pull_request", []byte(`{"action":"opened","pull_request":{"number":1,"head":{"sha":"x"}},"repository":{"name":"r","owner":{"login":"o"}},"installation":{"id":1}}`))
	f.Add("issues", []byte(`null`))
	f.Add("check_suite", []byte(`{"action":"rerequested","check_suite":{"pull_requests":[null]}}`))
	e := newEnv(f, func(c *config.Server, _ *handlers.Options) { c.Queue.Size = 1 << 20 })
	e.addFixturePR(readmeDiff)
	n := 0
	client := &http.Client{Timeout: 10 * time.Second}
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		if event == "" {
			return
		}
		n++
		req, err := githubfake.WebhookRequest(e.http.URL+handlers.RouteHook, event, fmt.Sprint("fuzz-", n), e.gh.WebhookSecret(), body)
		if err != nil {
			return // not a valid header value
		}
		resp, err := client.Do(req)
		if err != nil && strings.Contains(err.Error(), "invalid header field") {
			return // the client refuses to send it, so no server sees it
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		code, msg := resp.StatusCode, string(b)
		switch code {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusServiceUnavailable:
		default:
			t.Fatalf("event %q body %q: status %d %q", event, body, code, msg)
		}
	})
}
