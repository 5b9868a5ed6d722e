package disclosure

import (
	"crypto/ed25519"
	"syscall"
	"testing"
	"time"

	"github.com/lensgate/lensgate/disclosure/dsse"
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// BenchmarkVerify measures one full dispatcher verification of a typical v0.2 receipt with five
// findings: parse, signature, structure, subject binding, findings root, time axes and the
// default policy.
func BenchmarkVerify(b *testing.B) {
	d, opts := disclosed(b)
	opts.Body = nil
	b.ReportAllocs()
	b.SetBytes(int64(len(d.Receipt.Envelope)))
	reportCPU(b, func() {
		if r := Verify(d.Receipt.Envelope, opts); !r.OK {
			b.Fatal("not ok")
		}
	})
}

// BenchmarkReadPayload isolates the strict parse of the decoded payload, the largest part of a
// verification after the signature check.
func BenchmarkReadPayload(b *testing.B) {
	d, _ := disclosed(b)
	env, err := jcs.Parse(d.Receipt.Envelope)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	reportCPU(b, func() {
		if _, err := readParsed(env); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkVerifyWithBody adds the visible-block checks against the PR body.
func BenchmarkVerifyWithBody(b *testing.B) {
	d, opts := disclosed(b)
	b.ReportAllocs()
	reportCPU(b, func() {
		if r := Verify(d.Receipt.Envelope, opts); !r.OK {
			b.Fatal("not ok")
		}
	})
}

// BenchmarkEmit measures building, validating, canonicalizing and signing the same predicate.
func BenchmarkEmit(b *testing.B) {
	p := typicalPredicate()
	s := testSigner()
	b.ReportAllocs()
	reportCPU(b, func() {
		if _, err := Emit(p, s); err != nil {
			b.Fatal(err)
		}
	})
}

// reportCPU adds cpu-ns/op: process CPU time per operation. On a shared machine wall time per
// operation overstates the cost; CPU time gives operations per second per core.
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
		perOp := float64(cpu.Nanoseconds()) / float64(n)
		b.ReportMetric(perOp, "cpu-ns/op")
		b.ReportMetric(1e9/perOp, "ops/cpu-s")
	}
}

// BenchmarkEd25519Verify is the floor of BenchmarkVerify: crypto/ed25519 alone over the same
// PAE bytes, with nothing parsed or checked.
func BenchmarkEd25519Verify(b *testing.B) {
	d, opts := disclosed(b)
	env, err := jcs.Parse(d.Receipt.Envelope)
	if err != nil {
		b.Fatal(err)
	}
	o, err := dsse.Open(env)
	if err != nil {
		b.Fatal(err)
	}
	msg := dsse.PAE(o.PayloadType, o.Payload)
	sig := env.(map[string]any)["signatures"].([]any)[0].(map[string]any)["sig"].(string)
	raw, err := dsse.DecodeStdBase64(sig)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	reportCPU(b, func() {
		if !ed25519.Verify(opts.PublicKey, msg, raw) {
			b.Fatal("signature does not verify")
		}
	})
}
