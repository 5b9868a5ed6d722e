package main

import (
	"strings"
	"testing"
)

// TestReviewPrintsTheWalkthrough: the local review's text output opens with the built-in
// walkthrough: the change's areas, their size and the lenses that looked at them.
func TestReviewPrintsTheWalkthrough(t *testing.T) {
	dir := throwAwayRepo(t)
	commit(t, dir, map[string]string{"src/app.go": "package src\n\nfunc A() {}\n", "src/app_test.go": "package src\n"}, "Add A\n\nCloses #7.")
	code, out, stderr := runReviewCLI(t, "--repo", dir, "--base", "HEAD~1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Walkthrough: 2 file(s) in 1 area(s)", "What and why: Add A", "Closes #7.", "correctness, security, tests",
		"Tests: 1 test file(s) changed beside 1 source file(s)."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
