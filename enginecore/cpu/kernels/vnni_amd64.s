//go:build goexperiment.simd

#include "textflag.h"

// Matmuls for one and four tokens with AVX-512 VNNI: VPDPBUSD adds four
// u8×s8 products into an int32 lane in one instruction, where the
// AVX-512 kernels need vpmaddubsw, an add and vpmaddwd. Every quantized
// type has them (4-bit with float16 or float32 scales, Q8_0, Q5_K,
// Q6_K). The one-token kernels run a span of whole groups per call, so
// decode pays no Go call per 16 rows, and ask for the weights 1 KiB
// ahead. Same integer sums (no int16 stage saturates: see nibGroup1)
// and the same float operations in the same order as the one-token
// kernels of the other levels, so the same bits:
//
//	4-bit, Q5_K: acc += float(Σ)·(d·xd), then acc += m·xs
//	Q8_0:        acc += float(Σ)·(d·xd)
//	Q6_K:        acc += float(Σ chunks 0–3)·(d₀·xd), then float(Σ 4–7)·(d₁·xd)
//
// 4-bit weights are unsigned nibbles (u8 operand) and multiply the
// signed activations directly; 8-bit weights are signed, so they take
// x's signs ((w ^ m) − m, m = -1 where x < 0) and multiply |x| (the u8
// operand), as in byte_amd64.s.

// NCH(c, xr, s) adds the products of 4-bit chunk c (unpacked in Z9 low,
// Z10 high by NUNPACK) with the token whose row is at xr into s.
#define NUNPACK(c) \
	VMOVDQU64 (64*c)(SI), Z8 \
	VPANDD Z31, Z8, Z9 \
	VPSRLW $4, Z8, Z10 \
	VPANDD Z31, Z10, Z10

#define NCH(c, xr, s) \
	VPDPBUSD.BCST (4*c)(xr), Z9, s \
	VPDPBUSD.BCST (16+4*c)(xr), Z10, s

// BCH(c, xr, s) adds the products of 8-bit chunk c (in Z8) with the
// token whose |x| row is at xr (sign row DX bytes on) into s.
#define BCH(c, xr, s) \
	VPBROADCASTD (4*c)(xr)(DX*1), Z11 \
	VPXORD Z11, Z8, Z12 \
	VPSUBB Z11, Z12, Z12 \
	VPBROADCASTD (4*c)(xr), Z11 \
	VPDPBUSD Z12, Z11, s

// Scale loads: d into Z13 and, where there is one, m (or Q6_K's d₁)
// into Z14, from the block's scales at DI.
#define LDH2 VCVTPH2PS (DI), Z13; VCVTPH2PS 32(DI), Z14
#define LDF2 VMOVUPS (DI), Z13; VMOVUPS 64(DI), Z14
#define LDH1 VCVTPH2PS (DI), Z13
// Q4_0 keeps D only: M = D·(-8), exact.
#define LDQ2 VCVTPH2PS (DI), Z13; VMULPS.BCST minus8<>(SB), Z13, Z14

DATA minus8<>+0(SB)/4, $-8.0
GLOBL minus8<>(SB), RODATA|NOPTR, $4

// DM(s, acc, xd, xs): acc += float(s)·(d·xd), then acc += m·xs.
#define DM(s, acc, xd, xs) \
	VCVTDQ2PS s, s \
	VMULPS.BCST xd, Z13, Z15 \
	VFMADD231PS Z15, s, acc \
	VFMADD231PS.BCST xs, Z14, acc

// D(s, acc, xd, dreg): acc += float(s)·(d·xd), d in dreg.
#define D(s, acc, xd, dreg) \
	VCVTDQ2PS s, s \
	VMULPS.BCST xd, dreg, Z15 \
	VFMADD231PS Z15, s, acc

#define PREFETCH4 \
	PREFETCHT0 2048(SI); PREFETCHT0 2112(SI); PREFETCHT0 2176(SI); PREFETCHT0 2240(SI)

#define PREFETCH8 \
	PREFETCH4; PREFETCHT0 1280(SI); PREFETCHT0 1344(SI); PREFETCHT0 1408(SI); PREFETCHT0 1472(SI)

// ROWS1(BODY, EPI, scstep, qstep) is a one-token kernel over groups:
// for each group, for each of nb blocks, BODY adds the block's products
// into Z4/Z5 and EPI folds them into Z0, which is stored to out.
// The caller loads SI qs, DI scales, R8 x row (|x| for bytes, sign row
// DX bytes on), R12 xd, R13 xs, R10 nb, BX groups, R9 out. CX counts
// blocks; R11 = 32·nb and R14 = 4·nb rewind x, xd, xs per group.
#define ROWS1(BODY, EPI, scstep, qstep) \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z31 \
	TESTQ BX, BX \
	JZ done \
	TESTQ R10, R10 \
	JZ done \
	MOVQ R10, R11 \
	SHLQ $5, R11 \
	MOVQ R10, R14 \
	SHLQ $2, R14 \
group: \
	MOVQ R10, CX \
	VPXORD Z0, Z0, Z0 \
block: \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	BODY \
	EPI \
	ADDQ $qstep, SI \
	ADDQ $scstep, DI \
	ADDQ $32, R8 \
	ADDQ $4, R12 \
	ADDQ $4, R13 \
	DECQ CX \
	JNZ block \
	VMOVUPS Z0, (R9) \
	ADDQ $64, R9 \
	SUBQ R11, R8 \
	SUBQ R14, R12 \
	SUBQ R14, R13 \
	DECQ BX \
	JNZ group \
done: \
	VZEROUPPER \
	RET

// ARGS1N and ARGS1B load a one-token kernel's arguments (4-bit: qs, sc,
// x, xd, xs, nb, groups, out; bytes: qs, sc, x, xm, xd, xs, nb, groups,
// out).
#define ARGS1N \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ x+16(FP), R8 \
	MOVQ xd+24(FP), R12 \
	MOVQ xs+32(FP), R13 \
	MOVQ nb+40(FP), R10 \
	MOVQ groups+48(FP), BX \
	MOVQ out+56(FP), R9

#define ARGS1B \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ x+16(FP), R8 \
	MOVQ xm+24(FP), DX \
	SUBQ R8, DX \
	MOVQ xd+32(FP), R12 \
	MOVQ xs+40(FP), R13 \
	MOVQ nb+48(FP), R10 \
	MOVQ groups+56(FP), BX \
	MOVQ out+64(FP), R9

#define NIB1BODY \
	PREFETCH4 \
	NUNPACK(0); NCH(0, R8, Z4) \
	NUNPACK(1); NCH(1, R8, Z5) \
	NUNPACK(2); NCH(2, R8, Z4) \
	NUNPACK(3); NCH(3, R8, Z5) \
	VPADDD Z5, Z4, Z4

#define BYTE1BODY \
	PREFETCH8 \
	VMOVDQU64 0(SI), Z8; BCH(0, R8, Z4) \
	VMOVDQU64 64(SI), Z8; BCH(1, R8, Z4) \
	VMOVDQU64 128(SI), Z8; BCH(2, R8, Z4) \
	VMOVDQU64 192(SI), Z8; BCH(3, R8, Z4) \
	VMOVDQU64 256(SI), Z8; BCH(4, R8, Z5) \
	VMOVDQU64 320(SI), Z8; BCH(5, R8, Z5) \
	VMOVDQU64 384(SI), Z8; BCH(6, R8, Z5) \
	VMOVDQU64 448(SI), Z8; BCH(7, R8, Z5)

#define SUM45 VPADDD Z5, Z4, Z4

// GROUP4(BODY, EPI, scstep, qstep) is a four-token kernel for one
// group. The caller loads SI qs, DI scales, R8 token 0's row (|x| for
// bytes, sign rows DX bytes on), AX the row stride in, R12 and R13 token
// 0's xd and xs, CX nb; tokens 1–3's rows go to R9–R11, and token t's xd
// and xs are t·BX bytes on (R14 = 3·BX). Z0–Z3 acc, Z4–Z7 (and Z16–Z19)
// int32 sums; the result is left in Z0–Z3 for STORE4.
#define GROUP4(BODY, EPI, scstep, qstep) \
	LEAQ (R8)(AX*1), R9 \
	LEAQ (R9)(AX*1), R10 \
	LEAQ (R10)(AX*1), R11 \
	MOVQ CX, BX \
	SHLQ $2, BX \
	LEAQ (BX)(BX*2), R14 \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z31 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	TESTQ CX, CX \
	JZ done \
block: \
	VPXORD Z4, Z4, Z4; VPXORD Z5, Z5, Z5; VPXORD Z6, Z6, Z6; VPXORD Z7, Z7, Z7 \
	BODY \
	EPI \
	ADDQ $qstep, SI \
	ADDQ $scstep, DI \
	ADDQ $32, R8; ADDQ $32, R9; ADDQ $32, R10; ADDQ $32, R11 \
	ADDQ $4, R12 \
	ADDQ $4, R13 \
	DECQ CX \
	JNZ block \
done:

#define STORE4(r) \
	VMOVUPS Z0, (r); VMOVUPS Z1, 64(r); VMOVUPS Z2, 128(r); VMOVUPS Z3, 192(r) \
	VZEROUPPER \
	RET

#define ARGS4N \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ x+16(FP), R8 \
	MOVQ in+24(FP), AX \
	MOVQ xd+32(FP), R12 \
	MOVQ xs+40(FP), R13 \
	MOVQ nb+48(FP), CX

#define ARGS4B \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ x+16(FP), R8 \
	MOVQ xm+24(FP), DX \
	SUBQ R8, DX \
	MOVQ in+32(FP), AX \
	MOVQ xd+40(FP), R12 \
	MOVQ xs+48(FP), R13 \
	MOVQ nb+56(FP), CX

#define NCH4(c) \
	NUNPACK(c) \
	NCH(c, R8, Z4); NCH(c, R9, Z5); NCH(c, R10, Z6); NCH(c, R11, Z7)

#define NIB4BODY NCH4(0); NCH4(1); NCH4(2); NCH4(3)

#define DM4 \
	DM(Z4, Z0, (R12), (R13)) \
	DM(Z5, Z1, (R12)(BX*1), (R13)(BX*1)) \
	DM(Z6, Z2, (R12)(BX*2), (R13)(BX*2)) \
	DM(Z7, Z3, (R12)(R14*1), (R13)(R14*1))

// BCH4(c, s0..s3) adds chunk c's products for the four tokens.
#define BCH4(c, s0, s1, s2, s3) \
	VMOVDQU64 (64*c)(SI), Z8 \
	BCH(c, R8, s0); BCH(c, R9, s1); BCH(c, R10, s2); BCH(c, R11, s3)

#define BYTE4BODY \
	BCH4(0, Z4, Z5, Z6, Z7); BCH4(1, Z4, Z5, Z6, Z7); BCH4(2, Z4, Z5, Z6, Z7); BCH4(3, Z4, Z5, Z6, Z7) \
	BCH4(4, Z4, Z5, Z6, Z7); BCH4(5, Z4, Z5, Z6, Z7); BCH4(6, Z4, Z5, Z6, Z7); BCH4(7, Z4, Z5, Z6, Z7)

// Q6_K keeps the second halves' sums apart, in Z16–Z19.
#define Q6BODY4 \
	VPXORD Z16, Z16, Z16; VPXORD Z17, Z17, Z17; VPXORD Z18, Z18, Z18; VPXORD Z19, Z19, Z19 \
	BCH4(0, Z4, Z5, Z6, Z7); BCH4(1, Z4, Z5, Z6, Z7); BCH4(2, Z4, Z5, Z6, Z7); BCH4(3, Z4, Z5, Z6, Z7) \
	BCH4(4, Z16, Z17, Z18, Z19); BCH4(5, Z16, Z17, Z18, Z19); BCH4(6, Z16, Z17, Z18, Z19); BCH4(7, Z16, Z17, Z18, Z19)

#define D4(dreg) \
	D(Z4, Z0, (R12), dreg) \
	D(Z5, Z1, (R12)(BX*1), dreg) \
	D(Z6, Z2, (R12)(BX*2), dreg) \
	D(Z7, Z3, (R12)(R14*1), dreg)

#define Q6EPI4 \
	D4(Z13) \
	D(Z16, Z0, (R12), Z14) \
	D(Z17, Z1, (R12)(BX*1), Z14) \
	D(Z18, Z2, (R12)(BX*2), Z14) \
	D(Z19, Z3, (R12)(R14*1), Z14)

// DMK is DM for compact Q4_K, whose M is the negated product
// dmin·min: acc += float(s)·(d·xd), then acc −= (dmin·min)·xs, which is
// acc += M·xs with M = −(dmin·min) (negation is exact).
#define DMK(s, acc, xd, xs) \
	VCVTDQ2PS s, s \
	VMULPS.BCST xd, Z13, Z15 \
	VFMADD231PS Z15, s, acc \
	VFNMADD231PS.BCST xs, Z14, acc

// Q6HALF(lo, qhs, off): (lo | qhs & 0x30) − 32 stored at off(DI): one
// 64-byte chunk of a Q6_K block in the byte layout (q6Unpack4).
#define Q6HALF(lo, qhs, off) \
	VPANDD Z30, qhs, Z12 \
	VPORD lo, Z12, Z12 \
	VPSUBB Z29, Z12, Z12 \
	VMOVDQU64 Z12, off(DI)

// Q6NIB(c) splits famNib chunk c of the block at SI into Z9 (low
// nibbles) and Z10 (high).
#define Q6NIB(c) \
	VMOVDQU64 (64*c)(SI), Z8 \
	VPANDD Z31, Z8, Z9 \
	VPSRLW $4, Z8, Z10 \
	VPANDD Z31, Z10, Z10

// func nibRows1VNNIH(qs *byte, sc unsafe.Pointer, x *int8, xd, xs *float32, nb, groups int, out *float32)
//
// groups consecutive groups (qs [groups][nb][256], sc [groups][nb][2][16]
// float16) times one token (x [nb·32], xd, xs [nb]) into out
// [groups·16]. nibRows1VNNIQ: D only (Q4_0, M = D·(-8)); nibRows1VNNIF:
// float32 scales (Q4_K).
TEXT ·nibRows1VNNIH(SB), NOSPLIT, $0-64
	ARGS1N
	ROWS1(NIB1BODY, LDH2; DM(Z4, Z0, (R12), (R13)), 64, 256)

TEXT ·nibRows1VNNIQ(SB), NOSPLIT, $0-64
	ARGS1N
	ROWS1(NIB1BODY, LDQ2; DM(Z4, Z0, (R12), (R13)), 32, 256)

TEXT ·nibRows1VNNIF(SB), NOSPLIT, $0-64
	ARGS1N
	ROWS1(NIB1BODY, LDF2; DM(Z4, Z0, (R12), (R13)), 128, 256)

// func q8Rows1VNNI(qs *byte, sc unsafe.Pointer, x *uint8, xm *int8, xd, xs *float32, nb, groups int, out *float32)
//
// The byte kernels: x is the |x| row, xm its sign row. q8: Q8_0 (float16
// d [nb][16]); q5: Q5_K (float32 d, m [nb][2][16]); q6: Q6_K (float32
// d₀, d₁ [nb][2][16]).
TEXT ·q8Rows1VNNI(SB), NOSPLIT, $0-72
	ARGS1B
	ROWS1(BYTE1BODY; SUM45, LDH1; D(Z4, Z0, (R12), Z13), 32, 512)

TEXT ·q5Rows1VNNI(SB), NOSPLIT, $0-72
	ARGS1B
	ROWS1(BYTE1BODY; SUM45, LDF2; DM(Z4, Z0, (R12), (R13)), 128, 512)

TEXT ·q6Rows1VNNI(SB), NOSPLIT, $0-72
	ARGS1B
	ROWS1(BYTE1BODY, LDF2; D(Z4, Z0, (R12), Z13); D(Z5, Z0, (R12), Z14), 128, 512)

// func nibGroup4VNNIH(qs *byte, sc unsafe.Pointer, x *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)
//
// One group times four tokens (x [4][in], xd, xs [4][nb]); nibGroup4VNNIQ:
// D only (Q4_0); nibGroup4VNNIF: float32 scales (Q4_K).
TEXT ·nibGroup4VNNIH(SB), NOSPLIT, $0-64
	ARGS4N
	GROUP4(NIB4BODY, LDH2; DM4, 64, 256)
	MOVQ res+56(FP), AX
	STORE4(AX)

TEXT ·nibGroup4VNNIQ(SB), NOSPLIT, $0-64
	ARGS4N
	GROUP4(NIB4BODY, LDQ2; DM4, 32, 256)
	MOVQ res+56(FP), AX
	STORE4(AX)

TEXT ·nibGroup4VNNIF(SB), NOSPLIT, $0-64
	ARGS4N
	GROUP4(NIB4BODY, LDF2; DM4, 128, 256)
	MOVQ res+56(FP), AX
	STORE4(AX)

// func q8Group4VNNI(qs *byte, sc unsafe.Pointer, x *uint8, xm *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)
//
// The byte kernels for four tokens (x the |x| rows, xm the sign rows).
TEXT ·q8Group4VNNI(SB), NOSPLIT, $0-72
	ARGS4B
	GROUP4(BYTE4BODY, LDH1; D4(Z13), 32, 512)
	MOVQ res+64(FP), AX
	STORE4(AX)

TEXT ·q5Group4VNNI(SB), NOSPLIT, $0-72
	ARGS4B
	GROUP4(BYTE4BODY, LDF2; DM4, 128, 512)
	MOVQ res+64(FP), AX
	STORE4(AX)

TEXT ·q6Group4VNNI(SB), NOSPLIT, $0-72
	ARGS4B
	GROUP4(Q6BODY4, LDF2; Q6EPI4, 128, 512)
	MOVQ res+64(FP), AX
	STORE4(AX)

// func nibRows1VNNIK(qs *byte, sc unsafe.Pointer, x *int8, xd, xs *float32, nb, groups int, out *float32)
//
// nibRows1VNNIH for compact Q4_K scales (scales.k): per group [nb][32]
// bytes (16 scales, 16 mins), then [nb/8][32] float16 (16 d, 16 dmin);
// D = d·scale and M = −(dmin·min) per block, as ggml and the other
// levels compute them. Loops over super-blocks of 8 blocks (nb is a
// multiple of 8): DX walks the group's d, dmin, Z28/Z29 hold them, AX
// counts a super-block's blocks; the rest as ROWS1.
TEXT ·nibRows1VNNIK(SB), NOSPLIT, $0-64
	ARGS1N
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	TESTQ BX, BX
	JZ kdone
	TESTQ R10, R10
	JZ kdone
	MOVQ R10, R11
	SHLQ $5, R11
	MOVQ R10, R14
	SHLQ $2, R14

kgroup:
	LEAQ (DI)(R11*1), DX
	MOVQ R10, CX
	VPXORD Z0, Z0, Z0

ksuper:
	VCVTPH2PS (DX), Z28
	VCVTPH2PS 32(DX), Z29
	ADDQ $64, DX
	MOVQ $8, AX

kblock:
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	NIB1BODY
	VPMOVZXBD (DI), Z13
	VCVTDQ2PS Z13, Z13
	VMULPS Z13, Z28, Z13
	VPMOVZXBD 16(DI), Z14
	VCVTDQ2PS Z14, Z14
	VMULPS Z14, Z29, Z14
	DMK(Z4, Z0, (R12), (R13))
	ADDQ $256, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $4, R12
	ADDQ $4, R13
	DECQ CX
	DECQ AX
	JNZ kblock
	TESTQ CX, CX
	JNZ ksuper

	MOVQ DX, DI
	VMOVUPS Z0, (R9)
	ADDQ $64, R9
	SUBQ R11, R8
	SUBQ R14, R12
	SUBQ R14, R13
	DECQ BX
	JNZ kgroup

kdone:
	VZEROUPPER
	RET

// func expandQ4K(k *byte, nb int, dst *float32)
//
// One group's compact Q4_K scales (see nibRows1VNNIK) as float32 D [16]
// and M [16] per block into dst [nb][32], for the kernels that read
// float32 scales (four tokens, AMX tiles): D = d·scale, M = −(dmin·min).
TEXT ·expandQ4K(SB), NOSPLIT, $0-24
	MOVQ k+0(FP), DI
	MOVQ nb+8(FP), CX
	MOVQ dst+16(FP), R9
	MOVQ CX, DX
	SHLQ $5, DX
	ADDQ DI, DX
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Z30
	TESTQ CX, CX
	JZ edone

esuper:
	VCVTPH2PS (DX), Z28
	VCVTPH2PS 32(DX), Z29
	ADDQ $64, DX
	MOVQ $8, AX

eblock:
	VPMOVZXBD (DI), Z13
	VCVTDQ2PS Z13, Z13
	VMULPS Z13, Z28, Z13
	VPMOVZXBD 16(DI), Z14
	VCVTDQ2PS Z14, Z14
	VMULPS Z14, Z29, Z14
	VPXORD Z30, Z14, Z14
	VMOVUPS Z13, (R9)
	VMOVUPS Z14, 64(R9)
	ADDQ $32, DI
	ADDQ $128, R9
	DECQ CX
	DECQ AX
	JNZ eblock
	TESTQ CX, CX
	JNZ esuper

edone:
	VZEROUPPER
	RET

// func q6Unpack4(qs *byte, nb int, dst *byte)
//
// nb compact Q6_K blocks (famQ6, 384 bytes each) into the byte layout
// (int8 q = u − 32, 512 bytes each) that the Q6_K kernels read: chunk
// 4h+c is (the low 4 bits in half h of famNib chunk c) | (bits 2c..2c+1
// of high vector h) << 4, minus 32. Word shifts are safe: every byte is
// masked after. Z20/Z21 the high vectors, Z22/Z23 them shifted.
TEXT ·q6Unpack4(SB), NOSPLIT, $0-24
	MOVQ qs+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ dst+16(FP), DI
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z30
	MOVL $0x20202020, AX
	VPBROADCASTD AX, Z29
	TESTQ CX, CX
	JZ udone

ublock:
	VMOVDQU64 256(SI), Z20
	VMOVDQU64 320(SI), Z21
	Q6NIB(0)
	VPSLLW $4, Z20, Z22
	VPSLLW $4, Z21, Z23
	Q6HALF(Z9, Z22, 0)
	Q6HALF(Z10, Z23, 256)
	Q6NIB(1)
	VPSLLW $2, Z20, Z22
	VPSLLW $2, Z21, Z23
	Q6HALF(Z9, Z22, 64)
	Q6HALF(Z10, Z23, 320)
	Q6NIB(2)
	Q6HALF(Z9, Z20, 128)
	Q6HALF(Z10, Z21, 384)
	Q6NIB(3)
	VPSRLW $2, Z20, Z22
	VPSRLW $2, Z21, Z23
	Q6HALF(Z9, Z22, 192)
	Q6HALF(Z10, Z23, 448)
	ADDQ $384, SI
	ADDQ $512, DI
	DECQ CX
	JNZ ublock

udone:
	VZEROUPPER
	RET

// func expandQ6(k *byte, nb int, dst *float32)
//
// One group's compact Q6_K scales (per group [nb][2][16] int8, then
// [nb/8][16] float16 d) as float32 D₀ [16], D₁ [16] per block into dst
// [nb][32]: D = d·scale, as decodeQ6K computes it.
TEXT ·expandQ6(SB), NOSPLIT, $0-24
	MOVQ k+0(FP), DI
	MOVQ nb+8(FP), CX
	MOVQ dst+16(FP), R9
	MOVQ CX, DX
	SHLQ $5, DX
	ADDQ DI, DX
	TESTQ CX, CX
	JZ x6done

x6super:
	VCVTPH2PS (DX), Z28
	ADDQ $32, DX
	MOVQ $8, AX

x6block:
	VPMOVSXBD (DI), Z13
	VCVTDQ2PS Z13, Z13
	VMULPS Z13, Z28, Z13
	VPMOVSXBD 16(DI), Z14
	VCVTDQ2PS Z14, Z14
	VMULPS Z14, Z28, Z14
	VMOVUPS Z13, (R9)
	VMOVUPS Z14, 64(R9)
	ADDQ $32, DI
	ADDQ $128, R9
	DECQ CX
	DECQ AX
	JNZ x6block
	TESTQ CX, CX
	JNZ x6super

x6done:
	VZEROUPPER
	RET

// func q6cRows1VNNI(qs *byte, sc unsafe.Pointer, x *int8, xd *float32, hs *int32, nb, groups int, out *float32)
//
// q6Rows1VNNI for compact Q6_K (famQ6) without unpacking to memory:
// each 64-byte vector of a block is u = q+32 in [0, 63], put together
// from its famNib chunk and its high 2 bits with one VPTERNLOGD, and
// multiplies the signed activations directly; 32·Σx of each half block
// (hs, from the quantizer) then makes the sums those of q, so the
// integers and the float operations are those of the Q6_K kernels.
// Per group: [nb][384] quants, scales as expandQ6 reads them.
// Registers: SI qs, DI scales, DX d of the super-block (Z28), R8 x, R12
// xd, R13 hs, R10 nb, BX groups left, R9 out, CX blocks left, AX blocks
// left in the super-block, R11 = 32·nb, R14 = 4·nb; Z0 acc, Z4/Z5 the
// halves' sums, Z20/Z21 high vectors, Z30 0x30 bytes, Z31 0x0f bytes.
TEXT ·q6cRows1VNNI(SB), NOSPLIT, $0-64
	MOVQ qs+0(FP), SI
	MOVQ sc+8(FP), DI
	MOVQ x+16(FP), R8
	MOVQ xd+24(FP), R12
	MOVQ hs+32(FP), R13
	MOVQ nb+40(FP), R10
	MOVQ groups+48(FP), BX
	MOVQ out+56(FP), R9
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z30
	TESTQ BX, BX
	JZ q6done
	TESTQ R10, R10
	JZ q6done
	MOVQ R10, R11
	SHLQ $5, R11
	MOVQ R10, R14
	SHLQ $2, R14

q6group:
	LEAQ (DI)(R11*1), DX
	MOVQ R10, CX
	VPXORD Z0, Z0, Z0

q6super:
	VCVTPH2PS (DX), Z28
	ADDQ $32, DX
	MOVQ $8, AX

q6block:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VMOVDQU64 256(SI), Z20
	VMOVDQU64 320(SI), Z21
	Q6NIB(0)
	VPSLLW $4, Z20, Z22
	VPSLLW $4, Z21, Z23
	VPTERNLOGD $0xea, Z9, Z30, Z22
	VPTERNLOGD $0xea, Z10, Z30, Z23
	VPDPBUSD.BCST 0(R8), Z22, Z4
	VPDPBUSD.BCST 16(R8), Z23, Z5
	Q6NIB(1)
	VPSLLW $2, Z20, Z22
	VPSLLW $2, Z21, Z23
	VPTERNLOGD $0xea, Z9, Z30, Z22
	VPTERNLOGD $0xea, Z10, Z30, Z23
	VPDPBUSD.BCST 4(R8), Z22, Z4
	VPDPBUSD.BCST 20(R8), Z23, Z5
	Q6NIB(2)
	VMOVDQA64 Z20, Z22
	VMOVDQA64 Z21, Z23
	VPTERNLOGD $0xea, Z9, Z30, Z22
	VPTERNLOGD $0xea, Z10, Z30, Z23
	VPDPBUSD.BCST 8(R8), Z22, Z4
	VPDPBUSD.BCST 24(R8), Z23, Z5
	Q6NIB(3)
	VPSRLW $2, Z20, Z22
	VPSRLW $2, Z21, Z23
	VPTERNLOGD $0xea, Z9, Z30, Z22
	VPTERNLOGD $0xea, Z10, Z30, Z23
	VPDPBUSD.BCST 12(R8), Z22, Z4
	VPDPBUSD.BCST 28(R8), Z23, Z5
	VPSUBD.BCST (R13), Z4, Z4
	VPSUBD.BCST 4(R13), Z5, Z5
	VPMOVSXBD (DI), Z13
	VCVTDQ2PS Z13, Z13
	VMULPS Z13, Z28, Z13
	VPMOVSXBD 16(DI), Z14
	VCVTDQ2PS Z14, Z14
	VMULPS Z14, Z28, Z14
	D(Z4, Z0, (R12), Z13)
	D(Z5, Z0, (R12), Z14)
	ADDQ $384, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $4, R12
	ADDQ $8, R13
	DECQ CX
	DECQ AX
	JNZ q6block
	TESTQ CX, CX
	JNZ q6super

	MOVQ DX, DI
	VMOVUPS Z0, (R9)
	ADDQ $64, R9
	SUBQ R11, R8
	SUBQ R14, R12
	SUBQ R14, R13
	SUBQ R14, R13
	DECQ BX
	JNZ q6group

q6done:
	VZEROUPPER
	RET
