// The AVX2 pieces of the byte kernels that avx2_amd64.s and the
// table-type kernel (lut_amd64.s) share: a chunk half's products and
// the float epilogue (Y15 = ones16, Y13 the scales, Y12 and Y14 scratch).

// BPROD adds the products of the chunk half in w with the token whose
// |x| bytes are broadcast in xa and sign mask in xm into the int32 sums
// s: maddubs(|x|, (w^m)−m), then pairs summed with ones (Y15).
#define BPROD(w, xa, xm, s) \
	VPXOR xm, w, Y12 \
	VPSUBB xm, Y12, Y12 \
	VPMADDUBSW Y12, xa, Y12 \
	VPMADDWD Y15, Y12, Y12 \
	VPADDD Y12, s, s

// BSCALE: acc += float(s)·(d·xd) with d in Y13, xd at (AX).
#define BSCALE(s, acc) \
	VCVTDQ2PS s, s \
	VBROADCASTSS (AX), Y14 \
	VMULPS Y14, Y13, Y14 \
	VFMADD231PS Y14, s, acc

// BSCALE1 scales the one-token sums sa (rows 0–7) and sb (rows 8–15)
// with the float32 scales at off(DI) and off+32(DI); xd at (R12).
#define BSCALE1(sa, sb, off) \
	MOVQ R12, AX \
	VMOVUPS off(DI), Y13 \
	BSCALE(sa, Y0) \
	VMOVUPS (off+32)(DI), Y13 \
	BSCALE(sb, Y1)
