//go:build goexperiment.simd

#include "textflag.h"
#include "nibavx2.h"
#include "byteavx2.h"

// The four-token K-quant byte kernels: Q6_K (two scales per 32-block, one
// per 16 elements) and Q5_K (one scale and one offset per 32), float32
// scales laid out per block as D[nsub][16] then M[16] (Q5_K); the types
// that decode into them (Q3_K, IQ4_XS, MXFP4; Q5_1) too. Per row, as
// byteGroup256 computes it:
//
//	Q6_K: acc += float(Σ chunks 0–3)·(D₀·xd), then float(Σ 4–7)·(D₁·xd)
//	Q5_K: acc += float(Σ chunks 0–7)·(D·xd), then acc += M·xs
//
// The sums of four chunks (16 elements) fit int16 where |w| ≤ 32 (Q6_K's
// q−32, Q3_K's q, MXFP4's doubled values, Q5_K's and Q5_1's q), so those
// add the pairs with VPADDW and widen once per 16 elements
// (byteGroup4Q6SAVX2, byteGroup4Q5AVX2) instead of once per 4; IQ4_XS's
// table values reach ±127 and keep the int32 sums (byteGroup4Q6AVX2).
// The int32 sums are the same either way, so the bits are too.
//
// Registers as in byteGroup4Q8AVX2 (avx2_amd64.s), plus R13 xs of token
// 0; Q5_K's second half sums in Y11–Y14 before they are widened.

// BMIN4 adds M·xs for the four tokens, M the 8 float32 offsets at
// off(DI).
#define BMIN4(off) \
	VMOVUPS off(DI), Y13 \
	MOVQ R13, AX \
	VBROADCASTSS (AX), Y14 \
	VFMADD231PS Y14, Y13, Y0 \
	ADDQ BX, AX \
	VBROADCASTSS (AX), Y14 \
	VFMADD231PS Y14, Y13, Y1 \
	ADDQ BX, AX \
	VBROADCASTSS (AX), Y14 \
	VFMADD231PS Y14, Y13, Y2 \
	ADDQ BX, AX \
	VBROADCASTSS (AX), Y14 \
	VFMADD231PS Y14, Y13, Y3

#define BLOCK4Q6 \
	BZERO4 \
	BCHUNK4(0) \
	BCHUNK4(4) \
	BCHUNK4(8) \
	BCHUNK4(12) \
	BSCALE4(LDF, 0) \
	BZERO4 \
	BCHUNK4(16) \
	BCHUNK4(20) \
	BCHUNK4(24) \
	BCHUNK4(28) \
	BSCALE4(LDF, 64)

// BHALF4S adds the chunk halves c0–c3 (one scale's 16 elements) into
// int16 sums Y4–Y7 and widens them.
#define BHALF4S(c0, c1, c2, c3) \
	BCHUNK4S(c0, Y4, Y5, Y6, Y7) \
	BCHUNK4S(c1, Y4, Y5, Y6, Y7) \
	BCHUNK4S(c2, Y4, Y5, Y6, Y7) \
	BCHUNK4S(c3, Y4, Y5, Y6, Y7) \
	BWIDEN4(Y4, Y5, Y6, Y7)

#define BLOCK4Q6S \
	BZERO4 \
	BHALF4S(0, 4, 8, 12) \
	BSCALE4(LDF, 0) \
	BZERO4 \
	BHALF4S(16, 20, 24, 28) \
	BSCALE4(LDF, 64)

#define BLOCK4Q5 \
	BZERO4 \
	BHALF4S(0, 4, 8, 12) \
	VPXOR Y11, Y11, Y11 \
	VPXOR Y12, Y12, Y12 \
	VPXOR Y13, Y13, Y13 \
	VPXOR Y14, Y14, Y14 \
	BCHUNK4S(16, Y11, Y12, Y13, Y14) \
	BCHUNK4S(20, Y11, Y12, Y13, Y14) \
	BCHUNK4S(24, Y11, Y12, Y13, Y14) \
	BCHUNK4S(28, Y11, Y12, Y13, Y14) \
	BWIDEN4(Y11, Y12, Y13, Y14) \
	VPADDD Y11, Y4, Y4 \
	VPADDD Y12, Y5, Y5 \
	VPADDD Y13, Y6, Y6 \
	VPADDD Y14, Y7, Y7 \
	BSCALE4(LDF, 0) \
	BMIN4(64)

// BYTE4K is the body of the four-token K-quant byte kernels (qs *byte,
// sc *float32, xa *uint8, xq *int8, in int, xd, xs *float32, nb int,
// res *[4][16]float32, half int): 128 scale bytes per block, 32 per half.
#define BYTE4K(BLOCK) \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ xa+16(FP), R8 \
	MOVQ xq+24(FP), DX \
	SUBQ R8, DX \
	MOVQ in+32(FP), AX \
	LEAQ (R8)(AX*1), R9 \
	LEAQ (R9)(AX*1), R10 \
	LEAQ (R10)(AX*1), R11 \
	MOVQ xd+40(FP), R12 \
	MOVQ xs+48(FP), R13 \
	MOVQ nb+56(FP), CX \
	MOVQ half+72(FP), AX \
	SHLQ $5, AX \
	ADDQ AX, DI \
	ADDQ AX, SI \
	MOVQ CX, BX \
	SHLQ $2, BX \
	VMOVDQU ones16<>(SB), Y15 \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3 \
	TESTQ CX, CX \
	JZ done \
block: \
	BLOCK \
	ADDQ $512, SI \
	ADDQ $128, DI \
	ADDQ $32, R8 \
	ADDQ $32, R9 \
	ADDQ $32, R10 \
	ADDQ $32, R11 \
	ADDQ $4, R12 \
	ADDQ $4, R13 \
	DECQ CX \
	JNZ block \
done: \
	MOVQ res+64(FP), AX \
	MOVQ half+72(FP), R14 \
	SHLQ $5, R14 \
	ADDQ R14, AX \
	VMOVUPS Y0, (AX) \
	VMOVUPS Y1, 64(AX) \
	VMOVUPS Y2, 128(AX) \
	VMOVUPS Y3, 192(AX) \
	VZEROUPPER \
	RET

// func byteGroup4Q6AVX2(qs *byte, sc *float32, xa *uint8, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)
TEXT ·byteGroup4Q6AVX2(SB), NOSPLIT, $0-80
	BYTE4K(BLOCK4Q6)

// func byteGroup4Q6SAVX2(qs *byte, sc *float32, xa *uint8, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)
TEXT ·byteGroup4Q6SAVX2(SB), NOSPLIT, $0-80
	BYTE4K(BLOCK4Q6S)

// func byteGroup4Q5AVX2(qs *byte, sc *float32, xa *uint8, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)
TEXT ·byteGroup4Q5AVX2(SB), NOSPLIT, $0-80
	BYTE4K(BLOCK4Q5)
