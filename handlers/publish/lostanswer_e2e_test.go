package publish

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/queue"
	"github.com/lensgate/lensgate/handlers/queue/durable"
	"github.com/lensgate/lensgate/internal/githubfake"
)

const (
	routeCreateCheck = "POST /repos/{owner}/{repo}/check-runs"
	routeGetPull     = "GET /repos/{owner}/{repo}/pulls/{number}"
)

// waitAny waits for the next publication and returns its outcome, failed or not.
func (st *stack) waitAny(what string) error {
	st.t.Helper()
	select {
	case err := <-st.done:
		return err
	case <-time.After(30 * time.Second):
		st.t.Fatalf("%s: no publication; logs:\n%s", what, st.logs.String())
	}
	return nil
}

// recordStores are the gate check record stores a stack can use: the memory queue's and the
// durable queue's database (SQLite here; the database's order of writes is held to the memory
// store's by the durable package's tests, PostgreSQL included).
func recordStores(t *testing.T) map[string]func(*testing.T) queue.CheckRecords {
	return map[string]func(*testing.T) queue.CheckRecords{
		"memory": func(*testing.T) queue.CheckRecords { return queue.NewMemoryChecks(0) },
		"sqlite": func(t *testing.T) queue.CheckRecords {
			ctx := context.Background()
			q, err := durable.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "queue.db"), durable.Options{InsertOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = q.Stop(ctx) })
			recs, err := durable.NewCheckRecords(ctx, q, nil)
			if err != nil {
				t.Fatal(err)
			}
			return recs
		},
	}
}

// GitHub can apply a write and still fail its answer (a 502 from a proxy, a timeout), and a
// job can end before it records what it wrote. Whatever the first review of a head left
// unknown, the next review of that head (a job's retry, an edit, a redelivery) finds the gate
// check run the first one created and concludes it: a head never gets a second gate run.
func TestGateCheckRunSurvivesLostAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults map[string]githubfake.Fault
		// firstFails is whether the first review's publication reports a failed write.
		firstFails bool
		// lists is how many times the next review lists the head's check runs.
		lists int
	}{
		{
			// The concluding write (with annotations) lands, its answer is a 502, and the run
			// read back shows it landed: the record holds the concluded run.
			name:   "concluding update applied, answered 502",
			faults: map[string]githubfake.Fault{routeUpdateCheck: {Status: http.StatusBadGateway, AfterWrite: true}},
			lists:  0,
		},
		{
			// Every try of the concluding write fails: the run's state is unknown.
			name:       "concluding update failed after its retries",
			faults:     map[string]githubfake.Fault{routeUpdateCheck: {Status: http.StatusBadGateway, Times: 3}},
			firstFails: true,
			lists:      1,
		},
		{
			// The create lands, its answer is a 502, and neither the re-check nor the
			// concluding write's lookup gets an answer: no record of the run is written.
			name: "create applied, answered 502, its lookups unanswered",
			faults: map[string]githubfake.Fault{
				routeCreateCheck: {Status: http.StatusBadGateway, AfterWrite: true},
				routeListChecks:  {Status: http.StatusServiceUnavailable, Times: 6},
			},
			firstFails: true,
			lists:      1,
		},
		{
			// The first job cannot read the pull request and reports a pending gate from what
			// the job alone says (no repository node id); the next review, which reads it,
			// finds that run.
			name:   "first review could not read the pull request",
			faults: map[string]githubfake.Fault{routeGetPull: {Status: http.StatusBadGateway, Times: 4}},
			lists:  0,
		},
	} {
		for store, newRecords := range recordStores(t) {
			t.Run(tc.name+"/"+store, func(t *testing.T) {
				recs := newRecords(t)
				st := newStackWith(t, lineReviewer{}, e2eDiff1, func(o *Options) { o.Checks = recs })
				for route, f := range tc.faults {
					st.gh.Inject(route, f)
				}
				st.send("pull_request", "d-opened", readPayload(t, "pull_request.opened.payload.json"))
				if err := st.waitAny("opened"); (err != nil) != tc.firstFails {
					t.Fatalf("first review's publication: %v, want failed %v", err, tc.firstFails)
				}
				for route := range tc.faults {
					if n := st.gh.PendingFaults(route); n != 0 {
						t.Fatalf("%d faults of %s unused: the first review did not meet them", n, route)
					}
				}
				if g := gatesOf(st.gh, e2eHead1); len(g) != 1 {
					t.Fatalf("gate check runs after the first review: %+v, want 1", g)
				}
				st.gh.ResetCalls()
				st.sendEdit(e2eHead1, "d-edit")
				if n := st.gh.CallCount(routeListChecks); n != tc.lists {
					t.Errorf("the next review listed the head's check runs %d times, want %d", n, tc.lists)
				}
				g := gatesOf(st.gh, e2eHead1)
				if len(g) != 1 || g[0].Status != "completed" || g[0].Conclusion != gateConclusion(st.decisions.last().Gate) {
					t.Fatalf("gate check runs after the next review: %+v, want the first review's run, concluded", g)
				}
				// The record is right again: a third review of the head lists nothing.
				st.gh.ResetCalls()
				st.sendEdit(e2eHead1, "d-edit-2")
				if n := st.gh.CallCount(routeListChecks); n != 0 {
					t.Errorf("a third review listed the head's check runs %d times, want 0", n)
				}
				if g := gatesOf(st.gh, e2eHead1); len(g) != 1 {
					t.Fatalf("gate check runs after a third review: %d, want 1", len(g))
				}
			})
		}
	}
}

// A re-run asks for a new gate check run. When its create fails before it lands, the lookup
// before the retry sees only the completed run it follows, which is not taken for the new one:
// the create is sent again, and the re-run has a run of its own, concluded.
func TestRerunCreateFailingBeforeItLandsIsRetried(t *testing.T) {
	st := newStack(t, lineReviewer{}, e2eDiff1)
	opened := readPayload(t, "pull_request.opened.payload.json")
	st.send("pull_request", "d-opened", opened)
	st.wait("opened")
	first := gateOf(st.gh, e2eHead1)
	var repo map[string]any
	if err := json.Unmarshal(opened, &struct {
		Repository *map[string]any `json:"repository"`
	}{&repo}); err != nil {
		t.Fatal(err)
	}
	rerun := edit(t, readPayload(t, "check_run.rerequested.rfc3339.payload.json"), func(m map[string]any) {
		m["repository"] = repo
		cr := m["check_run"].(map[string]any)
		cr["head_sha"], cr["name"], cr["id"] = e2eHead1, DefaultCheckName, first.ID
		cr["app"].(map[string]any)["id"] = st.gh.AppID()
	})
	st.gh.Inject(routeCreateCheck, githubfake.Fault{Status: http.StatusBadGateway})
	st.send("check_run", "d-rerun", rerun)
	st.wait("re-run")
	g := gatesOf(st.gh, e2eHead1)
	if len(g) != 2 {
		t.Fatalf("gate check runs after the re-run: %+v, want the first and the re-run's", g)
	}
	for _, c := range g {
		if c.Status != "completed" || c.Conclusion == "" {
			t.Fatalf("gate check run %d left %s after the re-run", c.ID, c.Status)
		}
	}
	if newest := gateOf(st.gh, e2eHead1); newest.ID == first.ID || newest.Conclusion != gateConclusion(st.decisions.last().Gate) {
		t.Fatalf("newest gate run %+v, want a new run concluding the re-run", newest)
	}
}
