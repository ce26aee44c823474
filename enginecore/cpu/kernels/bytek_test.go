//go:build goexperiment.simd && amd64

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestDecodersMaxQ: no decoder writes a |q| above its maxQ, whatever
// the bytes of the row (random bytes: every index, sign and sub-block
// scale code), since the AVX2 four-token kernels keep int16 sums for
// the types whose maxQ is at most 32 — Q5_K's kernel for every type it
// runs (offsets, hasMin), which has no int32 form.
func TestDecodersMaxQ(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for typ, dec := range decoders {
		const in = 512
		row := make([]byte, typ.RowBytes(in))
		q := make([]int8, in)
		d, m := make([]float32, in/dec.sub), make([]float32, in/dec.sub)
		most := 0
		for range 200 {
			for i := range row {
				row[i] = byte(r.Uint32())
			}
			dec.decode(row, q, d, m)
			for _, v := range q {
				most = max(most, abs(int(v)))
			}
		}
		if most > dec.maxQ {
			t.Errorf("%v: |q| reaches %d, maxQ says %d", typ, most, dec.maxQ)
		}
		if dec.fam == famByte && dec.hasMin && !sums16[typ] {
			t.Errorf("%v: byteGroup4Q5AVX2 keeps int16 sums, which need maxQ ≤ 32, not %d", typ, dec.maxQ)
		}
	}
}

func abs(v int) int { return max(v, -v) }

// TestAVX2SumsAtTheirBound: the AVX2 four-token kernels give the bits of
// the archsimd ones (int32 sums throughout), and the products within
// float rounding, where every weight of a row sits at the largest |q|
// its type decodes to and every activation at ±127 with the weight's
// sign, so that the int16 sums of the types with maxQ ≤ 32 reach their
// bound: rows of −1 (Q6_K's q = −32), and rows alternating ±1.
func TestAVX2SumsAtTheirBound(t *testing.T) {
	if detectLevel() < levelAVX2 {
		t.Skip("this CPU has no AVX2+FMA")
	}
	saved := level
	defer func() { level, avx2Asm = saved, true }()
	level = levelAVX2
	const in, out, numTok = 512, 32, 8
	patterns := map[string]func(i int) float32{
		"all -1":      func(int) float32 { return -1 },
		"alternating": func(i int) float32 { return float32(1 - 2*(i%2)) },
	}
	for _, typ := range quantTypes {
		if decoders[typ].fam != famByte || !hasF16C && f16Scaled[typ] {
			continue
		}
		for name, sign := range patterns {
			t.Run(fmt.Sprintf("%v/%s", typ, name), func(t *testing.T) {
				v, x := make([]float32, out*in), make([]float32, numTok*in)
				for i := range v {
					v[i] = sign(i % in)
				}
				for i := range x {
					x[i] = sign(i % in)
				}
				w, err := model.NewTensor("w", typ, []int{in, out}, v)
				if err != nil {
					t.Fatal(err)
				}
				m, err := Pack(w)
				if err != nil {
					t.Fatal(err)
				}
				wf, _ := w.Float32s()
				run := func(asm bool) ([]float32, []float64, []float64) {
					avx2Asm = asm
					got, ref, mag, _ := mulSameActivations(m, wf, x, numTok, in, out)
					return got, ref, mag
				}
				want, _, _ := run(false)
				got, ref, mag := run(true)
				if !slices.Equal(want, got) {
					t.Fatalf("assembly differs from archsimd:\n got %v\nwant %v", got[:8], want[:8])
				}
				for i := range got {
					if d := math.Abs(float64(got[i]) - ref[i]); d > 1e-5*mag[i]+1e-6 {
						t.Fatalf("out[%d] = %v, want %v: |Δ| %.3g", i, got[i], ref[i], d)
					}
				}
			})
		}
	}
}
