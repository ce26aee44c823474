package model

import "math"

// Half-precision conversions, exact and round-to-nearest-even like ggml's
// GGML_FP32_TO_FP16 / numpy's astype(float16) and ggml_compute_fp32_to_bf16.

// F16ToF32 converts IEEE binary16 bits to float32 (exact).
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f: // Inf, NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0: // zero, subnormal: mant · 2⁻²⁴
		f := float32(mant) * 0x1p-24
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// F32ToF16 converts float32 to IEEE binary16 bits, rounding to nearest even;
// out-of-range values become ±Inf, NaN stays NaN.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased binary16 exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // subnormal result (or zero): value = h · 2⁻²⁴
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - e)
		h := mant >> shift
		rem, half := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is right, up to Inf
	}
	return sign | uint16(h)
}

// BF16ToF32 converts bfloat16 bits to float32 (exact).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 converts float32 to bfloat16 bits, rounding to nearest even and
// quieting NaNs (ggml_compute_fp32_to_bf16).
func F32ToBF16(f float32) uint16 {
	n := math.Float32bits(f)
	if n&0x7fffffff > 0x7f800000 {
		return uint16(n>>16) | 64
	}
	return uint16((uint64(n) + uint64(0x7fff+(n>>16)&1)) >> 16)
}
