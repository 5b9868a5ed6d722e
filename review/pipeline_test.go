package review

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
	"github.com/lensgate/lensgate/review/runtime/dryrun"
)

// fakeRuntime answers with a fixed function and records what it saw.
type fakeRuntime struct {
	name  string
	fn    func(req *runtime.Request) (*runtime.Result, error)
	mu    sync.Mutex
	calls int
	seen  map[string]string // work dir file -> content, captured during the call
	perm  os.FileMode
	dir   string
	// sent and since record the files and the Since head of every request (for fn's use).
	sent  [][]string
	since []string
}

func (f *fakeRuntime) Name() string { return f.name }

func (f *fakeRuntime) Review(_ context.Context, req *runtime.Request) (*runtime.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if req.WorkDir != "" {
		f.dir = req.WorkDir
		st, err := os.Stat(req.WorkDir)
		if err == nil {
			f.perm = st.Mode().Perm()
		}
		f.seen = map[string]string{}
		entries, _ := os.ReadDir(req.WorkDir)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(req.WorkDir, e.Name()))
			f.seen[e.Name()] = string(b)
		}
	}
	return f.fn(req)
}

func policyWith(lenses ...config.Lens) config.Policy {
	p := config.Policy{Version: 1, Aggregation: config.AggregationAllRequired}
	for _, l := range lenses {
		if l.Outcome == "" {
			l.Outcome = config.OutcomeReview
		}
		if l.Publication == "" {
			l.Publication = config.PublicationReview
		}
		if l.Instruction == "" {
			l.Instruction = "Review " + l.Name + "."
		}
		if l.Required {
			p.Required = append(p.Required, l.Name)
		}
		p.Lenses = append(p.Lenses, l)
	}
	return p
}

const smallDiff = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1,1 +1,2 @@\n # x\n+more docs\n"

func prSubject() *Subject {
	return &Subject{
		Kind: KindPullRequest, Owner: "o", Repo: "r", Number: 7, Title: "Docs", Body: "- [x] Authored by a human",
		Author: "alice", Labels: []string{"docs"}, HeadSHA: strings.Repeat("a", 40), BaseSHA: strings.Repeat("b", 40),
		Diff: []byte(smallDiff), OpenPRsByAuthor: 1,
		Commits: []Commit{{SHA: "c1", Message: "Add docs"}},
		Files:   []File{{Path: "README.md", Status: FileModified, Additions: 1}},
	}
}

func newTestPipeline(rts ...runtime.Runtime) *Pipeline {
	return NewPipeline(Options{Runtimes: runtime.NewRegistry(rts...), Logger: zerolog.Nop()})
}

func lensByName(d *Decision, name string) LensResult {
	for _, l := range d.Lenses {
		if l.Name == name {
			return l
		}
	}
	return LensResult{}
}

func TestFailuresBecomePendingNotErrors(t *testing.T) {
	cases := []struct {
		name      string
		fn        func(*runtime.Request) (*runtime.Result, error)
		wantCause string
	}{
		{"error", func(*runtime.Request) (*runtime.Result, error) { return nil, errors.New("boom") }, "failed: boom"},
		{"panic", func(*runtime.Request) (*runtime.Result, error) { panic("kaput") }, "crashed"},
		{"nil result", func(*runtime.Request) (*runtime.Result, error) { return nil, nil }, "no result"},
		{"missing lens", func(*runtime.Request) (*runtime.Result, error) { return &runtime.Result{}, nil }, "returned no result for this lens"},
		{"invalid verdict", func(*runtime.Request) (*runtime.Result, error) {
			return &runtime.Result{Lenses: []runtime.LensReport{{Lens: "deep", Verdict: "approve"}}}, nil
		}, "invalid verdict"},
		{"invalid severity", func(*runtime.Request) (*runtime.Result, error) {
			return &runtime.Result{Lenses: []runtime.LensReport{{Lens: "deep", Verdict: "ok",
				Findings: []runtime.Finding{{Severity: "fatal", Message: "x"}}}}}, nil
		}, "invalid severity"},
		{"skipped", func(*runtime.Request) (*runtime.Result, error) {
			return &runtime.Result{Lenses: []runtime.LensReport{{Lens: "deep", Verdict: "skipped", Cause: "too large"}}}, nil
		}, "too large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := &fakeRuntime{name: "model", fn: c.fn}
			cfg := config.DefaultRepo()
			cfg.Policy = policyWith(config.Lens{Name: "deep", Preset: "model", Required: true})
			d, err := newTestPipeline(fake, builtin.New(builtin.Options{})).Review(context.Background(), prSubject(), cfg)
			if err != nil {
				t.Fatalf("Review returned an error for an operational failure: %v", err)
			}
			l := lensByName(d, "deep")
			if l.Outcome != OutcomePending || !strings.Contains(l.Cause, c.wantCause) {
				t.Fatalf("lens = %+v, want pending with cause containing %q", l, c.wantCause)
			}
			if d.Gate.State != OutcomePending || d.Gate.Passed() {
				t.Fatalf("gate %+v, want pending", d.Gate)
			}
			if d.Recommendation != RecommendComment {
				t.Fatalf("recommendation %q", d.Recommendation)
			}
		})
	}
}

func TestVerdictMapping(t *testing.T) {
	cases := []struct {
		verdict  string
		severity string
		want     Outcome
	}{
		{"ok", "", OutcomePassed},
		{"concerns", "warn", OutcomePassed},
		{"ok", "block", OutcomeFailed}, // a blocking finding wins over a cheerful verdict
		{"request-changes", "", OutcomeFailed},
		{"concerns", "note", OutcomePassed},
	}
	for _, c := range cases {
		fake := &fakeRuntime{name: "model", fn: func(*runtime.Request) (*runtime.Result, error) {
			rep := runtime.LensReport{Lens: "deep", Verdict: c.verdict, Summary: "s"}
			if c.severity != "" {
				sev, _ := runtime.FromASDDSeverity(c.severity)
				rep.Findings = []runtime.Finding{{Severity: sev, Message: "m", Path: "README.md", Line: 2}}
			}
			return &runtime.Result{Lenses: []runtime.LensReport{rep}}, nil
		}}
		cfg := config.DefaultRepo()
		cfg.Policy = policyWith(config.Lens{Name: "deep", Preset: "model", Required: true})
		d, err := newTestPipeline(fake).Review(context.Background(), prSubject(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := lensByName(d, "deep").Outcome; got != c.want {
			t.Errorf("%s/%s: outcome %s, want %s", c.verdict, c.severity, got, c.want)
		}
		if got := d.Gate.State; got != c.want {
			t.Errorf("%s/%s: gate %s, want %s", c.verdict, c.severity, got, c.want)
		}
	}
}

func TestRuntimeSelection(t *testing.T) {
	model := &fakeRuntime{name: "model", fn: func(req *runtime.Request) (*runtime.Result, error) {
		res := &runtime.Result{}
		for _, l := range req.Lenses {
			res.Lenses = append(res.Lenses, runtime.LensReport{Lens: l.Name, Verdict: "ok"})
		}
		return res, nil
	}}
	cfg := config.DefaultRepo()
	cfg.Policy = policyWith(
		config.Lens{Name: "security", Preset: "security", Required: true}, // default runtime: builtin
		config.Lens{Name: "deep", Preset: "model", Required: true},        // preset names a runtime
		config.Lens{Name: "mystery", Preset: "other", Required: false},    // default runtime
		config.Lens{Name: "remote", Preset: "gpu-farm", Required: false},  // not enabled -> pending
	)
	reg := runtime.NewRegistry(model, builtin.New(builtin.Options{}))
	if err := reg.AddPreset("other", "model"); err != nil {
		t.Fatal(err)
	}
	cfg.Policy.Lenses[3].Preset = "gpu-farm"
	cfg.Runtime = "builtin"
	p := NewPipeline(Options{Runtimes: reg, Logger: zerolog.Nop()})
	d, err := p.Review(context.Background(), prSubject(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"security": "builtin", "deep": "model", "mystery": "model", "remote": "builtin"}
	for name, rt := range want {
		if got := lensByName(d, name).Runtime; got != rt {
			t.Errorf("lens %s runtime %q, want %q", name, got, rt)
		}
	}
	// "remote" falls back to the default runtime (builtin), which has no checks for it.
	if l := lensByName(d, "remote"); l.Outcome != OutcomePending {
		t.Errorf("remote: %+v", l)
	}
	if model.calls != 1 {
		t.Errorf("model called %d times, want one call for its two lenses", model.calls)
	}
	// A repository that names a runtime the operator did not enable gets pending lenses.
	cfg.Runtime = "not-installed"
	d, err = p.Review(context.Background(), prSubject(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l := lensByName(d, "security"); l.Outcome != OutcomePending || !strings.Contains(l.Cause, `runtime "not-installed" is not enabled`) {
		t.Errorf("security with a disabled runtime: %+v", l)
	}
	// The caller's hint says how to enable one where the pipeline runs.
	hinted := NewPipeline(Options{Runtimes: runtime.NewRegistry(builtin.New(builtin.Options{})), EnableHint: "set X to enable it"})
	d, err = hinted.Review(context.Background(), prSubject(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l := lensByName(d, "security"); !strings.HasSuffix(l.Cause, "; set X to enable it") {
		t.Errorf("cause without the hint: %q", l.Cause)
	}
}

func TestWorkDirContractAndCleanup(t *testing.T) {
	fake := &fakeRuntime{name: "model", fn: func(req *runtime.Request) (*runtime.Result, error) {
		return &runtime.Result{Lenses: []runtime.LensReport{{Lens: "deep", Verdict: "ok"}}}, nil
	}}
	cfg := config.DefaultRepo()
	cfg.Policy = policyWith(config.Lens{Name: "deep", Preset: "model", Required: true})
	subj := prSubject()
	subj.Title = "Title with $(rm -rf /) and `backticks`"
	if _, err := newTestPipeline(fake).Review(context.Background(), subj, cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		FileTitle: subj.Title, FileBody: subj.Body, FileAuthor: "alice", FileDiff: smallDiff,
		FileLabels: "docs\n", FileCommits: "Add docs\x00", FileChanged: "M\tREADME.md\n",
	}
	for name, content := range want {
		if fake.seen[name] != content {
			t.Errorf("%s = %q, want %q", name, fake.seen[name], content)
		}
	}
	if !strings.Contains(fake.seen[FileMeta], "pr_number=7\n") || !strings.Contains(fake.seen[FileMeta], "head_sha="+subj.HeadSHA) {
		t.Errorf("meta.env = %q", fake.seen[FileMeta])
	}
	if fake.perm != 0o700 {
		t.Errorf("work dir mode %o, want 700", fake.perm)
	}
	if _, err := os.Stat(fake.dir); !os.IsNotExist(err) {
		t.Errorf("work dir %s still exists after the review", fake.dir)
	}
}

func TestIntakeIsASpendGate(t *testing.T) {
	fake := &fakeRuntime{name: "model", fn: func(req *runtime.Request) (*runtime.Result, error) {
		return &runtime.Result{Lenses: []runtime.LensReport{{Lens: "deep", Verdict: "ok"}}}, nil
	}}
	cfg := config.DefaultRepo()
	cfg.Policy = policyWith(config.Lens{Name: "deep", Preset: "model", Required: true},
		config.Lens{Name: "security", Preset: "security", Required: true})
	cfg.Source = ".asdd.yml"
	cfg.MaxOpenPRsPerAuthor = 2
	cfg.RequireSpec = true
	subj := prSubject()
	subj.Labels = nil
	subj.Body = "no checkbox here"
	subj.OpenPRsByAuthor = 5
	d, err := newTestPipeline(fake, builtin.New(builtin.Options{})).Review(context.Background(), subj, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fake.calls != 0 {
		t.Fatal("the model runtime was called although intake failed")
	}
	var failed []string
	for _, m := range d.Intake.Messages {
		if !m.Passed {
			failed = append(failed, m.Check)
			if m.Message == "" {
				t.Errorf("check %s failed without a message for the author", m.Check)
			}
		}
	}
	slices.Sort(failed)
	if want := []string{CheckDisclosure, CheckLane, CheckOpenPRs, CheckSpec}; !slices.Equal(failed, want) {
		t.Fatalf("failed checks %q, want %q", failed, want)
	}
	if d.Gate.State != OutcomeFailed || !strings.Contains(d.Gate.Reason, "intake") {
		t.Fatalf("gate %+v", d.Gate)
	}
	if l := lensByName(d, "deep"); l.Outcome != OutcomePending || !strings.Contains(l.Cause, "intake") {
		t.Fatalf("deep: %+v", l)
	}
	// The free builtin lens still ran.
	if l := lensByName(d, "security"); l.Outcome != OutcomePassed {
		t.Fatalf("security: %+v", l)
	}
}

func TestDiffBudgetNamesGaps(t *testing.T) {
	var sent []string
	fake := &fakeRuntime{name: "model", fn: func(req *runtime.Request) (*runtime.Result, error) {
		for i := range req.Files {
			sent = append(sent, req.Files[i].Path())
		}
		return &runtime.Result{Lenses: []runtime.LensReport{{Lens: "deep", Verdict: "ok"}}}, nil
	}}
	var b strings.Builder
	for _, name := range []string{"a.md", "big.md", "c.md"} {
		n := 2
		if name == "big.md" {
			n = 50
		}
		b.WriteString("diff --git a/" + name + " b/" + name + "\n--- a/" + name + "\n+++ b/" + name + "\n@@ -1,0 +1," + itoa(n) + " @@\n")
		for i := 0; i < n; i++ {
			b.WriteString("+line\n")
		}
	}
	subj := prSubject()
	subj.Diff = []byte(b.String())
	subj.Files = nil
	cfg := config.DefaultRepo()
	cfg.Review.MaxDiffLines = 20
	cfg.Policy = policyWith(config.Lens{Name: "deep", Preset: "model", Required: true})
	d, err := newTestPipeline(fake).Review(context.Background(), subj, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sent, []string{"a.md", "c.md"}) {
		t.Fatalf("sent %q", sent)
	}
	if d.Coverage.Status != CoveragePartial || len(d.Coverage.Gaps) != 1 || d.Coverage.Gaps[0].Path != "big.md" {
		t.Fatalf("coverage %+v", d.Coverage)
	}
	if d.Subject.ReviewedDiffDigest != sha256Hex(subj.Diff) {
		t.Fatal("reviewed diff digest is not the digest of the diff bytes")
	}
}

func TestDryrunNeverPasses(t *testing.T) {
	cfg := config.DefaultRepo()
	cfg.Runtime = dryrun.Name
	d, err := newTestPipeline(dryrun.Runtime{}).Review(context.Background(), prSubject(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.Gate.State != OutcomePending {
		t.Fatalf("dry run gate %s", d.Gate.State)
	}
	for _, l := range d.Lenses {
		if l.Outcome != OutcomePending || l.Cause == "" {
			t.Fatalf("lens %+v", l)
		}
	}
}

func TestUnusableInput(t *testing.T) {
	p := newTestPipeline(builtin.New(builtin.Options{}))
	issue := prSubject()
	issue.Kind = KindIssue
	cfgBad := config.DefaultRepo()
	cfgBad.Policy = config.Policy{Version: 1}
	for name, f := range map[string]func() error{
		"nil config":   func() error { _, err := p.Review(context.Background(), prSubject(), nil); return err },
		"nil subject":  func() error { _, err := p.Review(context.Background(), nil, config.DefaultRepo()); return err },
		"issue":        func() error { _, err := p.Review(context.Background(), issue, config.DefaultRepo()); return err },
		"empty policy": func() error { _, err := p.Review(context.Background(), prSubject(), cfgBad); return err },
	} {
		if err := f(); !errors.Is(err, ErrUnusableInput) {
			t.Errorf("%s: err = %v, want ErrUnusableInput", name, err)
		}
	}
}

func TestFindingIDsAreStableAcrossLineShifts(t *testing.T) {
	key := "-----BEGIN " + "OPENSSH PRIVATE KEY-----"
	mk := func(pad int) *Subject {
		s := prSubject()
		var b strings.Builder
		b.WriteString("diff --git a/k.pem b/k.pem\nnew file mode 100644\n--- /dev/null\n+++ b/k.pem\n@@ -0,0 +1," + itoa(pad+4) + " @@\n")
		for i := 0; i < pad; i++ {
			b.WriteString("+\n")
		}
		b.WriteString("+" + key + "\n")
		b.WriteString("+" + strings.Repeat("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", 1) + "AAAAAAAAAAAAAAAAAAAAAA\n")
		b.WriteString("+" + strings.Repeat("QyNTUxOQAAACBcZ2Vq", 3) + "AAAAAAAAAA\n")
		b.WriteString("+-----END " + "OPENSSH PRIVATE KEY-----\n")
		s.Diff = []byte(b.String())
		s.Files = nil
		return s
	}
	p := newTestPipeline(builtin.New(builtin.Options{}))
	d1, err := p.Review(context.Background(), mk(0), config.DefaultRepo())
	if err != nil {
		t.Fatal(err)
	}
	d2, err := p.Review(context.Background(), mk(5), config.DefaultRepo())
	if err != nil {
		t.Fatal(err)
	}
	if len(d1.Findings) != 1 || len(d2.Findings) != 1 {
		t.Fatalf("findings %d and %d", len(d1.Findings), len(d2.Findings))
	}
	if d1.Findings[0].ID != d2.Findings[0].ID || d1.Findings[0].Line == d2.Findings[0].Line {
		t.Fatalf("ids %s/%s lines %d/%d", d1.Findings[0].ID, d2.Findings[0].ID, d1.Findings[0].Line, d2.Findings[0].Line)
	}
	if d1.Gate.State != OutcomeFailed || len(d1.Inline) != 1 || d1.Inline[0].Fingerprint != d1.Findings[0].ID {
		t.Fatalf("gate %s inline %+v", d1.Gate.State, d1.Inline)
	}
}

func TestTriage(t *testing.T) {
	fake := &fakeRuntime{name: "model", fn: func(req *runtime.Request) (*runtime.Result, error) {
		return &runtime.Result{Triage: &runtime.Triage{Labels: []string{"bug", "wontfix", "BUG", "security"}, Comment: "Thanks @everyone <b>hi</b>"}}, nil
	}}
	cfg := config.DefaultRepo()
	cfg.Runtime = "model"
	issue := &Subject{Kind: KindIssue, Number: 3, Title: "Crash", Body: "It crashes"}
	td, err := newTestPipeline(fake).Triage(context.Background(), issue, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(td.Labels, []string{"bug", "security"}) {
		t.Fatalf("labels %q", td.Labels)
	}
	if strings.Contains(td.Comment, "<b>") || strings.Contains(td.Comment, "@everyone") {
		t.Fatalf("comment not escaped: %q", td.Comment)
	}
	fake.fn = func(*runtime.Request) (*runtime.Result, error) { return nil, errors.New("down") }
	td, err = newTestPipeline(fake).Triage(context.Background(), issue, cfg)
	if err != nil || len(td.Labels) != 0 || td.Cause == "" {
		t.Fatalf("failed triage: %+v, %v", td, err)
	}
}

func TestIntakeFloorsNeedAnAdoptedConfig(t *testing.T) {
	subj := prSubject()
	subj.Labels = nil
	subj.Body = ""
	p := newTestPipeline(builtin.New(builtin.Options{}))
	d, err := p.Review(context.Background(), subj, config.DefaultRepo())
	if err != nil {
		t.Fatal(err)
	}
	if !d.Intake.Passed || len(d.Intake.Messages) != 0 || d.Gate.State != OutcomePassed {
		t.Fatalf("defaults without .asdd.yml: intake %+v gate %s", d.Intake, d.Gate.State)
	}
	cfg := config.DefaultRepo()
	cfg.Source = ".asdd.yml"
	d, err = p.Review(context.Background(), subj, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.Intake.Passed || d.Gate.State != OutcomeFailed {
		t.Fatalf("adopted config: intake %+v gate %s", d.Intake, d.Gate.State)
	}
}

// TestWorkDirHoldsNoSecret: an adapter's work directory is written from the redacted change:
// no secret in any file, no withheld file named, placeholders in their place; the request the
// runtime gets is the same view.
func TestWorkDirHoldsNoSecret(t *testing.T) {
	gh := "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
	envVal := "s3cr3t-" + "Xq8Lm2Vb7Nc4"
	var got *runtime.Request
	fake := &fakeRuntime{name: "model", fn: func(req *runtime.Request) (*runtime.Result, error) {
		got = req
		return &runtime.Result{Lenses: []runtime.LensReport{{Lens: "deep", Verdict: "ok"}}}, nil
	}}
	cfg := config.DefaultRepo()
	cfg.Policy = policyWith(config.Lens{Name: "deep", Preset: "model", Required: true})
	subj := prSubject()
	subj.Title = "Use " + gh
	subj.Body = "- [x] Authored by a human\ntoken " + gh
	subj.Commits = []Commit{{SHA: "c1", Message: "add " + gh}}
	subj.Diff = []byte(smallDiff + "diff --git a/app.go b/app.go\n--- a/app.go\n+++ b/app.go\n@@ -1,1 +1,2 @@\n x\n+const t = \"" + gh + "\"\r\n" +
		"diff --git a/config/.env.local b/config/.env.local\nnew file mode 100644\n--- /dev/null\n+++ b/config/.env.local\n@@ -0,0 +1,1 @@\n+API_TOKEN=" + envVal + "\n")
	subj.Files = append(subj.Files, File{Path: "app.go", Status: FileModified}, File{Path: "config/.env.local", Status: FileAdded})
	d, err := newTestPipeline(fake, builtin.New(builtin.Options{})).Review(context.Background(), subj, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range fake.seen {
		if strings.Contains(content, gh[4:16]) || strings.Contains(content, envVal) || strings.Contains(content, ".env.local") {
			t.Errorf("%s carries a secret or the withheld file: %q", name, content)
		}
	}
	for _, name := range []string{FileTitle, FileBody, FileCommits, FileDiff} {
		if !strings.Contains(fake.seen[name], "[redacted github-pat]") {
			t.Errorf("%s has no placeholder: %q", name, fake.seen[name])
		}
	}
	if !strings.Contains(fake.seen[FileDiff], "[redacted github-pat]\"\r\n") {
		t.Errorf("the CRLF line end was not kept: %q", fake.seen[FileDiff])
	}
	if fake.seen[FileChanged] != "M\tREADME.md\nM\tapp.go\n" {
		t.Errorf("changed.txt = %q", fake.seen[FileChanged])
	}
	if strings.Contains(got.Subject.Title+got.Subject.Body+string(got.Diff), gh) || len(got.Files) != 2 || len(got.Changed) != 2 {
		t.Errorf("request: title %q, %d files, %d changed", got.Subject.Title, len(got.Files), len(got.Changed))
	}
	if !slices.Equal(d.ModelInput.WithheldFiles, []string{"config/.env.local"}) || d.ModelInput.RedactedValues != 4 {
		t.Errorf("model input %+v", d.ModelInput)
	}
}
