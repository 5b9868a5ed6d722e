package publish

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/handlers/repoconfig"
	"github.com/lensgate/lensgate/internal/githubfake"
)

const (
	routeListChecks  = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs"
	routeUpdateCheck = "PATCH /repos/{owner}/{repo}/check-runs/{id}"
	orgConfigPath    = "/.github/contents/.asdd.yml"
	orgConfig        = "runtime: builtin\n"
)

// testClock is the server's clock; tests move it.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// orgReads counts the reads of owner's organisation configuration in the fake's call log.
func orgReads(gh *githubfake.Server, owner string) int {
	n := 0
	for _, c := range gh.Log() {
		if c.Method == "GET" && strings.HasSuffix(c.Path, "/repos/"+owner+orgConfigPath) {
			n++
		}
	}
	return n
}

// review sends a synchronize of the fixture pull request to a new head and waits for its
// publication.
func (st *stack) pushHead(head, delivery string) {
	st.t.Helper()
	st.gh.Push(e2eRepo, e2ePR, head, []byte(e2eDiff2), nil)
	sync := edit(st.t, readPayload(st.t, "pull_request.synchronize.payload.json"), func(m map[string]any) {
		m["after"] = head
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = head
	})
	st.send("pull_request", delivery, sync)
	st.wait(delivery)
}

// sendEdit sends a body edit of the fixture pull request by a person, which reviews the same
// head again, and waits for its publication.
func (st *stack) sendEdit(head, delivery string) {
	st.t.Helper()
	ev := edit(st.t, readPayload(st.t, "pull_request.opened.payload.json"), func(m map[string]any) {
		m["action"] = "edited"
		m["changes"] = map[string]any{"body": map[string]any{"from": "the body before " + delivery}}
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = head
	})
	st.send("pull_request", delivery, ev)
	st.wait(delivery)
}

// pushToOrgRepo is the push webhook of owner's .github repository to ref (the octokit push
// payload, moved in memory to that repository and ref).
func pushToOrgRepo(t *testing.T, owner, ref string) []byte {
	t.Helper()
	return edit(t, readPayload(t, "push.with-installation.payload.json"), func(m map[string]any) {
		m["ref"] = ref
		r := m["repository"].(map[string]any)
		r["name"], r["full_name"], r["default_branch"] = ".github", owner+"/.github", "main"
		r["owner"].(map[string]any)["login"], r["owner"].(map[string]any)["name"] = owner, owner
	})
}

// An owner without an organisation configuration answers its read with a 404, which carries
// no ETag to revalidate: the App remembers the absence for OrgConfigAbsentTTL instead of paying
// the read on every review. A configuration added meanwhile applies after that time, or at
// once on the push to the .github repository's default branch; the absence of one owner's is
// never taken for another owner's.
func TestOrgConfigAbsenceIsRemembered(t *testing.T) {
	clock := &testClock{t: time.Now()}
	st := newStack(t, lineReviewer{}, e2eDiff1, func(o *handlers.Options) { o.Now = clock.now })
	const owner = "Codertocat"
	heads := []string{"4444444444444444444444444444444444444444", "5555555555555555555555555555555555555555",
		"6666666666666666666666666666666666666666", "7777777777777777777777777777777777777777", "8888888888888888888888888888888888888888"}

	st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	if n := orgReads(st.gh, owner); n != 1 {
		t.Fatalf("first review read the organisation configuration %d times, want 1", n)
	}
	st.gh.ResetCalls()
	st.pushHead(heads[0], "d-push-1")
	if n := orgReads(st.gh, owner); n != 0 {
		t.Fatalf("a push within the TTL read the organisation configuration %d times, want 0 (its absence is known)", n)
	}

	// The owner adds an organisation configuration. Within the TTL the server default still
	// applies, as documented; after it the file is read and applies.
	st.gh.AddRepo(githubfake.Repo{Owner: owner, Name: ".github", DefaultBranch: "main"})
	st.gh.SetFile(owner+"/.github", "main", ".asdd.yml", orgConfig)
	st.gh.ResetCalls()
	clock.advance(repoconfig.OrgConfigAbsentTTL / 2)
	st.pushHead(heads[1], "d-push-2")
	if n := orgReads(st.gh, owner); n != 0 || strings.Contains(st.decisions.lastSource(), ".github") {
		t.Fatalf("within the TTL: %d reads, configuration %q; want 0 and the server default", n, st.decisions.lastSource())
	}
	clock.advance(repoconfig.OrgConfigAbsentTTL)
	st.pushHead(heads[2], "d-push-3")
	if n := orgReads(st.gh, owner); n != 1 || !strings.Contains(st.decisions.lastSource(), owner+"/.github") {
		t.Fatalf("after the TTL: %d reads, configuration %q; want 1 and the organisation's", n, st.decisions.lastSource())
	}

	// Removed again and remembered absent; a push to a branch other than the default changes
	// nothing, the push to the default branch makes the next review read it at once.
	st.gh.DeleteFile(owner+"/.github", "main", ".asdd.yml")
	clock.advance(2 * repoconfig.OrgConfigAbsentTTL)
	st.pushHead(heads[3], "d-push-4")
	if src := st.decisions.lastSource(); strings.Contains(src, ".github") {
		t.Fatalf("a removed organisation configuration still applies: %q", src)
	}
	st.gh.SetFile(owner+"/.github", "main", ".asdd.yml", orgConfig)
	st.send("push", "d-push-org-branch", pushToOrgRepo(t, owner, "refs/heads/topic"))
	st.send("push", "d-push-other-owner", pushToOrgRepo(t, "Someone-Else", "refs/heads/main"))
	st.gh.ResetCalls()
	st.sendEdit(heads[3], "d-edit-1")
	if n := orgReads(st.gh, owner); n != 0 {
		t.Fatalf("a push to another branch or another owner's .github repository made the review read %s's configuration (%d reads)", owner, n)
	}
	st.send("push", "d-push-org", pushToOrgRepo(t, owner, "refs/heads/main"))
	st.gh.ResetCalls()
	st.pushHead(heads[4], "d-push-5")
	if n := orgReads(st.gh, owner); n != 1 || !strings.Contains(st.decisions.lastSource(), owner+"/.github") {
		t.Fatalf("after the push to the default branch: %d reads, configuration %q; want 1 and the organisation's", n, st.decisions.lastSource())
	}
}

// The absence is remembered per installation and owner: another owner on the same
// installation still reads its own organisation configuration, and gets it.
func TestOrgConfigAbsenceIsPerOwner(t *testing.T) {
	st := newStack(t, lineReviewer{}, e2eDiff1)
	const other = "Octo-Other"
	otherOpened := bytes.ReplaceAll(readPayload(t, "pull_request.opened.payload.json"), []byte("Codertocat"), []byte(other))
	if _, _, err := st.gh.AddFromPullRequestEvent(otherOpened, []byte(e2eDiff1)); err != nil {
		t.Fatal(err)
	}
	st.gh.SetFile(other+"/Hello-World", "master", "README.md", "# Hello-World\n")
	st.gh.AddRepo(githubfake.Repo{Owner: other, Name: ".github", DefaultBranch: "main"})
	st.gh.SetFile(other+"/.github", "main", ".asdd.yml", orgConfig)

	st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	if src := st.decisions.lastSource(); strings.Contains(src, ".github") {
		t.Fatalf("Codertocat's review got configuration %q", src)
	}
	st.gh.ResetCalls()
	st.send("pull_request", "d-other-opened", otherOpened)
	st.wait("other opened")
	if n, src := orgReads(st.gh, other), st.decisions.lastSource(); n != 1 || !strings.Contains(src, other+"/.github") {
		t.Fatalf("%s: %d reads of its organisation configuration, configuration %q; want 1 and its own", other, n, src)
	}
	st.gh.ResetCalls()
	st.pushHead("4444444444444444444444444444444444444444", "d-push")
	if n, src := orgReads(st.gh, "Codertocat"), st.decisions.lastSource(); n != 0 || strings.Contains(src, ".github") {
		t.Fatalf("Codertocat after %s's review: %d reads, configuration %q; want 0 and the server default", other, n, src)
	}
}

// The gate check run of each head is recorded beyond its job: the first review of a head and
// a push create the run without listing the head's check runs (no record: the App never wrote
// one), and a repeated review of the head concludes the recorded run in place.
func TestGateCheckRecordSavesTheLookup(t *testing.T) {
	st := newStack(t, lineReviewer{}, e2eDiff1)
	st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	if n := st.gh.CallCount(routeListChecks); n != 0 {
		t.Fatalf("first review listed the head's check runs %d times, want 0", n)
	}
	st.gh.ResetCalls()
	const head2 = "4444444444444444444444444444444444444444"
	st.pushHead(head2, "d-push")
	if n := st.gh.CallCount(routeListChecks); n != 0 {
		t.Fatalf("review after a push listed check runs %d times, want 0", n)
	}
	st.gh.ResetCalls()
	st.sendEdit(head2, "d-edit")
	if n := st.gh.CallCount(routeListChecks); n != 0 {
		t.Fatalf("repeated review of a head listed check runs %d times, want 0", n)
	}
	if g := gatesOf(st.gh, head2); len(g) != 1 || g[0].Status != "completed" || g[0].Conclusion != gateConclusion(st.decisions.last().Gate) {
		t.Fatalf("gate check runs of the head after a repeated review: %+v, want the one run concluded in place", g)
	}
}

// staleChecks hands out a record whose run does not exist (as after a repository was deleted
// and created again under its name) while armed.
type staleChecks struct {
	queue.CheckRecords
	mu    sync.Mutex
	armed bool
}

func (s *staleChecks) Check(ctx context.Context, key queue.CheckKey) (queue.CheckRecord, bool, error) {
	rec, found, err := s.CheckRecords.Check(ctx, key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armed && found {
		s.armed = false
		rec.ID += 1 << 40
	}
	return rec, found, err
}

// A record naming a run GitHub no longer has is not trusted past the 404: the head's check
// runs are listed and the run found there is concluded, with no second run created, and the
// record is right again for the next review.
func TestStaleGateCheckRecordFallsBackToListing(t *testing.T) {
	recs := &staleChecks{CheckRecords: queue.NewMemoryChecks(0)}
	st := newStackWith(t, lineReviewer{}, e2eDiff1, func(o *Options) { o.Checks = recs })
	st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	st.wait("opened")
	recs.mu.Lock()
	recs.armed = true
	recs.mu.Unlock()
	st.gh.ResetCalls()
	st.sendEdit(e2eHead1, "d-edit-1")
	if n := st.gh.CallCount(routeListChecks); n != 1 {
		t.Fatalf("a stale record led to %d listings of the head's check runs, want 1", n)
	}
	g := gatesOf(st.gh, e2eHead1)
	if len(g) != 1 || g[0].Status != "completed" || g[0].Conclusion != gateConclusion(st.decisions.last().Gate) {
		t.Fatalf("gate check runs after a stale record: %+v, want the one run concluded", g)
	}
	if strings.Contains(g[0].Text, "GitHub write failed") {
		t.Fatalf("the recovered 404 is reported as a failure:\n%s", g[0].Text)
	}
	st.gh.ResetCalls()
	st.sendEdit(e2eHead1, "d-edit-2")
	if n := st.gh.CallCount(routeListChecks); n != 0 {
		t.Fatalf("after the fallback the record is still wrong: %d listings", n)
	}
	if n := st.gh.CallCount(routeUpdateCheck); n != 1 {
		t.Fatalf("check-run updates = %d, want 1 (the recorded run, concluded)", n)
	}
	if g := gatesOf(st.gh, e2eHead1); len(g) != 1 {
		t.Fatalf("gate check runs = %d, want 1", len(g))
	}
}

// With the durable queue the records are in its database: a replica reviewing a head again
// finds the gate check run another replica wrote, lists nothing and concludes that run.
func TestGateCheckRecordIsSharedByReplicas(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "queue.db")
	replica := func(base *stack) (*stack, queue.Queue) {
		q, err := durable.Open(ctx, dsn, durable.Options{FetchPollInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Stop(ctx) })
		recs, err := durable.NewCheckRecords(ctx, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		popts := func(o *Options) { o.Checks = recs }
		with := func(o *handlers.Options) { o.Queue = q }
		if base == nil {
			return newStackWith(t, lineReviewer{}, e2eDiff1, popts, with), q
		}
		return newReplica(base, lineReviewer{}, popts, with), q
	}
	a, qa := replica(nil)
	a.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	a.wait("opened")
	// The first replica's workers stop: the next review runs on the second replica.
	if err := qa.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	b, _ := replica(a)
	b.gh.ResetCalls()
	b.sendEdit(e2eHead1, "d-edit")
	if n := b.gh.CallCount(routeListChecks); n != 0 {
		t.Fatalf("the second replica listed the head's check runs %d times, want 0", n)
	}
	g := gatesOf(b.gh, e2eHead1)
	if len(g) != 1 || g[0].Status != "completed" || g[0].Conclusion != gateConclusion(b.decisions.last().Gate) {
		t.Fatalf("gate check runs after the second replica's review: %+v, want the first replica's run concluded in place", g)
	}
}

// With the durable queue the organisation configuration's absence is in its database: a
// replica skips the read another replica found missing, and the push to the .github
// repository received by one replica (the one serving webhooks) makes another replica's
// worker read the configuration at once.
func TestOrgConfigAbsenceIsSharedByReplicas(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "queue.db")
	const owner = "Codertocat"
	replica := func(base *stack, role string) (*stack, queue.Queue) {
		q, err := durable.Open(ctx, dsn, durable.Options{FetchPollInterval: 20 * time.Millisecond, InsertOnly: role == handlers.RoleWeb})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Stop(ctx) })
		absent, err := durable.NewOrgConfigAbsence(ctx, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		with := func(o *handlers.Options) { o.Queue, o.OrgConfigAbsence, o.Role = q, absent, role }
		if base == nil {
			return newStackWith(t, lineReviewer{}, e2eDiff1, nil, with), q
		}
		return newReplica(base, lineReviewer{}, nil, with), q
	}
	a, qa := replica(nil, handlers.RoleAll)
	a.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
	a.wait("opened")
	if n := orgReads(a.gh, owner); n != 1 {
		t.Fatalf("first review: %d reads of the organisation configuration, want 1", n)
	}
	if err := qa.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The next reviews run on a worker replica; a replica serving webhooks only receives them.
	b, _ := replica(a, handlers.RoleWorker)
	web, _ := replica(a, handlers.RoleWeb)
	review := func(head, delivery string) {
		t.Helper()
		b.gh.Push(e2eRepo, e2ePR, head, []byte(e2eDiff2), nil)
		web.send("pull_request", delivery, edit(t, readPayload(t, "pull_request.synchronize.payload.json"), func(m map[string]any) {
			m["after"] = head
			m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = head
		}))
		b.wait(delivery)
	}
	b.gh.ResetCalls()
	review("4444444444444444444444444444444444444444", "d-push-1")
	if n := orgReads(b.gh, owner); n != 0 {
		t.Fatalf("the worker replica read the organisation configuration %d times, want 0 (the first replica found it missing)", n)
	}
	b.gh.AddRepo(githubfake.Repo{Owner: owner, Name: ".github", DefaultBranch: "main"})
	b.gh.SetFile(owner+"/.github", "main", ".asdd.yml", orgConfig)
	web.send("push", "d-push-org", pushToOrgRepo(t, owner, "refs/heads/main"))
	b.gh.ResetCalls()
	review("5555555555555555555555555555555555555555", "d-push-2")
	if n, src := orgReads(b.gh, owner), b.decisions.lastSource(); n != 1 || !strings.Contains(src, owner+"/.github") {
		t.Fatalf("after the push reached the webhook replica: the worker read it %d times, configuration %q; want 1 and the organisation's", n, src)
	}
}
