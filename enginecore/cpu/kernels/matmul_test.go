package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tandem-llm/tandem/enginecore/model"
)

var allTypes = []model.DType{model.F32, model.F16, model.BF16, model.Q4_0, model.Q4_1, model.Q5_0, model.Q5_1, model.Q8_0, model.Q2_K, model.Q3_K, model.Q4_K, model.Q5_K, model.Q6_K, model.IQ4_NL, model.IQ4_XS, model.MXFP4}

// paths runs f at every kernel level this build and CPU have (AVX-512,
// AVX2, pure Go).
func paths(t *testing.T, f func(t *testing.T)) {
	saved := level
	defer func() { level = saved }()
	for l := saved; l >= levelGo; l-- {
		if runnable(l) != l {
			continue // not nested: AVX-VNNI may be missing above it
		}
		level = l
		t.Run(l.String(), f)
	}
}

// randTensor draws W [out][in] ~ N(0, 1/in) with a few outliers and
// quantizes it to typ.
func randTensor(t testing.TB, typ model.DType, out, in int, seed uint64) *model.Tensor {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	v := make([]float32, out*in)
	for i := range v {
		v[i] = float32(r.NormFloat64() / math.Sqrt(float64(in)))
	}
	v[r.IntN(len(v))] = 3
	w, err := model.NewTensor("w", typ, []int{in, out}, v)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func randX(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 9))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	x[r.IntN(n)] = -8
	return x
}

// minIn is the smallest row length of a type (its block size, at least 32
// for quantized types).
func minIn(typ model.DType) int { return max(typ.BlockSize(), 4) }

func TestPackDequantizeExact(t *testing.T) {
	for _, typ := range allTypes {
		t.Run(typ.String(), func(t *testing.T) {
			for _, out := range []int{1, 16, 37} {
				w := randTensor(t, typ, out, 2*max(minIn(typ), 32), uint64(out))
				m, err := Pack(w)
				if err != nil {
					t.Fatal(err)
				}
				want, err := w.Float32s()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, m.Dequantize()); diff != "" {
					t.Fatalf("out=%d: packed matrix dequantizes differently (-model +packed):\n%s", out, diff)
				}
				if m.NumGroups() != (out+15)/16 || m.Quantized() != (typ.BlockSize() > 1) {
					t.Errorf("NumGroups %d, Quantized %v", m.NumGroups(), m.Quantized())
				}
			}
		})
	}
}

// mulRef is Σ_i W[r][i]·x[t][i] in float64 (w dequantized), with the sum
// of |W[r][i]·x[t][i]| for the tolerance.
func mulRef(w, x []float32, numTok, in, out int) (ref, mag []float64) {
	ref, mag = make([]float64, numTok*out), make([]float64, numTok*out)
	for t := range numTok {
		for r := range out {
			for i := range in {
				p := float64(w[r*in+i]) * float64(x[t*in+i])
				ref[t*out+r] += p
				mag[t*out+r] += math.Abs(p)
			}
		}
	}
	return ref, mag
}

// TestMulGroups checks every type, on both kernel paths, over odd shapes:
//   - against the float64 product of the dequantized weights with the
//     activations as the kernels see them (x, or d·q when quantized):
//     only float rounding may differ (relative 1e-5 of Σ|w·x|);
//   - against the float64 product with the true x: the difference must
//     stay within the activation rounding bound Σ|w|·d/2;
//   - splitting the groups in two, or running a token alone, must give
//     the same bits.
func TestMulGroups(t *testing.T) {
	paths(t, func(t *testing.T) {
		for _, typ := range allTypes {
			for _, shape := range []struct{ numTok, in, out int }{
				{1, 1, 1}, {3, 4, 17}, {5, 32, 33}, {4, 96, 16}, {9, 256, 40}, {2, 512, 3}, {6, 768, 48},
				{16, 64, 16}, {37, 256, 33}, // AMX tiles of 16 tokens, and a remainder
			} {
				if shape.in%minIn(typ) != 0 {
					continue
				}
				name := fmt.Sprintf("%v/T=%d,in=%d,out=%d", typ, shape.numTok, shape.in, shape.out)
				t.Run(name, func(t *testing.T) {
					checkMul(t, typ, shape.numTok, shape.in, shape.out)
				})
			}
		}
	})
}

// mulSameActivations multiplies x [numTok][in] by m with MulGroups, and
// by wf (m's weights as float32) in float64 with the activations the
// kernels multiply (x quantized as they quantize it): got, the reference
// and its magnitudes, and the activations.
func mulSameActivations(m *Matrix, wf, x []float32, numTok, in, out int) (got []float32, ref, mag []float64, a *Activations) {
	a = new(Activations)
	a.Reset(x, numTok, in)
	xs := x
	if m.Quantized() {
		a.Quantize(0, numTok)
		xs = make([]float32, len(x))
		for i := range xs {
			xs[i] = a.d[i/32] * float32(a.q[i])
		}
	}
	got = make([]float32, numTok*out)
	m.MulGroups(got, a, 0, m.NumGroups())
	ref, mag = mulRef(wf, xs, numTok, in, out)
	return got, ref, mag, a
}

func checkMul(t *testing.T, typ model.DType, numTok, in, out int) {
	seed := uint64(numTok*1000 + in + out)
	w := randTensor(t, typ, out, in, seed)
	m, err := Pack(w)
	if err != nil {
		t.Fatal(err)
	}
	wf, _ := w.Float32s()
	x := randX(numTok*in, seed)
	got, ref, mag, a := mulSameActivations(m, wf, x, numTok, in, out)
	for i := range got {
		if d := math.Abs(float64(got[i]) - ref[i]); d > 1e-5*mag[i]+1e-6 {
			t.Fatalf("out[%d] = %v, want %v (same activations): |Δ| %.3g > %.3g", i, got[i], ref[i], d, 1e-5*mag[i])
		}
	}
	if m.Quantized() {
		trueRef, _ := mulRef(wf, x, numTok, in, out)
		for i := range got {
			tok, r := i/out, i%out
			var bound float64
			for k := range in {
				bound += math.Abs(float64(wf[r*in+k])) * float64(a.d[tok*in/32+k/32]) / 2
			}
			if d := math.Abs(float64(got[i]) - trueRef[i]); d > bound*1.0001+1e-5*mag[i] {
				t.Fatalf("out[%d] = %v, want %v (true x): |Δ| %.3g > bound %.3g", i, got[i], trueRef[i], d, bound)
			}
		}
	}

	// Split between two "workers" at every group boundary: same bits.
	for split := 1; split < m.NumGroups(); split++ {
		two := make([]float32, len(got))
		m.MulGroups(two, a, split, m.NumGroups())
		m.MulGroups(two, a, 0, split)
		if !slices.Equal(got, two) {
			t.Fatalf("split at group %d changes the result", split)
		}
	}
	// The first and the last token alone: same bits as in the batch
	// (with 16 tokens or more, the batch runs in AMX tiles where the CPU
	// has them, a token alone in the one-token kernel).
	for _, tok := range []int{0, numTok - 1} {
		var one Activations
		one.Reset(x[tok*in:], 1, in)
		if m.Quantized() {
			one.Quantize(0, 1)
		}
		alone := make([]float32, out)
		m.MulGroups(alone, &one, 0, m.NumGroups())
		if !slices.Equal(alone, got[tok*out:(tok+1)*out]) {
			t.Fatalf("token %d alone differs from the same token in a batch of %d", tok, numTok)
		}
	}
}

func TestQuantizeBlock(t *testing.T) { paths(t, testQuantizeBlock) }

func testQuantizeBlock(t *testing.T) {
	x := make([]float32, 64)
	for i := range 32 {
		x[i] = float32(i) - 15.5 // max |x| 15.5 → d = 15.5/127
	}
	x[40] = 0.5 // second block: d = 0.5/127, q = 127; the rest 0
	var a Activations
	a.Reset(x, 1, 64)
	a.Quantize(0, 1)
	if a.d[0] != float32(15.5)/127 || a.d[1] != float32(0.5)/127 {
		t.Errorf("scales %v", a.d)
	}
	wantQ := make([]int8, 64)
	var sum0 int
	for i := range 32 {
		wantQ[i] = int8(math.RoundToEven(float64(float32(x[i] * (1 / a.d[0])))))
		sum0 += int(wantQ[i])
	}
	wantQ[40] = 127
	if diff := cmp.Diff(wantQ, a.q); diff != "" {
		t.Errorf("q (-want +got):\n%s", diff)
	}
	if wantQ[0] != -127 || wantQ[15] != -4 || wantQ[31] != 127 {
		t.Errorf("q[0], q[15], q[31] = %d, %d, %d, want -127, -4, 127", wantQ[0], wantQ[15], wantQ[31])
	}
	for i, q := range a.q {
		if int(a.qa[i]) != int(math.Abs(float64(q))) || (a.qm[i] == -1) != (q < 0) {
			t.Fatalf("element %d: q %d, |q| %d, sign mask %d", i, q, a.qa[i], a.qm[i])
		}
	}
	if a.s[0] != a.d[0]*float32(sum0) || a.s[1] != a.d[1]*127 {
		t.Errorf("sums %v, want %v, %v", a.s, a.d[0]*float32(sum0), a.d[1]*127)
	}
	// A zero block quantizes to zeros with scale 0.
	a.Reset(make([]float32, 32), 1, 32)
	a.Quantize(0, 1)
	if a.d[0] != 0 || slices.ContainsFunc(a.q, func(q int8) bool { return q != 0 }) {
		t.Errorf("zero block: d %v, q %v", a.d[0], a.q)
	}
}

// TestQuantizePathsAgree: the SIMD (AVX-512 and AVX2) and pure-Go
// quantizers give the same bits, ties, zero blocks and residual rows
// included.
func TestQuantizePathsAgree(t *testing.T) {
	saved := level
	if saved < levelAVX2 {
		t.Skip("no SIMD quantizer in this build or on this CPU")
	}
	defer func() { level = saved }()
	x := randX(32*64, 5)
	for i := range x {
		x[i] *= float32(math.Pow(2, float64(i/32%16-8))) // scales from 2⁻⁸ to 2⁷
	}
	for i := range 31 {
		x[32*5+i] = float32(i) - 15.5 // with max 127, d = 1: every element a tie
	}
	x[32*5+31] = 127
	clear(x[32*9 : 32*10]) // a zero block
	precise := make([]bool, 32)
	for t := range precise {
		precise[t] = t%3 == 1
	}
	run := func(l simdLevel) Activations {
		level = l
		var a Activations
		a.ResetPrecise(x, 32, 64, precise)
		a.Quantize(0, 32)
		a.X = nil
		a.tiled, a.dT, a.sT = false, nil, nil // AMX's transposed copies: the tile levels only
		return a
	}
	want := run(levelGo)
	for _, l := range []simdLevel{levelAVX2, levelAVX512} {
		if l > saved {
			continue
		}
		if diff := cmp.Diff(want, run(l), cmp.AllowUnexported(Activations{})); diff != "" {
			t.Errorf("%v quantization differs (-go +%v):\n%s", l, l, diff)
		}
	}
}

func TestPackErrors(t *testing.T) {
	good := randTensor(t, model.Q4_1, 4, 64, 1)
	short := *good
	short.Data = short.Data[:len(short.Data)-1]
	odd := *good
	odd.Type = 10
	if _, err := Pack(&short); err == nil {
		t.Error("Pack accepted short data")
	}
	if _, err := Pack(&odd); err == nil {
		t.Error("Pack accepted an unsupported type")
	}
}

// TestPackedBytes pins the packed size of a 16×256 matrix per type: Q4_0
// (its offsets implicit), Q4_1 and Q8_0 keep their float16 scales and
// match ggml's size; Q4_K keeps the file's scale bytes where the level's
// kernels read them (VNNI and above), else float32 D and M (and the
// file's scale bytes too where precise tokens take the super form); Q6_K is as
// small as the file there too, else a byte per weight and float32
// scales, as Q5_K is. Q5_0 and Q5_1 take a byte per weight too, for
// Q8_0's and Q5_K's kernels: Q5_0 with its float16 scales (1.55× the
// file), Q5_1 with float32 D and M (1.67×).
func TestPackedBytes(t *testing.T) {
	tests := []struct {
		typ  model.DType
		want int64
	}{
		{model.F32, 16 * 256 * 4}, {model.F16, 16 * 256 * 4}, {model.BF16, 16 * 256 * 4},
		{model.Q4_0, 8 * (256 + 32)}, {model.Q4_1, 8 * (256 + 64)}, {model.Q8_0, 8 * (512 + 32)},
		{model.Q4_K, 8 * (256 + 128)}, {model.Q5_K, 8 * (512 + 128)}, {model.Q6_K, 8 * (512 + 128)},
		{model.Q5_0, 8 * (512 + 32)}, {model.Q5_1, 8 * (512 + 128)},
	}
	if halfWeights() {
		tests[1].want, tests[2].want = 16*256*2, 16*256*2 // kept 16-bit
	}
	if superCPU {
		tests[6].want += 8 * kBlockBytes // the file's scale bytes too, for the super form
	}
	if compactQ4K() {
		tests[6].want = 8 * (256 + kBlockBytes)           // file's scales kept: 2.5 bytes per 32 weights
		tests[8].want = 8 * (q6BlockBytes + q6ScaleBytes) // 6 bits a weight, as the file
	}
	for _, tt := range tests {
		m, err := Pack(randTensor(t, tt.typ, 16, 256, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Bytes(); got != tt.want {
			t.Errorf("%v: %d bytes, want %d", tt.typ, got, tt.want)
		}
	}
}

func TestCapLevel(t *testing.T) {
	for _, tt := range []struct {
		have simdLevel
		want string
		got  simdLevel
	}{
		{levelAVX512, "", levelAVX512},
		{levelAVX512, "avx2", levelAVX2},
		{levelAVX512, "go", levelGo},
		{levelAVX2, "avx512", levelAVX2}, // never raised past the CPU
		{levelGo, "avx2", levelGo},
		{levelAVX512, "sse", levelAVX512}, // unknown: unchanged
		{levelAMX, "avx512", levelAVX512},
		{levelAVX512, "amx", levelAVX512},
		{levelAVXVNNI, "avx512", levelAVXVNNI},
		{levelAVX2, "avxvnni", levelAVX2},
	} {
		if got := capLevel(tt.have, tt.want); got != runnable(tt.got) {
			t.Errorf("capLevel(%v, %q) = %v, want %v", tt.have, tt.want, got, tt.got)
		}
	}
}

// TestLayoutsBelowTheirLevel: a matrix packed in a layout only higher
// levels' SIMD kernels read (16-bit floats, compact K-quants) still
// multiplies correctly at every lower level, through the pure-Go
// kernels, which read every layout.
func TestLayoutsBelowTheirLevel(t *testing.T) {
	saved := level
	defer func() { level = saved }()
	for _, typ := range []model.DType{model.F16, model.BF16, model.Q4_K, model.Q6_K} {
		const numTok, in, out = 5, 512, 40
		level = saved // pack at the machine's level
		w := randTensor(t, typ, out, in, 21)
		m, err := Pack(w)
		if err != nil {
			t.Fatal(err)
		}
		if m.packLevel() == levelGo {
			t.Logf("%v: packed in the plain layout at level %v", typ, saved)
			continue
		}
		wf, _ := w.Float32s()
		x := randX(numTok*in, 22)
		for l := m.packLevel() - 1; l >= levelGo; l-- {
			level = l
			if got := m.Kernel(); got != "go" {
				t.Errorf("%v packed at %v, level %v: Kernel() = %q, want go", typ, saved, l, got)
			}
			got, ref, mag, _ := mulSameActivations(m, wf, x, numTok, in, out)
			for i := range got {
				if d := math.Abs(float64(got[i]) - ref[i]); d > 1e-5*mag[i]+1e-6 {
					t.Fatalf("%v at level %v: out[%d] = %v, want %v", typ, l, i, got[i], ref[i])
				}
			}
		}
	}
}
