//go:build goexperiment.simd && amd64

package kernels

import (
	"math"
	"simd/archsimd"
)

// AVX2 versions of attn.go, used at the AVX-512 level too (the 16
// positions of a block are two 8-lane registers). Two rows at a time keep
// eight independent accumulator chains in flight; a lone row runs the
// same per-lane chains, fewer at once.

func blockScores(out, q, k []float32, d int, s float32) {
	if level < levelAVX2 || d%2 != 0 || d == 0 {
		blockScoresGo(out, q, k, d, s)
		return
	}
	rows := len(out) / BlockB
	r := 0
	for ; r+2 <= rows; r += 2 {
		o, qq := out[r*BlockB:(r+2)*BlockB], q[r*d:(r+2)*d]
		scores2AVX2(&o[0], &qq[0], &k[0], d, s)
	}
	if r < rows {
		o, qq := out[r*BlockB:(r+1)*BlockB], q[r*d:(r+1)*d]
		scores1AVX2(&o[0], &qq[0], &k[0], d, s)
	}
}

// scores2AVX2 is BlockScores of two rows (attn_amd64.s): out [2][B],
// q [2][d] (d even), k [d][B].
//
//go:noescape
func scores2AVX2(out, q, k *float32, d int, s float32)

// scores1AVX2 is scores2AVX2 of one row, lane for lane.
//
//go:noescape
func scores1AVX2(out, q, k *float32, d int, s float32)

// accum1x64AVX2 is accum2AVX2 of one row and 64 lanes, lane for lane.
//
//go:noescape
func accum1x64AVX2(y, w *float32, n int, v *float32, stride int)

func blockAccum(acc []float32, d int, w []float32, n int, v []float32, stride int) {
	if level < levelAVX2 || d%32 != 0 {
		blockAccumGo(acc, d, w, n, v, stride)
		return
	}
	rows := len(acc) / d
	r := 0
	for ; r+2 <= rows; r += 2 {
		for i := 0; i < d; i += 32 {
			y0, y1 := acc[r*d+i:r*d+i+32], acc[(r+1)*d+i:(r+1)*d+i+32]
			vv := v[i : (n-1)*stride+i+32]
			accum2AVX2(&y0[0], &y1[0], &w[r*BlockB], &w[(r+1)*BlockB], n, &vv[0], stride)
		}
	}
	if r < rows {
		i := 0
		for ; i+64 <= d; i += 64 {
			y, vv := acc[r*d+i:r*d+i+64], v[i:(n-1)*stride+i+64]
			accum1x64AVX2(&y[0], &w[r*BlockB], n, &vv[0], stride)
		}
		if i < d {
			accum1(acc[r*d+i:], w[r*BlockB:], n, v[i:], stride)
		}
	}
}

// accum2AVX2 is BlockAccum of 32 lanes of two rows (attn_amd64.s):
// y0, y1 += Σ_{p<n} w0[p]·v[p·stride:], w1[p]·v[p·stride:] (n ≥ 1).
//
//go:noescape
func accum2AVX2(y0, y1, w0, w1 *float32, n int, v *float32, stride int)

// accum1 is BlockAccum of 32 lanes of one row, lane for lane as accum2AVX2.
func accum1(y, w []float32, n int, v []float32, stride int) {
	a := (*[32]float32)(y)
	a0 := archsimd.LoadFloat32x8((*[8]float32)(a[0:]))
	a1 := archsimd.LoadFloat32x8((*[8]float32)(a[8:]))
	a2 := archsimd.LoadFloat32x8((*[8]float32)(a[16:]))
	a3 := archsimd.LoadFloat32x8((*[8]float32)(a[24:]))
	ws := (*[BlockB]float32)(w)
	for p := range min(n, BlockB) {
		vv := (*[32]float32)(v[p*stride:])
		x := archsimd.BroadcastFloat32x8(ws[p])
		a0 = archsimd.LoadFloat32x8((*[8]float32)(vv[0:])).MulAdd(x, a0)
		a1 = archsimd.LoadFloat32x8((*[8]float32)(vv[8:])).MulAdd(x, a1)
		a2 = archsimd.LoadFloat32x8((*[8]float32)(vv[16:])).MulAdd(x, a2)
		a3 = archsimd.LoadFloat32x8((*[8]float32)(vv[24:])).MulAdd(x, a3)
	}
	a0.Store((*[8]float32)(a[0:]))
	a1.Store((*[8]float32)(a[8:]))
	a2.Store((*[8]float32)(a[16:]))
	a3.Store((*[8]float32)(a[24:]))
}

func blockSoftmax(s []float32, rowN []int32, pos int, m, l, acc []float32, d int) {
	if level < levelAVX2 {
		blockSoftmaxGo(s, rowN, pos, m, l, acc, d)
		return
	}
	for r := range m {
		sr := (*[BlockB]float32)(s[r*BlockB:])
		cnt := int(rowN[r]) - pos
		if cnt <= 0 {
			clear(sr[:])
			continue
		}
		cnt = min(cnt, BlockB)
		lr := (*[BlockB]float32)(l[r*BlockB:])
		bm, ok := softmaxRowAVX2(&sr[0], &lr[0], m[r], m[r]+SoftmaxSlack, cnt)
		if ok {
			continue
		}
		// A new reference: the row's first block, then rarely. softmaxRow's
		// rescale; before the first block acc and l are still +0, so the
		// factor (0) would change nothing there.
		if !math.IsInf(float64(m[r]), -1) {
			f := float32(math.Exp(float64(m[r] - bm)))
			Scale(acc[r*d:(r+1)*d], f)
			Scale(lr[:], f)
		}
		m[r] = bm
		softmaxRowAVX2(&sr[0], &lr[0], bm, float32(math.Inf(1)), cnt)
	}
}

// softmaxRowAVX2 is BlockSoftmax's row over a block's first cnt lanes
// (attn_amd64.s): with a lane above limit, ok = false, nothing written,
// and bm the largest of the cnt lanes; else s = exp8(s − m) below cnt
// and 0 above, l[0:16] += s, ok = true.
//
//go:noescape
func softmaxRowAVX2(s, l *float32, m, limit float32, cnt int) (bm float32, ok bool)

func halfToFloat(dst []float32, src []uint16) {
	n := 0
	if level >= levelAVX2 && hasF16C && len(dst) >= 8 {
		n = len(dst) &^ 7
		halfToFloatF16C(&dst[0], &src[0], n/8)
	}
	halfToFloatGo(dst[n:], src[n:])
}

// halfToFloatF16C converts 8·n float16 values (attn_amd64.s, VCVTPH2PS).
//
//go:noescape
func halfToFloatF16C(dst *float32, src *uint16, n int)

func halfDirect(d int) bool { return level >= levelAVX2 && hasF16C && d%32 == 0 && d > 0 }

func blockScoresHalf(out, q []float32, k []uint16, d int, s float32) {
	rows := len(out) / BlockB
	r := 0
	for ; r+2 <= rows; r += 2 {
		o, qq := out[r*BlockB:(r+2)*BlockB], q[r*d:(r+2)*d]
		scores2HalfAVX2(&o[0], &qq[0], &k[0], d, s)
	}
	if r < rows {
		o, qq := out[r*BlockB:(r+1)*BlockB], q[r*d:(r+1)*d]
		scores1HalfAVX2(&o[0], &qq[0], &k[0], d, s)
	}
}

func blockAccumHalf(acc []float32, d int, w []float32, n int, v []uint16, stride int) {
	rows := len(acc) / d
	r := 0
	for ; r+2 <= rows; r += 2 {
		for i := 0; i < d; i += 32 {
			y0, y1 := acc[r*d+i:r*d+i+32], acc[(r+1)*d+i:(r+1)*d+i+32]
			vv := v[i : (n-1)*stride+i+32]
			accum2HalfAVX2(&y0[0], &y1[0], &w[r*BlockB], &w[(r+1)*BlockB], n, &vv[0], stride)
		}
	}
	if r < rows {
		i := 0
		for ; i+64 <= d; i += 64 {
			y, vv := acc[r*d+i:r*d+i+64], v[i:(n-1)*stride+i+64]
			accum1x64HalfAVX2(&y[0], &w[r*BlockB], n, &vv[0], stride)
		}
		if i < d { // 32 lanes left: widen them, then accum1's chains
			var vf [BlockB * 32]float32
			for p := range min(n, BlockB) {
				halfToFloatF16C(&vf[p*32], &v[p*stride+i], 4)
			}
			accum1(acc[r*d+i:], w[r*BlockB:], n, vf[:], 32)
		}
	}
}

// scores2HalfAVX2 is scores2AVX2 with float16 keys (attn_amd64.s).
//
//go:noescape
func scores2HalfAVX2(out, q *float32, k *uint16, d int, s float32)

// scores1HalfAVX2 is scores1AVX2 with float16 keys.
//
//go:noescape
func scores1HalfAVX2(out, q *float32, k *uint16, d int, s float32)

// accum2HalfAVX2 is accum2AVX2 with float16 value rows, stride halves
// apart.
//
//go:noescape
func accum2HalfAVX2(y0, y1, w0, w1 *float32, n int, v *uint16, stride int)

// accum1x64HalfAVX2 is accum1x64AVX2 with float16 value rows.
//
//go:noescape
func accum1x64HalfAVX2(y, w *float32, n int, v *uint16, stride int)
