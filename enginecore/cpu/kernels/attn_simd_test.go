//go:build goexperiment.simd && amd64

package kernels

import (
	"math"
	"testing"

	"simd/archsimd"
)

// TestSoftmaxRowAssemblyIsExp8 checks that the assembly row computes
// exp8's bits on the attended lanes and 0 past them, adds them into l,
// and refuses a block with an attended lane above the limit without
// writing anything, reporting the attended lanes' max.
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
		cnt := BlockB
		if seed%2 == 1 {
			cnt = 1 + int(seed/2)%BlockB
		}
		var want [BlockB]float32
		for h := 0; h < BlockB; h += 8 {
			exp8(archsimd.LoadFloat32x8((*[8]float32)(s[h:])).Sub(archsimd.BroadcastFloat32x8(m))).Store((*[8]float32)(want[h:]))
		}
		clear(want[cnt:])
		l := randX(BlockB, seed+100)
		wantL := make([]float32, BlockB)
		for i := range l {
			wantL[i] = l[i] + want[i]
		}
		orig := append([]float32(nil), s...)
		if _, ok := softmaxRowAVX2(&s[0], &l[0], m, 1e30, cnt); !ok {
			t.Fatal("refused a block under the limit")
		}
		for i := range s {
			if math.Float32bits(s[i]) != math.Float32bits(want[i]) || l[i] != wantL[i] {
				t.Fatalf("seed %d lane %d: exp(%v − %v) = %v, exp8 %v; l %v, want %v", seed, i, orig[i], m, s[i], want[i], l[i], wantL[i])
			}
		}
		copy(s, orig)
		mx := float32(math.Inf(-1))
		for _, v := range orig[:cnt] {
			mx = max(mx, v)
		}
		if _, ok := softmaxRowAVX2(&s[0], &l[0], m, mx+1e-3, cnt); !ok {
			t.Fatal("refused a block whose attended lanes are under the limit")
		}
		copy(s, orig)
		copy(l, wantL)
		bm, ok := softmaxRowAVX2(&s[0], &l[0], m, mx-1e-3, cnt)
		if ok {
			t.Fatal("took a block with a lane above the limit")
		}
		if bm != mx {
			t.Fatalf("seed %d: max of the %d attended lanes %v, want %v", seed, cnt, bm, mx)
		}
		for i := range s {
			if s[i] != orig[i] || l[i] != wantL[i] {
				t.Fatalf("seed %d: a refused block was written", seed)
			}
		}
	}
}

// TestBlockSoftmaxAssemblyIsGo checks BlockSoftmax's assembly rows
// against the Go rows bit for bit (at the AVX2 level, whose Go rows
// exponentiate with exp8 as the assembly does; AVX-512's exp16 differs
// only where e^x underflows, below e^-87): m, l, acc and weights over
// blocks whose scores grow past the slack, partial blocks (the causal
// diagonal), rows that end early and rows that start at −Inf.
func TestBlockSoftmaxAssemblyIsGo(t *testing.T) {
	if level < levelAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	saved := level
	defer func() { level = saved }()
	const d, numBlocks = 16, 6
	for seed := range uint64(40) {
		rows := 1 + int(seed%9)
		rowN := make([]int32, rows)
		for r := range rowN {
			rowN[r] = int32((seed*7 + uint64(r)*13) % (numBlocks*BlockB + 1))
		}
		scores := randX(rows*numBlocks*BlockB, seed)
		for i := range scores {
			scores[i] *= float32(1 + (i/BlockB)%numBlocks*int(seed%4)) // the max moves, at times past the slack
		}
		type state struct{ m, l, acc, s []float32 }
		newState := func() *state {
			st := &state{m: make([]float32, rows), l: make([]float32, rows*BlockB), acc: make([]float32, rows*d), s: make([]float32, rows*BlockB)}
			for r := range st.m {
				st.m[r] = float32(math.Inf(-1))
			}
			return st
		}
		asm, gor := newState(), newState()
		for b := range numBlocks {
			for _, st := range []*state{asm, gor} {
				for r := range rows {
					copy(st.s[r*BlockB:(r+1)*BlockB], scores[(r*numBlocks+b)*BlockB:])
				}
			}
			level = saved
			blockSoftmax(asm.s, rowN, b*BlockB, asm.m, asm.l, asm.acc, d)
			level = levelAVX2
			blockSoftmaxGo(gor.s, rowN, b*BlockB, gor.m, gor.l, gor.acc, d)
			for _, st := range []*state{asm, gor} {
				for i := range st.acc {
					st.acc[i] += st.s[(i/d)*BlockB+i%BlockB] // acc takes the weights, so rescales show
				}
			}
			for name, pair := range map[string][2][]float32{"m": {asm.m, gor.m}, "l": {asm.l, gor.l}, "acc": {asm.acc, gor.acc}, "weights": {asm.s, gor.s}} {
				for i := range pair[0] {
					if math.Float32bits(pair[0][i]) != math.Float32bits(pair[1][i]) {
						t.Fatalf("seed %d block %d: %s[%d] = %v in assembly, %v in Go", seed, b, name, i, pair[0][i], pair[1][i])
					}
				}
			}
		}
	}
}
