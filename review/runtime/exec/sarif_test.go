package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/review/diff"
	"github.com/lensgate/lensgate/review/runtime"
)

// change adds internal/store/file.go:40-42 (line 7 is only context) and app/views.py:18,
// app/util.py:3; cmd/tool/main.go is not changed.
const change = `diff --git a/internal/store/file.go b/internal/store/file.go
--- a/internal/store/file.go
+++ b/internal/store/file.go
@@ -5,3 +5,3 @@
 import "os"
 
 var name = fmtName()
@@ -38,3 +38,6 @@ func Save(p string) error {
 	f, err := os.Create(p)
 	if err != nil {
 		return err
+	}
+	defer f.Close()
+	f.Close()
diff --git a/app/views.py b/app/views.py
--- a/app/views.py
+++ b/app/views.py
@@ -17,1 +17,2 @@ def user(request, name):
     cursor = connection.cursor()
+    cursor.execute("SELECT * FROM users WHERE name = '%s'" % name)
diff --git a/app/util.py b/app/util.py
--- a/app/util.py
+++ b/app/util.py
@@ -2,1 +2,2 @@
 def check(x):
+    assert x
`

func sarifRequest(t *testing.T) *runtime.Request {
	t.Helper()
	return &runtime.Request{Kind: runtime.KindReview, Files: diff.Parse([]byte(change)),
		Lenses: []runtime.Lens{{Name: "lint", Preset: "lint"}, {Name: "style", Preset: "lint"}}}
}

func readSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sarif", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSARIFFromGolangciLintKeepsOnlyAddedLines(t *testing.T) {
	data := readSample(t, "golangci-lint.sarif")
	if !isSARIF(data) {
		t.Fatal("golangci-lint's SARIF not recognised")
	}
	reps, err := sarifReports(data, sarifRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 || reps[0].Lens != "lint" || reps[1].Lens != "style" {
		t.Fatalf("reports %+v", reps)
	}
	r := reps[0]
	// govet on line 7 is context, staticcheck is in a file the change does not touch.
	if len(r.Findings) != 1 {
		t.Fatalf("findings %+v", r.Findings)
	}
	f := r.Findings[0]
	if f.Rule != "errcheck" || f.Path != "internal/store/file.go" || f.Line != 42 || f.Severity != runtime.SeverityHigh ||
		!strings.Contains(f.Message, "f.Close") {
		t.Fatalf("finding %+v", f)
	}
	if r.Verdict != runtime.VerdictRequestChanges ||
		r.Summary != "golangci-lint reported 1 result(s) on the changed lines; 2 outside the diff were dropped." {
		t.Fatalf("verdict %s, summary %q", r.Verdict, r.Summary)
	}
}

func TestSARIFFromSemgrepUsesSecuritySeverityAndRuleDefaults(t *testing.T) {
	reps, err := sarifReports(readSample(t, "semgrep.sarif"), sarifRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]runtime.Finding{}
	for _, f := range reps[0].Findings {
		got[f.Path] = f
	}
	sql := got["app/views.py"]
	if sql.Severity != runtime.SeverityHigh || sql.Line != 18 || !strings.Contains(sql.Message, "Fix: Use parameterized queries") {
		t.Fatalf("sql finding %+v", sql)
	}
	if a := got["app/util.py"]; a.Severity != runtime.SeverityLow || a.Line != 3 {
		t.Fatalf("assert finding %+v", a)
	}
}

func TestSARIFRecognition(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`{"version":"2.1.0","runs":[]}`, true},
		{`{"schema":"asdd/review/v0.1","lenses":[]}`, false},
		{`{"version":"2.1.0"}`, false},
		{`{"version":"2.0.0","runs":[]}`, false},
		{`not json`, false},
	} {
		if got := isSARIF([]byte(c.in)); got != c.want {
			t.Errorf("isSARIF(%s) = %v", c.in, got)
		}
	}
	if _, err := sarifReports([]byte(`{"version":"2.1.0","runs":{}}`), sarifRequest(t)); err == nil {
		t.Error("a malformed log was accepted")
	}
}

func TestSARIFAbsoluteURIsMatchChangedFiles(t *testing.T) {
	in := map[string]map[int]bool{"app/util.py": {3: true}, "util.py": {1: true}}
	for uri, want := range map[string]string{
		"file:///home/ci/src/app/util.py": "app/util.py",
		"./app/util.py":                   "app/util.py",
		"/tmp/x/other.py":                 "",
		"util.py":                         "util.py",
	} {
		if got := matchPath(uri, in); got != want {
			t.Errorf("matchPath(%q) = %q, want %q", uri, got, want)
		}
	}
}
