//go:build goexperiment.simd

#include "textflag.h"

// byteGroup1 (simd.go) for one and for four tokens, for 8-bit weights with
// one float16 scale per 32 elements and no offsets (Q8_0), in assembly for
// the same reason as nib4_amd64.s. Same integer sums and float operations
// in the same order as byteGroup1, so the results have the same bits:
// per chunk Σ = madd(maddubs(|x|, ±w)), per block
// acc += float(Σ chunks 0–3 + Σ chunks 4–7) · (d·xd).
//
// Weights are signed, so each chunk's weights get x's signs
// ((w ^ m) − m, m = -1 where x < 0) and multiply |x| (maddubs needs one
// unsigned operand).

// CHUNK8 adds chunk off's products for the token whose |x| row is xr into
// the int32 sums s; Z8 holds the chunk, DX = (sign row − |x| row).
#define CHUNK8(xr, s, off) \
	VPBROADCASTD off(xr)(DX*1), Z11 \
	VPXORD Z11, Z8, Z12 \
	VPSUBB Z11, Z12, Z12 \
	VPBROADCASTD off(xr), Z11 \
	VPMADDUBSW Z12, Z11, Z12 \
	VPMADDWD Z30, Z12, Z12 \
	VPADDD Z12, s, s

// func byteGroup4Q8AVX512(qs *byte, sc *uint16, xa *uint8, xm *int8, in int, xd *float32, nb int, res *[4][GroupRows]float32)
//
// Registers: Z0–Z3 acc, Z4–Z7 int32 sums, Z8 chunk, Z11/Z12 temps, Z13 d,
// Z15 temp, Z30 int16 ones. SI qs, DI scales, R8–R11 |x| rows of tokens
// 0–3, DX sign rows − |x| rows, R12 xd of token 0, BX nb·4, CX blocks
// left.
TEXT ·byteGroup4Q8AVX512(SB), NOSPLIT, $0-64
	MOVQ qs+0(FP), SI
	MOVQ sc+8(FP), DI
	MOVQ xa+16(FP), R8
	MOVQ xm+24(FP), DX
	SUBQ R8, DX
	MOVQ in+32(FP), AX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	MOVQ xd+40(FP), R12
	MOVQ nb+48(FP), CX
	MOVQ CX, BX
	SHLQ $2, BX
	MOVL $0x00010001, AX
	VPBROADCASTD AX, Z30
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ CX, CX
	JZ done4

block4:
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

#define CHUNK4(off) \
	VMOVDQU64 (off*16)(SI), Z8 \
	CHUNK8(R8, Z4, off) \
	CHUNK8(R9, Z5, off) \
	CHUNK8(R10, Z6, off) \
	CHUNK8(R11, Z7, off)

	CHUNK4(0)
	CHUNK4(4)
	CHUNK4(8)
	CHUNK4(12)
	CHUNK4(16)
	CHUNK4(20)
	CHUNK4(24)
	CHUNK4(28)

	VCVTPH2PS (DI), Z13
	MOVQ R12, AX

#define SCALE8(s, acc) \
	VCVTDQ2PS s, s \
	VBROADCASTSS (AX), Z15 \
	VMULPS Z15, Z13, Z15 \
	VFMADD231PS Z15, s, acc

	SCALE8(Z4, Z0)
	ADDQ BX, AX
	SCALE8(Z5, Z1)
	ADDQ BX, AX
	SCALE8(Z6, Z2)
	ADDQ BX, AX
	SCALE8(Z7, Z3)

	ADDQ $512, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ CX
	JNZ block4

done4:
	MOVQ res+56(FP), AX
	VMOVUPS Z0, (AX)
	VMOVUPS Z1, 64(AX)
	VMOVUPS Z2, 128(AX)
	VMOVUPS Z3, 192(AX)
	VZEROUPPER
	RET

// func byteGroup1Q8AVX512(qs *byte, sc *uint16, xa *uint8, xm *int8, xd *float32, nb int, res *[GroupRows]float32)
//
// One token: two int32 sums (chunks 0–3 and 4–7, as byteGroup1 adds
// them) to shorten the dependency chains.
TEXT ·byteGroup1Q8AVX512(SB), NOSPLIT, $0-56
	MOVQ qs+0(FP), SI
	MOVQ sc+8(FP), DI
	MOVQ xa+16(FP), R8
	MOVQ xm+24(FP), DX
	SUBQ R8, DX
	MOVQ xd+32(FP), R12
	MOVQ nb+40(FP), CX
	MOVL $0x00010001, AX
	VPBROADCASTD AX, Z30
	VPXORD Z0, Z0, Z0
	TESTQ CX, CX
	JZ done1

block1:
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5

#define CHUNK1(s, off) \
	VMOVDQU64 (off*16)(SI), Z8 \
	CHUNK8(R8, s, off)

	CHUNK1(Z4, 0)
	CHUNK1(Z4, 4)
	CHUNK1(Z4, 8)
	CHUNK1(Z4, 12)
	CHUNK1(Z5, 16)
	CHUNK1(Z5, 20)
	CHUNK1(Z5, 24)
	CHUNK1(Z5, 28)
	VPADDD Z5, Z4, Z4
	VCVTPH2PS (DI), Z13
	MOVQ R12, AX
	SCALE8(Z4, Z0)

	ADDQ $512, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $4, R12
	DECQ CX
	JNZ block1

done1:
	MOVQ res+48(FP), AX
	VMOVUPS Z0, (AX)
	VZEROUPPER
	RET
