package handlers_test

import (
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/publish"
	"github.com/lensgate/lensgate/handlers/publish/pdp"
	"github.com/lensgate/lensgate/handlers/repoconfig"
	"github.com/lensgate/lensgate/internal/githubfake"
)

// withRealPublisher publishes through handlers/publish, so a test sees what reaches GitHub.
func withRealPublisher(t testing.TB) envOption {
	t.Helper()
	p, err := publish.New(publish.Options{Audit: &pdp.MemorySink{}, ContentSpacing: -1})
	if err != nil {
		t.Fatal(err)
	}
	return func(_ *config.Server, o *handlers.Options) { o.Publisher = p }
}

// published is every text the App wrote on the fixture pull request: comments and check runs.
func (e *env) published() string {
	e.t.Helper()
	var b strings.Builder
	for _, c := range e.gh.Comments(fixtureRepo, fixturePR) {
		b.WriteString(c.Body + "\n")
	}
	for _, c := range e.gh.CheckRuns(fixtureRepo, fixtureHead) {
		b.WriteString(c.Title + "\n" + c.Summary + "\n" + c.Text + "\n")
	}
	return b.String()
}

// A base-branch .asdd.yml may refer only to the same owner's .github repository. Any other
// reference is a problem of its key: the other repository is never read, and nothing of it
// (its key names, its paths, whether a file exists) is published.
func TestRemoteReferenceStaysWithTheOwnersGithubRepository(t *testing.T) {
	const leak = "secret_key_of_another_repository"
	for _, tc := range []struct {
		name, file, key string
	}{
		{"another owner", "remote: Evil/secrets\n", "remote"},
		{"another owner's .github", "remote: Evil/.github\n", "remote"},
		{"another repository of the owner", "remote: Codertocat/private\n", "remote"},
		{"path traversal in the repository", "remote: Codertocat/../../installation/repositories\n", "remote"},
		{"path traversal in the path", "remote: Codertocat/.github\npath: ../private/.asdd.yml\n", "path"},
		{"absolute path", "remote: Codertocat/.github\npath: /etc/passwd\n", "path"},
		{"ref with ..", "remote: Codertocat/.github\nref: main/../x\n", "ref"},
		{"extra keys", "remote: Codertocat/.github\nreview: {}\n", "review"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			for _, r := range []string{"Evil/secrets", "Evil/.github", "Codertocat/private"} {
				o, n, _ := strings.Cut(r, "/")
				gh.AddRepo(githubfake.Repo{Owner: o, Name: n})
				gh.SetFile(r, "main", ".asdd.yml", leak+": 1\n")
			}
			gh.AddRepo(githubfake.Repo{Owner: "Codertocat", Name: ".github"})
			e := newEnvOn(t, gh, withRealPublisher(t))
			e.addFixturePR(readmeDiff)
			e.gh.SetFile(fixtureRepo, fixtureRef, ".asdd.yml", tc.file)
			e.gh.ResetCalls()
			e.send("pull_request", "d-remote", fixture(t, "pull_request.opened.payload.json"))
			e.drain()
			for _, c := range e.gh.Log() {
				if strings.Contains(c.Path, "/repos/") && !strings.Contains(c.Path, "/repos/"+fixtureRepo+"/") || strings.Contains(c.Path, "installation/repositories") {
					t.Errorf("read outside the repository: %s %s", c.Method, c.Path)
				}
			}
			out := e.published()
			if strings.Contains(out, leak) {
				t.Fatalf("another repository's file reached the publication:\n%s", out)
			}
			gates := e.gh.CheckRuns(fixtureRepo, fixtureHead)
			if len(gates) != 1 || gates[0].Conclusion != "failure" {
				t.Fatalf("gate %+v, want one failing check", gates)
			}
			if !strings.Contains(out, "invalid configuration in") || !strings.Contains(out, ".asdd.yml:") || !strings.Contains(out, tc.key) {
				t.Fatalf("the problem does not name the file and key %q:\n%s", tc.key, out)
			}
		})
	}
}

// The owner's .github repository is the documented place a reference may point to.
func TestRemoteReferenceToTheOwnersGithubRepository(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	e.gh.AddRepo(githubfake.Repo{Owner: "Codertocat", Name: ".github"})
	e.gh.SetFile("Codertocat/.github", "shared", "policies/web.yml", "review:\n  max_diff_lines: 321\n")
	e.gh.SetFile(fixtureRepo, fixtureRef, ".asdd.yml", "remote: Codertocat/.github\npath: policies/web.yml\nref: shared\n")
	e.send("pull_request", "d-remote-ok", fixture(t, "pull_request.opened.payload.json"))
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Config.Origin != repoconfig.OriginRemote || pubs[0].Config.Source != "Codertocat/.github@shared" ||
		pubs[0].Config.Path != "policies/web.yml" {
		t.Fatalf("config %+v", pubs[0].Config)
	}
	if got := e.reviewer.cfgs[0].Review.MaxDiffLines; got != 321 {
		t.Fatalf("max_diff_lines %d, want the referenced file's 321", got)
	}
}

// An oversized .asdd.yml is refused by its size before any of it is decoded or parsed: the gate
// fails with the size problem instead of the run spending memory on a 20 MiB list.
func TestOversizedConfigIsRefusedBySize(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	e.gh.SetFile(fixtureRepo, fixtureRef, ".asdd.yml", "review:\n  paths:\n"+strings.Repeat("    - x\n", 20<<20/8))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e.send("pull_request", "d-huge", fixture(t, "pull_request.opened.payload.json"))
	e.drain()
	runtime.ReadMemStats(&after)
	p, f := e.configRejected()
	if !strings.Contains(f.Title, "exceeds 1048576 bytes") || p.Config.Path != ".asdd.yml" {
		t.Fatalf("finding %+v", f)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("the review allocated %d KiB", alloc>>10)
	if alloc > 64<<20 {
		t.Fatalf("the review allocated %d MiB for a file it refuses by size", alloc>>20)
	}
}

// An installation removed since the event was sent answers the token exchange with 404: the job
// is dropped as a permanent failure, not read again and again.
func TestRemovedInstallationIsPermanent(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	payload := setJSON(t, fixture(t, "pull_request.opened.payload.json"), func(m map[string]any) {
		m["installation"].(map[string]any)["id"] = githubfake.DefaultInstallationID + 99
	})
	if code, body := e.send("pull_request", "d-gone", payload); code != http.StatusAccepted {
		t.Fatalf("%d %q", code, body)
	}
	e.drain()
	if n := e.gh.CallCount("POST /app/installations/{id}/access_tokens"); n != 1 {
		t.Fatalf("token exchange tried %d times, want 1", n)
	}
	if !strings.Contains(e.logs.String(), "the installation no longer exists") || e.reviewer.calls() != 0 {
		t.Fatalf("not dropped as gone:\n%s", e.logs.String())
	}
}

// GitHub does not reopen a completed check run: a re-run (and a review command) is answered
// with a new gate check run, in progress while the review runs, then completed; the earlier
// run keeps its conclusion.
func TestRerunAndCommandCreateANewCheckRun(t *testing.T) {
	const rerunHead = "d6fde92930d4715a2b49857d24b940956b26d2d3"
	for _, tc := range []struct {
		name, event, repo, head string
		payload                 func(t *testing.T, n int) []byte
	}{
		{"check re-run", "check_run", "github/hello-world", rerunHead, func(t *testing.T, n int) []byte {
			return setJSON(t, ownApp(t, "check_run", fixture(t, "check_run.rerequested.rfc3339.payload.json")), func(m map[string]any) {
				m["check_run"].(map[string]any)["id"] = 100 + n
			})
		}},
		{"review command", "issue_comment", fixtureRepo, fixtureHead, func(t *testing.T, n int) []byte {
			return setJSON(t, withComment(t, fixture(t, "issue_comment.created.on-pull-request.with-installation.payload.json"), "/lensgate review"),
				func(m map[string]any) { m["comment"].(map[string]any)["id"] = 100 + n })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withRealPublisher(t))
			e.gh.AddRepo(githubfake.Repo{Owner: "github", Name: "hello-world", ID: 526, DefaultBranch: "master"})
			e.gh.AddPullRequest("github/hello-world", githubfake.PullRequest{Number: 7, HeadSHA: rerunHead, BaseRef: "master", Diff: []byte(readmeDiff)})
			e.gh.AddRepo(githubfake.Repo{Owner: "Codertocat", Name: "Hello-World", DefaultBranch: "master"})
			e.gh.AddPullRequest(fixtureRepo, githubfake.PullRequest{Number: 1, HeadSHA: fixtureHead, BaseSHA: fixtureBase, BaseRef: fixtureRef, Diff: []byte(readmeDiff)})
			e.gh.SetPermission(fixtureRepo, "Codertocat", "write")
			gates := func(status string) int {
				n := 0
				for _, c := range e.gh.CheckRuns(tc.repo, tc.head) {
					if c.Name == publish.DefaultCheckName && (status == "" || c.Status == status) {
						n++
					}
				}
				return n
			}
			e.send(tc.event, "d-first", tc.payload(t, 1))
			e.waitFor("the first review's gate", func() bool { return gates("completed") == 1 })
			first := e.gh.CheckRuns(tc.repo, tc.head)[0]

			hold := make(chan struct{})
			e.reviewer.mu.Lock()
			e.reviewer.gate = hold
			e.reviewer.mu.Unlock()
			e.send(tc.event, "d-again", tc.payload(t, 2))
			e.waitFor("a new gate check in progress", func() bool { return gates("in_progress") == 1 && gates("") == 2 })
			close(hold)
			e.waitFor("both gate checks completed", func() bool { return gates("completed") == 2 })
			for _, c := range e.gh.CheckRuns(tc.repo, tc.head) {
				if c.ID == first.ID && (c.Conclusion != first.Conclusion || c.CompletedAt != first.CompletedAt) {
					t.Fatalf("the first run was changed: %+v, was %+v", c, first)
				}
				if c.DetailsURL != publish.DocsURL {
					t.Errorf("details_url %q, want the documentation", c.DetailsURL)
				}
			}
		})
	}
}
