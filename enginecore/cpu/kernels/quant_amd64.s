//go:build goexperiment.simd

#include "textflag.h"

// Activation quantization (act.go) at the AVX-512 level: a whole row per
// call, every operation VEX/EVEX-encoded. The archsimd version spent
// ~360 cycles a block, most of it in the legacy-SSE scalar code Go
// emits between the vector operations; this one is ~20. Same roundings
// as quantizeBlock, so the same bits: d = amax/127 and id = 1/d in
// float32, q = round-to-even(x·id) (VCVTPS2DQ under Go's default MXCSR),
// s = d·float32(Σq).

// BLOCKSCALE(y, x, t, x127, xd, xzero) starts a block of
// quantizeRowAVX512/AVX2: y holds the eight lane-wise maxima of |x|
// (its low half is x); it folds them to amax in x's lane 0, writes d =
// amax/127 into xd and to (R10), and compares d with 0 (xzero) for the
// caller's JNE. t is scratch.
#define BLOCKSCALE(y, x, t, x127, xd, xzero) \
	VEXTRACTF128 $1, y, t \
	VMAXPS t, x, x \
	VPERMILPS $0x4e, x, t \
	VMAXPS t, x, x \
	VPERMILPS $0xb1, x, t \
	VMAXPS t, x, x \
	VDIVSS x127, x, xd \
	VMOVSS xd, (R10) \
	VUCOMISS xzero, xd

// BLOCKTAIL(xb, xd) ends a block of quantizeRowAVX512/AVX2: X0 and xb
// hold four partial Σq of the first and second half; it writes hs (32·Σ
// of each half, from [Σa, Σb] after two VPHADDD) at R12 and s = d·Σq (d
// in xd) at R11, steps every pointer to the next block and counts CX
// down (the caller's JNZ loops).
#define BLOCKTAIL(xb, xd) \
	VPHADDD xb, X0, X0 \
	VPHADDD X0, X0, X0 \
	VPSLLD $5, X0, X1 \
	VMOVQ X1, (R12) \
	VPSHUFD $0xb1, X0, X1 \
	VPADDD X1, X0, X0 \
	VCVTDQ2PS X0, X0 \
	VMULSS X0, xd, X0 \
	VMOVSS X0, (R11) \
	ADDQ $128, SI \
	ADDQ $32, DI \
	ADDQ $32, R8 \
	ADDQ $32, R9 \
	ADDQ $4, R10 \
	ADDQ $4, R11 \
	ADDQ $8, R12 \
	DECQ CX

// func quantizeRowAVX512(x *float32, nb int, q *int8, qa *uint8, qm *int8, d, s *float32, hs *int32)
//
// x [nb·32] → q, qa (|q|), qm (-1 where q < 0) [nb·32], d, s [nb], hs
// [nb][2] (32·Σq of each half block).
// Registers: SI x, CX blocks left, DI q, R8 qa, R9 qm, R10 d, R11 s, R12
// hs; Z30 abs mask, X29 127, X28 1.
TEXT ·quantizeRowAVX512(SB), NOSPLIT, $0-64
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ qa+24(FP), R8
	MOVQ qm+32(FP), R9
	MOVQ d+40(FP), R10
	MOVQ s+48(FP), R11
	MOVQ hs+56(FP), R12
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z30
	MOVL $0x42fe0000, AX // 127.0
	VMOVD AX, X29
	MOVL $0x3f800000, AX // 1.0
	VMOVD AX, X28
	VXORPS X27, X27, X27
	TESTQ CX, CX
	JZ qdone

qblock:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VANDPS Z30, Z0, Z2
	VANDPS Z30, Z1, Z3
	VMAXPS Z3, Z2, Z2
	VEXTRACTF32X8 $1, Z2, Y3
	VMAXPS Y3, Y2, Y2
	BLOCKSCALE(Y2, X2, X3, X29, X4, X27)
	JNE qscale
	// d = 0: every x is ±0, so q = 0 and s = 0.
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	JMP qstore

qscale:
	VDIVSS X4, X28, X5 // id = 1/d
	VBROADCASTSS X5, Z5
	VMULPS Z5, Z0, Z0
	VMULPS Z5, Z1, Z1
	VCVTPS2DQ Z0, Z0
	VCVTPS2DQ Z1, Z1

qstore:
	VPMOVDB Z0, (DI)
	VPMOVDB Z1, 16(DI)
	VPABSD Z0, Z6
	VPABSD Z1, Z7
	VPMOVDB Z6, (R8)
	VPMOVDB Z7, 16(R8)
	VPSRAD $31, Z0, Z6
	VPSRAD $31, Z1, Z7
	VPMOVDB Z6, (R9)
	VPMOVDB Z7, 16(R9)
	// Σq of each half: Z0 (elements 0–15) and Z1 (16–31) reduced side by
	// side, lanes 0 and 1 of X0 after the folds.
	VEXTRACTI32X8 $1, Z0, Y2
	VEXTRACTI32X8 $1, Z1, Y3
	VPADDD Y2, Y0, Y0
	VPADDD Y3, Y1, Y1
	VEXTRACTI128 $1, Y0, X2
	VEXTRACTI128 $1, Y1, X3
	VPADDD X2, X0, X0
	VPADDD X3, X1, X1
	BLOCKTAIL(X1, X4)
	JNZ qblock

qdone:
	VZEROUPPER
	RET

// func residualRowAVX512(x *float32, q *int8, d *float32, nb int, r *float32)
//
// r = x − float32(d·q), block by block: the input of a precise token's
// residual row (Activations.Quantize).
TEXT ·residualRowAVX512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R10
	MOVQ nb+24(FP), CX
	MOVQ r+32(FP), R11
	TESTQ CX, CX
	JZ rdone

rblock:
	VBROADCASTSS (R10), Z5
	VPMOVSXBD (DI), Z0
	VPMOVSXBD 16(DI), Z1
	VCVTDQ2PS Z0, Z0
	VCVTDQ2PS Z1, Z1
	VMULPS Z5, Z0, Z0
	VMULPS Z5, Z1, Z1
	VMOVUPS (SI), Z2
	VMOVUPS 64(SI), Z3
	VSUBPS Z0, Z2, Z2
	VSUBPS Z1, Z3, Z3
	VMOVUPS Z2, (R11)
	VMOVUPS Z3, 64(R11)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, R10
	ADDQ $128, R11
	DECQ CX
	JNZ rblock

rdone:
	VZEROUPPER
	RET

// The same two at the AVX2 level (256 bits, no narrowing stores): the
// int32 q are packed to bytes with saturating packs (exact: |q| ≤ 127)
// and put back in element order by VPERMD. Same operations per element,
// so the same bits as quantizeBlock and the AVX-512 versions.

DATA qperm<>+0x00(SB)/8, $0x0000000400000000
DATA qperm<>+0x08(SB)/8, $0x0000000500000001
DATA qperm<>+0x10(SB)/8, $0x0000000600000002
DATA qperm<>+0x18(SB)/8, $0x0000000700000003
GLOBL qperm<>(SB), RODATA|NOPTR, $32

DATA qconst<>+0x00(SB)/4, $0x7fffffff // abs mask
DATA qconst<>+0x04(SB)/4, $0x42fe0000 // 127.0
DATA qconst<>+0x08(SB)/4, $0x3f800000 // 1.0
GLOBL qconst<>(SB), RODATA|NOPTR, $12

// func quantizeRowAVX2(x *float32, nb int, q *int8, qa *uint8, qm *int8, d, s *float32, hs *int32)
// Registers as quantizeRowAVX512; Y15 abs mask, X14 127, X13 1, Y12 the
// pack permutation, Y11 zero.
TEXT ·quantizeRowAVX2(SB), NOSPLIT, $0-64
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ qa+24(FP), R8
	MOVQ qm+32(FP), R9
	MOVQ d+40(FP), R10
	MOVQ s+48(FP), R11
	MOVQ hs+56(FP), R12
	VBROADCASTSS qconst<>+0x00(SB), Y15
	VMOVSS qconst<>+0x04(SB), X14
	VMOVSS qconst<>+0x08(SB), X13
	VMOVDQU qperm<>(SB), Y12
	VPXOR Y11, Y11, Y11
	TESTQ CX, CX
	JZ q2done

q2block:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VANDPS Y15, Y2, Y6
	VANDPS Y15, Y3, Y7
	VMAXPS Y5, Y4, Y4
	VMAXPS Y7, Y6, Y6
	VMAXPS Y6, Y4, Y4
	BLOCKSCALE(Y4, X4, X5, X14, X8, X11)
	JNE q2scale
	// d = 0: every x is ±0, so q = 0 and s = 0.
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	JMP q2store

q2scale:
	VDIVSS X8, X13, X9 // id = 1/d
	VBROADCASTSS X9, Y9
	VMULPS Y9, Y0, Y0
	VMULPS Y9, Y1, Y1
	VMULPS Y9, Y2, Y2
	VMULPS Y9, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3

q2store:
	// Bytes: dwords of 4 elements come out as 0,8,16,24,4,12,20,28
	// (in units of elements); VPERMD puts them in order.
	VPACKSSDW Y1, Y0, Y4
	VPACKSSDW Y3, Y2, Y5
	VPACKSSWB Y5, Y4, Y4
	VPERMD Y4, Y12, Y4
	VMOVDQU Y4, (DI)
	VPABSB Y4, Y5
	VMOVDQU Y5, (R8)
	VPCMPGTB Y4, Y11, Y5 // 0 > q
	VMOVDQU Y5, (R9)
	// Σq of each half (elements 0–15, 16–31), side by side.
	VPADDD Y1, Y0, Y0
	VPADDD Y3, Y2, Y2
	VEXTRACTI128 $1, Y0, X1
	VEXTRACTI128 $1, Y2, X3
	VPADDD X1, X0, X0
	VPADDD X3, X2, X2
	BLOCKTAIL(X2, X8)
	JNZ q2block

q2done:
	VZEROUPPER
	RET

// func residualRowAVX2(x *float32, q *int8, d *float32, nb int, r *float32)
TEXT ·residualRowAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R10
	MOVQ nb+24(FP), CX
	MOVQ r+32(FP), R11
	TESTQ CX, CX
	JZ r2done

r2block:
	VBROADCASTSS (R10), Y5
	VPMOVSXBD (DI), Y0
	VPMOVSXBD 8(DI), Y1
	VPMOVSXBD 16(DI), Y2
	VPMOVSXBD 24(DI), Y3
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VMULPS Y5, Y0, Y0
	VMULPS Y5, Y1, Y1
	VMULPS Y5, Y2, Y2
	VMULPS Y5, Y3, Y3
	VMOVUPS (SI), Y6
	VMOVUPS 32(SI), Y7
	VMOVUPS 64(SI), Y8
	VMOVUPS 96(SI), Y9
	VSUBPS Y0, Y6, Y6
	VSUBPS Y1, Y7, Y7
	VSUBPS Y2, Y8, Y8
	VSUBPS Y3, Y9, Y9
	VMOVUPS Y6, (R11)
	VMOVUPS Y7, 32(R11)
	VMOVUPS Y8, 64(R11)
	VMOVUPS Y9, 96(R11)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, R10
	ADDQ $128, R11
	DECQ CX
	JNZ r2block

r2done:
	VZEROUPPER
	RET
