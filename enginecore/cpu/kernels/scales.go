package kernels

import "github.com/tandem-llm/tandem/enginecore/model"

// scales are a matrix's D and M, as float16 when every one is exactly
// representable (Q4_0, Q4_1, Q8_0, Q5_0: they are the file's own f16
// scales) — decode is memory-bound, and this saves 17% of a Q4_1 matrix —
// else float32 (K-quants, whose sub-block scales are products, and Q5_1,
// whose exact f16 D and M go to Q5_K's float32 kernels).
type scales struct {
	f []float32 // nil when h or k is used
	h []uint16  // float16 bits
	// k: Q4_K as the file keeps it, 2.5 bytes of scales per 32 weights
	// instead of float32 D and M (8): per group [nb][32] bytes, each
	// row's 6-bit scale then 6-bit min of the block, then [nb/8][32]
	// float16 bits, each row's d then dmin of the super-block; D =
	// d·scale and M = -(dmin·min), as ggml computes them. Packed so
	// where the kernels read it (the VNNI level and above).
	k []byte
	// e: MXFP4's scales as the file keeps them, one E8M0 byte per 32
	// (2^(e−128), model.MXFP4Scale) instead of float32: famLUT only,
	// where the kernels convert them (expandScalesE8M0, LUT1E).
	e []byte
	// noM: 4-bit blocks whose offset M is -8·D (Q4_0) keep D only, so a
	// packed Q4_0 matrix is as small as the file's (0.5625 bytes a
	// weight, not 0.625); the kernels compute M = D·(-8), which is exact.
	noM bool
}

// kBlockBytes is a compact Q4_K block's scale bytes per group,
// the super-block's d and dmin included (32 + 64/8).
const kBlockBytes = 40

// slice returns scales [lo, hi); for k, whole groups only.
func (s scales) slice(lo, hi int) scales {
	switch {
	case s.h != nil:
		return scales{h: s.h[lo:hi], noM: s.noM}
	case s.k != nil:
		return scales{k: s.k[lo:hi]}
	case s.e != nil:
		return scales{e: s.e[lo:hi]}
	}
	return scales{f: s.f[lo:hi], noM: s.noM}
}

// nibStride is the scales per block of a 4-bit matrix: D [16] and M [16],
// or D alone (noM).
func (s scales) nibStride() int {
	if s.noM {
		return GroupRows
	}
	return 2 * GroupRows
}

// nibDM returns D and M of row r of block j of a 4-bit group's scales.
func (s scales) nibDM(j, r int) (d, m float32) {
	if s.k != nil {
		nb := len(s.k) / kBlockBytes
		sb := s.k[nb*32+j/8*64:]
		dd, dmin := half(sb[2*r:]), half(sb[32+2*r:])
		return dd * float32(s.k[j*32+r]), -(dmin * float32(s.k[j*32+16+r]))
	}
	o := j * s.nibStride()
	d = s.at(o + r)
	if s.noM {
		return d, d * -8
	}
	return d, s.at(o + GroupRows + r)
}

// at returns scale i as float32.
func (s scales) at(i int) float32 {
	switch {
	case s.h != nil:
		return model.F16ToF32(s.h[i])
	case s.e != nil:
		return model.MXFP4Scale(s.e[i])
	}
	return s.f[i]
}

// compress switches to float16 if that is exact for every scale.
func (s *scales) compress() {
	h := make([]uint16, len(s.f))
	for i, v := range s.f {
		h[i] = model.F32ToF16(v)
		if model.F16ToF32(h[i]) != v {
			return
		}
	}
	s.f, s.h = nil, h
}

// q6D returns D of row r, half h of block j of a compact Q6_K group's
// scales (k), as decodeQ6K computes it.
func (s scales) q6D(j, h, r int) float32 {
	nb := len(s.k) / q6ScaleBytes
	return half(s.k[nb*32+j/8*32+2*r:]) * float32(int8(s.k[j*32+16*h+r]))
}
