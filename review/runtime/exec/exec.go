// Package exec runs review adapters an operator installed: executables in one configured
// directory, chosen by name, started with exactly the ASDD environment and nothing of the
// server's, in their own process group, killed with all their children at the timeout, and
// with their output size capped. Their review.json is parsed strictly; anything wrong makes
// the request fail closed. An adapter may write a SARIF 2.1.0 log instead of an ASDD review, so
// any linter that speaks SARIF can answer a lens; its results are filtered to the diff.
package exec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lensgate/lensgate/disclosure/jcs"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/asdd"
)

// Options configure adapters.
type Options struct {
	// ModelURL, Token and Model are passed as ASDD_MODEL_URL, ASDD_RUNTIME_TOKEN and
	// ASDD_MODEL (the repository's models.reviewer wins over Model).
	ModelURL string
	Token    string
	Model    string
	// Timeout bounds one run (default: the repository's review.timeout_seconds, else 45 s).
	Timeout time.Duration
	// MaxOutputBytes bounds review.json (default asdd.MaxBytes).
	MaxOutputBytes int64
	// Path is the fixed PATH given to adapters (default /usr/local/bin:/usr/bin:/bin). It is
	// not taken from the server's environment.
	Path string
}

// reserved names cannot be taken by an adapter.
var reserved = map[string]bool{"builtin": true, "openai": true, "dryrun": true}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Runtime is one adapter.
type Runtime struct {
	name   string
	path   string
	triage string // path of triage-<name>, when installed
	opts   Options
}

// New returns the adapter called name from dir: the executable dir/name or dir/name.sh.
func New(dir, name string, opts Options) (*Runtime, error) {
	if !nameRE.MatchString(name) || reserved[name] || strings.HasPrefix(name, "triage-") {
		return nil, fmt.Errorf("adapter name %q is not allowed", name)
	}
	path, err := findExecutable(dir, name)
	if err != nil {
		return nil, err
	}
	r := &Runtime{name: name, path: path, opts: defaults(opts)}
	if tp, err := findExecutable(dir, "triage-"+name); err == nil {
		r.triage = tp
	}
	return r, nil
}

// Discover enables every adapter in dir.
func Discover(dir string, opts Options) ([]*Runtime, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read adapter directory: %w", err)
	}
	var out []*Runtime
	seen := map[string]bool{}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".sh")
		if seen[name] || !nameRE.MatchString(name) || reserved[name] || strings.HasPrefix(name, "triage-") {
			continue
		}
		rt, err := New(dir, name, opts)
		if err != nil {
			continue
		}
		seen[name] = true
		out = append(out, rt)
	}
	return out, nil
}

func defaults(o Options) Options {
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = asdd.MaxBytes
	}
	if o.Path == "" {
		o.Path = "/usr/local/bin:/usr/bin:/bin"
	}
	return o
}

// findExecutable resolves name inside dir only; symlinks must stay inside dir.
func findExecutable(dir, name string) (string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("adapter directory: %w", err)
	}
	realDir, err := filepath.EvalSymlinks(absDir)
	if err != nil {
		return "", fmt.Errorf("adapter directory: %w", err)
	}
	for _, cand := range []string{name, name + ".sh"} {
		p := filepath.Join(realDir, cand)
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if filepath.Dir(real) != realDir {
			return "", fmt.Errorf("adapter %q points outside the adapter directory", name)
		}
		st, err := os.Stat(real)
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			continue
		}
		return real, nil
	}
	return "", fmt.Errorf("no executable adapter %q in %s", name, dir)
}

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return r.name }

// Review implements runtime.Runtime.
func (r *Runtime) Review(ctx context.Context, req *runtime.Request) (*runtime.Result, error) {
	if req.WorkDir == "" {
		return nil, errors.New("no work directory")
	}
	prog := r.path
	if req.Kind == runtime.KindTriage {
		if r.triage == "" {
			return nil, fmt.Errorf("adapter %s has no triage-%s executable", r.name, r.name)
		}
		prog = r.triage
	}
	// ASDD_ROOT holds the fixed lens instructions (agents/<lens>.md) and ASDD_OUT's directory;
	// both are private and separate from the untrusted work directory.
	root, err := os.MkdirTemp("", "lensgate-root-")
	if err != nil {
		return nil, fmt.Errorf("adapter root: %w", err)
	}
	defer os.RemoveAll(root)
	if err := os.Mkdir(filepath.Join(root, "agents"), 0o700); err != nil {
		return nil, fmt.Errorf("adapter root: %w", err)
	}
	for _, l := range req.Lenses {
		if err := os.WriteFile(filepath.Join(root, "agents", l.Name+".md"), []byte(l.Instruction+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("adapter root: %w", err)
		}
	}
	outDir := filepath.Join(root, "out")
	if err := os.Mkdir(outDir, 0o700); err != nil {
		return nil, fmt.Errorf("adapter output: %w", err)
	}
	out := filepath.Join(outDir, "review.json")
	model := req.Settings.Model
	if model == "" {
		model = r.opts.Model
	}
	timeout := r.opts.Timeout
	if timeout <= 0 && req.Settings.TimeoutSeconds > 0 {
		timeout = time.Duration(req.Settings.TimeoutSeconds) * time.Second
	}
	if timeout <= 0 {
		timeout = 45 * time.Second
	}
	env := []string{
		"ASDD_WORKDIR=" + req.WorkDir,
		"ASDD_OUT=" + out,
		"ASDD_ROOT=" + root,
		"ASDD_RUNTIME_TOKEN=" + r.opts.Token,
		"ASDD_MODEL_URL=" + r.opts.ModelURL,
		"ASDD_MODEL=" + model,
		"ASDD_MODEL_TIMEOUT=" + strconv.Itoa(int(timeout/time.Second)),
		"PATH=" + r.opts.Path,
	}
	rec := runtime.RecorderFrom(ctx)
	if rec != nil {
		// The digest of the file as it is about to be started, so a swapped adapter shows.
		sum, err := fileSHA256(prog)
		if err != nil {
			return nil, fmt.Errorf("adapter %s: %w", r.name, err)
		}
		rec.Executable(sum)
		// What the adapter is handed, file by file, as it is about to start.
		manifest, err := workManifest(req.WorkDir, root, model, r.opts.ModelURL, strconv.Itoa(int(timeout/time.Second)), r.opts.Path)
		if err != nil {
			return nil, fmt.Errorf("adapter %s: %w", r.name, err)
		}
		rec.Request(manifest)
		// A script's digest says nothing of the program that runs it: name and hash that too.
		if path, isum, ok := interpreter(prog, r.opts.Path); ok {
			rec.Interpreter(path, isum)
		}
	}
	if err := run(ctx, prog, req.WorkDir, env, timeout, out, r.opts.MaxOutputBytes); err != nil {
		return nil, fmt.Errorf("adapter %s: %s", r.name, redact(err.Error(), r.opts.Token))
	}
	data, err := readBounded(out, r.opts.MaxOutputBytes)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", r.name, err)
	}
	rec.Output(data)
	if req.Kind == runtime.KindTriage {
		t, err := asdd.ParseTriage(data)
		if err != nil {
			return nil, fmt.Errorf("adapter %s: %w", r.name, err)
		}
		return &runtime.Result{Model: model, Triage: &runtime.Triage{Labels: t.Labels, Comment: t.Comment}}, nil
	}
	if isSARIF(data) {
		reports, err := sarifReports(data, req)
		if err != nil {
			return nil, fmt.Errorf("adapter %s: %w", r.name, err)
		}
		return &runtime.Result{Model: model, Lenses: reports}, nil
	}
	rev, err := asdd.ParseReview(data)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", r.name, err)
	}
	return &runtime.Result{Model: model, Lenses: rev.Reports()}, nil
}

// run starts prog in its own process group and kills the whole group when it exits, times
// out, the context ends, or its output file grows past max.
func run(ctx context.Context, prog, dir string, env []string, timeout time.Duration, out string, max int64) error {
	cmd := osexec.Command(prog)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr capped
	stderr.max = 2048
	cmd.Stdout = &capped{max: 0}
	cmd.Stderr = &stderr
	// If a child keeps the pipes open after the group is killed, stop waiting for them.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	pgid := cmd.Process.Pid
	killGroup := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case err := <-done:
			killGroup() // children left behind must not outlive the run
			if code := cmd.ProcessState.ExitCode(); code >= 0 {
				runtime.RecorderFrom(ctx).Exit(code)
			}
			if err != nil {
				var ee *osexec.ExitError
				if errors.As(err, &ee) {
					return fmt.Errorf("exited with status %d: %s", ee.ExitCode(), stderr.summary())
				}
				return fmt.Errorf("wait: %w", err)
			}
			return nil
		case <-timer.C:
			killGroup()
			<-done
			return fmt.Errorf("timed out after %s and was killed", timeout)
		case <-ctx.Done():
			killGroup()
			<-done
			return fmt.Errorf("cancelled: %w", ctx.Err())
		case <-ticker.C:
			if st, err := os.Stat(out); err == nil && st.Size() > max {
				killGroup()
				<-done
				return fmt.Errorf("output exceeds %d bytes; the adapter was killed", max)
			}
		}
	}
}

// Identity implements runtime.Identified.
func (r *Runtime) Identity() runtime.Identity { return runtime.Identity{Kind: runtime.IdentityExec} }

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("hash executable: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash executable: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// redact removes the runtime token from text an adapter produced (its stderr), which ends up
// in a published cause.
func redact(s, token string) string {
	if len(token) >= 4 {
		s = strings.ReplaceAll(s, token, "[redacted]")
	}
	return s
}

func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("wrote no review output (ASDD_OUT)")
		}
		return nil, fmt.Errorf("read output: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read output: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("output is not a regular file")
	}
	if st.Size() > max {
		return nil, fmt.Errorf("output is %d bytes, over the %d byte limit", st.Size(), max)
	}
	buf := make([]byte, 0, st.Size())
	b := bytes.NewBuffer(buf)
	if _, err := b.ReadFrom(&limitReader{f: f, left: max + 1}); err != nil {
		return nil, fmt.Errorf("read output: %w", err)
	}
	if int64(b.Len()) > max {
		return nil, fmt.Errorf("output exceeds %d bytes", max)
	}
	return b.Bytes(), nil
}

type limitReader struct {
	f    *os.File
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.f.Read(p)
	l.left -= int64(n)
	return n, err
}

// capped keeps the first max bytes written and discards the rest, so a chatty adapter cannot
// fill the server's memory.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		c.buf.Write(p[:room])
	}
	return len(p), nil
}

// summary is the start of stderr on one line, for the operational cause. It is the adapter's
// own text, shown to operators; it never contains the token unless the adapter prints it.
func (c *capped) summary() string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(c.buf.String(), "?")), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		return "no error output"
	}
	return s
}

// interpreter resolves the program a script's "#!" line starts (through env(1) and the
// adapter's PATH when the line names env) and returns its absolute path and digest. ok is
// false for a file without a "#!" line or an interpreter that cannot be found or read.
func interpreter(prog, pathEnv string) (path, sum string, ok bool) {
	f, err := os.Open(prog)
	if err != nil {
		return "", "", false
	}
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	f.Close()
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	rest, found := strings.CutPrefix(line, "#!")
	if !found {
		return "", "", false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", "", false
	}
	path = fields[0]
	if filepath.Base(path) == "env" {
		// The first argument that is not an option (or an assignment) is the program.
		name := ""
		for _, a := range fields[1:] {
			if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
				name = a
				break
			}
		}
		if name == "" {
			return "", "", false
		}
		if path = lookPath(name, pathEnv); path == "" {
			return "", "", false
		}
	}
	if !filepath.IsAbs(path) {
		return "", "", false
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	sum, err = fileSHA256(path)
	if err != nil {
		return "", "", false
	}
	return path, sum, true
}

// lookPath finds an executable name in a PATH list, as env(1) does for the adapter.
func lookPath(name, pathEnv string) string {
	if strings.Contains(name, "/") {
		if filepath.IsAbs(name) {
			return name
		}
		return ""
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// workManifest is the RFC 8785 form of what an adapter is handed: every file of the work
// directory and every lens instruction file of ASDD_ROOT with its digest and size, sorted by
// path, and the settings of its environment. The token and the per-run directory names are
// left out: the token is a secret, the directories are random.
func workManifest(workDir, root, model, modelURL, timeout, path string) ([]byte, error) {
	list := func(dir string) ([]any, error) {
		out := []any{}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out = append(out, map[string]any{"path": strings.ToValidUTF8(filepath.ToSlash(rel), "\uFFFD"),
				"sha256": hex.EncodeToString(sum[:]), "size": jcs.Number(strconv.Itoa(len(b)))})
			return nil
		})
		// WalkDir visits in lexical byte order; RFC 8785 sorts by UTF-16 code units.
		sort.SliceStable(out, func(i, j int) bool {
			return jcs.CompareKeys(out[i].(map[string]any)["path"].(string), out[j].(map[string]any)["path"].(string)) < 0
		})
		return out, err
	}
	wd, err := list(workDir)
	if err != nil {
		return nil, fmt.Errorf("work manifest: %w", err)
	}
	agents, err := list(filepath.Join(root, "agents"))
	if err != nil {
		return nil, fmt.Errorf("work manifest: %w", err)
	}
	clean := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	return jcs.Canonical(map[string]any{
		"workDir": wd, "instructions": agents,
		"environment": map[string]any{"ASDD_MODEL": clean(model), "ASDD_MODEL_URL": clean(modelURL), "ASDD_MODEL_TIMEOUT": timeout, "PATH": clean(path)},
	})
}
