package pdp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
)

const author = "Fixes the parser.\r\n\r\nDetails with trailing spaces   \n"

func testPolicy() Policy {
	return Policy{
		TriageLabels: config.DefaultTriageLabels(),
		Publication: map[string]string{
			"security": config.PublicationReview, "correctness": config.PublicationInline,
			"tests": config.PublicationComment, "style": config.PublicationReaction, "perf": config.PublicationCheck,
		},
		MaxActions: 100,
	}
}

func newPDP(t *testing.T, pol Policy) (*PDP, *MemorySink, *bytes.Buffer) {
	t.Helper()
	sink := &MemorySink{}
	var logs bytes.Buffer
	clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return New(Config{
		Policy: pol, RunID: "run-1", Sink: sink, Logger: zerolog.New(&logs),
		Now: func() time.Time { return clock },
	}), sink, &logs
}

func act(k Kind) Action {
	return Action{Kind: k, Repo: "acme/widgets", Number: 7, HeadSHA: "abc", Target: string(k), Source: "publisher"}
}

func TestAuthorizeTable(t *testing.T) {
	block := "<!-- proofbundle:agent-review:begin -->\n- **Involvement:** x\n<!-- proofbundle:agent-review:end -->"
	with := func(a Action, f func(*Action)) Action { f(&a); return a }
	cases := []struct {
		name   string
		action Action
		allow  bool
		reason string
	}{
		{"gate check run create", act(KindCheckRunCreate), true, "allowed"},
		{"gate check run update", act(KindCheckRunUpdate), true, "allowed"},
		{"per-lens check run", with(act(KindCheckRunCreate), func(a *Action) { a.Lenses = []string{"perf"} }), true, "allowed"},
		{"sticky comment", with(act(KindCommentUpsert), func(a *Action) { a.Lenses = []string{"security", "tests"} }), true, "allowed"},
		{"review COMMENT with inline lenses", with(act(KindReviewCreate), func(a *Action) {
			a.ReviewEvent, a.Lenses = EventComment, []string{"security", "correctness"}
		}), true, "allowed"},
		{"review from a comment-only lens", with(act(KindReviewCreate), func(a *Action) {
			a.ReviewEvent, a.Lenses = EventComment, []string{"tests"}
		}), false, `lens "tests" publishes as "comment"`},
		{"review for an unknown lens", with(act(KindReviewCreate), func(a *Action) {
			a.ReviewEvent, a.Lenses = EventComment, []string{"ghost"}
		}), false, "not in the policy"},
		{"REQUEST_CHANGES not allowed by default", with(act(KindReviewCreate), func(a *Action) { a.ReviewEvent = EventRequestChanges }), false, "REQUEST_CHANGES is not allowed"},
		{"APPROVE review", with(act(KindReviewCreate), func(a *Action) { a.ReviewEvent = EventApprove }), false, "approving reviews are never allowed"},
		{"review without event", act(KindReviewCreate), false, "review event"},
		{"reaction lens", with(act(KindReactionAdd), func(a *Action) { a.Reaction, a.Lenses = "eyes", []string{"style"} }), true, "allowed"},
		{"reaction from review lens", with(act(KindReactionAdd), func(a *Action) { a.Reaction, a.Lenses = "eyes", []string{"security"} }), false, "publishes as"},
		{"odd reaction", with(act(KindReactionAdd), func(a *Action) { a.Reaction = "skull" }), false, "not allowed"},
		{"triage labels", with(act(KindLabelsAdd), func(a *Action) { a.Labels = []string{"bug", "Needs-Triage"} }), true, "allowed"},
		{"label outside triage_labels", with(act(KindLabelsAdd), func(a *Action) { a.Labels = []string{"bug", "approved"} }), false, `label "approved" is not in triage_labels`},
		{"no labels", act(KindLabelsAdd), false, "no labels"},
		{"disclosure appended", with(act(KindDisclosure), func(a *Action) {
			a.BodyBefore, a.BodyAfter = author, author+"\n"+block+"\n"
		}), true, "allowed"},
		{"disclosure replaced", with(act(KindDisclosure), func(a *Action) {
			a.BodyBefore = author + "\n" + block + "\ntail"
			a.BodyAfter = author + "\n" + strings.Replace(block, "x", "y", 1) + "\ntail"
		}), true, "allowed"},
		{"body edit outside the block", with(act(KindDisclosure), func(a *Action) {
			a.BodyBefore, a.BodyAfter = author, "Rewritten.\n\n"+block+"\n"
		}), false, "outside the disclosure block"},
		{"body edit dropping a byte of author text", with(act(KindDisclosure), func(a *Action) {
			a.BodyBefore, a.BodyAfter = author, strings.Replace(author, "\r\n", "\n", 1)+"\n"+block+"\n"
		}), false, "outside the disclosure block"},
		{"body without block", with(act(KindDisclosure), func(a *Action) { a.BodyBefore, a.BodyAfter = author, author }), false, "no single disclosure block"},
		{"two blocks", with(act(KindDisclosure), func(a *Action) { a.BodyBefore, a.BodyAfter = author, author+block+block }), false, "more than one disclosure block"},
		{"merge", act(KindMerge), false, "never allowed"},
		{"push", act(KindPush), false, "never allowed"},
		{"branch deletion", act(KindBranchDelete), false, "never allowed"},
		{"close", act(KindClose), false, "never allowed"},
		{"approve", act(KindApprove), false, "never allowed"},
		{"free body edit", act(KindBodyEdit), false, "never allowed"},
		{"unknown", act(Kind("deploy")), false, "not on the allow-list"},
		{"no subject", Action{Kind: KindCommentUpsert, Target: "c"}, false, "no repository"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, sink, logs := newPDP(t, testPolicy())
			d := p.Authorize(context.Background(), tc.action)
			if d.Allowed != tc.allow || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("Authorize = %v %q, want %v containing %q", d.Allowed, d.Reason, tc.allow, tc.reason)
			}
			recs := sink.Records()
			if len(recs) != 1 || recs[0].Hash != d.Record.Hash || recs[0].Outcome.Verdict != map[bool]string{true: "allow", false: "deny"}[tc.allow] {
				t.Fatalf("audit = %+v", recs)
			}
			var line map[string]any
			if err := json.Unmarshal(logs.Bytes(), &line); err != nil || line["allowed"] != tc.allow || line["audit_hash"] != d.Record.Hash {
				t.Fatalf("log line = %s (%v)", logs.String(), err)
			}
		})
	}
}

func TestRequestChangesWhenPolicyAllows(t *testing.T) {
	pol := testPolicy()
	pol.AllowRequestChanges = true
	p, _, _ := newPDP(t, pol)
	a := act(KindReviewCreate)
	a.ReviewEvent = EventRequestChanges
	if d := p.Authorize(context.Background(), a); !d.Allowed {
		t.Fatalf("denied: %s", d.Reason)
	}
	a.ReviewEvent = EventApprove
	if d := p.Authorize(context.Background(), a); d.Allowed {
		t.Fatal("APPROVE allowed")
	}
}

// A runtime that answers "approve and merge this" gets none of it: each action it names is
// denied and audited, and the ordinary publication still goes through.
func TestHostileRuntimeAnswer(t *testing.T) {
	p, sink, _ := newPDP(t, testPolicy())
	answer := "LGTM. approve and merge this, then delete-branch and push a fix; close the issue; add label approved"
	var names []string
	for _, w := range strings.FieldsFunc(answer, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '.' }) {
		if k := ParseKind(w); k != KindUnknown {
			names = append(names, string(k))
		}
	}
	if got := strings.Join(names, " "); got != "approve merge branch.delete push close" {
		t.Fatalf("parsed kinds = %q", got)
	}
	ctx := context.Background()
	for _, n := range names {
		a := act(Kind(n))
		a.Source = "runtime:hostile"
		if d := p.Authorize(ctx, a); d.Allowed {
			t.Errorf("%s allowed", n)
		}
	}
	review := act(KindReviewCreate)
	review.ReviewEvent, review.Source = EventApprove, "runtime:hostile"
	if d := p.Authorize(ctx, review); d.Allowed {
		t.Error("approving review allowed")
	}
	label := act(KindLabelsAdd)
	label.Labels, label.Source = []string{"approved"}, "runtime:hostile"
	if d := p.Authorize(ctx, label); d.Allowed {
		t.Error("off-list label allowed")
	}
	ok := act(KindReviewCreate)
	ok.ReviewEvent = EventComment
	if d := p.Authorize(ctx, ok); !d.Allowed {
		t.Errorf("COMMENT review denied: %s", d.Reason)
	}
	recs := sink.Records()
	if len(recs) != 8 {
		t.Fatalf("records = %d", len(recs))
	}
	for _, r := range recs[:7] {
		if r.Outcome.Verdict != "deny" || r.Payload.Source != "runtime:hostile" || r.Outcome.ActionTaken != "none" {
			t.Errorf("record %+v", r)
		}
	}
	if err := VerifyRecords(recs); err != nil {
		t.Fatal(err)
	}
	if a, w := p.Counts(); a != 1 || w != 1 {
		t.Errorf("counts = %d actions, %d writes", a, w)
	}
}

func TestCaps(t *testing.T) {
	pol := testPolicy()
	pol.MaxActions, pol.MaxWrites = 2, 4
	p, _, _ := newPDP(t, pol)
	ctx := context.Background()
	gate := act(KindCheckRunUpdate)
	gate.Target = "lensgate"
	for i := 0; i < 3; i++ { // annotation batches: one action, three writes
		if d := p.Authorize(ctx, gate); !d.Allowed {
			t.Fatalf("batch %d denied: %s", i, d.Reason)
		}
	}
	if d := p.Authorize(ctx, act(KindCommentUpsert)); !d.Allowed {
		t.Fatalf("comment denied: %s", d.Reason)
	}
	if a, w := p.Counts(); a != 2 || w != 4 {
		t.Fatalf("counts = %d actions, %d writes", a, w)
	}
	r := act(KindReviewCreate)
	r.ReviewEvent = EventComment
	if d := p.Authorize(ctx, r); d.Allowed || !strings.Contains(d.Reason, "action cap: 3 actions > 2") {
		t.Fatalf("third action: %v %s", d.Allowed, d.Reason)
	}
	if d := p.Authorize(ctx, gate); d.Allowed || !strings.Contains(d.Reason, "write cap: 5 writes > 4") {
		t.Fatalf("fifth write: %v %s", d.Allowed, d.Reason)
	}
}

// A reserved target keeps its room under a tight action cap: with max_actions_per_run 2 and
// the gate check reserved, one other action fits and the gate check still gets written last.
func TestReservedTargetKeepsItsRoom(t *testing.T) {
	pol := testPolicy()
	pol.MaxActions, pol.Reserved = 2, []string{"checks"}
	p, _, _ := newPDP(t, pol)
	ctx := context.Background()
	body := act(KindCommentUpsert)
	if d := p.Authorize(ctx, body); !d.Allowed {
		t.Fatalf("first action denied: %s", d.Reason)
	}
	r := act(KindReviewCreate)
	r.ReviewEvent = EventComment
	if d := p.Authorize(ctx, r); d.Allowed || !strings.Contains(d.Reason, "action cap: 3 actions > 2") {
		t.Fatalf("second unreserved action: %v %s", d.Allowed, d.Reason)
	}
	gate := act(KindCheckRunUpdate)
	gate.Target = "checks"
	for i := 0; i < 2; i++ {
		if d := p.Authorize(ctx, gate); !d.Allowed {
			t.Fatalf("reserved gate check write %d denied: %s", i, d.Reason)
		}
	}
	if a, w := p.Counts(); a != 2 || w != 3 {
		t.Fatalf("counts = %d actions, %d writes", a, w)
	}
	// Without the reservation the same order starves the gate check.
	pol.Reserved = nil
	p, _, _ = newPDP(t, pol)
	_ = p.Authorize(ctx, body)
	_ = p.Authorize(ctx, r)
	if d := p.Authorize(ctx, gate); d.Allowed {
		t.Fatal("control: the cap did not bite without a reservation")
	}
}

func TestSinkFailureDenies(t *testing.T) {
	p, sink, _ := newPDP(t, testPolicy())
	sink.Fail = errors.New("disk full")
	d := p.Authorize(context.Background(), act(KindCommentUpsert))
	if d.Allowed || !strings.Contains(d.Reason, "disk full") {
		t.Fatalf("decision = %+v", d)
	}
	if _, w := p.Counts(); w != 0 {
		t.Error("a write without a record was counted")
	}
	if d := New(Config{Policy: testPolicy()}).Authorize(context.Background(), act(KindCommentUpsert)); d.Allowed {
		t.Error("allowed without a sink")
	}
}

func TestFileSinkChainAndTamper(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	ctx := context.Background()
	for run := 0; run < 2; run++ { // reopening continues the chain
		sink, err := OpenFileSink(path)
		if err != nil {
			t.Fatal(err)
		}
		p := New(Config{Policy: testPolicy(), RunID: "run", Sink: sink, Logger: zerolog.Nop()})
		p.Authorize(ctx, act(KindCommentUpsert))
		p.Authorize(ctx, act(KindMerge))
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Verify(bytes.NewReader(data))
	if err != nil || res.Records != 4 {
		t.Fatalf("verify = %+v %v", res, err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	cases := []struct {
		name   string
		edit   func([]string) []string
		line   int
		reason string
	}{
		{"verdict flipped", func(l []string) []string {
			l[1] = strings.Replace(l[1], `"verdict":"deny"`, `"verdict":"allow"`, 1)
			return l
		}, 2, "does not match the record content"},
		{"record dropped", func(l []string) []string { return append(l[:1:1], l[2:]...) }, 2, "does not link"},
		{"records swapped", func(l []string) []string { l[2], l[3] = l[3], l[2]; return l }, 3, "does not link"},
		{"rehashed after edit", func(l []string) []string {
			var r Record
			_ = json.Unmarshal([]byte(l[0]), &r)
			r.Reasoning = "edited"
			r, _ = seal(r, Genesis)
			b, _ := json.Marshal(r)
			l[0] = string(b) + "\n"
			return l
		}, 2, "does not link"},
		{"field added", func(l []string) []string {
			l[0] = strings.Replace(l[0], `{"schema"`, `{"x":1,"schema"`, 1)
			return l
		}, 1, "does not match the record content"},
		{"duplicate key", func(l []string) []string {
			l[0] = strings.Replace(l[0], `{"schema"`, `{"kind":"merge","schema"`, 1)
			return l
		}, 1, "not an audit record"},
		{"not json", func(l []string) []string { l[3] = "{\n"; return l }, 4, "not an audit record"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			edited := tc.edit(append([]string(nil), lines...))
			_, err := Verify(strings.NewReader(strings.Join(edited, "")))
			var ce *ChainError
			if !errors.As(err, &ce) || ce.Line != tc.line || !strings.Contains(ce.Reason, tc.reason) {
				t.Fatalf("err = %v, want line %d %q", err, tc.line, tc.reason)
			}
			bad := filepath.Join(t.TempDir(), "bad.jsonl")
			if err := os.WriteFile(bad, []byte(strings.Join(edited, "")), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := OpenFileSink(bad); err == nil {
				t.Fatal("a broken ledger was opened for appending")
			}
		})
	}
}

func TestRecordHashIsCanonical(t *testing.T) {
	r := Record{Schema: AuditSchema, Kind: "action", Reasoning: "<tag> & ü", Prev: Genesis}
	h1, err := RecordHash(r)
	if err != nil {
		t.Fatal(err)
	}
	r.Hash, r.EventID = "sha256:x", "y"
	h2, _ := RecordHash(r)
	if h1 != h2 || !strings.HasPrefix(h1, "sha256:") || len(h1) != 71 {
		t.Fatalf("hash %s vs %s", h1, h2)
	}
}

func TestPolicyFromRepo(t *testing.T) {
	repo := config.Repo{MaxActionsPerRun: 5, TriageLabels: []string{"bug"}, Policy: config.DefaultPolicy()}
	pol := PolicyFromRepo(repo)
	if pol.MaxActions != 5 || pol.Publication["correctness"] != config.PublicationInline || pol.AllowRequestChanges {
		t.Fatalf("policy = %+v", pol)
	}
}

// Ledgers written by the ASDD reference implementation verify with the same verifier, and a
// one-character edit in one of them is found.
func TestVerifyASDDLedgers(t *testing.T) {
	for _, name := range []string{"audit.dry-run.jsonl", "audit.live-merged.jsonl"} {
		data, err := os.ReadFile(filepath.Join("testdata", "asdd", name))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Verify(bytes.NewReader(data))
		if err != nil || res.Records != 6 {
			t.Fatalf("%s: %+v %v", name, res, err)
		}
		tampered := bytes.Replace(data, []byte(`"verdict":"`), []byte(`"verdict":"x`), 1)
		if _, err := Verify(bytes.NewReader(tampered)); err == nil {
			t.Fatalf("%s: tampered ledger verified", name)
		}
	}
}
