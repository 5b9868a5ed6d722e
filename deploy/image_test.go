package deploy

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestImageNamesAreFullyQualified: podman and buildah refuse short image names ("golang:…"), so
// every image a recipe or manifest names carries its registry, and no recipe pulls a BuildKit
// front-end (a "# syntax=" line).
func TestImageNamesAreFullyQualified(t *testing.T) {
	qualified := func(ref string) bool {
		host, _, ok := strings.Cut(ref, "/")
		return ok && (strings.ContainsAny(host, ".:") || host == "localhost")
	}
	for _, recipe := range []string{"Dockerfile", "Dockerfile.scratch"} {
		data, err := os.ReadFile(recipe)
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`(?mi)^#\s*syntax\s*=`).Match(data) {
			t.Errorf("%s pulls a BuildKit front-end (# syntax=)", recipe)
		}
		stages := map[string]bool{"scratch": true}
		for _, m := range regexp.MustCompile(`(?m)^FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?`).FindAllStringSubmatch(string(data), -1) {
			if !stages[m[1]] && !qualified(m[1]) {
				t.Errorf("%s: FROM %s is not a fully qualified image name", recipe, m[1])
			}
			stages[m[2]] = true
		}
	}
	err := filepath.WalkDir("kubernetes", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^\s*(?:-\s+)?image:\s*(\S+)`).FindAllStringSubmatch(string(data), -1) {
			if !qualified(m[1]) {
				t.Errorf("%s: image %s is not a fully qualified image name", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestScratchImage: deploy/scratch-context.sh prepares, from the binary deploy/build.sh made,
// everything deploy/Dockerfile.scratch copies. Where buildah is installed the image is built
// from it with no registry (pull=never; FROM scratch), in a throw-away image store, and the
// binary runs in it as the unprivileged user and writes its state directory.
func TestScratchImage(t *testing.T) {
	bin := lensgateBinary(t)
	ctxDir := filepath.Join(t.TempDir(), "context")
	if out, err := exec.Command("sh", "scratch-context.sh", ctxDir, testVersion, bin).CombinedOutput(); err != nil {
		t.Fatalf("scratch-context.sh: %v\n%s", err, out)
	}
	recipe, err := os.ReadFile("Dockerfile.scratch")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(recipe)))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "COPY" {
			if _, err := os.Stat(filepath.Join(ctxDir, f[len(f)-2])); err != nil {
				t.Errorf("the context lacks what %q copies: %v", sc.Text(), err)
			}
		}
	}
	user := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindStringSubmatch(string(recipe))
	passwd, err := os.ReadFile(filepath.Join(ctxDir, "passwd"))
	if user == nil || err != nil || !strings.Contains(string(passwd), ":x:"+user[1]+":"+user[2]+":") {
		t.Fatalf("passwd %q does not hold the image's user %v (%v)", passwd, user, err)
	}

	buildah, err := exec.LookPath("buildah")
	if err != nil {
		t.Skip("buildah is not installed (apt-get install buildah): the scratch image's context was checked, the image not built")
	}
	store := t.TempDir()
	b := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		global := []string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "--storage-driver", "vfs"}
		out, err := exec.CommandContext(ctx, buildah, append(global, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		_, _ = b("rm", "--all")
		_, _ = b("rmi", "--all", "--force")
	})
	const image = "localhost/lensgate:deploytest"
	if out, err := b("build", "--pull=never", "-f", "Dockerfile.scratch", "-t", image, ctxDir); err != nil {
		for _, unusable := range []string{"operation not permitted", "user namespace", "newuidmap", "cannot clone"} {
			if strings.Contains(strings.ToLower(out), unusable) {
				t.Skipf("buildah cannot build on this machine (%s): %s", unusable, lastLine(out))
			}
		}
		t.Fatalf("buildah build: %v\n%s", err, out)
	}
	ctr, err := b("from", "--pull-never", image)
	if err != nil {
		t.Fatalf("buildah from: %v\n%s", err, ctr)
	}
	ctr = lastLine(ctr)
	run := func(args ...string) string {
		t.Helper()
		out, err := b(append([]string{"run", "--isolation", "chroot", ctr, "--"}, args...)...)
		if err != nil {
			t.Fatalf("%v in the image: %v\n%s", args, err, out)
		}
		return out
	}
	if out := run("/usr/local/bin/lensgate", "--version"); !strings.Contains(out, testVersion) {
		t.Errorf("--version in the image: %q", out)
	}
	// The state directory belongs to the runtime user: a key written there proves both.
	run("/usr/local/bin/lensgate", "keygen", "--out", "/var/lib/lensgate/probe.key")
	if out, _ := b("inspect", "--type", "image", "--format", "{{.OCIv1.Config.User}}", image); strings.TrimSpace(out) != user[1]+":"+user[2] {
		t.Errorf("image user %q", out)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
