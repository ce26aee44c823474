//go:build goexperiment.simd && amd64

package kernels

import (
	"math"
	"testing"

	"simd/archsimd"
)

// TestSoftmaxRowAssemblyIsExp8 checks that the assembly fast path
// computes exp8's bits, adds them into l, and refuses a block with a lane
// above the limit without writing anything.
func TestSoftmaxRowAssemblyIsExp8(t *testing.T) {
	if level < levelAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	for seed := range uint64(50) {
		s := randX(BlockB, seed)
		for i := range s {
			s[i] *= 30 // reach exp8's clamps
		}
		s[seed%BlockB] = float32(math.Inf(-1))
		m := float32(seed%7) - 3
		var want [BlockB]float32
		for h := 0; h < BlockB; h += 8 {
			exp8(archsimd.LoadFloat32x8((*[8]float32)(s[h:])).Sub(archsimd.BroadcastFloat32x8(m))).Store((*[8]float32)(want[h:]))
		}
		l := randX(BlockB, seed+100)
		wantL := make([]float32, BlockB)
		for i := range l {
			wantL[i] = l[i] + want[i]
		}
		orig := append([]float32(nil), s...)
		if softmaxRowAVX2(&s[0], &l[0], m, 1e30) != true {
			t.Fatal("refused a block under the limit")
		}
		for i := range s {
			if math.Float32bits(s[i]) != math.Float32bits(want[i]) || l[i] != wantL[i] {
				t.Fatalf("seed %d lane %d: exp(%v − %v) = %v, exp8 %v; l %v, want %v", seed, i, orig[i], m, s[i], want[i], l[i], wantL[i])
			}
		}
		copy(s, orig)
		if softmaxRowAVX2(&s[0], &l[0], m, orig[(seed+1)%BlockB]-1e-3) {
			t.Fatal("took a block with a lane above the limit")
		}
		for i := range s {
			if s[i] != orig[i] || l[i] != wantL[i] {
				t.Fatalf("seed %d: a refused block was written", seed)
			}
		}
	}
}
