package githubfake

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

const testDiff = `diff --git a/main.go b/main.go
index 1111111..2222222 100644
--- a/main.go
+++ b/main.go
@@ -1,4 +1,5 @@
 package main
 
+import "os"
 func main() {
-	println("hi")
+	os.Exit(run())
@@ -20,3 +21,4 @@ func helper() {
 	a := 1
 	b := 2
+	c := 3
 }
diff --git a/README.md b/README.md
new file mode 100644
--- /dev/null
+++ b/README.md
@@ -0,0 +1,2 @@
+# demo
+text
`

type fixture struct {
	s    *Server
	gh   *github.Client
	repo string
	pr   PullRequest
}

func setup(t *testing.T, opts ...Option) fixture {
	t.Helper()
	s := New(t, opts...)
	s.AddRepo(Repo{Owner: "acme", Name: "widgets"})
	s.AddRepo(Repo{Owner: "acme", Name: ".github"})
	pr := s.AddPullRequest("acme/widgets", PullRequest{
		Title: "Add exit code", Body: "Author text.\n", User: "alice",
		HeadSHA: "aaaa000000000000000000000000000000000001", BaseSHA: "bbbb000000000000000000000000000000000001",
		Diff: []byte(testDiff), Labels: []string{"wip"},
	})
	s.SetFile("acme/widgets", "main", ".asdd.yml", "runtime: builtin\n")
	s.SetFile("acme/widgets", pr.HeadSHA, ".asdd.yml", "runtime: evil\n")
	s.SetFile("acme/.github", "main", ".asdd.yml", "runtime: org\n")
	return fixture{s: s, gh: s.InstallationClient(t), repo: "acme/widgets", pr: pr}
}

func status(resp *github.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// TestRealClient drives the fake with go-github through go-githubapp's client creator and
// checks both the answers and the state kept.
func TestRealClient(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, f fixture) (*github.Response, error)
		want int
		then func(t *testing.T, f fixture)
	}{
		{"get pull request", func(t *testing.T, f fixture) (*github.Response, error) {
			pr, resp, err := f.gh.PullRequests.Get(ctx, "acme", "widgets", f.pr.Number)
			if err == nil && (pr.GetNodeID() != f.pr.NodeID || pr.GetHead().GetSHA() != f.pr.HeadSHA || pr.GetUser().GetLogin() != "alice" || pr.GetBase().GetRef() != "main") {
				t.Errorf("pull request = %+v", pr)
			}
			return resp, err
		}, 200, nil},
		{"diff bytes exact", func(t *testing.T, f fixture) (*github.Response, error) {
			raw, resp, err := f.gh.PullRequests.GetRaw(ctx, "acme", "widgets", f.pr.Number, github.RawOptions{Type: github.Diff})
			if err == nil && raw != testDiff {
				t.Errorf("diff differs:\n%q", raw)
			}
			return resp, err
		}, 200, nil},
		{"files with patches", func(t *testing.T, f fixture) (*github.Response, error) {
			files, resp, err := f.gh.PullRequests.ListFiles(ctx, "acme", "widgets", f.pr.Number, nil)
			if err == nil && (len(files) != 2 || files[0].GetFilename() != "main.go" || !strings.HasPrefix(files[0].GetPatch(), "@@ -1,4 +1,5 @@") || files[1].GetStatus() != "added" || files[0].GetAdditions() != 3) {
				t.Errorf("files = %v", files)
			}
			return resp, err
		}, 200, nil},
		{"commits", func(t *testing.T, f fixture) (*github.Response, error) {
			cs, resp, err := f.gh.PullRequests.ListCommits(ctx, "acme", "widgets", f.pr.Number, nil)
			if err == nil && (len(cs) != 1 || cs[0].GetSHA() != f.pr.HeadSHA) {
				t.Errorf("commits = %v", cs)
			}
			return resp, err
		}, 200, nil},
		{"config from base branch, not head", func(t *testing.T, f fixture) (*github.Response, error) {
			fc, _, resp, err := f.gh.Repositories.GetContents(ctx, "acme", "widgets", ".asdd.yml", &github.RepositoryContentGetOptions{Ref: "main"})
			if err == nil {
				if c, _ := fc.GetContent(); c != "runtime: builtin\n" {
					t.Errorf("base content = %q", c)
				}
			}
			return resp, err
		}, 200, nil},
		{"config at head differs", func(t *testing.T, f fixture) (*github.Response, error) {
			fc, _, resp, err := f.gh.Repositories.GetContents(ctx, "acme", "widgets", ".asdd.yml", &github.RepositoryContentGetOptions{Ref: f.pr.HeadSHA})
			if err == nil {
				if c, _ := fc.GetContent(); c != "runtime: evil\n" {
					t.Errorf("head content = %q", c)
				}
			}
			return resp, err
		}, 200, nil},
		{"org .github fallback", func(t *testing.T, f fixture) (*github.Response, error) {
			fc, _, resp, err := f.gh.Repositories.GetContents(ctx, "acme", ".github", ".asdd.yml", nil)
			if err == nil {
				if c, _ := fc.GetContent(); c != "runtime: org\n" {
					t.Errorf("org content = %q", c)
				}
			}
			return resp, err
		}, 200, nil},
		{"missing file 404", func(t *testing.T, f fixture) (*github.Response, error) {
			_, _, resp, err := f.gh.Repositories.GetContents(ctx, "acme", "widgets", "nope.yml", nil)
			return resp, err
		}, 404, nil},
		{"comment create, list, update, delete", func(t *testing.T, f fixture) (*github.Response, error) {
			c, _, err := f.gh.Issues.CreateComment(ctx, "acme", "widgets", f.pr.Number, &github.IssueComment{Body: github.String("<!-- marker -->\nv1")})
			if err != nil {
				return nil, err
			}
			if c.GetUser().GetLogin() != f.s.BotLogin() || c.GetUser().GetType() != "Bot" {
				t.Errorf("author = %v", c.GetUser())
			}
			if _, _, err := f.gh.Issues.EditComment(ctx, "acme", "widgets", c.GetID(), &github.IssueComment{Body: github.String("<!-- marker -->\nv2")}); err != nil {
				return nil, err
			}
			other := f.s.AddComment(f.repo, f.pr.Number, "bob", "lgtm")
			list, _, err := f.gh.Issues.ListComments(ctx, "acme", "widgets", f.pr.Number, nil)
			if err != nil || len(list) != 2 || list[0].GetBody() != "<!-- marker -->\nv2" {
				t.Errorf("list = %v, %v", list, err)
			}
			_, resp, err := f.gh.Issues.EditComment(ctx, "acme", "widgets", other.ID, &github.IssueComment{Body: github.String("x")})
			if status(resp) != 403 {
				t.Errorf("editing another user's comment: %v", err)
			}
			return f.gh.Issues.DeleteComment(ctx, "acme", "widgets", c.GetID())
		}, 204, func(t *testing.T, f fixture) {
			if cs := f.s.Comments(f.repo, f.pr.Number); len(cs) != 1 || cs[0].User != "bob" {
				t.Errorf("comments = %+v", cs)
			}
		}},
		{"check run lifecycle", func(t *testing.T, f fixture) (*github.Response, error) {
			cr, _, err := f.gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{
				Name: "lensgate", HeadSHA: f.pr.HeadSHA, Status: github.String("in_progress"),
			})
			if err != nil {
				return nil, err
			}
			ann := func(n int) []*github.CheckRunAnnotation {
				var out []*github.CheckRunAnnotation
				for i := 0; i < n; i++ {
					out = append(out, &github.CheckRunAnnotation{Path: github.String("main.go"), StartLine: github.Int(i + 1), EndLine: github.Int(i + 1), AnnotationLevel: github.String("warning"), Message: github.String("m")})
				}
				return out
			}
			_, resp, _ := f.gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{
				Name: "lensgate", Output: &github.CheckRunOutput{Title: github.String("t"), Summary: github.String("s"), Annotations: ann(51)},
			})
			if status(resp) != 422 {
				t.Errorf("51 annotations: status %d", status(resp))
			}
			_, resp, _ = f.gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{
				Name: "lensgate", Output: &github.CheckRunOutput{Title: github.String("t"), Summary: github.String(strings.Repeat("x", 65536))},
			})
			if status(resp) != 422 {
				t.Errorf("oversized summary: status %d", status(resp))
			}
			for _, n := range []int{50, 10} {
				if _, _, err := f.gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{
					Name: "lensgate", Output: &github.CheckRunOutput{Title: github.String("t"), Summary: github.String("s"), Text: github.String(strings.Repeat("y", 65535)), Annotations: ann(n)},
				}); err != nil {
					return nil, err
				}
			}
			_, resp, err = f.gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{
				Name: "lensgate", Conclusion: github.String("failure"),
			})
			return resp, err
		}, 200, func(t *testing.T, f fixture) {
			runs := f.s.CheckRuns(f.repo, f.pr.HeadSHA)
			if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "failure" || len(runs[0].Annotations) != 60 || len(runs[0].Text) != 65535 {
				t.Errorf("runs = %d %+v", len(runs), runs[0].Conclusion)
			}
			res, _, err := f.gh.Checks.ListCheckRunsForRef(ctx, "acme", "widgets", f.pr.HeadSHA, &github.ListCheckRunsOptions{CheckName: github.String("lensgate")})
			if err != nil || res.GetTotal() != 1 || res.CheckRuns[0].GetOutput().GetAnnotationsCount() != 60 || res.CheckRuns[0].PullRequests[0].GetNumber() != f.pr.Number {
				t.Errorf("list = %v %v", res, err)
			}
			suites, _, err := f.gh.Checks.ListCheckSuitesForRef(ctx, "acme", "widgets", f.pr.HeadSHA, nil)
			if err != nil || suites.GetTotal() != 1 {
				t.Fatalf("suites = %v %v", suites, err)
			}
			if _, err := f.gh.Checks.ReRequestCheckSuite(ctx, "acme", "widgets", suites.CheckSuites[0].GetID()); err != nil {
				t.Errorf("rerequest: %v", err)
			}
			if rr := f.s.Rerequests(); len(rr) != 1 || rr[0].Kind != "check_suite" {
				t.Errorf("rerequests = %v", rr)
			}
		}},
		{"completed without conclusion is 422", func(t *testing.T, f fixture) (*github.Response, error) {
			_, resp, err := f.gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "x", HeadSHA: f.pr.HeadSHA, Status: github.String("completed")})
			return resp, err
		}, 422, nil},
		{"review on diff lines", func(t *testing.T, f fixture) (*github.Response, error) {
			_, resp, err := f.gh.PullRequests.CreateReview(ctx, "acme", "widgets", f.pr.Number, &github.PullRequestReviewRequest{
				Event: github.String("COMMENT"), Body: github.String("summary"), CommitID: github.String(f.pr.HeadSHA),
				Comments: []*github.DraftReviewComment{
					{Path: github.String("main.go"), Line: github.Int(3), Side: github.String("RIGHT"), Body: github.String("added import")},
					{Path: github.String("main.go"), Line: github.Int(23), Side: github.String("RIGHT"), Body: github.String("second hunk")},
					{Path: github.String("main.go"), Line: github.Int(4), Side: github.String("LEFT"), Body: github.String("removed line")},
					{Path: github.String("README.md"), Line: github.Int(2), Body: github.String("new file")},
				},
			})
			return resp, err
		}, 200, func(t *testing.T, f fixture) {
			rv := f.s.Reviews(f.repo, f.pr.Number)
			if len(rv) != 1 || rv[0].State != "COMMENTED" || len(rv[0].Comments) != 4 || rv[0].User != f.s.BotLogin() {
				t.Errorf("reviews = %+v", rv)
			}
			cs, _, err := f.gh.PullRequests.ListComments(ctx, "acme", "widgets", f.pr.Number, nil)
			if err != nil || len(cs) != 4 || cs[1].GetLine() != 23 {
				t.Errorf("review comments = %v %v", cs, err)
			}
		}},
		{"review line outside diff is 422 and nothing kept", func(t *testing.T, f fixture) (*github.Response, error) {
			_, resp, err := f.gh.PullRequests.CreateReview(ctx, "acme", "widgets", f.pr.Number, &github.PullRequestReviewRequest{
				Event: github.String("COMMENT"), Body: github.String("summary"),
				Comments: []*github.DraftReviewComment{
					{Path: github.String("main.go"), Line: github.Int(3), Body: github.String("ok")},
					{Path: github.String("main.go"), Line: github.Int(12), Body: github.String("outside")},
				},
			})
			return resp, err
		}, 422, func(t *testing.T, f fixture) {
			if rv := f.s.Reviews(f.repo, f.pr.Number); len(rv) != 0 {
				t.Errorf("reviews = %+v", rv)
			}
		}},
		{"approve is recorded", func(t *testing.T, f fixture) (*github.Response, error) {
			_, resp, err := f.gh.PullRequests.CreateReview(ctx, "acme", "widgets", f.pr.Number, &github.PullRequestReviewRequest{Event: github.String("APPROVE")})
			return resp, err
		}, 200, func(t *testing.T, f fixture) {
			if rv := f.s.Reviews(f.repo, f.pr.Number); len(rv) != 1 || rv[0].Event != "APPROVE" {
				t.Errorf("reviews = %+v", rv)
			}
		}},
		{"labels and reactions", func(t *testing.T, f fixture) (*github.Response, error) {
			if _, _, err := f.gh.Issues.AddLabelsToIssue(ctx, "acme", "widgets", f.pr.Number, []string{"bug", "wip"}); err != nil {
				return nil, err
			}
			if _, _, err := f.gh.Reactions.CreateIssueReaction(ctx, "acme", "widgets", f.pr.Number, "eyes"); err != nil {
				return nil, err
			}
			_, resp, err := f.gh.Reactions.CreateIssueReaction(ctx, "acme", "widgets", f.pr.Number, "eyes")
			return resp, err
		}, 200, func(t *testing.T, f fixture) {
			if l := f.s.Labels(f.repo, f.pr.Number); strings.Join(l, ",") != "wip,bug" {
				t.Errorf("labels = %v", l)
			}
			if r := f.s.Reactions(f.repo, "issue/1"); len(r) != 1 || r[0].Content != "eyes" {
				t.Errorf("reactions = %v", r)
			}
		}},
		{"body update via pulls and issues", func(t *testing.T, f fixture) (*github.Response, error) {
			if _, _, err := f.gh.PullRequests.Edit(ctx, "acme", "widgets", f.pr.Number, &github.PullRequest{Body: github.String("Author text.\nblock v1\n")}); err != nil {
				return nil, err
			}
			is, resp, err := f.gh.Issues.Edit(ctx, "acme", "widgets", f.pr.Number, &github.IssueRequest{Body: github.String("Author text.\nblock v2\n")})
			if err == nil && !is.IsPullRequest() {
				t.Error("issue view of a PR lacks pull_request links")
			}
			return resp, err
		}, 200, func(t *testing.T, f fixture) {
			if b := f.s.PullBody(f.repo, f.pr.Number); b != "Author text.\nblock v2\n" {
				t.Errorf("body = %q", b)
			}
		}},
		{"collaborator permission", func(t *testing.T, f fixture) (*github.Response, error) {
			f.s.SetPermission(f.repo, "alice", "write")
			p, resp, err := f.gh.Repositories.GetPermissionLevel(ctx, "acme", "widgets", "alice")
			if err == nil && p.GetPermission() != "write" {
				t.Errorf("permission = %v", p.GetPermission())
			}
			return resp, err
		}, 200, nil},
		{"commit to pulls and filtered list", func(t *testing.T, f fixture) (*github.Response, error) {
			f.s.AddPullRequest(f.repo, PullRequest{Title: "closed", State: "closed", HeadSHA: "cccc", BaseSHA: "bbbb", Diff: []byte(testDiff)})
			prs, _, err := f.gh.PullRequests.ListPullRequestsWithCommit(ctx, "acme", "widgets", f.pr.HeadSHA, nil)
			if err != nil || len(prs) != 1 || prs[0].GetNumber() != f.pr.Number {
				t.Errorf("commit pulls = %v %v", prs, err)
			}
			open, resp, err := f.gh.PullRequests.List(ctx, "acme", "widgets", &github.PullRequestListOptions{State: "open"})
			if err == nil && len(open) != 1 {
				t.Errorf("open pulls = %d", len(open))
			}
			all, _, _ := f.gh.PullRequests.List(ctx, "acme", "widgets", &github.PullRequestListOptions{State: "all"})
			if len(all) != 2 {
				t.Errorf("all pulls = %d", len(all))
			}
			return resp, err
		}, 200, nil},
		{"installation lookup with app client", func(t *testing.T, f fixture) (*github.Response, error) {
			app, err := f.s.ClientCreator(t).NewAppClient()
			if err != nil {
				return nil, err
			}
			a, _, err := app.Apps.Get(ctx, "")
			if err != nil || a.GetSlug() != "lensgate" {
				t.Errorf("app = %v %v", a, err)
			}
			inst, resp, err := app.Apps.FindRepositoryInstallation(ctx, "acme", "widgets")
			if err == nil && inst.GetID() != f.s.InstallationID() {
				t.Errorf("installation = %v", inst.GetID())
			}
			return resp, err
		}, 200, nil},
		{"installation token cannot call app routes", func(t *testing.T, f fixture) (*github.Response, error) {
			_, resp, err := f.gh.Apps.Get(ctx, "")
			return resp, err
		}, 401, nil},
		{"hook deliveries and redelivery", func(t *testing.T, f fixture) (*github.Response, error) {
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := 0; i < 3; i++ {
				f.s.AddHookDelivery(HookDelivery{GUID: "g" + string(rune('a'+i)), Event: "pull_request", Action: "opened", StatusCode: 500, DeliveredAt: base.Add(time.Duration(i) * time.Minute)})
			}
			app, _ := f.s.ClientCreator(t).NewAppClient()
			ds, resp, err := app.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 2})
			if err != nil || len(ds) != 2 || resp.Cursor == "" || ds[0].GetGUID() != "gc" {
				t.Fatalf("deliveries = %v cursor %q %v", ds, resp.Cursor, err)
			}
			rest, _, err := app.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 2, Cursor: resp.Cursor})
			if err != nil || len(rest) != 1 || rest[0].GetGUID() != "ga" {
				t.Errorf("page 2 = %v %v", rest, err)
			}
			_, resp, err = app.Apps.RedeliverHookDelivery(ctx, rest[0].GetID())
			return resp, err
		}, 202, func(t *testing.T, f fixture) {
			if r := f.s.Redeliveries(); len(r) != 1 {
				t.Errorf("redeliveries = %v", r)
			}
		}},
		{"unimplemented merge is 404 and recorded", func(t *testing.T, f fixture) (*github.Response, error) {
			_, resp, err := f.gh.PullRequests.Merge(ctx, "acme", "widgets", f.pr.Number, "", nil)
			return resp, err
		}, 404, func(t *testing.T, f fixture) {
			if u := f.s.Unhandled(); len(u) != 1 || u[0] != "PUT /api/v3/repos/acme/widgets/pulls/1/merge" {
				t.Errorf("unhandled = %v", u)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			resp, err := tc.run(t, f)
			if got := status(resp); got != tc.want {
				t.Fatalf("status = %d, want %d (err %v)", got, tc.want, err)
			}
			var accepted *github.AcceptedError
			if tc.want < 300 && err != nil && !errors.As(err, &accepted) {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.then != nil {
				tc.then(t, f)
			}
			if tc.want != 404 {
				if u := f.s.Unhandled(); len(u) != 0 {
					t.Errorf("unhandled routes hit: %v", u)
				}
			}
		})
	}
}

func TestFaultsAndCounters(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	const route = "POST /repos/{owner}/{repo}/issues/{number}/comments"
	f.s.FailNext(route, http.StatusBadGateway, 1)
	f.s.FailNext(route, http.StatusTooManyRequests, 1)
	f.s.SecondaryRateLimitNext(route, 7, 1)

	_, resp, _ := f.gh.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("x")})
	if status(resp) != 502 {
		t.Fatalf("first call status %d", status(resp))
	}
	_, resp, _ = f.gh.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("x")})
	if status(resp) != 429 {
		t.Fatalf("second call status %d", status(resp))
	}
	_, resp, err := f.gh.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("x")})
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != 7*time.Second {
		t.Fatalf("want secondary rate limit with Retry-After 7s, got %v (status %d)", err, status(resp))
	}
	// go-github now refuses calls locally until Retry-After passes; a fresh client gets through.
	f.gh = f.s.TokenClient()
	if _, _, err := f.gh.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("x")}); err != nil {
		t.Fatalf("fourth call: %v", err)
	}
	if n := len(f.s.Comments(f.repo, 1)); n != 1 {
		t.Fatalf("comments = %d, want 1 (failed calls must not write)", n)
	}
	if c := f.s.CallCount(route); c != 4 {
		t.Errorf("calls = %d", c)
	}
	if f.s.Writes() != 4 || f.s.PendingFaults(route) != 0 {
		t.Errorf("writes = %d pending = %d", f.s.Writes(), f.s.PendingFaults(route))
	}

	// The primary rate limit: go-github reports a RateLimitError with the reset time.
	f.s.Inject("GET /repos/{owner}/{repo}", Fault{Status: http.StatusForbidden, PrimaryRateLimit: true, RetryAfter: 60})
	_, _, err = f.s.TokenClient().Repositories.Get(ctx, "acme", "widgets")
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || rl.Rate.Remaining != 0 || time.Until(rl.Rate.Reset.Time) < 30*time.Second {
		t.Fatalf("primary rate limit: %v", err)
	}

	// A write that lands although the client sees a 502.
	f.s.Inject(route, Fault{Status: http.StatusBadGateway, AfterWrite: true})
	if _, resp, _ := f.gh.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("lost answer")}); status(resp) != 502 {
		t.Fatalf("after-write status %d", status(resp))
	}
	if cs := f.s.Comments(f.repo, 1); len(cs) != 2 || cs[1].Body != "lost answer" {
		t.Fatalf("after-write comment not stored: %+v", cs)
	}

	// A delay longer than the caller's deadline times the call out.
	f.s.DelayNext("GET /repos/{owner}/{repo}/pulls/{number}", time.Minute, 1)
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, _, err := f.gh.PullRequests.Get(tctx, "acme", "widgets", 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("delayed call: %v", err)
	}

	// Hooks run before the next matching request: an author edit lands between read and write.
	f.s.OnNext("PATCH /repos/{owner}/{repo}/pulls/{number}", func(*http.Request) {
		f.s.SetPullBody(f.repo, 1, "edited by author")
	})
	if _, _, err := f.gh.PullRequests.Edit(ctx, "acme", "widgets", 1, &github.PullRequest{Title: github.String("t2")}); err != nil {
		t.Fatal(err)
	}
	if f.s.PullBody(f.repo, 1) != "edited by author" {
		t.Errorf("hook did not run")
	}
	if f.s.TotalCalls() < 6 || !strings.Contains(f.s.CallSummary(), route) {
		t.Errorf("summary:\n%s", f.s.CallSummary())
	}
}

func TestAuthRequired(t *testing.T) {
	s := New(t)
	s.AddRepo(Repo{Owner: "acme", Name: "widgets"})
	gh := github.NewClient(nil)
	gh, _ = gh.WithEnterpriseURLs(s.APIURL(), s.APIURL())
	_, resp, _ := gh.Repositories.Get(context.Background(), "acme", "widgets")
	if status(resp) != 401 {
		t.Fatalf("anonymous status = %d", status(resp))
	}
	if _, _, err := s.TokenClient().Repositories.Get(context.Background(), "acme", "widgets"); err != nil {
		t.Fatalf("token client: %v", err)
	}
	open := New(t, WithoutAuth(), WithAppSlug("other"))
	open.AddRepo(Repo{Owner: "acme", Name: "widgets"})
	bare, _ := github.NewClient(nil).WithEnterpriseURLs(open.APIURL(), open.APIURL())
	c, _, err := bare.Issues.CreateComment(context.Background(), "acme", "widgets", 1, &github.IssueComment{Body: github.String("x")})
	if err == nil {
		t.Fatalf("comment on a missing issue: %v", c)
	}
	if _, _, err := bare.Repositories.Get(context.Background(), "acme", "widgets"); err != nil {
		t.Fatalf("WithoutAuth: %v", err)
	}
	if open.BotLogin() != "other[bot]" {
		t.Errorf("bot login %s", open.BotLogin())
	}
}

func TestFromPayloadAndSign(t *testing.T) {
	s := New(t)
	payload, err := os.ReadFile("testdata/pull_request.opened.json")
	if err != nil {
		t.Fatal(err)
	}
	repo, pr, err := s.AddFromPullRequestEvent(payload, []byte(testDiff))
	if err != nil {
		t.Fatal(err)
	}
	if repo != "Codertocat/Hello-World" || pr.Number != 2 || pr.HeadSHA != "ec26c3e57ca3a959ca5aad62de7213c562f8c821" || pr.BaseRef != "master" {
		t.Fatalf("pr = %s %+v", repo, pr)
	}
	got, _, err := s.InstallationClient(t).PullRequests.Get(context.Background(), "Codertocat", "Hello-World", 2)
	if err != nil || got.GetNodeID() != "MDExOlB1bGxSZXF1ZXN0Mjc5MTQ3NDM3" {
		t.Fatalf("get = %v %v", got.GetNodeID(), err)
	}
	sig := Sign("It's a Secret to Everybody", []byte("Hello, World!"))
	// The example from GitHub's webhook validation documentation.
	if sig != "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" {
		t.Errorf("sign = %s", sig)
	}
	req, err := WebhookRequest("http://x/api/github/hook", "pull_request", "d-1", s.WebhookSecret(), payload)
	if err != nil || req.Header.Get("X-Hub-Signature-256") != Sign(s.WebhookSecret(), payload) {
		t.Errorf("webhook request: %v", err)
	}
}

func TestPatchPositions(t *testing.T) {
	files := FilesFromDiff([]byte(testDiff))
	pl := parsePatch(files[0].Patch)
	for _, l := range []int{1, 2, 3, 4, 5, 21, 22, 23, 24} {
		if !pl.right[l] {
			t.Errorf("right line %d missing", l)
		}
	}
	if pl.right[6] || pl.right[12] || !pl.left[4] || pl.left[5] {
		t.Errorf("unexpected lines: %v / %v", pl.right, pl.left)
	}
	if pl.positions != 11 {
		t.Errorf("positions = %d", pl.positions)
	}
	if string(DiffFromFiles(files)) == "" {
		t.Error("empty diff")
	}
}

// Like GitHub, a GET carries an ETag and a request naming it gets 304 until the resource
// changes; a 304 is not counted in TotalCalls. The root listing names the files there.
func TestConditionalRequestsAndListing(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	f.s.ResetCalls()
	get := func(etag string) *http.Response {
		req, err := f.gh.NewRequest(http.MethodGet, "repos/acme/widgets/pulls/1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := f.gh.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	first := get("")
	etag := first.Header.Get("ETag")
	if first.StatusCode != http.StatusOK || etag == "" || !strings.Contains(first.Header.Get("Vary"), "Authorization") {
		t.Fatalf("first GET: %d etag %q vary %q", first.StatusCode, etag, first.Header.Get("Vary"))
	}
	if again := get(etag); again.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation: %d, want 304", again.StatusCode)
	}
	f.s.SetPullBody("acme/widgets", 1, "changed")
	f.s.CatchUp() // this test is about ETags, not about the read lag (TestReadLag)
	if changed := get(etag); changed.StatusCode != http.StatusOK {
		t.Fatalf("after a change: %d, want 200", changed.StatusCode)
	}
	// Two answered GETs and the token; the 304 is not counted.
	if f.s.TotalCalls() != 3 || f.s.NotModified() != 1 || f.s.CallCount("GET /repos/{owner}/{repo}/pulls/{number}") != 3 {
		t.Fatalf("total %d, 304s %d:\n%s", f.s.TotalCalls(), f.s.NotModified(), f.s.CallSummary())
	}
	_, dir, _, err := f.gh.Repositories.GetContents(ctx, "acme", "widgets", "", &github.RepositoryContentGetOptions{Ref: "main"})
	if err != nil || len(dir) != 1 || dir[0].GetName() != ".asdd.yml" || dir[0].GetType() != "file" || dir[0].GetSize() == 0 {
		t.Fatalf("root listing %+v %v", dir, err)
	}
}

// Like GitHub's replicas, a read right after a push or an edit shows the pull request as it was
// (same ETag, so a 304), until the replicas catch up. The lag is an hour here so that no read
// can outlast it; CatchUp ends it.
func TestReadLag(t *testing.T) {
	ctx := context.Background()
	f := setup(t, WithReadLag(time.Hour))
	before, resp, err := f.gh.PullRequests.Get(ctx, "acme", "widgets", 1)
	if err != nil {
		t.Fatal(err)
	}
	etag := resp.Header.Get("ETag")
	f.s.SetPullBody("acme/widgets", 1, "Edited by the author.\n")
	f.s.Push("acme/widgets", 1, "aaaa000000000000000000000000000000000002", []byte(testDiff), nil)
	lagged, _, err := f.gh.PullRequests.Get(ctx, "acme", "widgets", 1)
	if err != nil {
		t.Fatal(err)
	}
	if lagged.GetHead().GetSHA() != before.GetHead().GetSHA() || lagged.GetBody() != "Author text.\n" || !lagged.GetUpdatedAt().Equal(before.GetUpdatedAt()) {
		t.Fatalf("during the lag: head %s body %q updated %v, want the state before the writes", lagged.GetHead().GetSHA(), lagged.GetBody(), lagged.GetUpdatedAt())
	}
	req, _ := f.gh.NewRequest(http.MethodGet, "repos/acme/widgets/pulls/1", nil)
	req.Header.Set("If-None-Match", etag)
	if resp, err := f.gh.Client().Do(req); err != nil || resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation during the lag: %v %v, want 304", resp, err)
	}
	if got := f.s.PullRequest("acme/widgets", 1); got.HeadSHA != "aaaa000000000000000000000000000000000002" || got.Body != "Edited by the author.\n" {
		t.Fatalf("stored state %s %q", got.HeadSHA, got.Body)
	}
	f.s.CatchUp()
	after, _, err := f.gh.PullRequests.Get(ctx, "acme", "widgets", 1)
	if err != nil {
		t.Fatal(err)
	}
	if after.GetHead().GetSHA() != "aaaa000000000000000000000000000000000002" || after.GetBody() != "Edited by the author.\n" {
		t.Fatalf("after catching up: head %s body %q", after.GetHead().GetSHA(), after.GetBody())
	}
}

// GitHub's cache and rate-limit headers: Cache-Control, ETag and Vary on the 200 and repeated on
// the 304, which does not use up the primary rate limit.
func TestCacheAndRateHeaders(t *testing.T) {
	f := setup(t)
	get := func(etag string) *http.Response {
		req, err := f.gh.NewRequest(http.MethodGet, "repos/acme/widgets/pulls/1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := f.gh.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	first := get("")
	notModified := get(first.Header.Get("ETag"))
	if notModified.StatusCode != http.StatusNotModified {
		t.Fatalf("status %d, want 304", notModified.StatusCode)
	}
	for _, resp := range []*http.Response{first, notModified} {
		h := resp.Header
		if h.Get("Cache-Control") != "private, max-age=60, s-maxage=60" || h.Get("Vary") != "Accept, Authorization, Cookie, X-GitHub-OTP" || h.Get("ETag") != first.Header.Get("ETag") {
			t.Errorf("%d: Cache-Control %q Vary %q ETag %q", resp.StatusCode, h.Get("Cache-Control"), h.Get("Vary"), h.Get("ETag"))
		}
	}
	if first.Header.Get("X-RateLimit-Used") == "" || notModified.Header.Get("X-RateLimit-Used") != first.Header.Get("X-RateLimit-Used") {
		t.Errorf("X-RateLimit-Used %q then %q: a 304 must not count", first.Header.Get("X-RateLimit-Used"), notModified.Header.Get("X-RateLimit-Used"))
	}
}

// More content-creating requests than GitHub allows in a minute get its secondary rate limit:
// 403 with Retry-After, and nothing is written.
func TestContentCreationLimit(t *testing.T) {
	ctx := context.Background()
	f := setup(t, WithContentLimit(3))
	for i := range 3 {
		if _, _, err := f.gh.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("c")}); err != nil {
			t.Fatalf("comment %d: %v", i+1, err)
		}
	}
	_, resp, err := f.gh.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("one too many")})
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || status(resp) != http.StatusForbidden || abuse.GetRetryAfter() <= 0 {
		t.Fatalf("fourth comment: %v (status %d)", err, status(resp))
	}
	if n := len(f.s.Comments("acme/widgets", 1)); n != 3 {
		t.Fatalf("%d comments stored, want 3", n)
	}
}
