package review

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// TestOwnTreeIsClean reviews every tracked file of lensgate's own tree as if it were added in
// one change, with lensgate's own .asdd.yml: the builtin lenses must report nothing except the
// protected-path notes, and the planted fixtures must show up only as ignore_paths gaps.
func TestOwnTreeIsClean(t *testing.T) {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("this test needs the lensgate git checkout: %v", err)
	}
	top := strings.TrimSpace(string(root))
	cfgData, err := os.ReadFile(filepath.Join(top, ".asdd.yml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.ParseRepo(".asdd.yml", cfgData)
	if err != nil {
		t.Fatal(err)
	}
	list, err := exec.Command("git", "-C", top, "ls-files", "-z").Output()
	if err != nil {
		t.Fatal(err)
	}
	var d bytes.Buffer
	var files []File
	for _, p := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(top, p))
		if err != nil {
			continue // listed but deleted in the working tree
		}
		f := File{Path: p, Status: FileAdded, SizeBytes: int64(len(data))}
		if bytes.IndexByte(data, 0) >= 0 {
			f.Binary = true
			d.WriteString("diff --git a/" + p + " b/" + p + "\nnew file mode 100644\nBinary files /dev/null and b/" + p + " differ\n")
			files = append(files, f)
			continue
		}
		lines := strings.SplitAfter(string(data), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		d.WriteString("diff --git a/" + p + " b/" + p + "\nnew file mode 100644\n--- /dev/null\n+++ b/" + p + "\n")
		d.WriteString("@@ -0,0 +1," + itoa(len(lines)) + " @@\n")
		for _, l := range lines {
			d.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
		}
		f.Additions = len(lines)
		files = append(files, f)
	}
	subj := &Subject{Kind: KindPullRequest, Local: true, Diff: d.Bytes(), Files: files, OpenPRsByAuthor: -1,
		HeadSHA: strings.Repeat("0", 40), BaseSHA: strings.Repeat("0", 40)}
	p := NewPipeline(Options{Runtimes: runtime.NewRegistry(builtin.New(builtin.Options{})), Logger: zerolog.Nop(),
		FreeMaxDiffBytes: 256 << 20})
	dec, err := p.Review(context.Background(), subj, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range dec.Findings {
		if f.Rule == "protected-path" {
			continue
		}
		if f.Severity == SeverityLow && strings.HasSuffix(f.Path, "_test.go") {
			// A planted secret in a test: reported at low severity, as fixtures are, and
			// never blocking.
			t.Logf("fixture finding: %s %s:%d", f.Rule, f.Path, f.Line)
			continue
		}
		t.Errorf("finding on lensgate's own tree: %s %s:%d %s", f.Rule, f.Path, f.Line, f.Title)
	}
	ignored := 0
	for _, g := range dec.Coverage.Gaps {
		if strings.Contains(g.Reason, "ignore_paths") {
			ignored++
			if !strings.Contains(g.Path, "/testdata/") && !strings.HasPrefix(g.Path, "testdata/") {
				t.Errorf("gap %s is not a fixture", g.Path)
			}
		}
	}
	if ignored == 0 {
		t.Error("no fixture was excluded through ignore_paths")
	}
	t.Logf("%d files, %d findings, %d ignored fixtures", len(files), len(dec.Findings), ignored)
}
