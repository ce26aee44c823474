package runner

import (
	"math"
	"math/rand/v2"
	"testing"
)

// applyMaskNaive is applyMask by definition, token by token.
func applyMaskNaive(lg []float32, mask []uint32) {
	for t := range lg {
		if t/32 >= len(mask) || mask[t/32]>>(t%32)&1 == 0 {
			lg[t] = float32(math.Inf(-1))
		}
	}
}

// TestApplyMask checks applyMask against the naive definition on masks
// of every shape: none allowed, all, sparse, dense, shorter than the
// vocabulary, a vocabulary that is not a multiple of 32.
func TestApplyMask(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name  string
		vocab int
		words int
		fill  func(w int) uint32
	}{
		{"none", 100, 4, func(int) uint32 { return 0 }},
		{"all", 100, 4, func(int) uint32 { return ^uint32(0) }},
		{"sparse", 1000, 32, func(int) uint32 {
			if rng.IntN(8) == 0 {
				return 1 << rng.IntN(32)
			}
			return 0
		}},
		{"dense", 1000, 32, func(int) uint32 { return rng.Uint32() }},
		{"short mask", 1000, 20, func(int) uint32 { return rng.Uint32() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mask := make([]uint32, tt.words)
			for w := range mask {
				mask[w] = tt.fill(w)
			}
			got, want := make([]float32, tt.vocab), make([]float32, tt.vocab)
			for i := range got {
				got[i] = float32(i)
				want[i] = float32(i)
			}
			applyMask(got, mask)
			applyMaskNaive(want, mask)
			for i := range got {
				if got[i] != want[i] && !(math.IsInf(float64(got[i]), -1) && math.IsInf(float64(want[i]), -1)) {
					t.Fatalf("token %d: %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// BenchmarkApplyMask: one row of the default model's vocabulary (49,152)
// under a JSON mask (a few hundred tokens allowed) and an almost-open one.
func BenchmarkApplyMask(b *testing.B) {
	const vocab = 49152
	rng := rand.New(rand.NewPCG(1, 2))
	for _, bc := range []struct {
		name    string
		allowed float64 // share of the words with any token allowed
	}{{"json", 0.05}, {"open", 0.95}} {
		b.Run(bc.name, func(b *testing.B) {
			mask := make([]uint32, vocab/32)
			for w := range mask {
				if rng.Float64() < bc.allowed {
					mask[w] = rng.Uint32()
				}
			}
			lg := make([]float32, vocab)
			for b.Loop() {
				applyMask(lg, mask)
			}
		})
	}
}
