package kernels

import (
	"sync"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// The low-bit types ride the byte family's kernels (int8 q, a scale per 32
// or 16), so every level runs them with the kernels Q8_0 and Q6_K use:
//
//   - Q2_K: value = d·sc·q − dmin·m per 16 elements, q in [0, 3] and sc,
//     m in [0, 15]. sc·q (≤ 45) is the int8 q and the super-block's d the
//     scale (float16, exact: Q8_0's kernels); the offsets, per 16 and
//     so finer than the byte kernels' per-32 M, are Matrix.mins, added
//     after the integer sums (addMins). d·(sc·q) is exact in float32, as
//     is ggml's (d·sc)·q, so the values are ggml's to the bit.
//   - Q3_K: q in [-4, 3] with D = d·(scale−32) per 16, as Q6_K.
//   - IQ4_NL: the table's value (in [-127, 113]) as q, d per 32, as Q8_0.
//   - IQ4_XS: the table's value as q with D = d·(ls−32) per 32, laid out
//     as Q6_K's two scales per 32 (equal), whose kernels read float32 D
//     (a product that float16 cannot hold exactly).
//   - MXFP4: the table's value (in [-12, 12]) as q with D = 2^(e−128) per
//     32, laid out as IQ4_XS (float16 cannot hold most E8M0 scales).
//
// Packed, that is 1.06 bytes a weight (Q2_K: 1.31 with its offsets,
// IQ4_NL) or 1.25 (Q3_K, IQ4_XS, MXFP4): 2.3–4× the file's bytes. Below
// the AVX-512 level the table types and Q3_K then go on to famLUT
// (lut.go), 4-bit indices, expanded to these bytes per group as a matmul
// reads them.

// decodeQ2K: D = d per 32 and q = sc·q2 (its offsets: q2KMins).
func decodeQ2K(row []byte, q []int8, d, _ []float32) {
	for b := range len(q) / 256 {
		blk := row[84*b : 84*b+84]
		dd := half(blk[80:])
		for j := range 8 {
			d[8*b+j] = dd
		}
		var q2 [16]uint8
		for s := range 16 {
			sc := int8(blk[s] & 0xf)
			model.Q2KQuants(blk, s, &q2)
			for l, v := range q2 {
				q[256*b+16*s+l] = sc * int8(v)
			}
		}
	}
}

// decodeQ3K: 16 sub-blocks of 16 with D = d·scale and q in [-4, 3].
func decodeQ3K(row []byte, q []int8, d, _ []float32) {
	for b := range len(q) / 256 {
		blk := row[110*b : 110*b+110]
		dd := half(blk[108:])
		for s := range 16 {
			d[16*b+s] = dd * float32(model.Q3KScale(s, blk[96:108]))
			model.Q3KQuants(blk, s, (*[16]int8)(q[256*b+16*s:]))
		}
	}
}

func decodeIQ4NL(row []byte, q []int8, d, _ []float32) {
	for b := range len(q) / 32 {
		blk := row[18*b : 18*b+18]
		d[b] = half(blk)
		for i, v := range blk[2:18] {
			q[32*b+i], q[32*b+16+i] = model.IQ4Values[v&0xf], model.IQ4Values[v>>4]
		}
	}
}

// decodeIQ4XS gives each block of 32 its scale twice (as two halves of 16).
func decodeIQ4XS(row []byte, q []int8, d, _ []float32) {
	for b := range len(q) / 256 {
		blk := row[136*b : 136*b+136]
		dd := half(blk)
		for ib := range 8 {
			dl := dd * float32(model.IQ4XSScale(ib, blk))
			d[16*b+2*ib], d[16*b+2*ib+1] = dl, dl
			for i, v := range blk[8+16*ib : 8+16*ib+16] {
				q[256*b+32*ib+i], q[256*b+32*ib+16+i] = model.IQ4Values[v&0xf], model.IQ4Values[v>>4]
			}
		}
	}
}

// decodeMXFP4 gives each block of 32 its scale twice, as decodeIQ4XS.
func decodeMXFP4(row []byte, q []int8, d, _ []float32) {
	for b := range len(q) / 32 {
		blk := row[17*b : 17*b+17]
		dl := model.MXFP4Scale(blk[0])
		d[2*b], d[2*b+1] = dl, dl
		for i, v := range blk[1:17] {
			q[32*b+i], q[32*b+16+i] = model.MXFP4Values[v&0xf], model.MXFP4Values[v>>4]
		}
	}
}

// minsPer is the elements that share one of Matrix.mins' offsets.
const minsPer = 16

// q2KMins lays out Q2_K rows' offsets M = −dmin·m per 16 elements, as
// ggml's dequantize_row_q2_K computes them: [groups][In/16][16].
func q2KMins(data []byte, in, out int) []float32 {
	k, rb := in/minsPer, model.Q2_K.RowBytes(in)
	groups := (out + GroupRows - 1) / GroupRows
	mins := make([]float32, groups*k*GroupRows)
	for r := range out {
		g, lane := r/GroupRows, r%GroupRows
		row := data[r*rb : (r+1)*rb]
		for b := range in / 256 {
			blk := row[84*b : 84*b+84]
			dmin := half(blk[82:])
			for s := range 16 {
				mins[(g*k+16*b+s)*GroupRows+lane] = -(dmin * float32(blk[s]>>4))
			}
		}
	}
	return mins
}

// addMins adds Σ_k M[r][k]·(d·Σq)[t][k] over the blocks of 16 to out[t][r]
// for the rows of groups [g0, g1) and every token, its residual row's
// sums too (as ggml's Q2_K dot product takes the q8_K activations' sums
// of 16, bsums).
func (m *Matrix) addMins(out []float32, a *Activations, g0, g1 int) {
	k, nb := m.In/minsPer, m.nb
	var acc [GroupRows]float32
	buf := sumsPool.Get().(*[]float32)
	defer sumsPool.Put(buf)
	if cap(*buf) < k {
		*buf = make([]float32, k)
	}
	xs := (*buf)[:k]
	for row := range m.rows(a) {
		t := row
		if t >= a.NumTok {
			t = int(a.resOf[t-a.NumTok])
		}
		// Σq of each 16 is exact: hs holds 32·Σq of each half block.
		d, hs := a.d[row*nb:(row+1)*nb], a.hs[2*row*nb:2*(row+1)*nb]
		for i := range xs {
			xs[i] = d[i/2] * float32(hs[i]/32)
		}
		for g := g0; g < g1; g++ {
			minsGroup(&acc, m.mins[g*k*GroupRows:(g+1)*k*GroupRows], xs)
			r0 := g * GroupRows
			dst := out[t*m.Out+r0 : t*m.Out+min(r0+GroupRows, m.Out)]
			for i := range dst {
				dst[i] += acc[i]
			}
		}
	}
}

// sumsPool holds addMins' per-row sums of 16, [In/16].
var sumsPool = sync.Pool{New: func() any { return new([]float32) }}

// minsGroupGo is minsGroup in Go: acc[r] = Σ_k mins[k][r]·xs[k].
func minsGroupGo(acc *[GroupRows]float32, mins, xs []float32) {
	*acc = [GroupRows]float32{}
	for k, x := range xs {
		mk := (*[GroupRows]float32)(mins[k*GroupRows:])
		for r := range acc {
			acc[r] += mk[r] * x
		}
	}
}
