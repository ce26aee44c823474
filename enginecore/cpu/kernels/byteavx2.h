// The AVX2 pieces of the byte kernels that avx2_amd64.s, the K-quant
// four-token kernels (bytek_amd64.s) and the table-type kernel
// (lut_amd64.s) share: scale loads, a chunk half's products and the
// float epilogue (Y15 = ones16, Y13 the scales, Y12 and Y14 scratch).

// AHEAD4 and AHEAD8 ask for the 4 or 8 cache lines 1 KiB past SI:
// the one-token kernels' weights (256-byte blocks: the 4-bit and table
// kernels; 512-byte: the byte kernels) ahead of the hardware prefetcher.
#define AHEAD4 \
	PREFETCHT0 1024(SI) \
	PREFETCHT0 1088(SI) \
	PREFETCHT0 1152(SI) \
	PREFETCHT0 1216(SI)

#define AHEAD8 \
	AHEAD4 \
	PREFETCHT0 1280(SI) \
	PREFETCHT0 1344(SI) \
	PREFETCHT0 1408(SI) \
	PREFETCHT0 1472(SI)

// Scale loads: 8 scales at off(DI) into y, from float16 (F16C) or float32.
#define LDH(off, y) VCVTPH2PS off(DI), y
#define LDF(off, y) VMOVUPS off(DI), y

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

// The four-token kernels' products (one half: 8 rows). Each chunk half's
// |w| (Y9) is taken once; each token's signed q (DX bytes on from its
// |x| row xr) gets w's signs: maddubs(|w|, q·sign(w)) = the products
// w·q in pairs, exactly (|q| ≤ 127, |w| ≤ 128).

// BTOKEN adds one token's products with chunk half Y8 into the int32
// sums s (pairs summed with ones, Y15).
#define BTOKEN(xr, s, off) \
	VPBROADCASTD off(xr)(DX*1), Y10 \
	VPSIGNB Y8, Y10, Y10 \
	VPMADDUBSW Y10, Y9, Y10 \
	VPMADDWD Y15, Y10, Y10 \
	VPADDD Y10, s, s

// BTOKEN16 adds them into int16 sums s instead, for weights |w| ≤ 32:
// four chunks put 8 products in a lane, at most 8·32·127 = 32512.
// BWIDEN4 then sums the lanes in pairs into int32.
#define BTOKEN16(xr, s, off) \
	VPBROADCASTD off(xr)(DX*1), Y10 \
	VPSIGNB Y8, Y10, Y10 \
	VPMADDUBSW Y10, Y9, Y10 \
	VPADDW Y10, s, s

// BCHUNK4 and BCHUNK4S add chunk half off (off·16 bytes on in SI) for
// the four tokens (|x| rows R8–R11): into the int32 sums Y4–Y7, or into
// the int16 sums s0–s3.
#define BCHUNK4(off) \
	VMOVDQU (off*16)(SI), Y8 \
	VPABSB Y8, Y9 \
	BTOKEN(R8, Y4, off) \
	BTOKEN(R9, Y5, off) \
	BTOKEN(R10, Y6, off) \
	BTOKEN(R11, Y7, off)

#define BCHUNK4S(off, s0, s1, s2, s3) \
	VMOVDQU (off*16)(SI), Y8 \
	VPABSB Y8, Y9 \
	BTOKEN16(R8, s0, off) \
	BTOKEN16(R9, s1, off) \
	BTOKEN16(R10, s2, off) \
	BTOKEN16(R11, s3, off)

// BWIDEN4 turns the int16 sums s0–s3 into int32 ones (pairs summed).
#define BWIDEN4(s0, s1, s2, s3) \
	VPMADDWD Y15, s0, s0 \
	VPMADDWD Y15, s1, s1 \
	VPMADDWD Y15, s2, s2 \
	VPMADDWD Y15, s3, s3

// BZERO4 clears the four tokens' int32 sums.
#define BZERO4 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7

// BSCALE4 scales the four tokens' sums with the 8 scales LD loads from
// off(DI) (LDH float16, LDF float32).
#define BSCALE4(LD, off) \
	LD(off, Y13) \
	MOVQ R12, AX \
	BSCALE(Y4, Y0) \
	ADDQ BX, AX \
	BSCALE(Y5, Y1) \
	ADDQ BX, AX \
	BSCALE(Y6, Y2) \
	ADDQ BX, AX \
	BSCALE(Y7, Y3)
