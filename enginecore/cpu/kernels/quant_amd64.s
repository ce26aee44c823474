//go:build goexperiment.simd

#include "textflag.h"

// Activation quantization (act.go) at the AVX-512 level: a whole row per
// call, every operation VEX/EVEX-encoded. The archsimd version spent
// ~360 cycles a block, most of it in the legacy-SSE scalar code Go
// emits between the vector operations; this one is ~20. Same roundings
// as quantizeBlock, so the same bits: d = amax/127 and id = 1/d in
// float32, q = round-to-even(x·id) (VCVTPS2DQ under Go's default MXCSR),
// s = d·float32(Σq).

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
	VEXTRACTF128 $1, Y2, X3
	VMAXPS X3, X2, X2
	VPERMILPS $0x4e, X2, X3
	VMAXPS X3, X2, X2
	VPERMILPS $0xb1, X2, X3
	VMAXPS X3, X2, X2 // amax in lane 0
	VDIVSS X29, X2, X4 // d = amax/127
	VMOVSS X4, (R10)
	VUCOMISS X27, X4
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
	VPHADDD X1, X0, X0 // [a0+a1, a2+a3, b0+b1, b2+b3]
	VPHADDD X0, X0, X0 // [Σa, Σb, Σa, Σb]
	VPSLLD $5, X0, X1
	VMOVQ X1, (R12) // 32·Σ of each half
	VPSHUFD $0xb1, X0, X1
	VPADDD X1, X0, X0 // Σq in lane 0
	VCVTDQ2PS X0, X0
	VMULSS X0, X4, X0 // s = d·Σq
	VMOVSS X0, (R11)

	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $4, R10
	ADDQ $4, R11
	ADDQ $8, R12
	DECQ CX
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
