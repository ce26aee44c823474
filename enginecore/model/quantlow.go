package model

import (
	"encoding/binary"
	"math"
)

// The 2- and 3-bit K-quants and the non-linear 4-bit types that Q2_K,
// Q3_K_S/M/L, IQ4_NL and IQ4_XS GGUF files hold, and MXFP4, gpt-oss's
// expert weights (ggml-quants.c's dequantize_row_q2_K, _q3_K, _iq4_nl,
// _iq4_xs, _mxfp4). Dequantization is ggml's to the bit; the quantizers
// are plain round-to-nearest ones that write valid blocks for test models,
// not ggml's searching (and imatrix-aware) ones, except MXFP4's, which is
// ggml's quantize_row_mxfp4_ref.

// lowDequant and lowQuant are the block (de)quantizers of this file's
// types, for Dequantize and Quantize.
var (
	lowDequant = map[DType]func(blk []byte, y []float32){
		Q2_K: dequantQ2K, Q3_K: dequantQ3K, IQ4_NL: dequantIQ4NL, IQ4_XS: dequantIQ4XS,
		MXFP4: dequantMXFP4,
	}
	lowQuant = map[DType]func(x []float32, blk []byte){
		Q2_K: quantQ2K, Q3_K: quantQ3K, IQ4_NL: quantIQ4NL, IQ4_XS: quantIQ4XS,
		MXFP4: quantMXFP4,
	}
)

// IQ4Values is ggml's kvalues_iq4nl: the 16 values an IQ4_NL or IQ4_XS
// index selects, times the block's scale.
var IQ4Values = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// MXFP4Values is ggml's kvalues_mxfp4: the E2M1 values doubled (index 8
// is a second 0), which an MXFP4 index selects, times MXFP4Scale.
var MXFP4Values = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// MXFP4Scale is ggml's GGML_E8M0_TO_FP32_HALF(e): 2^(e−128), a float32
// subnormal for e < 2; e = 255 is 2^127, not NaN.
func MXFP4Scale(e byte) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// Q3KScale is the signed 6-bit scale (in [-32, 31]) of sub-block j (0..15)
// of a Q3_K block's 12 scale bytes.
func Q3KScale(j int, sc []byte) int8 {
	lo := sc[j%8] >> (4 * (j / 8)) & 0xf
	hi := sc[8+j%4] >> (2 * (j / 4)) & 3
	return int8(lo|hi<<4) - 32
}

// IQ4XSScale is the signed 6-bit scale (in [-32, 31]) of block ib (0..7) of
// an IQ4_XS super-block (blk starts at its d).
func IQ4XSScale(ib int, blk []byte) int8 {
	h := binary.LittleEndian.Uint16(blk[2:])
	ls := blk[4+ib/2]>>(4*(ib%2))&0xf | byte(h>>(2*ib)&3)<<4
	return int8(ls) - 32
}

// Q2KQuants writes the 2-bit quants (0..3) of sub-block s (0..15) of a
// Q2_K block: element l of sub-block 8n+2j (+1) is bits 2j of qs[32n+l]
// (qs[32n+16+l]), qs at blk[16:80].
func Q2KQuants(blk []byte, s int, q *[16]uint8) {
	n, j, h := s/8, s%8/2, s%2
	for l, v := range blk[16+32*n+16*h:][:16] {
		q[l] = v >> (2 * j) & 3
	}
}

// Q3KQuants writes the quants (-4..3) of sub-block s of a Q3_K block: as
// Q2_K's 2 bits (qs at blk[32:96]), less 4 unless bit 4n+j of hmask[l]
// (hmask[16+l]) is set.
func Q3KQuants(blk []byte, s int, q *[16]int8) {
	n, j, h := s/8, s%8/2, s%2
	qs, hm := blk[32+32*n+16*h:][:16], blk[16*h:][:16]
	for l := range 16 {
		q[l] = int8(qs[l]>>(2*j)&3) - 4 + int8(hm[l]>>(4*n+j)&1)*4
	}
}

// dequantQ2K: scales[16] (scale | min<<4), qs[64], d, dmin.
func dequantQ2K(blk []byte, y []float32) {
	d, dmin := F16ToF32(binary.LittleEndian.Uint16(blk[80:])), F16ToF32(binary.LittleEndian.Uint16(blk[82:]))
	var q [16]uint8
	for s := range 16 {
		sc := blk[s]
		dl, ml := d*float32(sc&0xf), dmin*float32(sc>>4)
		Q2KQuants(blk, s, &q)
		for l, v := range q {
			y[16*s+l] = float32(dl*float32(v)) - ml
		}
	}
}

// dequantQ3K: hmask[32], qs[64], scales[12], d.
func dequantQ3K(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk[108:]))
	var q [16]int8
	for s := range 16 {
		dl := d * float32(Q3KScale(s, blk[96:108]))
		Q3KQuants(blk, s, &q)
		for l, v := range q {
			y[16*s+l] = dl * float32(v)
		}
	}
}

// dequantIQ4NL: d, qs[16]: element j is the low nibble of qs[j], element
// 16+j its high nibble.
func dequantIQ4NL(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	for j, q := range blk[2:18] {
		y[j] = d * float32(IQ4Values[q&0xf])
		y[j+16] = d * float32(IQ4Values[q>>4])
	}
}

// dequantIQ4XS: d, scales_h, scales_l[4], qs[128]: 8 IQ4_NL-like blocks
// of 32 with scale d·(ls−32).
func dequantIQ4XS(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	for ib := range 8 {
		dl := d * float32(IQ4XSScale(ib, blk))
		for j, q := range blk[8+16*ib : 8+16*ib+16] {
			y[32*ib+j] = dl * float32(IQ4Values[q&0xf])
			y[32*ib+16+j] = dl * float32(IQ4Values[q>>4])
		}
	}
}

// dequantMXFP4: e, qs[16]: element j is the low nibble of qs[j], element
// 16+j its high nibble.
func dequantMXFP4(blk []byte, y []float32) {
	d := MXFP4Scale(blk[0])
	for j, q := range blk[1:17] {
		y[j] = float32(MXFP4Values[q&0xf]) * d
		y[j+16] = float32(MXFP4Values[q>>4]) * d
	}
}

// signedMax is the element of x of largest magnitude (the first of ties).
func signedMax(x []float32) float32 {
	var amax, maxv float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, maxv = a, v
		}
	}
	return maxv
}

// blockScales sets scales[i] to the value of largest magnitude of the
// i-th of len(scales) equal blocks of x, divided by div, and returns the
// scale of largest magnitude.
func blockScales(x []float32, div float32, scales []float32) (largest float32) {
	n := len(x) / len(scales)
	for i := range scales {
		scales[i] = signedMax(x[n*i:n*(i+1)]) / div
		if abs32(scales[i]) > abs32(largest) {
			largest = scales[i]
		}
	}
	return largest
}

// packLow2 writes 2-bit values L [256] into qs [64] as Q2_K and Q3_K lay
// them out: qs[32n+l] holds L[128n+l+32k] at bits 2k.
func packLow2(L *[qkK]uint8, qs []byte) {
	for n := range 2 {
		for l := range 32 {
			e := 128*n + l
			qs[32*n+l] = L[e] | L[e+32]<<2 | L[e+64]<<4 | L[e+96]<<6
		}
	}
}

// quantQ2K: per sub-block of 16 a scale (max−min)/3 and a min −min(x, 0),
// both quantized to 4 bits of the super-block's d and dmin; q =
// round((x+min)/scale) in [0, 3].
func quantQ2K(x []float32, blk []byte) {
	var scales, mins [16]float32
	var maxScale, maxMin float32
	for s := range 16 {
		lo, hi := minMax(x[16*s : 16*s+16])
		lo = min(lo, 0)
		scales[s], mins[s] = (hi-lo)/3, -lo
		maxScale, maxMin = max(maxScale, scales[s]), max(maxMin, mins[s])
	}
	clear(blk[:84])
	if maxScale > 0 {
		id := 15 / maxScale
		for s := range 16 {
			blk[s] = byte(min(15, nearestInt(id*scales[s])))
		}
		binary.LittleEndian.PutUint16(blk[80:], F32ToF16(maxScale/15))
	}
	if maxMin > 0 {
		id := 15 / maxMin
		for s := range 16 {
			blk[s] |= byte(min(15, nearestInt(id*mins[s]))) << 4
		}
		binary.LittleEndian.PutUint16(blk[82:], F32ToF16(maxMin/15))
	}
	d, dmin := F16ToF32(binary.LittleEndian.Uint16(blk[80:])), F16ToF32(binary.LittleEndian.Uint16(blk[82:]))
	var L [qkK]uint8
	for s := range 16 {
		dl, ml := d*float32(blk[s]&0xf), dmin*float32(blk[s]>>4)
		if dl == 0 {
			continue
		}
		for l := range 16 {
			L[16*s+l] = uint8(max(0, min(3, nearestInt((x[16*s+l]+ml)/dl))))
		}
	}
	packLow2(&L, blk[16:80])
}

// quantQ3K: per sub-block of 16 a scale that takes its value of largest
// magnitude to −4, quantized to 6 signed bits of the super-block's d,
// which takes the largest scale to −32; q = round(x/scale) in [-4, 3].
func quantQ3K(x []float32, blk []byte) {
	var scales [16]float32
	maxScale := blockScales(x, -4, scales[:])
	clear(blk[:110])
	sc := blk[96:108]
	if maxScale != 0 {
		id := -32 / maxScale
		for s := range 16 {
			l := byte(max(-32, min(31, nearestInt(id*scales[s]))) + 32)
			sc[s%8] |= (l & 0xf) << (4 * (s / 8))
			sc[8+s%4] |= (l >> 4) << (2 * (s / 4))
		}
		binary.LittleEndian.PutUint16(blk[108:], F32ToF16(1/id))
	}
	d := F16ToF32(binary.LittleEndian.Uint16(blk[108:]))
	var L [qkK]uint8
	for s := range 16 {
		dl := d * float32(Q3KScale(s, sc))
		for l := range 16 {
			q := 4 // the value 0 when dl is
			if dl != 0 {
				q = max(-4, min(3, nearestInt(x[16*s+l]/dl))) + 4
			}
			e := 16*s + l
			if q > 3 {
				blk[e%32] |= 1 << (e / 32)
				q -= 4
			}
			L[e] = uint8(q)
		}
	}
	packLow2(&L, blk[32:96])
}

// nearestIQ4 is the index of the table value nearest v.
func nearestIQ4(v float32) byte {
	best, bestErr := 0, float32(math.MaxFloat32)
	for i, t := range IQ4Values {
		if e := abs32(v - float32(t)); e < bestErr {
			best, bestErr = i, e
		}
	}
	return byte(best)
}

// quantIQ4Block writes the 16 index bytes of 32 values x at scale d.
func quantIQ4Block(x []float32, d float32, qs []byte) {
	var id float32
	if d != 0 {
		id = 1 / d
	}
	for j := range 16 {
		qs[j] = nearestIQ4(x[j]*id) | nearestIQ4(x[j+16]*id)<<4
	}
}

// quantIQ4NL: d takes the value of largest magnitude to −127.
func quantIQ4NL(x []float32, blk []byte) {
	binary.LittleEndian.PutUint16(blk, F32ToF16(signedMax(x)/-127))
	quantIQ4Block(x, F16ToF32(binary.LittleEndian.Uint16(blk)), blk[2:18])
}

// quantIQ4XS: IQ4_NL's scale per block of 32, quantized to 6 signed bits
// of a d that takes the largest to −32.
func quantIQ4XS(x []float32, blk []byte) {
	var scales [8]float32
	maxScale := blockScales(x, -127, scales[:])
	clear(blk[:136])
	if maxScale != 0 {
		id := -32 / maxScale
		var h uint16
		for ib := range 8 {
			ls := byte(max(-32, min(31, nearestInt(id*scales[ib]))) + 32)
			blk[4+ib/2] |= (ls & 0xf) << (4 * (ib % 2))
			h |= uint16(ls>>4) << (2 * ib)
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(1/id))
		binary.LittleEndian.PutUint16(blk[2:], h)
	}
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	for ib := range 8 {
		quantIQ4Block(x[32*ib:32*ib+32], d*float32(IQ4XSScale(ib, blk)), blk[8+16*ib:])
	}
}

// quantMXFP4 is ggml's quantize_row_mxfp4_ref: e = floor(log2f(amax)) +
// 125, so that the largest value 12·2^(e−128) is 0.75–1.5× amax (e = 0
// for a block of zeros, and clamped to [0, 254], where ggml's cast to
// uint8 is undefined); each index is the first of the table's values
// nearest x.
func quantMXFP4(x []float32, blk []byte) {
	var amax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax = a
		}
	}
	e := 0
	if amax > 0 {
		lg := float32(math.Log2(float64(min(amax, math.MaxFloat32))))
		e = max(0, min(254, int(math.Floor(float64(lg)))+125))
	}
	blk[0] = byte(e)
	d := MXFP4Scale(blk[0])
	for j := range 16 {
		blk[1+j] = nearestMXFP4(x[j], d) | nearestMXFP4(x[j+16], d)<<4
	}
}

// nearestMXFP4 is ggml's best_index_mxfp4: the first index whose value
// times d is nearest v.
func nearestMXFP4(v, d float32) byte {
	best, bestErr := 0, float32(math.Inf(1))
	for i, t := range MXFP4Values {
		if e := abs32(float32(float32(t)*d) - v); e < bestErr {
			best, bestErr = i, e
		}
	}
	return byte(best)
}
