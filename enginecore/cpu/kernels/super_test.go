package kernels

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// superRowReference is the archsimd row kernel where the build has it
// (super_ref_test.go), the reference the assembly must match.
var superRowReference func(m *Matrix, a *Activations, i, g int, res *[GroupRows]float32)

// superOn makes precise Q4_K tokens take the super form for the test,
// whatever the CPU (without AMX tiles they run in the row kernels).
func superOn(t *testing.T) {
	saved := superCPU
	superCPU = true
	t.Cleanup(func() { superCPU = saved })
}

// TestSuperQuantize: a precise token's super rows reconstruct x to
// within half the last level's scale (and float32's rounding), each level's block sums are its
// values' sums, and the tile layouts hold the same numbers.
func TestSuperQuantize(t *testing.T) {
	paths(t, func(t *testing.T) {
		const numTok, in = 40, 512
		x := randX(numTok*in, 3)
		x[7] = 40 // an outlier channel
		precise := make([]bool, numTok)
		for i := range precise {
			precise[i] = i%5 != 1
		}
		var a Activations
		a.ResetPrecise(x, numTok, in, precise)
		a.Quantize(0, numTok)
		p, nsb := len(a.resOf), in/256
		if a.superRows() != superLevels*p {
			t.Fatalf("%d super rows, want %d", a.superRows(), superLevels*p)
		}
		for k, tok := range a.resOf {
			for i := range in {
				var sum float64
				for l := range superLevels {
					row := l*p + k
					sum += float64(a.kd[row*nsb+i/256]) * float64(a.kq[row*in+i])
				}
				// Half the last scale, and the float32 roundings of the
				// residuals the levels quantize (an ulp of x each).
				last := float64(a.kd[((superLevels-1)*p+k)*nsb+i/256])
				xi := float64(x[int(tok)*in+i])
				if d := math.Abs(sum - xi); d > last/2+superLevels*math.Abs(xi)*0x1p-23 {
					t.Fatalf("token %d element %d: levels give %v, x is %v (|Δ| %.3g, last scale %.3g)", tok, i, sum, x[int(tok)*in+i], d, last)
				}
			}
		}
		whole := a.superRows() / tileRows * tileRows
		for row := range a.superRows() {
			for j := range in / 32 {
				var s int32
				for _, v := range a.kq[row*in+32*j : row*in+32*j+32] {
					s += int32(v)
				}
				if int32(a.ks[row*in/32+j]) != s {
					t.Fatalf("row %d block %d: sum %d, want %d", row, j, a.ks[row*in/32+j], s)
				}
			}
			if !a.tiledSuper() || row >= whole {
				continue
			}
			ti, r := row/tileRows, row%tileRows
			for sb := range nsb {
				if got := a.kdT[(ti*nsb+sb)*tileRows+r]; got != a.kd[row*nsb+sb] {
					t.Fatalf("row %d: tiled scale %v, want %v", row, got, a.kd[row*nsb+sb])
				}
				for pr := range 4 {
					v := a.ksT[((ti*nsb+sb)*tileRows+r)*4+pr]
					lo, hi := int16(v), int16(v>>16)
					if lo != a.ks[row*in/32+8*sb+2*pr] || hi != a.ks[row*in/32+8*sb+2*pr+1] {
						t.Fatalf("row %d pair %d: tiled sums %d, %d", row, pr, lo, hi)
					}
				}
			}
		}
	})
}

// TestSuperForm checks Q4_K's precise tokens at every level:
//   - within Σ|w|·d′/2 (d′ the last level's scale) plus float rounding of
//     the float64 product with the true x, 50× closer than int8 (about
//     100× here, where a 25 in the input sets one super-block's scale);
//   - the same bits alone, in any batch, and split between workers; int8
//     tokens keep their bits;
//   - in tiles (AMX) and one row at a time alike (TestLevelsAgree
//     compares the levels).
func TestSuperForm(t *testing.T) {
	superOn(t)
	paths(t, func(t *testing.T) {
		for _, shape := range []struct{ numTok, in, out int }{{1, 256, 16}, {7, 512, 40}, {24, 1024, 33}, {32, 512, 40}} {
			t.Run(fmt.Sprintf("T=%d,in=%d,out=%d", shape.numTok, shape.in, shape.out), func(t *testing.T) {
				checkSuper(t, shape.numTok, shape.in, shape.out)
			})
		}
	})
}

func checkSuper(t *testing.T, numTok, in, out int) {
	w := randTensor(t, model.Q4_K, out, in, uint64(in+out))
	m, err := Pack(w)
	if err != nil {
		t.Fatal(err)
	}
	wf, _ := w.Float32s()
	x := randX(numTok*in, uint64(numTok))
	x[in/2] = 25 // an outlier in the first token's second super-block
	ref, mag := mulRef(wf, x, numTok, in, out)
	precise := make([]bool, numTok)
	for i := range precise {
		precise[i] = i%3 != 2
	}
	mixed, fast, a := checkBatches(t, m, x, numTok, in, out, precise)
	p, nsb := len(a.resOf), in/256
	for tok := range numTok {
		if !precise[tok] {
			continue
		}
		k := int(a.resIdx[tok])
		last := ((superLevels-1)*p + k) * nsb
		var errP, errF float64
		for r := range out {
			i := tok*out + r
			var bound float64
			for e := range in {
				bound += math.Abs(float64(wf[r*in+e])) * float64(a.kd[last+e/256]) / 2
			}
			d := math.Abs(float64(mixed[i]) - ref[i])
			if d > bound+2e-6*mag[i] {
				t.Fatalf("out[%d] = %v, want %v: |Δ| %.3g > %.3g", i, mixed[i], ref[i], d, bound+2e-6*mag[i])
			}
			errP += d
			errF += math.Abs(float64(fast[i]) - ref[i])
		}
		if errP*50 > errF {
			t.Fatalf("token %d: precise error %.3g is not 50× below int8's %.3g", tok, errP, errF)
		}
	}
	// The archsimd row kernel gives the assembly's bits, a row alone and
	// each row of a token's pair.
	if superRowReference != nil && level >= levelAVX2 && level >= m.packLevel() && superSIMD() {
		var r1, r2, r3 [GroupRows]float32
		for i := range a.superRows() {
			superRowReference(m, a, i, 0, &r1)
			m.superRowsSIMD(a, i, i, 0, &r2, &r3)
			if r1 != r2 {
				t.Fatalf("super row %d: archsimd %v, assembly %v", i, r1, r2)
			}
			j := (i + len(a.resOf)) % a.superRows() // its other level
			m.superRowsSIMD(a, i, j, 0, &r2, &r3)
			if r1 != r2 {
				t.Fatalf("super row %d of a pair: archsimd %v, assembly %v", i, r1, r2)
			}
		}
	}
	// Tiles and rows: the same bits (tiles run from 16 super rows on AMX).
	if a.tiledSuper() {
		var res, res1 [GroupRows]float32
		got := slices.Clone(mixed)
		for g := range m.NumGroups() {
			for i := range a.superRows() {
				m.superRowsSIMD(a, i, i, g, &res, &res1)
				m.storeSuper(got, a, i, g, &res)
			}
		}
		if !slices.Equal(got, mixed) {
			t.Fatalf("the AMX tiles and the one-row kernel differ")
		}
	}
}

// TestSuperNeedsForms: a Q4_K matrix refuses activations whose precise
// tokens lack the super rows, and a per-32 matrix those without residual
// rows, rather than compute them at int8 silently.
func TestSuperNeedsForms(t *testing.T) {
	superOn(t)
	const in = 256
	x := randX(2*in, 1)
	for _, tt := range []struct {
		typ              model.DType
		residual, super_ bool
	}{{model.Q4_K, true, false}, {model.Q4_1, false, true}} {
		m, err := Pack(randTensor(t, tt.typ, 16, in, 2))
		if err != nil {
			t.Fatal(err)
		}
		var a Activations
		a.ResetForms(x, 2, in, []bool{true, false}, tt.residual, tt.super_)
		a.Quantize(0, 2)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%v: MulGroups without its precise form did not panic", tt.typ)
				}
			}()
			m.MulGroups(make([]float32, 2*16), &a, 0, 1)
		}()
	}
}

// TestSuperEncode: a Q4_K matrix packed below the VNNI level keeps its
// compact scales through Encode and DecodeMatrix, and multiplies precise
// tokens the same after.
func TestSuperEncode(t *testing.T) {
	superOn(t)
	saved := level
	defer func() { level = saved }()
	level = min(level, levelAVX512)
	const in, out = 512, 20
	m, err := Pack(randTensor(t, model.Q4_K, out, in, 9))
	if err != nil {
		t.Fatal(err)
	}
	if m.sc.k == nil && m.kint == nil {
		t.Fatal("a Q4_K matrix without its compact scales")
	}
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	d, _, err := DecodeMatrix(aligned(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	x := randX(3*in, 4)
	var a Activations
	a.ResetPrecise(x, 3, in, []bool{true, false, true})
	a.Quantize(0, 3)
	got, want := make([]float32, 3*out), make([]float32, 3*out)
	m.MulGroups(want, &a, 0, m.NumGroups())
	d.MulGroups(got, &a, 0, d.NumGroups())
	if !slices.Equal(got, want) {
		t.Fatal("the decoded matrix multiplies precise tokens differently")
	}
}

// TestSuperQuantizePaths: the SIMD super-block quantizer gives the pure-Go
// one's bits, ties and zeros included.
func TestSuperQuantizePaths(t *testing.T) {
	if level < levelAVX2 {
		t.Skip("no SIMD quantizer in this build or on this CPU")
	}
	for seed := range uint64(20) {
		x := randX(256, seed)
		switch seed {
		case 1:
			clear(x) // d = 0
		case 2:
			for i := range x {
				x[i] = float32(i%5) - 2 // amax 2: ties at ±0.5·d
			}
		}
		r1, r2 := (*[256]float32)(slices.Clone(x)), (*[256]float32)(slices.Clone(x))
		var q1, q2 [256]int8
		var s1, s2 [8]int16
		d1 := quantizeSuperGo(r1, &q1, &s1)
		d2, ok := quantizeSuperSIMD(r2, &q2, &s2)
		if !ok || d1 != d2 || q1 != q2 || s1 != s2 || *r1 != *r2 {
			t.Fatalf("seed %d: the SIMD quantizer differs (d %v vs %v)", seed, d2, d1)
		}
	}
}
