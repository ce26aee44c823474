package kernels

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestPreciseRows checks residual rows (ResetPrecise) on every quantized
// type and kernel level:
//   - a precise token's product is within the rounding bound of its
//     two-level activations, Σ|w|·d′/2 with d′ the residual scale (at most
//     1/254 of the int8 bound), of the float64 product with the true x;
//   - its error is far below the same token's error at int8;
//   - its bits do not depend on the batch: alone, next to int8 tokens, next
//     to other precise tokens, at any position, and split between workers;
//   - int8 tokens in the same batch keep the bits they have without any
//     precise token.
func TestPreciseRows(t *testing.T) {
	paths(t, func(t *testing.T) {
		for _, typ := range allTypes {
			if typ.BlockSize() == 1 {
				continue // float matrices read X; precision does not apply
			}
			for _, shape := range []struct{ numTok, in, out int }{{1, 256, 16}, {5, 256, 40}, {9, 512, 33}} {
				t.Run(fmt.Sprintf("%v/T=%d,in=%d,out=%d", typ, shape.numTok, shape.in, shape.out), func(t *testing.T) {
					checkPrecise(t, typ, shape.numTok, shape.in, shape.out)
				})
			}
		}
	})
}

func checkPrecise(t *testing.T, typ model.DType, numTok, in, out int) {
	seed := uint64(numTok*7919 + in + out)
	w := randTensor(t, typ, out, in, seed)
	m, err := Pack(w)
	if err != nil {
		t.Fatal(err)
	}
	wf, _ := w.Float32s()
	x := randX(numTok*in, seed)
	trueRef, mag := mulRef(wf, x, numTok, in, out)

	// Every other token precise, starting with the first.
	precise := make([]bool, numTok)
	for i := range precise {
		precise[i] = i%2 == 0
	}
	mixed, fast, a := checkBatches(t, m, x, numTok, in, out, precise)
	for tok := range numTok {
		if !precise[tok] {
			continue
		}
		row := a.NumTok + int(a.resIdx[tok])
		var errP, errF float64
		for r := range out {
			i := tok*out + r
			var bound float64
			for k := range in {
				bound += math.Abs(float64(wf[r*in+k])) * float64(a.d[row*in/32+k/32]) / 2
			}
			dP := math.Abs(float64(mixed[i]) - trueRef[i])
			if dP > bound*1.0001+2e-5*mag[i] {
				t.Fatalf("out[%d] = %v, want %v: |Δ| %.3g > bound %.3g", i, mixed[i], trueRef[i], dP, bound)
			}
			errP += dP
			errF += math.Abs(float64(fast[i]) - trueRef[i])
		}
		if errP*20 > errF {
			t.Fatalf("token %d: precise error %.3g is not far below the int8 error %.3g", tok, errP, errF)
		}
	}
}

// checkBatches multiplies x's numTok tokens by m, those with precise set
// precise, and checks that no token's bits depend on the batch: int8
// tokens keep theirs without any precise token, a precise token has the
// same in an all-precise batch and alone, and splitting the groups
// between workers at any boundary changes nothing. It returns the mixed
// and the all-int8 products and the mixed batch's activations.
func checkBatches(t *testing.T, m *Matrix, x []float32, numTok, in, out int, precise []bool) (mixed, fast []float32, a *Activations) {
	t.Helper()
	mul := func(x []float32, n int, precise []bool) ([]float32, *Activations) {
		a := &Activations{}
		a.ResetPrecise(x, n, in, precise)
		a.Quantize(0, n)
		got := make([]float32, n*out)
		m.MulGroups(got, a, 0, m.NumGroups())
		return got, a
	}
	mixed, a = mul(x, numTok, precise)
	fast, _ = mul(x, numTok, nil)
	all, _ := mul(x, numTok, slices.Repeat([]bool{true}, numTok))
	for tok := range numTok {
		if !precise[tok] {
			if !slices.Equal(mixed[tok*out:(tok+1)*out], fast[tok*out:(tok+1)*out]) {
				t.Fatalf("int8 token %d changes when other tokens are precise", tok)
			}
			continue
		}
		if !slices.Equal(mixed[tok*out:(tok+1)*out], all[tok*out:(tok+1)*out]) {
			t.Fatalf("precise token %d differs between a mixed and an all-precise batch", tok)
		}
		alone, _ := mul(x[tok*in:(tok+1)*in], 1, []bool{true})
		if !slices.Equal(alone, mixed[tok*out:(tok+1)*out]) {
			t.Fatalf("precise token %d alone differs from the same token in a batch of %d", tok, numTok)
		}
	}
	for split := 1; split < m.NumGroups(); split++ {
		two := make([]float32, len(mixed))
		m.MulGroups(two, a, split, m.NumGroups())
		m.MulGroups(two, a, 0, split)
		if !slices.Equal(mixed, two) {
			t.Fatalf("split at group %d changes the result", split)
		}
	}
	return mixed, fast, a
}
