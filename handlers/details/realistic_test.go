package details_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
	"github.com/lensgate/lensgate/internal/githubfake"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/policy"
)

// The states of a realistic review the screenshots show.
type reviewState int

const (
	stateClean   reviewState = iota // every lens passed, nothing found
	stateFailing                    // the security lens found one high finding
	statePending                    // a required lens's runtime timed out
)

// realisticReviewer gives the plain results a real review of the fixture's README change
// could give: ordinary text, no planted markup.
// The state is read at each review, so that one stack can review a head failing and the next
// one clean.
type realisticReviewer struct{ state *atomic.Int32 }

func newRealistic(s reviewState) realisticReviewer {
	r := realisticReviewer{state: &atomic.Int32{}}
	r.state.Store(int32(s))
	return r
}

func (r realisticReviewer) Review(_ context.Context, s *review.Subject, cfg *config.Repo) (*review.Decision, error) {
	plan, err := policy.NewPlan(cfg.Policy)
	if err != nil {
		return nil, err
	}
	state := reviewState(r.state.Load())
	sum := sha256.Sum256(s.Diff)
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	d := &review.Decision{
		Recommendation: review.RecommendComment, PlanDigest: plan.Digest(), Intake: review.Intake{Passed: true},
		Coverage: review.Coverage{Status: review.CoverageComplete, FilesTotal: len(s.Files), FilesReviewed: len(s.Files)},
		Subject: review.SubjectContext{Kind: s.Kind, Owner: s.Owner, Repo: s.Repo, Number: s.Number,
			RepositoryNodeID: s.RepositoryNodeID, NodeID: s.NodeID, HeadSHA: s.HeadSHA, BaseSHA: s.BaseSHA,
			ReviewedDiffDigest: hex.EncodeToString(sum[:])},
		Gate: review.Gate{State: review.OutcomePassed, Reason: "All required lenses passed."},
	}
	for i, l := range cfg.Policy.Lenses {
		lr := review.LensResult{Name: l.Name, Required: l.Required, Publication: l.Publication, Outcome: review.OutcomePassed,
			Runtime: "builtin", Summary: "No problem found in the changed lines."}
		switch {
		case l.Name == "security" && state == stateFailing:
			f := review.Finding{ID: "security:readme-exec", Lens: l.Name, Severity: review.SeverityHigh, Path: "README.md", Line: 2,
				Title: "The README tells users to pass their own input to exec",
				Body:  "Readers who copy this line run whatever the input contains. Show a fixed command, or quote the argument and say why."}
			lr.Outcome, lr.Summary = review.OutcomeFailed, "One high finding."
			lr.Findings = append(lr.Findings, f)
			d.Findings = append(d.Findings, f)
			d.Gate = review.Gate{State: review.OutcomeFailed, Reason: "The required lens security failed: one high finding."}
			d.Recommendation = review.RecommendRequestChanges
		case l.Name == "correctness" && state == statePending:
			lr.Outcome, lr.Summary, lr.Cause = review.OutcomePending, "", "The runtime timed out after 120s."
			d.Gate = review.Gate{State: review.OutcomePending, Reason: "The required lens correctness has no result yet."}
		}
		if lr.Outcome == review.OutcomePassed || lr.Outcome == review.OutcomeFailed {
			lr.Tokens = &review.TokenCount{Prompt: 900 + 100*i, Completion: 40 + i, Total: 940 + 101*i}
			d.Tokens.TokenCount.Prompt += lr.Tokens.Prompt
			d.Tokens.TokenCount.Completion += lr.Tokens.Completion
			d.Tokens.TokenCount.Total += lr.Tokens.Total
		}
		d.Lenses = append(d.Lenses, lr)
		d.Runs = append(d.Runs, review.Run{Lens: l.Name, Runtime: "builtin", Model: "review-model-1", Started: start,
			Finished: start.Add(time.Duration(2+i) * time.Second), Outcome: lr.Outcome})
	}
	return d, nil
}

// synchronize delivers a synchronize webhook for the pull request's new head and waits for its
// publication.
func (st *stack) synchronize(head string) {
	st.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(st.payload(stackOptions{}), &m); err != nil {
		st.t.Fatal(err)
	}
	m["action"] = "synchronize"
	m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = head
	raw, err := json.Marshal(m)
	if err != nil {
		st.t.Fatal(err)
	}
	req, err := githubfake.WebhookRequest(st.srv.URL+handlers.RouteHook, "pull_request", fmt.Sprintf("d-%d", time.Now().UnixNano()), st.gh.WebhookSecret(), raw)
	if err != nil {
		st.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		st.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		st.t.Fatalf("webhook answered %d", resp.StatusCode)
	}
	st.wait("review of " + head)
}

// TestRealisticPages opens a realistic pull request's page in four states (clean, failing,
// pending, superseded), checks what a reviewer reads first, and keeps a full-page screenshot of
// each (in LENSGATE_TEST_ARTIFACTS when set). The failing page has one finding; its height is
// bounded: at 1280 px wide the whole page fits in 1,600 px (two screens of a 1280x800 laptop),
// and the verdict and the findings sit in the first 800 px, above the fold.
func TestRealisticPages(t *testing.T) {
	browser := newBrowser(t)
	dir := artifactDir(t)
	cases := []struct {
		name  string
		state reviewState
		gate  string
		first string
		rows  int
		head  string // the head whose page is shown ("" for the current one)
	}{
		{name: "clean", state: stateClean, gate: "gate passed", first: "no finding does not mean no defect"},
		{name: "failing", state: stateFailing, gate: "gate failed", first: "Fix or answer the findings", rows: 1},
		{name: "pending", state: statePending, gate: "gate pending", first: "has not given a result"},
		{name: "superseded", state: stateClean, gate: "gate failed", first: "review of an earlier head", rows: 1, head: fixtureHead},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rv := newRealistic(c.state)
			o := stackOptions{reviewer: rv}
			st := newStack(t, o)
			if c.head != "" {
				rv.state.Store(int32(stateFailing))
				st.review(o)
				st.gh.Push(fixtureRepo, fixturePR, newHead, []byte(fixtureDiff+"+Run it with exec(\"make\").\n"), nil)
				st.gh.CatchUp()
				rv.state.Store(int32(c.state))
				st.synchronize(newHead)
			} else {
				st.review(o)
			}
			ctx := tab(t, browser)
			browserLogin(t, ctx, st.pageURL(c.head), reader)
			if s := browserResult(t, ctx); s != "ok" {
				t.Fatalf("in-browser verification: %s", s)
			}
			// Every state is drawn as inline SVG; no text needs a symbol or emoji font
			// (Miscellaneous Technical, Dingbats, arrows and emoji blocks).
			if odd := eval[string](t, ctx, `(document.body.textContent.match(/[\u2190-\u21ff\u2300-\u27bf\u2b00-\u2bff]|[\u{1f000}-\u{1faff}]/gu) || []).join("")`); odd != "" {
				t.Errorf("characters a font may lack: %q", odd)
			}
			if n := eval[int](t, ctx, `[...document.querySelectorAll(".badge")].filter(b => !b.querySelector("svg.icon")).length`); n != 0 {
				t.Errorf("%d status badges without an icon", n)
			}
			if w := eval[int](t, ctx, `window.innerWidth`); w != 1280 {
				t.Fatalf("viewport %d px wide, want 1280", w)
			}
			height := eval[int](t, ctx, `Math.ceil(document.documentElement.getBoundingClientRect().height)`)
			t.Logf("page height at 1280 px: %d px", height)
			screenshot(t, ctx, dir, "realistic-"+c.name+".png")

			if got := eval[string](t, ctx, `document.getElementById("gate-state").textContent.trim()`); got != c.gate {
				t.Fatalf("gate badge %q, want %q", got, c.gate)
			}
			if got := eval[string](t, ctx, `document.getElementById("first-step").textContent`); !strings.Contains(got, c.first) {
				t.Fatalf("first step %q lacks %q", got, c.first)
			}
			if n := eval[int](t, ctx, `document.querySelectorAll("#findings tbody tr").length`); n != c.rows {
				t.Fatalf("%d finding rows, want %d", n, c.rows)
			}
			// The reader sees the verdict, then the findings, then the lenses.
			order := eval[bool](t, ctx, `(() => { const y = id => document.getElementById(id).getBoundingClientRect().top; return y("gate-h") < y("findings-h") && y("findings-h") < y("lenses-h") })()`)
			if !order {
				t.Fatal("the verdict, the findings and the lenses are not in that order")
			}
			// Verification, observation, policy and audit are collapsed.
			open := eval[[]string](t, ctx, `[...document.querySelectorAll("details.fold")].filter(d => d.open).map(d => d.querySelector("h2").id)`)
			if n := eval[int](t, ctx, `document.querySelectorAll("details.fold").length`); n < 3 || len(open) != 0 {
				t.Fatalf("%d folded sections, open: %v", n, open)
			}
			if c.name == "failing" {
				// The folded sections open, and each axis and code says what it means.
				within(t, ctx, "open the folded sections", chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("details.fold").forEach(d => d.open = true)`))
				bare := eval[[]string](t, ctx, `[...document.querySelectorAll("#server-axes tbody tr, #codes tbody tr")].filter(r => r.cells[r.cells.length-1].textContent.trim() === "" || /No explanation/.test(r.textContent)).map(r => r.textContent)`)
				if len(bare) != 0 {
					t.Errorf("rows without an explanation: %v", bare)
				}
				if n := eval[int](t, ctx, `document.querySelectorAll("#codes tbody tr").length`); n == 0 {
					t.Error("no code is explained (a receipt always states its limitations)")
				}
				screenshot(t, ctx, dir, "realistic-failing-open.png")
				if height > 1600 {
					t.Errorf("a one-finding page is %d px high at 1280 px wide; the bound is 1600", height)
				}
				if y := eval[int](t, ctx, `Math.ceil(document.getElementById("findings").getBoundingClientRect().bottom + scrollY)`); y > 800 {
					t.Errorf("the findings end at %d px, below the first 800 px", y)
				}
			}
		})
	}
}
