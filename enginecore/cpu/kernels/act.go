package kernels

import "math"

// Activations is the input X [T][In] of a matmul, kept as float32 for
// float matrices and quantized to 8-bit blocks of 32 (like ggml's Q8_0,
// with float32 scales) for quantized ones, once per matmul, so that the
// kernels multiply integers. Buffers grow and are reused: no allocation in
// the steady state.
//
// A token can be quantized precisely (ResetPrecise): besides its row it
// gets a residual row, x − d·q quantized the same way, so that
// x ≈ d·q + d′·q′ with d′ ≤ d/254 (about 15 bits instead of 8). The
// kernels multiply the residual row like any other and add its product
// into the token's output, so a precise token costs two rows of integer
// work and its result does not depend on the other rows of the batch.
type Activations struct {
	NumTok, In int
	X          []float32 // [T][In] float input, referenced (not copied)

	// Rows are [T+R]: the T tokens, then R residual rows.
	q  []int8    // [T+R][In] round(x/d), in [-127, 127]
	qa []uint8   // [T+R][In] |q|
	qm []int8    // [T+R][In] -1 where q < 0, else 0
	d  []float32 // [T+R][In/32] block scales: x ≈ d·q
	s  []float32 // [T+R][In/32] d·Σq of the block (for offsets M)
	hs []int32   // [T+R][In/32][2] 32·Σq over each half block (compact Q6_K's u = q+32 offset)

	resOf  []int32   // [R] token whose residual is row T+k
	resIdx []int32   // [T] k of token t's residual row, -1 without one
	r      []float32 // [R][In] residual inputs x − d·q

	// With tiles (AMX, at least tileRows rows), d and s again,
	// transposed, so that a tile's tokens' scales of one block are
	// consecutive.
	tiled  bool
	dT, sT []float32 // [In/32][T+R]

	// The precise forms the next Quantize computes (ResetForms): the
	// residual rows above, and the super-block rows (super.go).
	noResidual, noSuper bool

	// Super-block rows: superLevels per precise token, level by level
	// (row l·P + k is level l of the precise token resOf[k]).
	kq  []int8    // [L·P][In] int8 values of each level
	kd  []float32 // [L·P][In/256] their scales
	ks  []int16   // [L·P][In/32] Σq of each block of 32
	kr  []float32 // [P][In] scratch: what the levels so far leave
	kdT []float32 // [tiles][In/256][16] kd of the rows in whole tiles (AMX)
	ksT []int32   // [tiles][In/256][16][4] ks of block pairs, S₂ᵢ | S₂ᵢ₊₁<<16
}

// tileRows is the token rows of one AMX tile.
const tileRows = 16

// Rows is the number of quantized per-32 rows: tokens plus residual rows.
func (a *Activations) Rows() int {
	if a.noResidual {
		return a.NumTok
	}
	return a.NumTok + len(a.resOf)
}

// Reset points a at x ([numTok][in]) and sizes the quantized buffers; call
// Quantize for the tokens before a quantized matmul.
func (a *Activations) Reset(x []float32, numTok, in int) { a.ResetPrecise(x, numTok, in, nil) }

// ResetPrecise is Reset with a residual row for every token t with
// precise[t] (precise nil: none; shorter than numTok: the rest are not),
// and its super-block rows (super.go) where In allows them.
func (a *Activations) ResetPrecise(x []float32, numTok, in int, precise []bool) {
	a.ResetForms(x, numTok, in, precise, true, true)
}

// ResetForms is ResetPrecise computing only the precise forms asked for:
// residual rows (for the per-32 matrices) and super-block rows (for Q4_K
// where Matrix.SuperForm), so that a caller who knows its matrices sizes
// and quantizes nothing they do not read.
func (a *Activations) ResetForms(x []float32, numTok, in int, precise []bool, residual, super bool) {
	a.NumTok, a.In, a.X = numTok, in, x[:numTok*in]
	a.resOf = a.resOf[:0]
	if cap(a.resIdx) < numTok {
		a.resIdx = make([]int32, numTok)
	}
	a.resIdx = a.resIdx[:numTok]
	for t := range numTok {
		a.resIdx[t] = -1
		if t < len(precise) && precise[t] {
			a.resIdx[t] = int32(len(a.resOf))
			a.resOf = append(a.resOf, int32(t))
		}
	}
	a.noResidual, a.noSuper = !residual, !super || in%256 != 0
	rows := a.Rows()
	n := rows * in
	if cap(a.q) < n {
		a.q, a.qa, a.qm = make([]int8, n), make([]uint8, n), make([]int8, n)
	}
	a.q, a.qa, a.qm = a.q[:n], a.qa[:n], a.qm[:n]
	nb := rows * (in / 32)
	if cap(a.d) < nb {
		a.d, a.s, a.hs = make([]float32, nb), make([]float32, nb), make([]int32, 2*nb)
	}
	a.d, a.s, a.hs = a.d[:nb], a.s[:nb], a.hs[:2*nb]
	a.tiled = level >= levelAMX && rows >= tileRows
	if a.tiled {
		if cap(a.dT) < nb {
			a.dT, a.sT = make([]float32, nb), make([]float32, nb)
		}
		a.dT, a.sT = a.dT[:nb], a.sT[:nb]
	}
	if nr := len(a.resOf) * in; cap(a.r) < nr {
		a.r = make([]float32, nr)
	}
	a.r = a.r[:len(a.resOf)*in]
	a.resetSuper()
}

// Quantize quantizes tokens [t0, t1) (and their residual rows); In must be
// a multiple of 32. Calls for disjoint ranges may run in parallel.
func (a *Activations) Quantize(t0, t1 int) {
	in, nb := a.In, a.In/32
	for t := t0; t < t1; t++ {
		a.quantizeRow(a.X[t*in:(t+1)*in], t)
		k := int(a.resIdx[t])
		if k < 0 {
			continue
		}
		if !a.noSuper {
			a.quantizeSuper(a.X[t*in:(t+1)*in], k)
		}
		if a.noResidual {
			continue
		}
		// r = x − d·q, block by block; |r| ≤ d/2.
		r := a.r[k*in : (k+1)*in]
		x, q, d := a.X[t*in:(t+1)*in], a.q[t*in:(t+1)*in], a.d[t*nb:(t+1)*nb]
		if !residualRowSIMD(r, x, q, d) {
			for i := range r {
				r[i] = x[i] - float32(d[i/32]*float32(q[i]))
			}
		}
		a.quantizeRow(r, a.NumTok+k)
	}
}

// quantizeRow quantizes x [In] into row.
func (a *Activations) quantizeRow(x []float32, row int) {
	in, nb := a.In, a.In/32
	o := row * in
	q, qa, qm := a.q[o:o+in], a.qa[o:o+in], a.qm[o:o+in]
	d, s, hs := a.d[row*nb:(row+1)*nb], a.s[row*nb:(row+1)*nb], a.hs[2*row*nb:2*(row+1)*nb]
	if !quantizeRowSIMD(x, q, qa, qm, d, s, hs) {
		for j := range nb {
			quantizeBlock((*[32]float32)(x[32*j:]), (*[32]int8)(q[32*j:]), (*[32]uint8)(qa[32*j:]), (*[32]int8)(qm[32*j:]), &d[j], &s[j], (*[2]int32)(hs[2*j:]))
		}
	}
	if a.tiled {
		rows := a.Rows()
		for j := range nb {
			a.dT[j*rows+row], a.sT[j*rows+row] = d[j], s[j]
		}
	}
}

// int8Scale is the symmetric int8 scale of x, d = max|x| / 127, and its
// inverse (0 when x is all zeros), as ggml computes them.
func int8Scale(x []float32) (d, id float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, math.Float32frombits(math.Float32bits(v)&^(1<<31)))
	}
	if d = amax / 127; d != 0 {
		id = 1 / d
	}
	return d, id
}

// roundInt rounds v (|v| < 2²²) to an integer, halves to even, by
// ggml's magic number: adding 1.5·2²³ leaves the integer in the
// mantissa's low bits.
func roundInt(v float32) int32 {
	const magic = 12582912 // 1.5·2²³
	return int32(math.Float32bits(v+magic)&0x7fffff) - 0x400000
}

// quantizeBlock is ggml's quantize_row_q8_0 with a float32 scale; halves
// round to even (magic-number rounding).
func quantizeBlock(x *[32]float32, q *[32]int8, qa *[32]uint8, qm *[32]int8, d, s *float32, hs *[2]int32) {
	dd, id := int8Scale(x[:])
	var half [2]int32
	for i, v := range x {
		r := roundInt(float32(v * id))
		q[i] = int8(r)
		half[i/16] += r
		qm[i] = int8(r >> 31)
		qa[i] = uint8((r ^ r>>31) - r>>31)
	}
	*d, *s = dd, dd*float32(half[0]+half[1])
	hs[0], hs[1] = 32*half[0], 32*half[1]
}
