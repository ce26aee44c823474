//go:build goexperiment.simd && amd64

package kernels

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// quantTypes are the quantized types, whose matmuls run in assembly.
var quantTypes = []model.DType{model.Q4_0, model.Q4_1, model.Q5_0, model.Q5_1, model.Q8_0, model.Q2_K, model.Q3_K, model.Q4_K, model.Q5_K, model.Q6_K, model.IQ4_NL, model.IQ4_XS, model.MXFP4}

// f16Scaled are the types packed with float16 scales (their own), whose
// AVX2 kernels need F16C and which have AVX-512 and AVX-VNNI assembly.
// (Q2_K's is its super-block d, IQ4_NL's its block's d.)
var f16Scaled = map[model.DType]bool{model.Q4_0: true, model.Q4_1: true, model.Q5_0: true, model.Q8_0: true, model.Q2_K: true, model.IQ4_NL: true}

// TestAVX2AssemblySameBits: the AVX2 assembly kernels give the bits of
// the archsimd AVX2 kernels they replace, for every token count around
// the four-token step (residual rows of precise tokens included) and
// both scale widths (float16: Q4_0, Q4_1, Q5_0, Q8_0; float32: Q4_K,
// Q5_1, Q5_K, Q6_K).
func TestAVX2AssemblySameBits(t *testing.T) {
	if detectLevel() < levelAVX2 {
		t.Skip("this CPU has no AVX2+FMA")
	}
	if !hasF16C {
		t.Log("no F16C: only the float32-scale kernels run in assembly")
	}
	saved := level
	defer func() { level, avx2Asm = saved, true }()
	level = levelAVX2
	for _, typ := range quantTypes {
		for _, numTok := range []int{1, 3, 4, 5, 9} {
			for _, precise := range []bool{false, true} {
				in, out := 512, 40
				t.Run(fmt.Sprintf("%v/T=%d/precise=%v", typ, numTok, precise), func(t *testing.T) {
					m, err := Pack(randTensor(t, typ, out, in, uint64(numTok)))
					if err != nil {
						t.Fatal(err)
					}
					x := randX(numTok*in, uint64(numTok)+1)
					var a Activations
					var mark []bool
					if precise {
						mark = []bool{true, false, true} // residual rows for tokens 0 and 2
					}
					a.ResetPrecise(x, numTok, in, mark)
					a.Quantize(0, numTok)
					run := func(asm bool) []float32 {
						avx2Asm = asm
						got := make([]float32, numTok*out)
						m.MulGroups(got, &a, 0, m.NumGroups())
						return got
					}
					want, got := run(false), run(true)
					if !slices.Equal(want, got) {
						t.Fatalf("assembly differs from archsimd:\n got %v\nwant %v", got[:8], want[:8])
					}
				})
			}
		}
	}
}

// TestDispatchPicksAssembly: at every SIMD level this CPU has, every
// quantized type runs in the fastest assembly the level has — VNNI's
// for every type on a VNNI CPU, AVX-512's own where it exists, AVX-VNNI's
// for the 4-bit types, Q5_0 and Q8_0 on AVX2 CPUs that have it, else AVX2's (10–40× the archsimd kernels), and on an AMX CPU whole tiles of
// 16 rows in AMX (2–4× AVX-512 at prefill) — so no type a GGUF commonly
// holds falls back to a slow path.
func TestDispatchPicksAssembly(t *testing.T) {
	saved := level
	defer func() { level = saved }()
	for l := detectLevel(); l >= levelAVX2; l-- {
		if runnable(l) != l {
			continue // AVX-VNNI missing where AVX-512 VNNI is not
		}
		level = l
		for _, typ := range quantTypes {
			if !hasF16C && f16Scaled[typ] {
				continue // float16 scales need F16C at the AVX2 level
			}
			m, err := Pack(randTensor(t, typ, 32, 512, 1))
			if err != nil {
				t.Fatal(err)
			}
			got := m.Kernel()
			want := ""
			switch {
			case l >= levelVNNI:
				want = "avx512vnni-asm"
			case l == levelAVX512 && f16Scaled[typ]:
				want = "avx512-asm"
			case l == levelAVXVNNI && (f16Scaled[typ] || typ == model.Q4_K):
				want = "avxvnni-asm"
			}
			if want != "" && strings.TrimPrefix(got, "amx+") != want {
				t.Errorf("level %v, %v: Kernel() = %q, want %q", l, typ, got, want)
			}
			if !strings.HasSuffix(got, "-asm") {
				t.Errorf("level %v, %v: Kernel() = %q, want an assembly kernel", l, typ, got)
			}
			if amx := strings.HasPrefix(got, "amx+"); amx != (l == levelAMX) {
				t.Errorf("level %v, %v: Kernel() = %q: AMX tiles %v, want %v", l, typ, got, amx, l == levelAMX)
			}
		}
	}
}

// TestLevelsAgree: every SIMD level gives the same bits for every
// quantized type, batch sizes that use AMX tiles, four-token and
// one-token kernels included, each level with the packed layout it
// chooses (the K-quants keep the file's scales from the VNNI level on):
// the levels compute the same integer sums and the same float operations
// in the same order. The batches: a few precise tokens among 23; a
// 32-token prompt, every token precise (AMX adds its residual tiles
// straight into the tokens' rows); 32 tokens, every other one precise
// (residual tiles of scattered tokens, through the scratch).
func TestLevelsAgree(t *testing.T) {
	saved := level
	defer func() { level = saved }()
	if saved < levelAVX2 {
		t.Skip("no SIMD kernels in this build or on this CPU")
	}
	for _, typ := range allTypes {
		if !hasF16C && f16Scaled[typ] {
			continue
		}
		const in, out = 512, 40
		w := randTensor(t, typ, out, in, 11)
		prompt, alternate := make([]bool, 32), make([]bool, 32)
		for i := range prompt {
			prompt[i], alternate[i] = true, i%2 == 0
		}
		for _, batch := range []struct {
			numTok  int
			precise []bool
		}{{23, []bool{true, false, true}}, {32, prompt}, {32, alternate}} {
			levelsAgree(t, typ, w, batch.numTok, in, out, batch.precise, saved)
		}
	}
}

// levelsAgree multiplies numTok random tokens (those with precise set
// precise) by w at every runnable level from top down and reports a
// level whose bits differ from top's.
func levelsAgree(t *testing.T, typ model.DType, w *model.Tensor, numTok, in, out int, precise []bool, top simdLevel) {
	t.Helper()
	saved := level
	defer func() { level = saved }()
	x := randX(numTok*in, 12)
	var want []float32
	for l := top; l >= levelAVX2; l-- {
		if runnable(l) != l {
			continue
		}
		level = l
		m, err := Pack(w) // in the level's own layout
		if err != nil {
			t.Fatal(err)
		}
		var a Activations
		a.ResetPrecise(x, numTok, in, precise)
		a.Quantize(0, numTok)
		got := make([]float32, numTok*out)
		m.MulGroups(got, &a, 0, m.NumGroups())
		if want == nil {
			want = got
			continue
		}
		if !slices.Equal(got, want) {
			i := 0
			for got[i] == want[i] {
				i++
			}
			t.Errorf("%v, %d tokens: level %v differs from level %v at output %d: %v vs %v", typ, numTok, l, top, i, got[i], want[i])
		}
	}
}
