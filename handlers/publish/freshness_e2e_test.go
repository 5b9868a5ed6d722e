package publish

import (
	"strings"
	"testing"
	"time"

	"github.com/lensgate/lensgate/disclosure/block"
	"github.com/lensgate/lensgate/internal/digest"
)

// With GitHub's cache headers and its replicas' read lag (both on in the fake by default): the
// pull request is opened and reviewed, the author edits its body, pushes within the same minute
// and pushes twice more in a burst. The final head gets exactly one gate run, concluded; no gate
// run of any head is left in progress; the sticky comment's receipt names the final head; and
// the author's text is in the body beside exactly one disclosure block.
func TestEditAndPushBurstUnderReplicaLag(t *testing.T) {
	st := newStack(t, lineReviewer{}, e2eDiff1)
	original := st.gh.PullBody(e2eRepo, e2ePR)
	opened := readPayload(t, "pull_request.opened.payload.json")
	st.send("pull_request", "d-open", opened)
	st.wait("opened")

	authorText := "Edited by the author after the first review: these words must survive.\n\n"
	st.gh.SetPullBody(e2eRepo, e2ePR, authorText+st.gh.PullBody(e2eRepo, e2ePR))
	st.send("pull_request", "d-edit", edit(t, opened, func(m map[string]any) {
		m["action"] = "edited"
		m["changes"] = map[string]any{"body": map[string]any{"from": "the body before"}}
	}))
	heads := []string{e2eHead2, strings.Repeat("4", 40), strings.Repeat("5", 40)}
	for _, head := range heads {
		st.gh.Push(e2eRepo, e2ePR, head, []byte(e2eDiff2), nil)
		st.send("pull_request", "d-sync-"+head[:4], edit(t, readPayload(t, "pull_request.synchronize.payload.json"), func(m map[string]any) {
			m["after"] = head
			m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = head
		}))
	}
	final := heads[len(heads)-1]

	settled := func() bool {
		g := gatesOf(st.gh, final)
		if len(g) != 1 || g[0].Status != "completed" {
			return false
		}
		for _, h := range append([]string{e2eHead1}, heads...) {
			for _, c := range gatesOf(st.gh, h) {
				if c.Status != "completed" {
					return false
				}
			}
		}
		c := botComments(st.gh)
		return len(c) == 1 && priorHead(extractEnvelope(c[0].Body)) == final
	}
	deadline := time.Now().Add(60 * time.Second)
	for !settled() {
		if time.Now().After(deadline) {
			for _, h := range append([]string{e2eHead1}, heads...) {
				t.Logf("gates of %s: %+v", h[:7], gatesOf(st.gh, h))
			}
			t.Fatalf("not settled; logs:\n%s", st.logs.String())
		}
		select {
		case err := <-st.done:
			if err != nil {
				t.Logf("a publication failed: %v", err)
			}
		case <-time.After(50 * time.Millisecond):
		}
	}
	body := st.gh.PullBody(e2eRepo, e2ePR)
	if !strings.HasPrefix(body, authorText+original) || strings.Count(body, block.Begin) != 1 {
		t.Fatalf("body lost the author's edit or carries the block twice:\n%s", body)
	}
	comment := botComments(st.gh)[0].Body
	if !bodyShowsReceipt(body, digest.SHA256Hex(extractEnvelope(comment))) {
		t.Errorf("the body's block does not show the sticky comment's receipt")
	}
	if g := gatesOf(st.gh, final); len(g) != 1 {
		t.Errorf("final head has %d gate runs, want 1", len(g))
	}
}
