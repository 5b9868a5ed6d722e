package pull

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/lensgate/lensgate/internal/githubfake"
)

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
	if err := f.Do(context.Background(), "read", func(context.Context) error { return far }); !errors.As(err, &oe) || oe.Attempts != 1 {
		t.Fatalf("a rate-limit reset an hour away: %v, want an outage after one attempt", err)
	}
}

func TestFetcherGivesUpWithOperationalError(t *testing.T) {
	f := Fetcher{Attempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	calls := 0
	err := f.Do(context.Background(), "read thing", func(context.Context) error { calls++; return ghErr(503, nil) })
	var oe *OperationalError
	if !errors.As(err, &oe) || oe.Attempts != 3 || calls != 3 || oe.Op != "read thing" {
		t.Fatalf("err %v after %d calls", err, calls)
	}
	calls = 0
	err = f.Do(context.Background(), "read thing", func(context.Context) error { calls++; return ghErr(404, nil) })
	if errors.As(err, &oe) || calls != 1 || !IsNotFound(err) {
		t.Fatalf("404: err %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("superseded"))
	err = f.Do(ctx, "read thing", func(context.Context) error { return ghErr(503, nil) })
	if errors.As(err, &oe) || err == nil {
		t.Fatalf("cancelled: %v, want the cancellation, not an outage", err)
	}
}

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
