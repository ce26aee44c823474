package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Reference (de)quantization in ggml's exact block layouts (ggml-common.h,
// ggml-quants.c). These are the slow, obviously-correct versions: loaders
// and tests use them, and the CPU backend checks its packed kernels against
// them. Products are written as float32(a*b) so that Go never fuses them
// into an FMA and results match ggml bit for bit.

// ErrUnsupportedType reports a tensor type Tandem cannot compute with.
var ErrUnsupportedType = errors.New("model: unsupported tensor type")

// ErrLayout reports data whose length does not fit its type and size.
var ErrLayout = errors.New("model: bad tensor data layout")

// QK_K is the K-quant super-block size.
const qkK = 256

// checkLayout reports whether src holds exactly n elements of type t.
func checkLayout(t DType, n, srcLen int) error {
	if !t.Supported() {
		return fmt.Errorf("%w: %v", ErrUnsupportedType, t)
	}
	if n%t.BlockSize() != 0 {
		return fmt.Errorf("%w: %d elements of %v, not a multiple of its block of %d", ErrLayout, n, t, t.BlockSize())
	}
	if want := t.RowBytes(n); srcLen != want {
		return fmt.Errorf("%w: %d elements of %v take %d bytes, have %d", ErrLayout, n, t, want, srcLen)
	}
	return nil
}

// Dequantize decodes len(dst) elements of type t from src (ggml layout,
// exactly t.RowBytes(len(dst)) bytes) into dst.
func Dequantize(t DType, src []byte, dst []float32) error {
	if err := checkLayout(t, len(dst), len(src)); err != nil {
		return err
	}
	le := binary.LittleEndian
	half := func(b []byte) float32 { return F16ToF32(le.Uint16(b)) }
	switch t {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = half(src[2*i:])
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToF32(le.Uint16(src[2*i:]))
		}
	case Q4_0:
		for b := range len(dst) / 32 {
			blk, y := src[18*b:18*b+18], dst[32*b:32*b+32]
			d := half(blk)
			for j, q := range blk[2:18] {
				y[j] = float32(int(q&0xf)-8) * d
				y[j+16] = float32(int(q>>4)-8) * d
			}
		}
	case Q4_1:
		for b := range len(dst) / 32 {
			blk, y := src[20*b:20*b+20], dst[32*b:32*b+32]
			d, m := half(blk), half(blk[2:])
			for j, q := range blk[4:20] {
				y[j] = float32(float32(q&0xf)*d) + m
				y[j+16] = float32(float32(q>>4)*d) + m
			}
		}
	case Q5_0:
		for b := range len(dst) / 32 {
			blk, y := src[22*b:22*b+22], dst[32*b:32*b+32]
			d, qh := half(blk), le.Uint32(blk[2:])
			for j, q := range blk[6:22] {
				y[j] = float32(int(q&0xf|byte(qh>>j&1)<<4)-16) * d
				y[j+16] = float32(int(q>>4|byte(qh>>(j+16)&1)<<4)-16) * d
			}
		}
	case Q5_1:
		for b := range len(dst) / 32 {
			blk, y := src[24*b:24*b+24], dst[32*b:32*b+32]
			d, m, qh := half(blk), half(blk[2:]), le.Uint32(blk[4:])
			for j, q := range blk[8:24] {
				y[j] = float32(float32(q&0xf|byte(qh>>j&1)<<4)*d) + m
				y[j+16] = float32(float32(q>>4|byte(qh>>(j+16)&1)<<4)*d) + m
			}
		}
	case Q8_0:
		for b := range len(dst) / 32 {
			blk, y := src[34*b:34*b+34], dst[32*b:32*b+32]
			d := half(blk)
			for j, q := range blk[2:34] {
				y[j] = float32(int8(q)) * d
			}
		}
	case Q4_K:
		for b := range len(dst) / qkK {
			dequantQ4K(src[144*b:144*b+144], dst[qkK*b:qkK*(b+1)])
		}
	case Q5_K:
		for b := range len(dst) / qkK {
			dequantQ5K(src[176*b:176*b+176], dst[qkK*b:qkK*(b+1)])
		}
	case Q6_K:
		for b := range len(dst) / qkK {
			dequantQ6K(src[210*b:210*b+210], dst[qkK*b:qkK*(b+1)])
		}
	default:
		// Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4 (quantlow.go).
		bs, bb, f := t.BlockSize(), t.RowBytes(t.BlockSize()), lowDequant[t]
		for b := range len(dst) / bs {
			f(src[bb*b:bb*(b+1)], dst[bs*b:bs*(b+1)])
		}
	}
	return nil
}

// ScaleMinK4 unpacks the 6-bit scale and min of sub-block j (0..7) from a
// Q4_K/Q5_K block's 12 scale bytes (ggml's get_scale_min_k4).
func ScaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// dequantQ4K: d, dmin (f16), scales[12], qs[128]; each 64 elements share 32
// bytes: low nibbles are sub-block 2k, high nibbles sub-block 2k+1.
func dequantQ4K(blk []byte, y []float32) {
	d, dmin := F16ToF32(binary.LittleEndian.Uint16(blk)), F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	scales, qs := blk[4:16], blk[16:144]
	for k := range 4 {
		sc1, m1 := ScaleMinK4(2*k, scales)
		sc2, m2 := ScaleMinK4(2*k+1, scales)
		d1, dm1 := d*float32(sc1), dmin*float32(m1)
		d2, dm2 := d*float32(sc2), dmin*float32(m2)
		q := qs[32*k : 32*k+32]
		for l := range 32 {
			y[64*k+l] = float32(d1*float32(q[l]&0xf)) - dm1
			y[64*k+32+l] = float32(d2*float32(q[l]>>4)) - dm2
		}
	}
}

// dequantQ5K: d, dmin, scales[12], qh[32], qs[128]; bit 2k (2k+1) of qh[l]
// is the fifth bit of element l of sub-block 2k (2k+1).
func dequantQ5K(blk []byte, y []float32) {
	d, dmin := F16ToF32(binary.LittleEndian.Uint16(blk)), F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	scales, qh, qs := blk[4:16], blk[16:48], blk[48:176]
	for k := range 4 {
		sc1, m1 := ScaleMinK4(2*k, scales)
		sc2, m2 := ScaleMinK4(2*k+1, scales)
		d1, dm1 := d*float32(sc1), dmin*float32(m1)
		d2, dm2 := d*float32(sc2), dmin*float32(m2)
		q := qs[32*k : 32*k+32]
		for l := range 32 {
			h1, h2 := (qh[l]>>(2*k))&1, (qh[l]>>(2*k+1))&1
			y[64*k+l] = float32(d1*float32(q[l]&0xf|h1<<4)) - dm1
			y[64*k+32+l] = float32(d2*float32(q[l]>>4|h2<<4)) - dm2
		}
	}
}

// dequantQ6K: ql[128], qh[64], scales[16] (int8), d (f16). Each 128
// elements use 64 ql bytes and 32 qh bytes; element groups of 16 share a
// scale.
func dequantQ6K(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
	for n := range 2 {
		ql, qh, sc := blk[64*n:64*n+64], blk[128+32*n:128+32*n+32], blk[192+8*n:192+8*n+8]
		yy := y[128*n : 128*n+128]
		for l := range 32 {
			is := l / 16
			q1 := int(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
			q2 := int(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
			q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
			q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			yy[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
			yy[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
			yy[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
			yy[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
		}
	}
}

// Quantize encodes src in type t's ggml layout with the reference
// (round-to-nearest) quantizers, like ggml's quantize_row_*_ref. len(src)
// must be a multiple of t's block size.
func Quantize(t DType, src []float32) ([]byte, error) {
	if !t.Supported() {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedType, t)
	}
	if len(src)%t.BlockSize() != 0 {
		return nil, fmt.Errorf("%w: %d elements of %v, not a multiple of its block of %d", ErrLayout, len(src), t, t.BlockSize())
	}
	out := make([]byte, t.RowBytes(len(src)))
	le := binary.LittleEndian
	switch t {
	case F32:
		for i, v := range src {
			le.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range src {
			le.PutUint16(out[2*i:], F32ToF16(v))
		}
	case BF16:
		for i, v := range src {
			le.PutUint16(out[2*i:], F32ToBF16(v))
		}
	case Q4_0:
		for b := range len(src) / 32 {
			quantQ4_0(src[32*b:32*b+32], out[18*b:18*b+18])
		}
	case Q4_1:
		for b := range len(src) / 32 {
			quantQ4_1(src[32*b:32*b+32], out[20*b:20*b+20])
		}
	case Q5_0:
		for b := range len(src) / 32 {
			quantQ5_0(src[32*b:32*b+32], out[22*b:22*b+22])
		}
	case Q5_1:
		for b := range len(src) / 32 {
			quantQ5_1(src[32*b:32*b+32], out[24*b:24*b+24])
		}
	case Q8_0:
		for b := range len(src) / 32 {
			quantQ8_0(src[32*b:32*b+32], out[34*b:34*b+34])
		}
	case Q4_K:
		for b := range len(src) / qkK {
			quantQ4K(src[qkK*b:qkK*(b+1)], out[144*b:144*b+144])
		}
	case Q5_K:
		for b := range len(src) / qkK {
			quantQ5K(src[qkK*b:qkK*(b+1)], out[176*b:176*b+176])
		}
	case Q6_K:
		for b := range len(src) / qkK {
			quantQ6K(src[qkK*b:qkK*(b+1)], out[210*b:210*b+210])
		}
	default:
		bs, bb, f := t.BlockSize(), t.RowBytes(t.BlockSize()), lowQuant[t]
		for b := range len(src) / bs {
			f(src[bs*b:bs*(b+1)], out[bb*b:bb*(b+1)])
		}
	}
	return out, nil
}

// quantQ4_0: d = max/-8 where max is the value of largest magnitude;
// q = min(15, trunc(x/d + 8.5)).
func quantQ4_0(x []float32, blk []byte) {
	var amax, maxv float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, maxv = a, v
		}
	}
	d := maxv / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(blk, F32ToF16(d))
	for j := range 16 {
		q0 := min(15, int8(float32(x[j]*id)+8.5))
		q1 := min(15, int8(float32(x[j+16]*id)+8.5))
		blk[2+j] = byte(q0) | byte(q1)<<4
	}
}

// quantQ5_0: Q4_0 with a fifth bit: d = max/-16 where max is the value of
// largest magnitude; q = min(31, trunc(x/d + 16.5)); bit j of qh is the
// fifth bit of element j.
func quantQ5_0(x []float32, blk []byte) {
	var amax, maxv float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, maxv = a, v
		}
	}
	d := maxv / -16
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(blk, F32ToF16(d))
	var qh uint32
	for j := range 16 {
		q0 := min(31, int8(float32(x[j]*id)+16.5))
		q1 := min(31, int8(float32(x[j+16]*id)+16.5))
		blk[6+j] = byte(q0)&0xf | byte(q1)&0xf<<4
		qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
	}
	binary.LittleEndian.PutUint32(blk[2:], qh)
}

// minMax is the smallest and largest of x as ggml's Q4_1/Q5_1 quantizers
// find them: by < and > from ±FLT_MAX, so that a -0 after a +0 (or the
// reverse) does not replace it, as Go's min and max would.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// quantQ5_1: d = (max-min)/31, m = min; q = trunc((x-min)/d + 0.5), which
// is at most 31; bit j of qh is the fifth bit of element j.
func quantQ5_1(x []float32, blk []byte) {
	lo, hi := minMax(x)
	d := (hi - lo) / 31
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(blk, F32ToF16(d))
	binary.LittleEndian.PutUint16(blk[2:], F32ToF16(lo))
	var qh uint32
	for j := range 16 {
		q0 := uint8(float32((x[j]-lo)*id) + 0.5)
		q1 := uint8(float32((x[j+16]-lo)*id) + 0.5)
		blk[8+j] = q0&0xf | q1&0xf<<4
		qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
	}
	binary.LittleEndian.PutUint32(blk[4:], qh)
}

// quantQ4_1: d = (max-min)/15, m = min; q = min(15, trunc((x-min)/d + 0.5)).
func quantQ4_1(x []float32, blk []byte) {
	lo, hi := minMax(x)
	d := (hi - lo) / 15
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(blk, F32ToF16(d))
	binary.LittleEndian.PutUint16(blk[2:], F32ToF16(lo))
	for j := range 16 {
		q0 := min(15, int8(float32((x[j]-lo)*id)+0.5))
		q1 := min(15, int8(float32((x[j+16]-lo)*id)+0.5))
		blk[4+j] = byte(q0) | byte(q1)<<4
	}
}

// quantQ8_0: d = amax/127; q = round(x/d), halves away from zero.
func quantQ8_0(x []float32, blk []byte) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(blk, F32ToF16(d))
	for j, v := range x {
		blk[2+j] = byte(int8(math.Round(float64(float32(v * id)))))
	}
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// nearestInt rounds to the nearest integer, halves to even (ggml's
// nearest_int).
func nearestInt(f float32) int { return int(math.RoundToEven(float64(f))) }
