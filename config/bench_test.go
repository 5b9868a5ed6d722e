package config

import (
	"strings"
	"testing"
)

// BenchmarkParseYAGATOML reads the upstream example policy and a 32-lens policy.
func BenchmarkParseYAGATOML(b *testing.B) {
	example := readTestdata(b, "yaga", "agent-review-policy.toml")
	var big strings.Builder
	big.WriteString("[agent-review]\nversion = 1\nrequired = [\"l\"]\n")
	for i := range MaxLenses {
		big.WriteString(lensTOML("l"+strings.Repeat("x", i), "preset = \"p\"\ninstruction = \"\"\"\n"+strings.Repeat("Look at the change. ", 100)+"\n\"\"\""))
	}
	for _, tt := range []struct {
		name string
		doc  []byte
	}{{"example", example}, {"32-lenses", []byte(big.String())}} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseYAGATOML("p.toml", tt.doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
