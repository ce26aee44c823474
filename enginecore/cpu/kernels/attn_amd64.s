//go:build goexperiment.simd

#include "textflag.h"

// Two-row attention block kernels for AVX2 + FMA (attn_simd.go): Go
// 1.26's archsimd versions shuffle registers and bounds-check every load
// (about 3 GMAC/s). Per lane the operations and their order are those of
// scores1 and accum1, so a row has the same bits alone or in a pair:
//
//	scores: e += q[d]·k[d][p] (d even), o += q[d]·k[d][p] (d odd), out = (e+o)·s
//	accum:  y[i] += w[p]·v[p][i], p = 0, 1, …, n−1

// func scores2AVX2(out *float32, q *float32, k *float32, d int, s float32)
// out: [2][16]; q: [2][d] (d even, ≥ 2); k: [d][16].
TEXT ·scores2AVX2(SB), NOSPLIT, $0-36
	MOVQ out+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), DX
	MOVQ d+24(FP), CX
	LEAQ (SI)(CX*4), R8 // row 1
	SHRQ $1, CX
	VXORPS Y0, Y0, Y0 // row 0: even lo, even hi, odd lo, odd hi
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4 // row 1
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

scoreloop:
	VMOVUPS (DX), Y8
	VMOVUPS 32(DX), Y9
	VMOVUPS 64(DX), Y10
	VMOVUPS 96(DX), Y11
	VBROADCASTSS (SI), Y12
	VBROADCASTSS 4(SI), Y13
	VBROADCASTSS (R8), Y14
	VBROADCASTSS 4(R8), Y15
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y9, Y1
	VFMADD231PS Y13, Y10, Y2
	VFMADD231PS Y13, Y11, Y3
	VFMADD231PS Y14, Y8, Y4
	VFMADD231PS Y14, Y9, Y5
	VFMADD231PS Y15, Y10, Y6
	VFMADD231PS Y15, Y11, Y7
	ADDQ $128, DX
	ADDQ $8, SI
	ADDQ $8, R8
	DECQ CX
	JNZ  scoreloop

	VBROADCASTSS s+32(FP), Y12
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y6, Y4, Y4
	VADDPS Y7, Y5, Y5
	VMULPS Y12, Y0, Y0
	VMULPS Y12, Y1, Y1
	VMULPS Y12, Y4, Y4
	VMULPS Y12, Y5, Y5
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y4, 64(DI)
	VMOVUPS Y5, 96(DI)
	VZEROUPPER
	RET

// func accum2AVX2(y0, y1, w0, w1 *float32, n int, v *float32, stride int)
// y0, y1: 32 lanes each; w0, w1: n weights; v: n rows of ≥ 32, stride floats apart (n ≥ 1).
TEXT ·accum2AVX2(SB), NOSPLIT, $0-56
	MOVQ y0+0(FP), DI
	MOVQ y1+8(FP), BX
	MOVQ w0+16(FP), SI
	MOVQ w1+24(FP), R8
	MOVQ n+32(FP), CX
	MOVQ v+40(FP), DX
	MOVQ stride+48(FP), R9
	SHLQ $2, R9
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS (BX), Y4
	VMOVUPS 32(BX), Y5
	VMOVUPS 64(BX), Y6
	VMOVUPS 96(BX), Y7

accumloop:
	VMOVUPS (DX), Y8
	VMOVUPS 32(DX), Y9
	VMOVUPS 64(DX), Y10
	VMOVUPS 96(DX), Y11
	VBROADCASTSS (SI), Y12
	VBROADCASTSS (R8), Y13
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y9, Y1
	VFMADD231PS Y12, Y10, Y2
	VFMADD231PS Y12, Y11, Y3
	VFMADD231PS Y13, Y8, Y4
	VFMADD231PS Y13, Y9, Y5
	VFMADD231PS Y13, Y10, Y6
	VFMADD231PS Y13, Y11, Y7
	ADDQ R9, DX
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ  accumloop

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, (BX)
	VMOVUPS Y5, 32(BX)
	VMOVUPS Y6, 64(BX)
	VMOVUPS Y7, 96(BX)
	VZEROUPPER
	RET

// func scores1AVX2(out *float32, q *float32, k *float32, d int, s float32)
// scores2AVX2 for one row: out [16]; q [d] (d even, ≥ 2); k [d][16].
TEXT ·scores1AVX2(SB), NOSPLIT, $0-36
	MOVQ out+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), DX
	MOVQ d+24(FP), CX
	SHRQ $1, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

score1loop:
	VBROADCASTSS (SI), Y12
	VBROADCASTSS 4(SI), Y13
	VFMADD231PS (DX), Y12, Y0
	VFMADD231PS 32(DX), Y12, Y1
	VFMADD231PS 64(DX), Y13, Y2
	VFMADD231PS 96(DX), Y13, Y3
	ADDQ $128, DX
	ADDQ $8, SI
	DECQ CX
	JNZ  score1loop

	VBROADCASTSS s+32(FP), Y12
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VMULPS Y12, Y0, Y0
	VMULPS Y12, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VZEROUPPER
	RET

// func accum1x64AVX2(y *float32, w *float32, n int, v *float32, stride int)
// accum2AVX2 for one row and 64 lanes: y += Σ_{p<n} w[p]·v[p·stride:] (n ≥ 1).
TEXT ·accum1x64AVX2(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ v+24(FP), DX
	MOVQ stride+32(FP), R9
	SHLQ $2, R9
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7

accum1loop:
	VBROADCASTSS (SI), Y12
	VFMADD231PS (DX), Y12, Y0
	VFMADD231PS 32(DX), Y12, Y1
	VFMADD231PS 64(DX), Y12, Y2
	VFMADD231PS 96(DX), Y12, Y3
	VFMADD231PS 128(DX), Y12, Y4
	VFMADD231PS 160(DX), Y12, Y5
	VFMADD231PS 192(DX), Y12, Y6
	VFMADD231PS 224(DX), Y12, Y7
	ADDQ R9, DX
	ADDQ $4, SI
	DECQ CX
	JNZ  accum1loop

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET

// exp8's constants (avx2.go), in its order of use.
DATA expc<>+0x00(SB)/4, $0x42b0c0a5 // 88.3762626647949: clamp above
DATA expc<>+0x04(SB)/4, $0xc2aeac50 // -87.33654475: clamp below
DATA expc<>+0x08(SB)/4, $0x3fb8aa3b // log2 e
DATA expc<>+0x0c(SB)/4, $0xbf318000 // -ln2hi
DATA expc<>+0x10(SB)/4, $0x395e8083 // -ln2lo
DATA expc<>+0x14(SB)/4, $0x39506967 // polynomial, highest degree first
DATA expc<>+0x18(SB)/4, $0x3ab743ce
DATA expc<>+0x1c(SB)/4, $0x3c088908
DATA expc<>+0x20(SB)/4, $0x3d2aa9c1
DATA expc<>+0x24(SB)/4, $0x3e2aaaaa
DATA expc<>+0x28(SB)/4, $0x3f000000
DATA expc<>+0x2c(SB)/4, $0x3f800000 // 1
DATA expc<>+0x30(SB)/4, $127        // exponent bias
GLOBL expc<>(SB), RODATA|NOPTR, $52

// iota8x2 is the lane numbers 0–15, for softmaxRowAVX2's mask.
DATA iota8x2<>+0x00(SB)/8, $0x0000000100000000
DATA iota8x2<>+0x08(SB)/8, $0x0000000300000002
DATA iota8x2<>+0x10(SB)/8, $0x0000000500000004
DATA iota8x2<>+0x18(SB)/8, $0x0000000700000006
DATA iota8x2<>+0x20(SB)/8, $0x0000000900000008
DATA iota8x2<>+0x28(SB)/8, $0x0000000b0000000a
DATA iota8x2<>+0x30(SB)/8, $0x0000000d0000000c
DATA iota8x2<>+0x38(SB)/8, $0x0000000f0000000e
GLOBL iota8x2<>(SB), RODATA|NOPTR, $64

DATA neginf<>+0(SB)/4, $0xff800000 // −Inf
GLOBL neginf<>(SB), RODATA|NOPTR, $4

// func softmaxRowAVX2(s, l *float32, m, limit float32, cnt int) (bm float32, ok bool)
// One row of BlockSoftmax over a block's first cnt lanes (1 ≤ cnt ≤ 16):
// if a lane below cnt exceeds limit, ok = false, nothing is written and
// bm is the largest of those lanes; else s = exp8(s − m) on lanes below
// cnt and 0 above, l += s, ok = true. The exponential is exp8's,
// operation for operation. Y14/Y15 hold the lane masks (lane < cnt).
TEXT ·softmaxRowAVX2(SB), NOSPLIT, $0-37
	MOVQ s+0(FP), DI
	MOVQ l+8(FP), SI
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VPBROADCASTD cnt+24(FP), Y8
	VMOVDQU iota8x2<>+0(SB), Y14
	VMOVDQU iota8x2<>+32(SB), Y15
	VPCMPGTD Y14, Y8, Y14 // cnt > lane
	VPCMPGTD Y15, Y8, Y15
	VBROADCASTSS neginf<>(SB), Y11
	VANDPS Y14, Y0, Y12 // s where attended, −Inf elsewhere
	VANDNPS Y11, Y14, Y3
	VORPS Y3, Y12, Y12
	VANDPS Y15, Y1, Y13
	VANDNPS Y11, Y15, Y3
	VORPS Y3, Y13, Y13
	VBROADCASTSS limit+20(FP), Y2
	VCMPPS $0x1e, Y2, Y12, Y3 // GT_OQ
	VCMPPS $0x1e, Y2, Y13, Y4
	VORPS Y4, Y3, Y3
	VMOVMSKPS Y3, AX
	TESTL AX, AX
	JNZ  rescale

	VBROADCASTSS m+16(FP), Y2
	VSUBPS Y2, Y0, Y0
	VSUBPS Y2, Y1, Y1
	VBROADCASTSS expc<>+0x00(SB), Y2
	VMINPS Y2, Y0, Y0
	VMINPS Y2, Y1, Y1
	VBROADCASTSS expc<>+0x04(SB), Y2
	VMAXPS Y2, Y0, Y0
	VMAXPS Y2, Y1, Y1
	VBROADCASTSS expc<>+0x08(SB), Y2
	VMULPS Y2, Y0, Y4 // n = round(x·log2 e)
	VMULPS Y2, Y1, Y5
	VROUNDPS $0, Y4, Y4
	VROUNDPS $0, Y5, Y5
	VBROADCASTSS expc<>+0x0c(SB), Y2
	VFMADD231PS Y2, Y4, Y0 // r = x − n·ln2hi − n·ln2lo
	VFMADD231PS Y2, Y5, Y1
	VBROADCASTSS expc<>+0x10(SB), Y2
	VFMADD231PS Y2, Y4, Y0
	VFMADD231PS Y2, Y5, Y1
	VBROADCASTSS expc<>+0x14(SB), Y6 // p
	VMOVAPS Y6, Y7
	VBROADCASTSS expc<>+0x18(SB), Y2
	VFMADD213PS Y2, Y0, Y6 // p = p·r + c
	VFMADD213PS Y2, Y1, Y7
	VBROADCASTSS expc<>+0x1c(SB), Y2
	VFMADD213PS Y2, Y0, Y6
	VFMADD213PS Y2, Y1, Y7
	VBROADCASTSS expc<>+0x20(SB), Y2
	VFMADD213PS Y2, Y0, Y6
	VFMADD213PS Y2, Y1, Y7
	VBROADCASTSS expc<>+0x24(SB), Y2
	VFMADD213PS Y2, Y0, Y6
	VFMADD213PS Y2, Y1, Y7
	VBROADCASTSS expc<>+0x28(SB), Y2
	VFMADD213PS Y2, Y0, Y6
	VFMADD213PS Y2, Y1, Y7
	VMULPS Y0, Y0, Y8 // y = p·r² + r + 1
	VMULPS Y1, Y1, Y9
	VFMADD213PS Y0, Y8, Y6
	VFMADD213PS Y1, Y9, Y7
	VBROADCASTSS expc<>+0x2c(SB), Y2
	VADDPS Y2, Y6, Y6
	VADDPS Y2, Y7, Y7
	VCVTTPS2DQ Y4, Y4 // 2ⁿ = (n + 127) << 23
	VCVTTPS2DQ Y5, Y5
	VPBROADCASTD expc<>+0x30(SB), Y2
	VPADDD Y2, Y4, Y4
	VPADDD Y2, Y5, Y5
	VPSLLD $23, Y4, Y4
	VPSLLD $23, Y5, Y5
	VMULPS Y4, Y6, Y0
	VMULPS Y5, Y7, Y1
	VANDPS Y14, Y0, Y0 // 0 past cnt
	VANDPS Y15, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VMOVUPS Y0, (SI)
	VMOVUPS Y1, 32(SI)
	MOVB $1, ok+36(FP)
	VZEROUPPER
	RET

rescale:
	VMAXPS Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X3
	VMAXPS X3, X12, X12
	VPERMILPS $0x4e, X12, X3
	VMAXPS X3, X12, X12
	VPERMILPS $0xb1, X12, X3
	VMAXPS X3, X12, X12
	VMOVSS X12, bm+32(FP)
	MOVB $0, ok+36(FP)
	VZEROUPPER
	RET

// func halfToFloatF16C(dst *float32, src *uint16, n int)
// dst[0:8n] = float32(src[0:8n]), n ≥ 1.
TEXT ·halfToFloatF16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

halfloop:
	VCVTPH2PS (SI), Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  halfloop
	VZEROUPPER
	RET

// The float16 KV cache's kernels: scores2AVX2, scores1AVX2, accum2AVX2
// and accum1x64AVX2 with keys or values read as float16 and widened by
// VCVTPH2PS (F16C) on load. Widening is exact, and each lane's chain is
// the float32 kernel's, so a row has the bits the float32 kernels give
// on the converted block.

// func scores2HalfAVX2(out *float32, q *float32, k *uint16, d int, s float32)
// out: [2][16]; q: [2][d] (d even, ≥ 2); k: [d][16] float16.
TEXT ·scores2HalfAVX2(SB), NOSPLIT, $0-36
	MOVQ out+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), DX
	MOVQ d+24(FP), CX
	LEAQ (SI)(CX*4), R8 // row 1
	SHRQ $1, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

hscoreloop:
	VCVTPH2PS (DX), Y8
	VCVTPH2PS 16(DX), Y9
	VCVTPH2PS 32(DX), Y10
	VCVTPH2PS 48(DX), Y11
	VBROADCASTSS (SI), Y12
	VBROADCASTSS 4(SI), Y13
	VBROADCASTSS (R8), Y14
	VBROADCASTSS 4(R8), Y15
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y9, Y1
	VFMADD231PS Y13, Y10, Y2
	VFMADD231PS Y13, Y11, Y3
	VFMADD231PS Y14, Y8, Y4
	VFMADD231PS Y14, Y9, Y5
	VFMADD231PS Y15, Y10, Y6
	VFMADD231PS Y15, Y11, Y7
	ADDQ $64, DX
	ADDQ $8, SI
	ADDQ $8, R8
	DECQ CX
	JNZ  hscoreloop

	VBROADCASTSS s+32(FP), Y12
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y6, Y4, Y4
	VADDPS Y7, Y5, Y5
	VMULPS Y12, Y0, Y0
	VMULPS Y12, Y1, Y1
	VMULPS Y12, Y4, Y4
	VMULPS Y12, Y5, Y5
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y4, 64(DI)
	VMOVUPS Y5, 96(DI)
	VZEROUPPER
	RET

// func scores1HalfAVX2(out *float32, q *float32, k *uint16, d int, s float32)
// scores2HalfAVX2 for one row.
TEXT ·scores1HalfAVX2(SB), NOSPLIT, $0-36
	MOVQ out+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), DX
	MOVQ d+24(FP), CX
	SHRQ $1, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

hscore1loop:
	VCVTPH2PS (DX), Y8
	VCVTPH2PS 16(DX), Y9
	VCVTPH2PS 32(DX), Y10
	VCVTPH2PS 48(DX), Y11
	VBROADCASTSS (SI), Y12
	VBROADCASTSS 4(SI), Y13
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y9, Y1
	VFMADD231PS Y13, Y10, Y2
	VFMADD231PS Y13, Y11, Y3
	ADDQ $64, DX
	ADDQ $8, SI
	DECQ CX
	JNZ  hscore1loop

	VBROADCASTSS s+32(FP), Y12
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VMULPS Y12, Y0, Y0
	VMULPS Y12, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VZEROUPPER
	RET

// func accum2HalfAVX2(y0, y1, w0, w1 *float32, n int, v *uint16, stride int)
// accum2AVX2 with float16 value rows, stride halves apart (n ≥ 1).
TEXT ·accum2HalfAVX2(SB), NOSPLIT, $0-56
	MOVQ y0+0(FP), DI
	MOVQ y1+8(FP), BX
	MOVQ w0+16(FP), SI
	MOVQ w1+24(FP), R8
	MOVQ n+32(FP), CX
	MOVQ v+40(FP), DX
	MOVQ stride+48(FP), R9
	SHLQ $1, R9
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS (BX), Y4
	VMOVUPS 32(BX), Y5
	VMOVUPS 64(BX), Y6
	VMOVUPS 96(BX), Y7

haccumloop:
	VCVTPH2PS (DX), Y8
	VCVTPH2PS 16(DX), Y9
	VCVTPH2PS 32(DX), Y10
	VCVTPH2PS 48(DX), Y11
	VBROADCASTSS (SI), Y12
	VBROADCASTSS (R8), Y13
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y9, Y1
	VFMADD231PS Y12, Y10, Y2
	VFMADD231PS Y12, Y11, Y3
	VFMADD231PS Y13, Y8, Y4
	VFMADD231PS Y13, Y9, Y5
	VFMADD231PS Y13, Y10, Y6
	VFMADD231PS Y13, Y11, Y7
	ADDQ R9, DX
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ  haccumloop

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, (BX)
	VMOVUPS Y5, 32(BX)
	VMOVUPS Y6, 64(BX)
	VMOVUPS Y7, 96(BX)
	VZEROUPPER
	RET

// func accum1x64HalfAVX2(y *float32, w *float32, n int, v *uint16, stride int)
// accum1x64AVX2 with float16 value rows, stride halves apart (n ≥ 1).
TEXT ·accum1x64HalfAVX2(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ v+24(FP), DX
	MOVQ stride+32(FP), R9
	SHLQ $1, R9
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7

haccum1loop:
	VBROADCASTSS (SI), Y12
	VCVTPH2PS (DX), Y8
	VCVTPH2PS 16(DX), Y9
	VCVTPH2PS 32(DX), Y10
	VCVTPH2PS 48(DX), Y11
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y9, Y1
	VFMADD231PS Y12, Y10, Y2
	VFMADD231PS Y12, Y11, Y3
	VCVTPH2PS 64(DX), Y8
	VCVTPH2PS 80(DX), Y9
	VCVTPH2PS 96(DX), Y10
	VCVTPH2PS 112(DX), Y11
	VFMADD231PS Y12, Y8, Y4
	VFMADD231PS Y12, Y9, Y5
	VFMADD231PS Y12, Y10, Y6
	VFMADD231PS Y12, Y11, Y7
	ADDQ R9, DX
	ADDQ $4, SI
	DECQ CX
	JNZ  haccum1loop

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET
