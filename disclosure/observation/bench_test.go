package observation

import "testing"

// BenchmarkVerify: one typical observation (three calls, two findings) checked against its
// receipt, signature included.
func BenchmarkVerify(b *testing.B) {
	f := newFixture(b, nil)
	env := f.sign(b, witnessKey)
	o := opts(f)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if Verify(env, o).RunnerObservation != Match {
			b.Fatal("no match")
		}
	}
}

// BenchmarkSign: build, check, canonicalise and sign the same observation.
func BenchmarkSign(b *testing.B) {
	f := newFixture(b, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Sign(f.stmt, Signer{Key: witnessKey}); err != nil {
			b.Fatal(err)
		}
	}
}
