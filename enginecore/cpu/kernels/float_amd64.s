//go:build goexperiment.simd

#include "textflag.h"

// Float matmuls (F32, F16, BF16 weights) at the AVX-512 level, weights
// [In][16] per group as float32 or kept 16-bit (half the bytes of
// memory and of memory traffic; the conversion to float32 is exact).
// Per row the float operations are f32Group1's and f32Group4's, so the
// bits are theirs: two accumulators over i mod 2 (an odd last i into
// the first), acc += w·x by FMA, then the sum of the two.

// LDW32/LDWH/LDWB load the 16 weights of element i at off(SI) into z:
// float32, float16 (VCVTPH2PS) or bfloat16 (its bits are a float32's
// top half).
#define LDW32(off, z) VMOVUPS off(SI), z
#define LDWH(off, z) VCVTPH2PS off(SI), z
#define LDWB(off, z) VPMOVZXWD off(SI), z; VPSLLD $16, z, z

// FROWS1(LDW, ws) is a one-token kernel over groups: ws bytes per
// element's 16 weights. Registers: SI weights, R8 x, CX elements left,
// BX groups left, R9 out, DX In; Z0/Z1 the two accumulators.
#define FROWS1(LDW, ws) \
	MOVQ w+0(FP), SI \
	MOVQ x+8(FP), R10 \
	MOVQ in+16(FP), DX \
	MOVQ groups+24(FP), BX \
	MOVQ out+32(FP), R9 \
	TESTQ BX, BX \
	JZ done \
group: \
	MOVQ R10, R8 \
	MOVQ DX, CX \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	CMPQ CX, $2 \
	JLT tail \
pair: \
	LDW(0, Z16) \
	VFMADD231PS.BCST (R8), Z16, Z0 \
	LDW(ws, Z17) \
	VFMADD231PS.BCST 4(R8), Z17, Z1 \
	ADDQ $(2*ws), SI \
	ADDQ $8, R8 \
	SUBQ $2, CX \
	CMPQ CX, $2 \
	JGE pair \
tail: \
	TESTQ CX, CX \
	JZ sum \
	LDW(0, Z16) \
	VFMADD231PS.BCST (R8), Z16, Z0 \
	ADDQ $ws, SI \
sum: \
	VADDPS Z1, Z0, Z0 \
	VMOVUPS Z0, (R9) \
	ADDQ $64, R9 \
	DECQ BX \
	JNZ group \
done: \
	VZEROUPPER \
	RET

// FMA4(z, off, a, b, c, d) adds weights z times the four tokens' x at
// off(R8), off(R11), off(R12), off(R13) into a, b, c, d.
#define FMA4(z, off, a, b, c, d) \
	VFMADD231PS.BCST off(R8), z, a \
	VFMADD231PS.BCST off(R11), z, b \
	VFMADD231PS.BCST off(R12), z, c \
	VFMADD231PS.BCST off(R13), z, d

// FGROUP4(LDW, ws) is a four-token kernel for one group: x rows at R8,
// R11–R13 (In·4 bytes apart); Z0–Z3 the even accumulators of tokens
// 0–3, Z4–Z7 the odd ones.
#define FGROUP4(LDW, ws) \
	MOVQ w+0(FP), SI \
	MOVQ x+8(FP), R8 \
	MOVQ in+16(FP), DX \
	MOVQ res+24(FP), R9 \
	LEAQ (R8)(DX*4), R11 \
	LEAQ (R11)(DX*4), R12 \
	LEAQ (R12)(DX*4), R13 \
	MOVQ DX, CX \
	VPXORD Z0, Z0, Z0; VPXORD Z1, Z1, Z1; VPXORD Z2, Z2, Z2; VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4; VPXORD Z5, Z5, Z5; VPXORD Z6, Z6, Z6; VPXORD Z7, Z7, Z7 \
	CMPQ CX, $2 \
	JLT tail \
pair: \
	LDW(0, Z16) \
	FMA4(Z16, 0, Z0, Z1, Z2, Z3) \
	LDW(ws, Z17) \
	FMA4(Z17, 4, Z4, Z5, Z6, Z7) \
	ADDQ $(2*ws), SI \
	ADDQ $8, R8; ADDQ $8, R11; ADDQ $8, R12; ADDQ $8, R13 \
	SUBQ $2, CX \
	CMPQ CX, $2 \
	JGE pair \
tail: \
	TESTQ CX, CX \
	JZ sum \
	LDW(0, Z16) \
	FMA4(Z16, 0, Z0, Z1, Z2, Z3) \
sum: \
	VADDPS Z4, Z0, Z0; VADDPS Z5, Z1, Z1; VADDPS Z6, Z2, Z2; VADDPS Z7, Z3, Z3 \
	VMOVUPS Z0, (R9); VMOVUPS Z1, 64(R9); VMOVUPS Z2, 128(R9); VMOVUPS Z3, 192(R9) \
	VZEROUPPER \
	RET

// func floatRows1F32(w *byte, x *float32, in, groups int, out *float32)
//
// groups consecutive groups (w [groups][In][16]) times one token (x
// [In]) into out [groups·16]; floatRows1F16 and floatRows1BF16 for
// 16-bit weights.
TEXT ·floatRows1F32(SB), NOSPLIT, $0-40
	FROWS1(LDW32, 64)

TEXT ·floatRows1F16(SB), NOSPLIT, $0-40
	FROWS1(LDWH, 32)

TEXT ·floatRows1BF16(SB), NOSPLIT, $0-40
	FROWS1(LDWB, 32)

// func floatGroup4F32(w *byte, x *float32, in int, res *[4][GroupRows]float32)
//
// One group (w [In][16]) times four tokens (x [4][In]).
TEXT ·floatGroup4F32(SB), NOSPLIT, $0-32
	FGROUP4(LDW32, 64)

TEXT ·floatGroup4F16(SB), NOSPLIT, $0-32
	FGROUP4(LDWH, 32)

TEXT ·floatGroup4BF16(SB), NOSPLIT, $0-32
	FGROUP4(LDWB, 32)
