//go:build goexperiment.simd

#include "textflag.h"

// func nibGroup4AVX512(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)
//
// nibGroup4 (simd.go) for float16 scales, in assembly: Go 1.26 spills
// most of that function's registers (it allocates 16 of AVX-512's 32) and
// rebuilds every broadcast from a scalar load, so it runs at about half
// this speed. Same integer sums and the same float operations in the same
// order as nibGroup1/nibGroup4, so the results have the same bits:
// per block acc += float(Σ) · (d·xd), then acc += m · xs.
//
// Registers: Z0–Z3 acc (token 0–3), Z4–Z7 int16 sums, Z8 chunk, Z9 low
// nibbles, Z10 high nibbles, Z11/Z12 temps, Z13 d, Z14 m, Z15/Z16 temps,
// Z30 int16 ones, Z31 0x0f bytes. SI qs, DI scales, R8–R11 x rows, R12
// xd, R13 xs (token 0's; token t is t·nb·4 bytes on, BX = nb·4), CX
// blocks left, DX in.

#define TOKEN(xr, s, lo, hi) \
	VPBROADCASTD lo(xr), Z11 \
	VPMADDUBSW Z11, Z9, Z12 \
	VPADDW Z12, s, s \
	VPBROADCASTD hi(xr), Z11 \
	VPMADDUBSW Z11, Z10, Z12 \
	VPADDW Z12, s, s

#define CHUNK(off, lo, hi) \
	VMOVDQU64 off(SI), Z8 \
	VPANDD Z31, Z8, Z9 \
	VPSRLW $4, Z8, Z10 \
	VPANDD Z31, Z10, Z10 \
	TOKEN(R8, Z4, lo, hi) \
	TOKEN(R9, Z5, lo, hi) \
	TOKEN(R10, Z6, lo, hi) \
	TOKEN(R11, Z7, lo, hi)

// SCALE adds the block's int16 sums s into acc: acc += float(Σ)·(d·xd),
// then acc += m·xs, with xd at (xdr) and xs at (xsr).
#define SCALE(s, acc, xdr, xsr) \
	VPMADDWD Z30, s, s \
	VCVTDQ2PS s, s \
	VBROADCASTSS (xdr), Z15 \
	VMULPS Z15, Z13, Z15 \
	VFMADD231PS Z15, s, acc \
	VBROADCASTSS (xsr), Z16 \
	VFMADD231PS Z16, Z14, acc

#define CHUNK1(off, lo, hi) \
	VMOVDQU64 off(SI), Z8 \
	VPANDD Z31, Z8, Z9 \
	VPSRLW $4, Z8, Z10 \
	VPANDD Z31, Z10, Z10 \
	TOKEN(R8, Z4, lo, hi)

// Scale loads: D into Z13 and M into Z14 from the block's float16
// scales at DI; Q4_0 keeps D only (M = D·(-8), exact).
#define LDDM VCVTPH2PS (DI), Z13; VCVTPH2PS 32(DI), Z14
#define LDQ40 VCVTPH2PS (DI), Z13; VMULPS.BCST minus8<>(SB), Z13, Z14

DATA minus8<>+0(SB)/4, $-8.0
GLOBL minus8<>(SB), RODATA|NOPTR, $4

// NIB4A is the body of nibGroup4AVX512: registers as described there.
#define NIB4A(LDSC, scstep) \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ xq+16(FP), R8 \
	MOVQ in+24(FP), DX \
	MOVQ xd+32(FP), R12 \
	MOVQ xs+40(FP), R13 \
	MOVQ nb+48(FP), CX \
	LEAQ (R8)(DX*1), R9 \
	LEAQ (R9)(DX*1), R10 \
	LEAQ (R10)(DX*1), R11 \
	MOVQ CX, BX \
	SHLQ $2, BX \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z31 \
	MOVL $0x00010001, AX \
	VPBROADCASTD AX, Z30 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	TESTQ CX, CX \
	JZ done \
block: \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	CHUNK(0, 0, 16) \
	CHUNK(64, 4, 20) \
	CHUNK(128, 8, 24) \
	CHUNK(192, 12, 28) \
	LDSC \
	SCALE(Z4, Z0, R12, R13) \
	LEAQ (R12)(BX*1), AX \
	LEAQ (R13)(BX*1), R14 \
	SCALE(Z5, Z1, AX, R14) \
	ADDQ BX, AX \
	ADDQ BX, R14 \
	SCALE(Z6, Z2, AX, R14) \
	ADDQ BX, AX \
	ADDQ BX, R14 \
	SCALE(Z7, Z3, AX, R14) \
	ADDQ $256, SI \
	ADDQ $scstep, DI \
	ADDQ $32, R8 \
	ADDQ $32, R9 \
	ADDQ $32, R10 \
	ADDQ $32, R11 \
	ADDQ $4, R12 \
	ADDQ $4, R13 \
	DECQ CX \
	JNZ block \
done: \
	MOVQ res+56(FP), AX \
	VMOVUPS Z0, (AX) \
	VMOVUPS Z1, 64(AX) \
	VMOVUPS Z2, 128(AX) \
	VMOVUPS Z3, 192(AX) \
	VZEROUPPER \
	RET

// NIB1A is the body of nibGroup1AVX512.
#define NIB1A(LDSC, scstep) \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ xq+16(FP), R8 \
	MOVQ xd+24(FP), R12 \
	MOVQ xs+32(FP), R13 \
	MOVQ nb+40(FP), CX \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z31 \
	MOVL $0x00010001, AX \
	VPBROADCASTD AX, Z30 \
	VPXORD Z0, Z0, Z0 \
	TESTQ CX, CX \
	JZ done1 \
block1: \
	VPXORD Z4, Z4, Z4 \
	CHUNK1(0, 0, 16) \
	CHUNK1(64, 4, 20) \
	CHUNK1(128, 8, 24) \
	CHUNK1(192, 12, 28) \
	LDSC \
	SCALE(Z4, Z0, R12, R13) \
	ADDQ $256, SI \
	ADDQ $scstep, DI \
	ADDQ $32, R8 \
	ADDQ $4, R12 \
	ADDQ $4, R13 \
	DECQ CX \
	JNZ block1 \
done1: \
	MOVQ res+48(FP), AX \
	VMOVUPS Z0, (AX) \
	VZEROUPPER \
	RET

TEXT ·nibGroup4AVX512(SB), NOSPLIT, $0-64
	NIB4A(LDDM, 64)

// func nibGroup4AVX512Q(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)
//
// nibGroup4AVX512 for Q4_0's scales (D only, [nb][16]).
TEXT ·nibGroup4AVX512Q(SB), NOSPLIT, $0-64
	NIB4A(LDQ40, 32)

// func nibGroup1AVX512(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)
//
// nibGroup1 for float16 scales: one token, the same sums and float
// operations as nibGroup4AVX512's token 0.
TEXT ·nibGroup1AVX512(SB), NOSPLIT, $0-56
	NIB1A(LDDM, 64)

// func nibGroup1AVX512Q(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)
TEXT ·nibGroup1AVX512Q(SB), NOSPLIT, $0-56
	NIB1A(LDQ40, 32)
