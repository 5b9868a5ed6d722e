package runner_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/disclosure/observation"
	"github.com/lensgate/lensgate/review/runner"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// countingListener counts the bytes the server reads from its connections.
type countingListener struct {
	net.Listener
	read *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, read: l.read}, nil
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// serveRunner serves a builtin-only runner on a fresh unix socket, counting what it reads.
func serveRunner(t testing.TB, maxConcurrent int) (sock string, read *atomic.Int64) {
	return serveRunnerLogging(t, maxConcurrent, zerolog.Nop())
}

func serveRunnerLogging(t testing.TB, maxConcurrent int, log zerolog.Logger) (sock string, read *atomic.Int64) {
	t.Helper()
	srv, err := runner.NewServer(runner.Options{
		Runtimes: runtime.NewRegistry(builtin.New(builtin.Options{})), Witness: observation.Signer{Key: seedKey(7)},
		Token: token, Version: "v-test", Logger: log, MaxConcurrent: maxConcurrent,
	})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "lgr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock = filepath.Join(dir, "r.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	read = new(atomic.Int64)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: runner.MaxHeaderBytes}
	go func() { _ = hs.Serve(countingListener{Listener: ln, read: read}) }()
	t.Cleanup(func() { _ = hs.Close() })
	return sock, read
}

func randHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// forgedHead is the head of a request with a current time, a fresh nonce and a random MAC
// and digest, declaring a body of length bytes: what anyone can send without the token.
func forgedHead(length int64) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: runner\r\nContent-Type: application/json\r\n%s: %d\r\n%s: %s\r\n%s: %s\r\n%s: %s\r\nContent-Length: %d\r\n\r\n",
		runner.PathCalls, runner.HeaderDate, time.Now().Unix(), runner.HeaderNonce, randHex(32), runner.HeaderMAC, randHex(64),
		runner.HeaderDigest, randHex(64), length)
}

// TestUnauthenticatedBodiesAreNotRead: a request with a fresh time and a well-formed but
// wrong MAC, declaring a 3 MiB body that it sends, is refused with 401 after the runner has
// read no more than a few KiB of it.
func TestUnauthenticatedBodiesAreNotRead(t *testing.T) {
	sock, read := serveRunner(t, 0)
	const senders, length = 4, 3 << 20
	var wg sync.WaitGroup
	for i := 0; i < senders; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("unix", sock)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			go func() {
				_, _ = conn.Write([]byte(forgedHead(length)))
				_, _ = conn.Write(bytes.Repeat([]byte("x"), length))
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("forged request: HTTP %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	if got := read.Load(); got > senders*16<<10 {
		t.Fatalf("the runner read %d bytes of %d unauthenticated requests (%d bytes each), want at most 16 KiB each", got, senders, length)
	}
}

// TestRefusalsAreLoggedWithARateLimit: a hundred refused requests make a handful of log
// lines, the last of which counts them all so far.
func TestRefusalsAreLoggedWithARateLimit(t *testing.T) {
	var logs countingWriter
	sock, _ := serveRunnerLogging(t, 0, zerolog.New(&logs))
	for i := 0; i < 100; i++ {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte(forgedHead(2))); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("forged request: HTTP %d", resp.StatusCode)
		}
	}
	if n := logs.lines.Load(); n == 0 || n > 10 {
		t.Fatalf("100 refusals made %d log lines, want between 1 and 10", n)
	}
}

// TestWorkerCallsSucceedWhileForgedBodiesStall: senders without the token that declare large
// bodies and then stall hold no slot the worker needs: its own calls succeed meanwhile.
func TestWorkerCallsSucceedWhileForgedBodiesStall(t *testing.T) {
	sock, _ := serveRunner(t, 2)
	for i := 0; i < 32; i++ {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := conn.Write([]byte(forgedHead(64<<20) + strings.Repeat("x", 1024))); err != nil {
			t.Fatal(err)
		}
	}
	s := newSplit(t, "unix://"+sock, token)
	for i := 0; i < 3; i++ {
		subj := subject()
		if _, err := s.pipe.Review(context.Background(), subj, config.DefaultRepo()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.client.Info(context.Background()); err != nil {
			t.Fatalf("worker call during the stalled senders: %v", err)
		}
	}
}

// TestRunnerProcessForFlood is the runner process of TestRunnerMemoryUnderFlood; it serves
// only when that test starts it.
func TestRunnerProcessForFlood(t *testing.T) {
	sock := os.Getenv("LENSGATE_TEST_FLOOD_SOCK")
	if sock == "" {
		t.Skip("started by TestRunnerMemoryUnderFlood")
	}
	srv, err := runner.NewServer(runner.Options{
		Runtimes: runtime.NewRegistry(builtin.New(builtin.Options{})), Witness: observation.Signer{Key: seedKey(7)},
		Token: token, Version: "v-test", Logger: zerolog.New(os.Stderr),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: runner.MaxHeaderBytes}
	go func() { _ = hs.Serve(ln) }()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	<-stop
	_ = hs.Close()
}

// TestRunnerMemoryUnderFlood measures, when LENSGATE_TEST_FLOOD is set (for example
// LENSGATE_TEST_FLOOD=20s), the resident memory of a runner process while many senders
// without the token send requests with a current time, a random MAC and a 64 MiB body, and
// how the worker's own calls fare meanwhile. It reports figures; it asserts no timing.
func TestRunnerMemoryUnderFlood(t *testing.T) {
	dur, err := time.ParseDuration(os.Getenv("LENSGATE_TEST_FLOOD"))
	if err != nil {
		t.Skip("set LENSGATE_TEST_FLOOD to a duration to measure")
	}
	senders := 64
	if n, err := strconv.Atoi(os.Getenv("LENSGATE_TEST_FLOOD_SENDERS")); err == nil && n > 0 {
		senders = n
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "r.sock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunnerProcessForFlood$")
	cmd.Env = append(os.Environ(), "LENSGATE_TEST_FLOOD_SOCK="+sock)
	var logs countingWriter
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	s := newSplit(t, "unix://"+sock, token)
	workerCall := func() error {
		_, err := s.pipe.Review(context.Background(), subject(), config.DefaultRepo())
		if err == nil {
			_, err = s.client.Info(context.Background())
		}
		return err
	}
	for i := 0; i < 5; i++ {
		if err := workerCall(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	idle := rssKiB(t, cmd.Process.Pid)

	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var sent, refused atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < senders; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			flood(ctx, sock, &sent, &refused)
		}()
	}
	var peak int64
	var ok, failed int
	var firstErr error
	for ctx.Err() == nil {
		if err := workerCall(); err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
		} else {
			ok++
		}
		peak = max(peak, rssKiB(t, cmd.Process.Pid))
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("runner RSS idle %.1f MiB, peak during the flood %.1f MiB (%.1f MiB above idle); %d senders, %d forged requests sent, %d refused with 401; worker calls %d ok, %d failed (first error: %v); %d log lines",
		float64(idle)/1024, float64(peak)/1024, float64(peak-idle)/1024, senders, sent.Load(), refused.Load(), ok, failed, firstErr, logs.lines.Load())
}

// flood sends forged requests with 64 MiB bodies one after another until ctx ends.
func flood(ctx context.Context, sock string, sent, refused *atomic.Int64) {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for ctx.Err() == nil {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			continue
		}
		dl, _ := ctx.Deadline()
		_ = conn.SetDeadline(dl)
		sent.Add(1)
		go func() {
			if _, err := conn.Write([]byte(forgedHead(64 << 20))); err != nil {
				return
			}
			for i := 0; i < 1024; i++ {
				if _, err := conn.Write(chunk); err != nil {
					return
				}
			}
		}()
		if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
			if resp.StatusCode == http.StatusUnauthorized {
				refused.Add(1)
			}
			resp.Body.Close()
		}
		conn.Close()
	}
}

// rssKiB is a process's resident set size.
func rssKiB(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// countingWriter counts the lines written to it.
type countingWriter struct{ lines atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.lines.Add(int64(bytes.Count(p, []byte("\n"))))
	return len(p), nil
}
