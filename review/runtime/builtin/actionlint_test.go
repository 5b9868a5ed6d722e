package builtin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/review/runtime"
)

// addedFile is the diff of a new file with the given contents.
func addedFile(path, content string) string {
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// reviewWorkflow reviews a change to one workflow file whose whole head is known.
func reviewWorkflow(t *testing.T, d, head string, lenses ...runtime.Lens) *runtime.Result {
	t.Helper()
	req := requestFor(t, []byte(d))
	req.Lenses = lenses
	req.Changed[0].HeadContent = []byte(head)
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func findingsOf(res *runtime.Result, lens string) map[string]runtime.Finding {
	out := map[string]runtime.Finding{}
	for _, l := range res.Lenses {
		if l.Lens != lens {
			continue
		}
		for _, f := range l.Findings {
			out[f.Rule] = f
		}
	}
	return out
}

// sizeLabeler is the shape of a real pull_request_target workflow that hands the token to a
// third-party action pinned by tag.
const sizeLabeler = `name: size-labeler

on: [pull_request_target]

permissions:
  contents: read

jobs:
  size-labeler:
    permissions:
      pull-requests: write
    runs-on: ubuntu-latest
    name: Label the PR size
    steps:
      - uses: codelytv/pr-size-labeler@v1.8.1
        with:
          GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}
          xs_label: 'size/XS'
`

func TestWorkflowSecretToTagPinnedActionUnderPullRequestTarget(t *testing.T) {
	path := ".github/workflows/size-labeler.yml"
	res := reviewWorkflow(t, addedFile(path, sizeLabeler), sizeLabeler, runtime.Lens{Name: "security", Preset: "security"})
	fs := findingsOf(res, "security")
	f, ok := fs[ruleSecretToTag]
	if !ok {
		t.Fatalf("no %s finding: %+v", ruleSecretToTag, fs)
	}
	if f.Severity != runtime.SeverityHigh || f.Line != 15 || !strings.Contains(f.Message, "secrets.GITHUB_TOKEN") {
		t.Fatalf("finding %+v", f)
	}
	if res.Lenses[0].Verdict != runtime.VerdictRequestChanges {
		t.Fatalf("verdict %s", res.Lenses[0].Verdict)
	}
	// The same action under pull_request (no secrets exposed to forks) is only unpinned.
	plain := strings.Replace(sizeLabeler, "pull_request_target", "pull_request", 1)
	fs = findingsOf(reviewWorkflow(t, addedFile(path, plain), plain, runtime.Lens{Name: "security", Preset: "security"}), "security")
	if _, ok := fs[ruleSecretToTag]; ok || fs[ruleUnpinned].Severity != runtime.SeverityMedium {
		t.Fatalf("pull_request findings %+v", fs)
	}
}

func TestWorkflowRulesOnlyOnAddedLines(t *testing.T) {
	head := `on: pull_request
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: golangci/golangci-lint-action@v6
      - uses: docker/setup-buildx-action@e468171a9de216ec08956ac3ada2f0791b6bd435
      - run: echo "${{ github.event.pull_request.title }}"
`
	path := ".github/workflows/lint.yml"
	// Only line 7 (the unpinned action) is changed: the untrusted title on line 9 and the
	// missing permissions of the job on line 3 are older and not reported.
	d := "diff --git a/" + path + " b/" + path + "\n--- a/" + path + "\n+++ b/" + path + "\n" +
		"@@ -6,2 +6,2 @@\n       - uses: actions/checkout@v4\n-      - uses: golangci/golangci-lint-action@v5\n+      - uses: golangci/golangci-lint-action@v6\n"
	res := reviewWorkflow(t, d, head, runtime.Lens{Name: "security", Preset: "security"})
	var got []string
	for _, f := range res.Lenses[0].Findings {
		if f.Rule != "protected-path" {
			got = append(got, fmt.Sprintf("%s:%d:%s", f.Rule, f.Line, f.Severity))
		}
	}
	if want := []string{"workflow-unpinned-action:7:medium"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	// The whole file added: every rule fires, pinned and first-party actions excepted.
	res = reviewWorkflow(t, addedFile(path, head), head, runtime.Lens{Name: "security", Preset: "security"})
	got = nil
	for _, f := range res.Lenses[0].Findings {
		if f.Rule != "protected-path" {
			got = append(got, fmt.Sprintf("%s:%d:%s", f.Rule, f.Line, f.Severity))
		}
	}
	want := []string{"workflow-permissions-missing:3:low", "workflow-unpinned-action:7:medium", "workflow-untrusted-input:9:high"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestWorkflowActionlintFindingsGoToCorrectness(t *testing.T) {
	head := `on: push
permissions: {}
jobs:
  test:
    runs-on: ubuntu-latest
    needs: [build]
    steps:
      - run: echo ${{ matrix.os }}
`
	path := ".github/workflows/test.yml"
	res := reviewWorkflow(t, addedFile(path, head), head,
		runtime.Lens{Name: "security", Preset: "security"}, runtime.Lens{Name: "correctness", Preset: "correctness"})
	if fs := findingsOf(res, "security"); len(fs) != 1 || fs["protected-path"].Rule == "" {
		t.Fatalf("security findings %+v", fs)
	}
	fs := findingsOf(res, "correctness")
	if _, ok := fs["actionlint-job-needs"]; !ok {
		t.Fatalf("no job-needs finding: %+v", fs)
	}
	if _, ok := fs["actionlint-expression"]; !ok {
		t.Fatalf("no expression finding: %+v", fs)
	}
	for _, f := range fs {
		if f.Severity != runtime.SeverityMedium {
			t.Fatalf("actionlint finding %+v is not medium", f)
		}
	}
	if s := res.Lenses[1].Summary; !strings.Contains(s, "logic of the change was not reviewed") || !strings.Contains(s, "actionlint") {
		t.Fatalf("correctness summary %q", s)
	}
}

func TestPullRequestTargetCheckoutWithActionlint(t *testing.T) {
	head := `on:
  pull_request_target:
permissions:
  contents: read
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          ref: ${{ github.event.pull_request.head.sha }}
      - run: make test
`
	path := ".github/workflows/build.yml"
	// Only the trigger changes (pull_request -> pull_request_target): the older checkout
	// becomes dangerous, and the finding is kept because its trigger line is changed.
	d := "diff --git a/" + path + " b/" + path + "\n--- a/" + path + "\n+++ b/" + path + "\n" +
		"@@ -1,3 +1,3 @@\n on:\n-  pull_request:\n+  pull_request_target:\n permissions:\n"
	fs := findingsOf(reviewWorkflow(t, d, head, runtime.Lens{Name: "security", Preset: "security"}), "security")
	f, ok := fs[rulePRTCheckout]
	if !ok || f.Severity != runtime.SeverityCritical || f.Line != 11 {
		t.Fatalf("findings %+v", fs)
	}
}

func TestOneFindingPerRuleAndFile(t *testing.T) {
	in := []runtime.Finding{
		{Rule: "r", Path: "a", Line: 9, Severity: runtime.SeverityMedium, Message: "m.", Key: "x"},
		{Rule: "r", Path: "a", Line: 3, Severity: runtime.SeverityHigh, Message: "m.", Key: "y"},
		{Rule: "r", Path: "b", Line: 1, Severity: runtime.SeverityLow, Message: "one.", Key: "z"},
		{Rule: "s", Path: "a", Line: 4, Severity: runtime.SeverityLow, Message: "first.", Key: "p"},
		{Rule: "s", Path: "a", Line: 5, Severity: runtime.SeverityLow, Message: "second.", Key: "q"},
	}
	out := mergeByRuleAndFile(in)
	if len(out) != 3 {
		t.Fatalf("%d findings: %+v", len(out), out)
	}
	if f := out[0]; f.Line != 3 || f.Severity != runtime.SeverityHigh || f.Message != "m. (2 places: lines 3, 9.)" {
		t.Fatalf("merged %+v", f)
	}
	if f := out[1]; f.Message != "2 places: Line 4: first. Line 5: second." {
		t.Fatalf("merged %+v", f)
	}
	if out[2].Message != "one." || out[2].Key != "z" {
		t.Fatalf("single %+v", out[2])
	}
	if s := summary("security", []string{GroupSecrets}, out); !strings.Contains(s, "3 finding(s) (1 high, 1 low, 1 low)") &&
		!strings.Contains(s, "3 finding(s) (1 high, 2 low)") {
		t.Fatalf("summary %q", s)
	}
}

func TestProtectedPathsAreOneAdvisoryNotePerPattern(t *testing.T) {
	req := &runtime.Request{Kind: runtime.KindReview, Lenses: []runtime.Lens{{Name: "governance", Preset: "governance"}},
		Settings: runtime.Settings{ProtectedPaths: []string{".github/**", "**/auth/**"}}}
	for i := range 37 {
		req.Changed = append(req.Changed, runtime.Changed{Path: fmt.Sprintf(".github/workflows/w%02d.yml", i), Status: "modified"})
	}
	req.Changed = append(req.Changed, runtime.Changed{Path: "svc/auth/login.go", Status: "modified"})
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	fs := res.Lenses[0].Findings
	if len(fs) != 2 || fs[0].Title != "protected paths: 37 file(s) under .github/**" || fs[1].Path != "svc/auth/login.go" {
		t.Fatalf("findings %+v", fs)
	}
	if !strings.Contains(fs[0].Message, "and 27 more") || strings.Contains(fs[0].Message, "must approve") ||
		!strings.Contains(fs[0].Message, "does not require or verify anyone's approval") {
		t.Fatalf("message %q", fs[0].Message)
	}
}

func TestDisabledTLSInTestsIsLow(t *testing.T) {
	// The planted lines are split so that this file does not plant them in lensgate's own tree.
	off, skip, none := "verify="+"False", "InsecureSkipVerify: "+"true", "ssl.CERT_"+"NONE"
	d := addedFile("tests/test_client.py", "import requests\nr = requests.get(url, "+off+")\n") +
		addedFile("app/client.py", "import requests\nr = requests.get(url, "+off+")\n") +
		addedFile("vendor/k8s.io/client-go/cert.go", "package cert\nvar c = &tls.Config{"+skip+"}\n") +
		// Naming the constant is not switching verification off.
		addedFile("lib/ssl.py", "def mode(v):\n    return ssl.CERT_REQUIRED if v else "+none+"\n") +
		addedFile("lib/conn.py", "pool = PoolManager(cert_reqs="+none+")\n")
	req := requestFor(t, []byte(d))
	req.Lenses = []runtime.Lens{{Name: "security", Preset: "security"}}
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	sev := map[string]string{}
	for _, f := range res.Lenses[0].Findings {
		sev[f.Path] = f.Severity
	}
	if sev["tests/test_client.py"] != runtime.SeverityLow || sev["app/client.py"] != runtime.SeverityHigh ||
		sev["vendor/k8s.io/client-go/cert.go"] != runtime.SeverityLow || sev["lib/ssl.py"] != "" || sev["lib/conn.py"] != runtime.SeverityHigh {
		t.Fatalf("severities %v", sev)
	}
}

func TestUnsupportedPresetNamesTheChoices(t *testing.T) {
	msg := NoChecks("securty")
	if !strings.Contains(msg, `no checks for preset "securty"`) || !strings.Contains(msg, `did you mean "security"?`) ||
		!strings.Contains(msg, "correctness, governance, secrets, security") {
		t.Fatalf("message %q", msg)
	}
	if strings.Contains(NoChecks("performance"), "did you mean") {
		t.Fatalf("performance is no typo: %q", NoChecks("performance"))
	}
	for _, p := range Presets() {
		if Describe(p) == "" {
			t.Fatalf("preset %s has no description", p)
		}
	}
}

func TestWorkflowRunCheckoutOfTheForksHead(t *testing.T) {
	head := `on:
  workflow_run:
    workflows: [ci]
    types: [completed]
permissions:
  contents: read
jobs:
  report:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          ref: ${{ github.event.workflow_run.head_sha }}
      - run: ./report.sh
`
	path := ".github/workflows/report.yml"
	fs := findingsOf(reviewWorkflow(t, addedFile(path, head), head, runtime.Lens{Name: "security", Preset: "security"}), "security")
	f, ok := fs[rulePRTCheckout]
	if !ok || f.Line != 13 || f.Title != "workflow_run checks out the pull request's code" {
		t.Fatalf("findings %+v", fs)
	}
}

func TestVendoredKeyIsLow(t *testing.T) {
	header := "-----BEGIN " + "RSA PRIVATE KEY-----"
	key := header + "\n" + strings.Repeat("MIIEpAIBAAKCAQEA", 4) + "\n" + strings.Repeat("x3K9Lm2PqR7sT1vW", 4) + "\n-----END RSA PRIVATE KEY-----\n"
	d := addedFile("vendor/github.com/valyala/fasthttp/ssl-cert-snakeoil.key", key) + addedFile("deploy/server.key", key)
	req := requestFor(t, []byte(d))
	req.Lenses = []runtime.Lens{{Name: "security", Preset: "secrets"}}
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	sev := map[string]string{}
	for _, f := range res.Lenses[0].Findings {
		sev[f.Path] = f.Severity
	}
	if sev["vendor/github.com/valyala/fasthttp/ssl-cert-snakeoil.key"] != runtime.SeverityLow || sev["deploy/server.key"] != runtime.SeverityCritical {
		t.Fatalf("severities %v", sev)
	}
}

// TestWorkflowLintingIsSafeConcurrently: reviews run at once in the server; linting shares no
// mutable state between them (run with -race).
func TestWorkflowLintingIsSafeConcurrently(t *testing.T) {
	path := ".github/workflows/size-labeler.yml"
	d := addedFile(path, sizeLabeler)
	done := make(chan []string, 4)
	for range 4 {
		go func() {
			req := requestFor(t, []byte(d))
			req.Lenses = []runtime.Lens{{Name: "ci", Preset: "ci"}}
			req.Changed[0].HeadContent = []byte(sizeLabeler)
			res, err := New(Options{}).Review(context.Background(), req)
			if err != nil {
				done <- []string{err.Error()}
				return
			}
			done <- found(res)
		}()
	}
	first := <-done
	for range 3 {
		if got := <-done; !slices.Equal(got, first) {
			t.Fatalf("%q != %q", got, first)
		}
	}
	if !slices.Contains(first, ruleSecretToTag+" "+path+":15") {
		t.Fatalf("found %q", first)
	}
}
