package kernels

import (
	"encoding/binary"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// rowDecoder decodes one row into per-element integer quants q [In] and
// per-sub-block scales D, M [In/sub] (value = D·q + M).
type rowDecoder struct {
	fam    family
	sub    int // elements per scale
	nsub   int
	hasMin bool
	maxQ   int // the largest |q| decode writes (the AVX2 int16 sums need ≤ 32)
	decode func(row []byte, q []int8, d, m []float32)
}

var decoders = map[model.DType]rowDecoder{
	model.Q4_0: {famNib, 32, 1, true, 15, decodeQ4_0},
	model.Q4_1: {famNib, 32, 1, true, 15, decodeQ4_1},
	model.Q4_K: {famNib, 32, 1, true, 15, decodeQ4K},
	model.Q8_0: {famByte, 32, 1, false, 127, decodeQ8_0},
	model.Q5_0: {famByte, 32, 1, false, 16, decodeQ5_0},
	model.Q5_1: {famByte, 32, 1, true, 31, decodeQ5_1},
	model.Q6_K: {famByte, 16, 2, false, 32, decodeQ6K},
	model.Q5_K: {famByte, 32, 1, true, 31, decodeQ5K},
	// decodelow.go: Q2_K's scales folded into q (its offsets per 16 go
	// to Matrix.mins), Q3_K, IQ4_XS and MXFP4 with Q6_K's scale per 16,
	// IQ4_NL as Q8_0.
	model.Q2_K:   {famByte, 32, 1, false, 45, decodeQ2K},
	model.Q3_K:   {famByte, 16, 2, false, 4, decodeQ3K},
	model.IQ4_NL: {famByte, 32, 1, false, 127, decodeIQ4NL},
	model.IQ4_XS: {famByte, 16, 2, false, 127, decodeIQ4XS},
	model.MXFP4:  {famByte, 16, 2, false, 12, decodeMXFP4},
}

// sums16 reports by type whether the decoded |q| is at most 32, so that
// the AVX2 four-token K-quant kernels keep int16 sums (bytek_amd64.s): an
// array, so that the choice per group costs no map lookup.
var sums16 = func() (s [64]bool) {
	for t, d := range decoders {
		s[t] = d.maxQ <= 32
	}
	return s
}()

func half(b []byte) float32 { return model.F16ToF32(binary.LittleEndian.Uint16(b)) }

func decodeQ4_0(row []byte, q []int8, d, m []float32) {
	for b := range len(q) / 32 {
		blk := row[18*b : 18*b+18]
		d[b] = half(blk)
		m[b] = -8 * d[b] // exact: D·q + M = D·(q-8)
		for i, v := range blk[2:18] {
			q[32*b+i], q[32*b+16+i] = int8(v&0xf), int8(v>>4)
		}
	}
}

func decodeQ4_1(row []byte, q []int8, d, m []float32) {
	for b := range len(q) / 32 {
		blk := row[20*b : 20*b+20]
		d[b], m[b] = half(blk), half(blk[2:])
		for i, v := range blk[4:20] {
			q[32*b+i], q[32*b+16+i] = int8(v&0xf), int8(v>>4)
		}
	}
}

// decodeQ8_0 clamps -128 to -127: the kernels' sign trick needs |q| ≤ 127,
// and ggml's quantizer never writes -128.
func decodeQ8_0(row []byte, q []int8, d, _ []float32) {
	for b := range len(q) / 32 {
		blk := row[34*b : 34*b+34]
		d[b] = half(blk)
		for i, v := range blk[2:34] {
			q[32*b+i] = max(int8(v), -127)
		}
	}
}

// decodeQ5_0 gives q − 16 in [-16, 15], so that Q5_0 multiplies like
// Q8_0: one float16 scale per 32, no offset.
func decodeQ5_0(row []byte, q []int8, d, _ []float32) {
	for b := range len(q) / 32 {
		blk := row[22*b : 22*b+22]
		d[b] = half(blk)
		qh := binary.LittleEndian.Uint32(blk[2:])
		for i, v := range blk[6:22] {
			q[32*b+i] = int8(v&0xf|byte(qh>>i&1)<<4) - 16
			q[32*b+16+i] = int8(v>>4|byte(qh>>(i+16)&1)<<4) - 16
		}
	}
}

// decodeQ5_1 gives q in [0, 31] with D = d and M = m: Q5_K's kernels, for
// blocks of 32 without a super-block.
func decodeQ5_1(row []byte, q []int8, d, m []float32) {
	for b := range len(q) / 32 {
		blk := row[24*b : 24*b+24]
		d[b], m[b] = half(blk), half(blk[2:])
		qh := binary.LittleEndian.Uint32(blk[4:])
		for i, v := range blk[8:24] {
			q[32*b+i] = int8(v&0xf | byte(qh>>i&1)<<4)
			q[32*b+16+i] = int8(v>>4 | byte(qh>>(i+16)&1)<<4)
		}
	}
}

// decodeQ4K splits each super-block into 8 sub-blocks of 32 with
// D = d·sc and M = -dmin·m, as ggml's dequantize_row_q4_K computes them.
func decodeQ4K(row []byte, q []int8, d, m []float32) {
	for b := range len(q) / 256 {
		blk := row[144*b : 144*b+144]
		dd, dmin := half(blk), half(blk[2:])
		for k := range 4 {
			for h := range 2 {
				j := 2*k + h
				sc, mn := model.ScaleMinK4(j, blk[4:16])
				d[8*b+j], m[8*b+j] = dd*float32(sc), -(dmin * float32(mn))
				for l, v := range blk[16+32*k : 16+32*k+32] {
					q[256*b+32*j+l] = int8(v >> (4 * h) & 0xf)
				}
			}
		}
	}
}

func decodeQ5K(row []byte, q []int8, d, m []float32) {
	for b := range len(q) / 256 {
		blk := row[176*b : 176*b+176]
		dd, dmin := half(blk), half(blk[2:])
		qh := blk[16:48]
		for k := range 4 {
			for h := range 2 {
				j := 2*k + h
				sc, mn := model.ScaleMinK4(j, blk[4:16])
				d[8*b+j], m[8*b+j] = dd*float32(sc), -(dmin * float32(mn))
				for l, v := range blk[48+32*k : 48+32*k+32] {
					q[256*b+32*j+l] = int8(v>>(4*h)&0xf | (qh[l]>>j&1)<<4)
				}
			}
		}
	}
}

// decodeQ6K gives 16 sub-blocks of 16 with D = d·sc and q in [-32, 31].
func decodeQ6K(row []byte, q []int8, d, _ []float32) {
	for b := range len(q) / 256 {
		blk := row[210*b : 210*b+210]
		dd := half(blk[208:])
		for s := range 16 {
			d[16*b+s] = dd * float32(int8(blk[192+s]))
		}
		for n := range 2 {
			ql, qh := blk[64*n:64*n+64], blk[128+32*n:128+32*n+32]
			y := q[256*b+128*n:][:128]
			for l := range 32 {
				y[l] = int8(ql[l]&0xf|(qh[l]&3)<<4) - 32
				y[l+32] = int8(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				y[l+64] = int8(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				y[l+96] = int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			}
		}
	}
}
