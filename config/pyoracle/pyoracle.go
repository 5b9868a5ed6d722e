// Package pyoracle runs Python's own tomllib and json readers as independent oracles for
// differential tests: a policy or receipt must decode in lensgate as it does in Python, which
// YAGA runs on. Tests only; production code never imports it.
package pyoracle

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

//go:embed oracle.py
var script []byte

// Oracle is one python3 process answering requests in turn.
type Oracle struct {
	mu  sync.Mutex
	in  io.WriteCloser
	out *bufio.Reader
	cmd *exec.Cmd
}

var (
	once   sync.Once
	shared *Oracle
	err    error
)

// Start returns the process-wide oracle, starting python3 at first use. It skips the test, with
// the reason, when python3 (3.11 or later, for tomllib) is not available.
func Start(tb testing.TB) *Oracle {
	tb.Helper()
	once.Do(func() { shared, err = start() })
	if err != nil {
		tb.Skipf("differential test skipped: %v", err)
	}
	return shared
}

func start() (*Oracle, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil, fmt.Errorf("python3 not found: %w", err)
	}
	if out, err := exec.Command(py, "-c", "import tomllib").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("python3 has no tomllib (3.11 or later needed): %s", out)
	}
	dir, err := os.MkdirTemp("", "pyoracle")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "oracle.py")
	if err := os.WriteFile(path, script, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(py, "-I", path)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Oracle{in: in, out: bufio.NewReaderSize(out, 1<<20), cmd: cmd}, nil
}

// Reply is the oracle's answer. Value is a tagged tree: [type, payload], where integers are
// Python hex() text, floats repr() text, tables a list of [key, value] pairs in order, and dates
// and times isoformat() text.
type Reply struct {
	OK         bool            `json:"ok"`
	Class      string          `json:"class"` // on failure: toml, value (ValueError), recursion
	Error      string          `json:"error"`
	Value      json.RawMessage `json:"value"`
	Digest     *string         `json:"digest"` // plan_digest, or null for an invalid policy
	Unassigned []int           `json:"unassigned"`
	Unicode    string          `json:"unicode"`
}

// Ask sends one request and waits for its reply.
func (o *Oracle) Ask(tb testing.TB, req map[string]any) Reply {
	tb.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := o.in.Write(append(b, '\n')); err != nil {
		tb.Fatalf("oracle: %v", err)
	}
	line, err := o.out.ReadBytes('\n')
	if err != nil {
		tb.Fatalf("oracle: %v", err)
	}
	var r Reply
	if err := json.Unmarshal(line, &r); err != nil {
		tb.Fatalf("oracle reply: %v", err)
	}
	return r
}

// TOML decodes doc with tomllib; with plan, the reply also carries the YAGA plan_digest the
// decoded document gives (pyproject reads [tool.yaga]).
func (o *Oracle) TOML(tb testing.TB, doc string, plan, pyproject bool) Reply {
	return o.Ask(tb, map[string]any{"op": "toml", "doc": doc, "plan": plan, "pyproject": pyproject})
}

// JSON decodes doc with json.loads, rejecting duplicate keys and NaN/Infinity as YAGA does.
func (o *Oracle) JSON(tb testing.TB, doc string) Reply {
	return o.Ask(tb, map[string]any{"op": "json", "doc": doc})
}
