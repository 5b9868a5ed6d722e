package deploy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensgate/lensgate/handlers/publish/pdp"
)

// A crash in the middle of an audit append leaves a torn last line. The binary keeps it in a
// file of its own, names that file in its log, continues the chain from the last whole record
// and publishes, instead of refusing to start.
func TestTornAuditLineIsSetAside(t *testing.T) {
	fe := newFakeEnv(t)
	ledger := fe.vars["LENSGATE_AUDIT_FILE"]
	sink, err := pdp.OpenFileSink(ledger)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := sink.Append(context.Background(), pdp.Record{Schema: pdp.AuditSchema, Kind: "decision", TS: time.Now().UTC().Format(time.RFC3339),
			Action: "comment.upsert", RunID: "before-the-crash", Reasoning: strings.Repeat("x", i)}); err != nil {
			t.Fatal(err)
		}
	}
	_ = sink.Close()
	torn := `{"schema":"asdd/audit/v0.1","kind":"decision","ts":"2026-12-01T`
	f, err := os.OpenFile(ledger, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(torn)
	_ = f.Close()

	s := startServe(t, fe.vars)
	reviewFixturePR(t, s, fe.gh)
	s.stop()

	lf, err := os.Open(ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	res, err := pdp.Verify(lf)
	if err != nil || res.Records <= 2 {
		t.Fatalf("ledger after the restart: %d records, %v", res.Records, err)
	}
	logs := s.logs.String()
	i := strings.Index(logs, `"set_aside":"`)
	if i < 0 {
		t.Fatalf("the log does not name the set-aside file:\n%s", logs)
	}
	aside := logs[i+len(`"set_aside":"`):]
	aside = aside[:strings.IndexByte(aside, '"')]
	if b, err := os.ReadFile(aside); err != nil || string(b) != torn {
		t.Fatalf("set-aside file %s holds %q (%v), want the torn line", aside, b, err)
	}
	checkLogs(t, logs, fe.vars)
}

// procStatusKiB reads a "Vm…:  N kB" line of /proc/<pid>/status.
func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc status to measure memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kib int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kib)
			return kib
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// Twenty concurrent unsigned posts of 25 MiB (GitHub's own cap, so not refused by size) against
// the built binary: the peak resident memory stays under the shipped Kubernetes memory limit,
// because bodies whose signature is not checked yet share a bounded budget and the rest get 503.
func TestUnsignedFloodStaysUnderTheMemoryLimit(t *testing.T) {
	limit := dig(t, k8s(t, "kubernetes/base/deployment.yaml"), "spec", "template", "spec", "containers", 0, "resources", "limits", "memory")
	if limit != "512Mi" {
		t.Fatalf("the shipped memory limit is %v; this test measures against 512Mi", limit)
	}
	const limitKiB = 512 << 10
	fe := newFakeEnv(t)
	s := startServe(t, fe.vars)
	pid := s.cmd.Process.Pid
	base := procStatusKiB(t, pid, "VmRSS")
	const posts, size = 20, 25 << 20
	body := bytes.Repeat([]byte("x"), size)
	codes := make(chan int, posts)
	var wg sync.WaitGroup
	for i := range posts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, s.base+"/api/github/hook", bytes.NewReader(body))
			req.Header.Set("X-GitHub-Event", "pull_request")
			req.Header.Set("X-GitHub-Delivery", fmt.Sprint("flood-", i))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- -1 // a refused body may be cut off while it is still being sent
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	peak := procStatusKiB(t, pid, "VmHWM")
	t.Logf("%d unsigned %d MiB posts: answers %v; resident memory %d MiB before, peak %d MiB (limit %d MiB)",
		posts, size>>20, count, base>>10, peak>>10, limitKiB>>10)
	if count[http.StatusAccepted]+count[http.StatusOK] != 0 || count[http.StatusBadRequest] == 0 {
		t.Errorf("answers %v: want every post refused, some after reading (400)", count)
	}
	if peak >= limitKiB {
		t.Fatalf("peak resident memory %d MiB reaches the shipped limit of %d MiB", peak>>10, limitKiB>>10)
	}
	if code, _ := s.get("/readyz"); code != http.StatusOK {
		t.Fatalf("not ready after the flood: %d", code)
	}
	s.stop()
}
