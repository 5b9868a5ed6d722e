package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensgate/lensgate/handlers/githubfake"
	metrics "github.com/rcrowley/go-metrics"
)

func TestIsCommand(t *testing.T) {
	tests := []struct {
		body string
		want bool
	}{
		{"/lensgate review", true},
		{"  /lensgate review  ", true},
		{"\n\n/lensgate review\nthanks", true},
		{"/lensgate review please", false},
		{"please /lensgate review", false},
		{"/lensgate", false},
		{"", false},
		{"> /lensgate review", false},
	}
	for _, tt := range tests {
		if got := IsCommand(tt.body, "/lensgate review"); got != tt.want {
			t.Errorf("IsCommand(%q) = %v", tt.body, got)
		}
	}
}

func TestSplitMetricName(t *testing.T) {
	tests := []struct {
		in     string
		name   string
		labels [][2]string
	}{
		{"github.requests", "lensgate_github_requests", nil},
		{"github.requests.2xx", "lensgate_github_requests_2xx", nil},
		{"github.rate.remaining[installation:12]", "lensgate_github_rate_remaining", [][2]string{{"installation", "12"}}},
		{"github.handler.error[event:pull_request]", "lensgate_github_handler_error", [][2]string{{"event", "pull_request"}}},
	}
	for _, tt := range tests {
		name, labels := splitMetricName(tt.in)
		if name != tt.name || !slices.Equal(labels, tt.labels) {
			t.Errorf("splitMetricName(%q) = %q %v", tt.in, name, labels)
		}
	}
}

func TestGoMetricsBridge(t *testing.T) {
	gm := metrics.NewRegistry()
	metrics.GetOrRegisterCounter("github.requests", gm).Inc(3)
	metrics.GetOrRegisterGauge("github.rate.remaining[installation:7]", gm).Update(4999)
	metrics.GetOrRegisterHistogram("github.event.age", gm, metrics.NewUniformSample(10)).Update(12)
	reg := prometheus.NewRegistry()
	reg.MustRegister(goMetricsCollector{reg: gm})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				got[mf.GetName()] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				got[mf.GetName()+"{"+m.GetLabel()[0].GetValue()+"}"] = m.GetGauge().GetValue()
			case m.Summary != nil:
				got[mf.GetName()] = float64(m.GetSummary().GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"lensgate_github_requests_total":    3,
		"lensgate_github_rate_remaining{7}": 4999,
		"lensgate_github_event_age":         1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

func ghErr(status int, header http.Header) error {
	return &github.ErrorResponse{Response: &http.Response{StatusCode: status, Header: header, Request: &http.Request{Method: "GET", URL: &url.URL{}}}}
}

func TestClassify(t *testing.T) {
	retryAfter := time.Second
	tests := []struct {
		name      string
		err       error
		permanent bool
		after     time.Duration // > 0: a server-given delay
	}{
		{"500", ghErr(500, nil), false, 0},
		{"502", ghErr(502, nil), false, 0},
		{"429", ghErr(429, nil), false, 0},
		{"429 with Retry-After", ghErr(429, http.Header{"Retry-After": {"2"}}), false, 2 * time.Second},
		{"404", ghErr(404, nil), true, 0},
		{"403 plain", ghErr(403, nil), true, 0},
		{"422", ghErr(422, nil), true, 0},
		{"secondary rate limit", &github.AbuseRateLimitError{Response: &http.Response{StatusCode: 403}, RetryAfter: &retryAfter}, false, time.Second},
		{"primary rate limit soon", &github.RateLimitError{Rate: github.Rate{Reset: github.Timestamp{Time: time.Now().Add(2 * time.Second)}}, Response: &http.Response{StatusCode: 403}}, false, 2 * time.Second},
		{"timeout", context.DeadlineExceeded, false, 0},
		{"url timeout", &url.Error{Op: "Get", URL: "x", Err: context.DeadlineExceeded}, false, 0},
		{"other", errors.New("boom"), true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := classifyGitHub(tt.err)
			if v.Retry == tt.permanent {
				t.Fatalf("classify = %+v, permanent want %v", v, tt.permanent)
			}
			// A primary limit's wait is counted from now, so allow for the time the test took.
			if tt.after > 0 && (v.After > tt.after+time.Second || v.After < tt.after-time.Second) {
				t.Fatalf("classify = %+v, want retry after %s", v, tt.after)
			}
		})
	}
	// A reset far beyond the longest wait is not waited for: it is an outage for this run.
	far := &github.RateLimitError{Rate: github.Rate{Reset: github.Timestamp{Time: time.Now().Add(time.Hour)}}, Response: &http.Response{StatusCode: 403}}
	f := Fetcher{Attempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Second}
	var oe *OperationalError
	if err := f.do(context.Background(), "read", func(context.Context) error { return far }); !errors.As(err, &oe) || oe.Attempts != 1 {
		t.Fatalf("a rate-limit reset an hour away: %v, want an outage after one attempt", err)
	}
}

func TestFetcherGivesUpWithOperationalError(t *testing.T) {
	f := Fetcher{Attempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	calls := 0
	err := f.do(context.Background(), "read thing", func(context.Context) error { calls++; return ghErr(503, nil) })
	var oe *OperationalError
	if !errors.As(err, &oe) || oe.Attempts != 3 || calls != 3 || oe.Op != "read thing" {
		t.Fatalf("err %v after %d calls", err, calls)
	}
	calls = 0
	err = f.do(context.Background(), "read thing", func(context.Context) error { calls++; return ghErr(404, nil) })
	if errors.As(err, &oe) || calls != 1 || !isNotFound(err) {
		t.Fatalf("404: err %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("superseded"))
	err = f.do(ctx, "read thing", func(context.Context) error { return ghErr(503, nil) })
	if errors.As(err, &oe) || err == nil {
		t.Fatalf("cancelled: %v, want the cancellation, not an outage", err)
	}
}

func TestValidRelPathAndCanWrite(t *testing.T) {
	for p, want := range map[string]bool{".asdd.yml": true, "policies/web.yml": true, "refs/heads/main": true,
		"": false, "../x": false, "a/../b": false, "/abs": false, "a//b": false, "a/./b": false, "a b": false, "a?b": false, "a%2e": false} {
		if got := validRelPath(p); got != want {
			t.Errorf("validRelPath(%q) = %v", p, got)
		}
	}
	for perm, want := range map[string]bool{"admin": true, "maintain": true, "write": true, "triage": false, "read": false, "none": false, "": false} {
		if got := canWrite(&github.RepositoryPermissionLevel{Permission: &perm}); got != want {
			t.Errorf("canWrite(%q) = %v", perm, got)
		}
	}
}

// The files a review binds from the diff are the files GitHub's files API lists for it.
func TestFilesFromDiffMatchTheFilesAPI(t *testing.T) {
	diffs := []string{
		"diff --git a/README.md b/README.md\nindex 1..2 100644\n--- a/README.md\n+++ b/README.md\n@@ -1,2 +1,3 @@\n # Hello\n-old\n+new\n+more\n",
		"diff --git a/new.go b/new.go\nnew file mode 100644\n--- /dev/null\n+++ b/new.go\n@@ -0,0 +1,2 @@\n+package x\n+\n" +
			"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n" +
			"diff --git a/a.txt b/b.txt\nsimilarity index 90%\nrename from a.txt\nrename to b.txt\n--- a/a.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-x\n+y\n",
	}
	for _, d := range diffs {
		got := filesFromDiff([]byte(d))
		want := githubfake.FilesFromDiff([]byte(d))
		if len(got) != len(want) {
			t.Fatalf("%d files, the files API lists %d", len(got), len(want))
		}
		for i, w := range want {
			g := got[i]
			if g.GetFilename() != w.Filename || g.GetPreviousFilename() != w.PreviousFilename || g.GetStatus() != w.Status ||
				g.GetAdditions() != w.Additions || g.GetDeletions() != w.Deletions || g.GetPatch() != w.Patch {
				t.Errorf("file %d: %s %s %s +%d -%d %q, want %+v", i, g.GetFilename(), g.GetPreviousFilename(), g.GetStatus(),
					g.GetAdditions(), g.GetDeletions(), g.GetPatch(), w)
			}
		}
	}
}

// TestSchedulerRefusesUncheckedDeliveries: the dispatcher has no secret of its own, so a delivery
// that did not come through hookHandler (no checked signature in its context) is refused before
// any handler sees it.
func TestSchedulerRefusesUncheckedDeliveries(t *testing.T) {
	ran := false
	s := hookScheduler{replays: newReplayGuard(10)}
	err := s.Schedule(context.Background(), githubapp.Dispatch{
		Handler:   handlerFunc(func() { ran = true }),
		EventType: "pull_request", DeliveryID: "d-1", Payload: []byte(`{}`),
	})
	if err == nil || ran {
		t.Fatalf("Schedule without a checked signature: err %v, handler ran %v", err, ran)
	}
}

// handlerFunc is an event handler that only records that it ran.
type handlerFunc func()

func (handlerFunc) Handles() []string { return []string{"pull_request"} }
func (f handlerFunc) Handle(context.Context, string, string, []byte) error {
	f()
	return nil
}

// A read is compared with the event by head, updated_at and, within the same second, the body.
func TestReadAgeAgainstTheEvent(t *testing.T) {
	at := time.Date(2026, 12, 5, 12, 0, 5, 0, time.UTC)
	pr := func(head string, updated time.Time, body string) *github.PullRequest {
		return &github.PullRequest{Head: &github.PullRequestBranch{SHA: github.String(head)},
			UpdatedAt: &github.Timestamp{Time: updated}, Body: github.String(body)}
	}
	seen := JobExtra{UpdatedAt: at, BodyDigest: bodyDigest("edited")}
	tests := []struct {
		name string
		pr   *github.PullRequest
		seen JobExtra
		want readAge
	}{
		{"the event's state", pr("b", at, "edited"), seen, readCurrent},
		{"changed since, same head", pr("b", at.Add(time.Second), "later"), seen, readCurrent},
		{"older head, older time: lag", pr("a", at.Add(-time.Second), "edited"), seen, readOlder},
		{"same head, older time: an edit not shown yet", pr("b", at.Add(-time.Second), "before"), seen, readOlder},
		{"another head, later time: a newer push", pr("c", at.Add(time.Second), "edited"), seen, readNewer},
		{"same second, body before the edit", pr("b", at, "before"), seen, readUnknown},
		{"same second, another head", pr("a", at, "edited"), seen, readUnknown},
		{"no timestamps: the head decides", pr("b", time.Time{}, ""), JobExtra{}, readCurrent},
		{"no timestamps, another head", pr("a", at, ""), JobExtra{}, readUnknown},
	}
	for _, tt := range tests {
		if got := ageOf(tt.pr, "b", tt.seen); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
