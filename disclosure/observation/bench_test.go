package observation

import (
	"crypto/ed25519"
	"syscall"
	"testing"
	"time"

	"github.com/lensgate/lensgate/disclosure/dsse"
)

// BenchmarkVerify: one typical observation (three calls, two findings) checked against its
// receipt, signature included.
func BenchmarkVerify(b *testing.B) {
	f := newFixture(b, nil)
	env := f.sign(b, witnessKey)
	o := opts(f)
	b.ReportAllocs()
	reportCPU(b, func() {
		if Verify(env, o).RunnerObservation != Match {
			b.Fatal("no match")
		}
	})
}

// BenchmarkEd25519Verify is the floor of BenchmarkVerify: crypto/ed25519 alone over the same
// observation's PAE bytes.
func BenchmarkEd25519Verify(b *testing.B) {
	f := newFixture(b, nil)
	p, err := Parse(f.sign(b, witnessKey))
	if err != nil {
		b.Fatal(err)
	}
	msg := dsse.PAE(p.opened.PayloadType, p.opened.Payload)
	raw := ed25519.Sign(witnessKey, msg) // deterministic: the envelope's own signature
	b.ReportAllocs()
	reportCPU(b, func() {
		if !ed25519.Verify(pub(witnessKey), msg, raw) {
			b.Fatal("signature does not verify")
		}
	})
}

// BenchmarkSign: build, check, canonicalise and sign the same observation.
func BenchmarkSign(b *testing.B) {
	f := newFixture(b, nil)
	b.ReportAllocs()
	reportCPU(b, func() {
		if _, err := Sign(f.stmt, Signer{Key: witnessKey}); err != nil {
			b.Fatal(err)
		}
	})
}

// reportCPU adds cpu-ns/op, process CPU time per operation: on a shared machine wall time
// overstates the cost.
func reportCPU(b *testing.B, run func()) {
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	n := 0
	for b.Loop() {
		run()
		n++
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	if n > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
	}
}
