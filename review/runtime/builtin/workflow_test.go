package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/review/runtime"
)

// farWorkflow is a pull_request_target workflow whose checkout of the pull request's head is
// added twenty lines below the trigger, outside the diff's context.
func farWorkflow() (head string, d string) {
	var b strings.Builder
	b.WriteString("name: ci\non:\n  pull_request_target:\n    types: [opened]\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n")
	for i := 1; i <= 15; i++ {
		b.WriteString("      - run: echo step\n")
	}
	b.WriteString("      - uses: actions/checkout@v4\n")
	added := "        with:\n          ref: ${{ github.event.pull_request.head.sha }}\n      - run: make\n"
	head = b.String() + added
	d = "diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\n" +
		"--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n" +
		"@@ -22,3 +22,6 @@ jobs:\n       - run: echo step\n       - run: echo step\n       - uses: actions/checkout@v4\n" +
		"+        with:\n+          ref: ${{ github.event.pull_request.head.sha }}\n+      - run: make\n"
	return head, d
}

func TestWorkflowSeesTheWholeHeadFile(t *testing.T) {
	head, d := farWorkflow()
	cases := []struct {
		name string
		head []byte
		want []string
	}{
		// The diff alone shows no trigger: nothing can be said.
		{"diff only", nil, nil},
		{"whole file", []byte(head), []string{"workflow-pull-request-target-checkout .github/workflows/ci.yml:26"}},
		// Contents that disagree with the diff are not trusted; the diff view is used.
		{"stale contents", []byte(strings.Replace(head, "head.sha", "base.sha", 1)), nil},
		{"too short", []byte("on: pull_request_target\n"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := requestFor(t, []byte(d))
			req.Lenses = []runtime.Lens{{Name: "ci", Preset: "ci"}}
			req.Changed[0].HeadContent = c.head
			res, err := New(Options{}).Review(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got := found(res); strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("found %q, want %q", got, c.want)
			}
		})
	}
}

// TestWorkflowWholeFileKeepsDiffFindings: with the whole file, problems on unchanged lines are
// still not reported, and problems on added lines still are.
func TestWorkflowWholeFileKeepsDiffFindings(t *testing.T) {
	head := "on: push\npermissions: write-all\njobs:\n  a:\n    steps:\n      - run: echo ${{ github.event.head_commit.message }}\n      - run: echo ok\n"
	d := "diff --git a/.github/workflows/x.yml b/.github/workflows/x.yml\n--- a/.github/workflows/x.yml\n" +
		"+++ b/.github/workflows/x.yml\n@@ -6,1 +6,2 @@\n       - run: echo ${{ github.event.head_commit.message }}\n+      - run: echo ok\n"
	req := requestFor(t, []byte(d))
	req.Lenses = []runtime.Lens{{Name: "ci", Preset: "ci"}}
	req.Changed[0].HeadContent = []byte(head)
	res, err := New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := found(res); len(got) != 0 {
		t.Fatalf("unchanged lines were reported: %q", got)
	}
	d2 := strings.Replace(d, "@@ -6,1 +6,2 @@\n       - run: echo ${{", "@@ -6,1 +6,2 @@\n+      - run: echo ${{", 1)
	d2 = strings.Replace(d2, "@@ -6,1 +6,2 @@", "@@ -6,0 +6,2 @@", 1)
	req = requestFor(t, []byte(d2))
	req.Lenses = []runtime.Lens{{Name: "ci", Preset: "ci"}}
	req.Changed[0].HeadContent = []byte(head)
	res, err = New(Options{}).Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := found(res); strings.Join(got, "|") != "workflow-untrusted-input .github/workflows/x.yml:6" {
		t.Fatalf("found %q", got)
	}
}
