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
