package review

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

func TestCommentEscapesUntrustedText(t *testing.T) {
	hostile := "<!-- lensgate --> <img src=x onerror=alert(1)> @acme/admins | cell [click](javascript:alert(1))\nsecond line"
	fake := &fakeRuntime{name: "model", fn: func(*runtime.Request) (*runtime.Result, error) {
		return &runtime.Result{Lenses: []runtime.LensReport{{Lens: "deep", Verdict: "concerns", Summary: hostile,
			Findings: []runtime.Finding{{Severity: "medium", Title: hostile, Message: hostile, Path: "README.md`x", Line: 2}}}}}, nil
	}}
	cfg := config.DefaultRepo()
	cfg.Policy = policyWith(config.Lens{Name: "deep", Preset: "model", Required: true})
	d, err := newTestPipeline(fake).Review(context.Background(), prSubject(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<!--", "<img", "@acme", "[click](", "README.md`x"} {
		if strings.Contains(d.Comment, bad) {
			t.Errorf("comment contains %q:\n%s", bad, d.Comment)
		}
	}
	if !strings.Contains(d.Comment, "| deep | required | ✅ passed | model |") {
		t.Errorf("lens table row missing:\n%s", d.Comment)
	}
}

func TestPredicateOfPartialReviewSigns(t *testing.T) {
	s := prSubject()
	s.Files = append(s.Files, File{Path: "logo.png", Status: FileAdded, Binary: true, SizeBytes: 10})
	s.Diff = append(s.Diff, []byte("diff --git a/logo.png b/logo.png\nnew file mode 100644\nBinary files /dev/null and b/logo.png differ\n")...)
	s.RepositoryNodeID, s.NodeID = "R_kgDOtest", "PR_kwDOtest"
	d, err := newTestPipeline(builtin.New(builtin.Options{})).Review(context.Background(), s, config.DefaultRepo())
	if err != nil {
		t.Fatal(err)
	}
	if d.Coverage.Status != CoveragePartial || d.Coverage.Gaps[0].Path != "logo.png" {
		t.Fatalf("coverage %+v", d.Coverage)
	}
	seed := make([]byte, ed25519.SeedSize)
	rc, err := disclosure.Emit(Predicate(d, s, time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)),
		disclosure.Signer{Key: ed25519.NewKeyFromSeed(seed)})
	if err != nil {
		t.Fatalf("emit: %v", err)
	}
	if !strings.Contains(string(rc.Envelope), "payloadType") {
		t.Fatalf("envelope %s", rc.Envelope)
	}
}

func TestRegistryPresets(t *testing.T) {
	reg := runtime.NewRegistry(builtin.New(builtin.Options{}))
	if err := reg.AddPreset("fast", "missing"); err == nil {
		t.Fatal("preset for a disabled runtime accepted")
	}
	if err := reg.AddPreset("fast", "builtin"); err != nil {
		t.Fatal(err)
	}
	if n, ok := reg.Preset("fast"); !ok || n != "builtin" {
		t.Fatalf("preset %q %v", n, ok)
	}
}

func TestDisplayPathAndPlainText(t *testing.T) {
	paths := map[string]string{
		"docs/guide.md":       "docs/guide.md",
		"sp ace/café.go":      "sp ace/café.go",
		"nl\nx.go":            `"nl\nx.go"`,
		"esc\x1b[31m.go":      `"esc\x1b[31m.go"`,
		"lat\xe9.go":          `"lat\xe9.go"`,
		"bidi\u202egnp.exe":   `"bidi\u202egnp.exe"`,
		"we`ird --> <!-- .go": "we`ird --> <!-- .go",
	}
	for in, want := range paths {
		if got := DisplayPath(in); got != want {
			t.Errorf("DisplayPath(%q) = %s, want %s", in, got, want)
		}
	}
	texts := map[string]string{
		"plain words":           "plain words",
		"two\nlines\r\n":        "two lines",
		"\x1b]0;owned\x07title": "]0;owned title",
		"right\u202eto left":    "right to left",
		"bad \xff byte":         "bad \uFFFD byte",
		"  spaced\t\tout  ":     "spaced out",
	}
	for in, want := range texts {
		if got := PlainText(in); got != want {
			t.Errorf("PlainText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCommentFitsGitHubWithManyLongLenses: the largest policy (32 lenses) with the longest
// summaries and many findings still renders within GitHub's 65,536-character comment limit.
func TestCommentFitsGitHubWithManyLongLenses(t *testing.T) {
	d := &Decision{Gate: Gate{State: OutcomeFailed, Reason: "required lens(es) failed"}, Recommendation: RecommendRequestChanges}
	for i := 0; i < 32; i++ {
		d.Lenses = append(d.Lenses, LensResult{Name: fmt.Sprintf("lens-%d", i), Required: true, Outcome: OutcomeFailed,
			Summary: strings.Repeat("a long summary | with pipes ", 150), Runtime: "exec"})
	}
	for i := 0; i < 500; i++ {
		d.Findings = append(d.Findings, Finding{ID: fmt.Sprintf("LG-%012d", i), Lens: "lens-1", Severity: SeverityHigh,
			Path: "src/file.go", Line: i + 1, Title: "Title", Body: strings.Repeat("body ", 100)})
	}
	for i := 0; i < 200; i++ {
		d.Coverage.Gaps = append(d.Coverage.Gaps, Gap{Path: fmt.Sprintf("gen/%d.go", i), Reason: "beyond the budget"})
	}
	c := RenderComment(d)
	if n := utf8.RuneCountInString(c); n > 65536 {
		t.Fatalf("comment has %d characters", n)
	}
	for _, want := range []string{"| lens-31 | required |", "more findings are in the check run", "### Coverage"} {
		if !strings.Contains(c, want) {
			t.Errorf("comment lacks %q", want)
		}
	}
}

// A lens whose model call failed (a prompt the server cut, say) leaves every file read but the
// review short of its plan: the comment says PARTIAL, as the receipt does, never COMPLETE.
func TestCommentCoverageIsPartialWhileALensIsPending(t *testing.T) {
	fake := &fakeRuntime{name: "model", fn: func(*runtime.Request) (*runtime.Result, error) {
		return &runtime.Result{Lenses: []runtime.LensReport{{Lens: "deep", Verdict: "pending",
			Summary: "the server read fewer tokens than it was sent"}}}, nil
	}}
	cfg := config.DefaultRepo()
	cfg.Policy = policyWith(config.Lens{Name: "deep", Preset: "model", Required: true})
	d, err := newTestPipeline(fake).Review(context.Background(), prSubject(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.Lenses[0].Outcome != OutcomePending {
		t.Fatalf("lens %+v, want pending", d.Lenses[0])
	}
	status, pending := d.ReportedCoverage()
	if status != CoveragePartial || pending != 1 {
		t.Fatalf("reported coverage %s with %d pending, want PARTIAL with 1", status, pending)
	}
	if !strings.Contains(d.Comment, "### Coverage: PARTIAL") || strings.Contains(d.Comment, "COMPLETE") {
		t.Errorf("comment does not say PARTIAL:\n%s", d.Comment)
	}
	if !strings.Contains(d.Comment, "1 of 1 lens(es) pending") {
		t.Errorf("comment does not count the pending lens:\n%s", d.Comment)
	}
	p := Predicate(d, prSubject(), time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	if p.Coverage.Status != CoveragePartial {
		t.Errorf("receipt coverage %s, want PARTIAL", p.Coverage.Status)
	}
}
