package kernels

import "math"

// Activations is the input X [T][In] of a matmul, kept as float32 for
// float matrices and quantized to 8-bit blocks of 32 (like ggml's Q8_0,
// with float32 scales) for quantized ones, once per matmul, so that the
// kernels multiply integers. Buffers grow and are reused: no allocation in
// the steady state.
type Activations struct {
	NumTok, In int
	X          []float32 // [T][In] float input, referenced (not copied)

	q  []int8    // [T][In] round(x/d), in [-127, 127]
	qa []uint8   // [T][In] |q|
	qm []int8    // [T][In] -1 where q < 0, else 0
	d  []float32 // [T][In/32] block scales: x ≈ d·q
	s  []float32 // [T][In/32] d·Σq of the block (for offsets M)
}

// Reset points a at x ([numTok][in]) and sizes the quantized buffers; call
// Quantize for the tokens before a quantized matmul.
func (a *Activations) Reset(x []float32, numTok, in int) {
	a.NumTok, a.In, a.X = numTok, in, x[:numTok*in]
	n := numTok * in
	if cap(a.q) < n {
		a.q, a.qa, a.qm = make([]int8, n), make([]uint8, n), make([]int8, n)
	}
	a.q, a.qa, a.qm = a.q[:n], a.qa[:n], a.qm[:n]
	nb := numTok * (in / 32)
	if cap(a.d) < nb {
		a.d, a.s = make([]float32, nb), make([]float32, nb)
	}
	a.d, a.s = a.d[:nb], a.s[:nb]
}

// Quantize quantizes tokens [t0, t1); In must be a multiple of 32. Calls
// for disjoint ranges may run in parallel.
func (a *Activations) Quantize(t0, t1 int) {
	in, nb := a.In, a.In/32
	for t := t0; t < t1; t++ {
		for j := range nb {
			o := t*in + 32*j
			x, q := (*[32]float32)(a.X[o:o+32]), (*[32]int8)(a.q[o:o+32])
			qa, qm := (*[32]uint8)(a.qa[o:o+32]), (*[32]int8)(a.qm[o:o+32])
			if level == levelAVX512 {
				quantizeBlockSIMD(x, q, qa, qm, &a.d[t*nb+j], &a.s[t*nb+j])
			} else {
				quantizeBlock(x, q, qa, qm, &a.d[t*nb+j], &a.s[t*nb+j])
			}
		}
	}
}

// quantizeBlock is ggml's quantize_row_q8_0 with a float32 scale; halves
// round to even (magic-number rounding).
func quantizeBlock(x *[32]float32, q *[32]int8, qa *[32]uint8, qm *[32]int8, d, s *float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, math.Float32frombits(math.Float32bits(v)&^(1<<31)))
	}
	dd := amax / 127
	var id float32
	if dd != 0 {
		id = 1 / dd
	}
	const magic = 12582912 // 1.5·2²³: adding it rounds |v| < 2²² to an integer
	var sum int32
	for i, v := range x {
		r := int32(math.Float32bits(float32(v*id)+magic)&0x7fffff) - 0x400000
		q[i] = int8(r)
		sum += r
		qm[i] = int8(r >> 31)
		qa[i] = uint8((r ^ r>>31) - r>>31)
	}
	*d, *s = dd, dd*float32(sum)
}
