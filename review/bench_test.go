package review

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lensgate/lensgate/config"
	rt "github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/builtin"
)

// syntheticDiff builds a diff of files source files, each with hunks of realistic Go code,
// until it holds about lines lines.
func syntheticDiff(files, linesPerFile int) []byte {
	var b strings.Builder
	body := []string{
		"\tif err := s.store.Put(ctx, key, value); err != nil {",
		"\t\treturn fmt.Errorf(\"put %s: %w\", key, err)",
		"\t}",
		"\tlog.Debug().Str(\"key\", key).Int(\"size\", len(value)).Msg(\"stored\")",
		"\tfor i, item := range items {",
		"\t\ttotal += item.Price * item.Qty // running total",
		"\t}",
		"\treturn total, nil",
	}
	for f := 0; f < files; f++ {
		name := fmt.Sprintf("internal/pkg%03d/file%03d.go", f/10, f)
		fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex 1111111..2222222 100644\n--- a/%s\n+++ b/%s\n", name, name, name, name)
		fmt.Fprintf(&b, "@@ -1,%d +1,%d @@ func Handle(ctx context.Context) error {\n", linesPerFile/2, linesPerFile-linesPerFile/2)
		for i := 0; i < linesPerFile; i++ {
			prefix := "+"
			if i < linesPerFile/2 {
				prefix = "-"
			}
			b.WriteString(prefix + body[i%len(body)] + "\n")
		}
	}
	return []byte(b.String())
}

// peakHeap samples the live heap while fn runs and returns the highest value seen.
func peakHeap(fn func()) uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	return peak.Load()
}

func benchPipeline(b *testing.B, d []byte, wantCoverage string) {
	subj := &Subject{Kind: KindPullRequest, Local: true, Diff: d, OpenPRsByAuthor: -1,
		HeadSHA: strings.Repeat("a", 40), BaseSHA: strings.Repeat("b", 40)}
	p := NewPipeline(Options{Runtimes: rt.NewRegistry(builtin.New(builtin.Options{})), Logger: zerolog.Nop()})
	cfg := config.DefaultRepo()
	// A process pays some costs once, at its first review, and shares the result with every
	// review after it: compiling the secret rule set and hashing its own executable for the
	// runner observation (tens of milliseconds each). A small review before the clock starts
	// pays them, so that a short run measures a review; what they keep stays resident, as in a
	// server, and counts in the peak RSS below.
	warm := *subj
	warm.Diff = syntheticDiff(1, 10)
	if _, err := p.Review(context.Background(), &warm, cfg); err != nil {
		b.Fatal(err)
	}
	// The peak RSS should be the review's, not the input builder's: hand the builder's garbage
	// back to the system and restart the kernel's high-water mark (Linux).
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak uint64
	var dec *Decision
	b.SetBytes(int64(len(d)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p1 := peakHeap(func() {
			var err error
			dec, err = p.Review(context.Background(), subj, cfg)
			if err != nil {
				b.Fatal(err)
			}
		})
		if p1 > peak {
			peak = p1
		}
	}
	b.StopTimer()
	if dec.Coverage.Status != wantCoverage {
		b.Fatalf("coverage %s, want %s", dec.Coverage.Status, wantCoverage)
	}
	if wantCoverage == CoveragePartial {
		for _, g := range dec.Coverage.Gaps {
			if g.Path == "" || g.Reason == "" {
				b.Fatalf("unnamed gap %+v", g)
			}
		}
	}
	extra := int64(peak) - int64(before.HeapAlloc)
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(extra)/(1<<20), "heap-over-input-MiB")
	b.ReportMetric(float64(len(dec.Coverage.Gaps)), "gaps")
	if hwm, ok := peakRSS(); ok {
		// The process's high-water mark since the input was built (the input itself included).
		b.ReportMetric(float64(hwm)/(1<<20), "peak-rss-MiB")
	}
}

// peakRSS reads the process's peak resident set size (VmHWM) on Linux.
func peakRSS() (uint64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb uint64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb); err == nil {
				return kb << 10, true
			}
		}
	}
	return 0, false
}

// BenchmarkPipeline5000Lines: a 5,000-line diff through the whole pipeline with the builtin
// runtime (no model latency involved).
func BenchmarkPipeline5000Lines(b *testing.B) {
	benchPipeline(b, syntheticDiff(50, 100), CoverageComplete)
}

// BenchmarkPipeline50MB: a 50 MB diff. The offline budget (16 MiB) bounds what is scanned;
// the rest of the files are named coverage gaps, and memory stays near the input's size.
func BenchmarkPipeline50MB(b *testing.B) {
	d := syntheticDiff(500, 2900)
	if len(d) < 50_000_000 {
		b.Fatalf("diff is %d bytes", len(d))
	}
	benchPipeline(b, d, CoveragePartial)
}
