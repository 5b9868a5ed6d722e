package exec_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/review"
	"github.com/lensgate/lensgate/review/runtime"
	rtexec "github.com/lensgate/lensgate/review/runtime/exec"
)

// TestAdapterRequestIsTheWorkManifest: an adapter call's request digest is the digest of the
// work manifest of docs/review-run.md, computed here from copies of exactly the files the
// adapter saw; a changed lens instruction changes it.
func TestAdapterRequestIsTheWorkManifest(t *testing.T) {
	seen := t.TempDir()
	dir := t.TempDir()
	writeScript(t, dir, "acme", `set -eu
rm -rf "`+seen+`/work" "`+seen+`/agents"
cp -r "$ASDD_WORKDIR" "`+seen+`/work"
cp -r "$ASDD_ROOT/agents" "`+seen+`/agents"
echo "$ASDD_MODEL_TIMEOUT" > "`+seen+`/timeout"
`+adapterReview)
	run := func(instruction string) (observation.Call, string) {
		t.Helper()
		cfg := config2("acme", "code")
		cfg.Policy.Lenses[0].Instruction = instruction
		rt, err := rtexec.New(dir, "acme", rtexec.Options{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		d := reviewPipeline(t, rt, cfg)
		rc := receiptFor(t, d)
		obs, err := review.SignObservation(d, rc, "test", observation.Signer{Key: witnessKey}, 0)
		if err != nil {
			t.Fatal(err)
		}
		res := verify(t, obs, rc)
		if res.RunnerObservation != observation.Match {
			t.Fatalf("%s %v", res.RunnerObservation, res.Errors)
		}
		return res.Statement.Calls[0], expectedManifest(t, seen, d)
	}
	c1, want := run("Check the code.")
	if got := c1.Exchanges[0].Request.SHA256; got != want {
		t.Fatalf("request digest %s, the manifest of the files the adapter saw is %s", got, want)
	}
	c2, want2 := run("Check the code, twice.")
	if c2.Exchanges[0].Request.SHA256 != want2 || want2 == want {
		t.Fatal("a changed instruction did not change the request digest")
	}
}

// expectedManifest computes the work manifest from the copies the adapter made.
func expectedManifest(t *testing.T, seen string, d *review.Decision) string {
	t.Helper()
	list := func(dir string) []any {
		var paths []string
		_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				paths = append(paths, filepath.ToSlash(rel))
			}
			return nil
		})
		sort.Slice(paths, func(i, j int) bool { return jcs.CompareKeys(paths[i], paths[j]) < 0 })
		out := []any{}
		for _, p := range paths {
			b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
			sum := sha256.Sum256(b)
			out = append(out, map[string]any{"path": p, "sha256": hex.EncodeToString(sum[:]), "size": jcs.Number(strconv.Itoa(len(b)))})
		}
		return out
	}
	timeout, _ := os.ReadFile(filepath.Join(seen, "timeout"))
	b, err := jcs.Canonical(map[string]any{
		"workDir": list(filepath.Join(seen, "work")), "instructions": list(filepath.Join(seen, "agents")),
		"environment": map[string]any{"ASDD_MODEL": "model-x", "ASDD_MODEL_URL": "", "ASDD_MODEL_TIMEOUT": strings.TrimSpace(string(timeout)),
			"PATH": "/usr/local/bin:/usr/bin:/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func reviewPipeline(t *testing.T, rt *rtexec.Runtime, cfg *config.Repo) *review.Decision {
	t.Helper()
	p := review.NewPipeline(review.Options{Runtimes: runtime.NewRegistry(rt), Logger: zerolog.Nop()})
	d, err := p.Review(context.Background(), subject(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
