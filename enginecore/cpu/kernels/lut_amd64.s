//go:build goexperiment.simd

#include "textflag.h"
#include "nibavx2.h"
#include "byteavx2.h"

// LCHUNK1 is BCHUNK1 for chunk c of a compact table-type block (famLUT,
// 256 bytes: chunk c holds, per row, the indices of elements 4c..4c+3 in
// its low nibbles and of 16+4c..16+4c+3 in its high ones): the indices
// looked up in the table (Y2; Y3 the nibble mask), then elements 4c..
// into sums Y4 (rows 0–7) and Y6 (8–15), elements 16+4c.. into Y5 and
// Y7, as BLOCK1Q6 adds the byte layout's chunks c and 4+c.
#define LCHUNK1(c) \
	VMOVDQU (c*64)(SI), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y3, Y8, Y8 \
	VPAND Y3, Y9, Y9 \
	VPSHUFB Y8, Y2, Y8 \
	VPSHUFB Y9, Y2, Y9 \
	VMOVDQU (c*64+32)(SI), Y13 \
	VPSRLW $4, Y13, Y14 \
	VPAND Y3, Y13, Y13 \
	VPAND Y3, Y14, Y14 \
	VPSHUFB Y13, Y2, Y13 \
	VPSHUFB Y14, Y2, Y14 \
	VPBROADCASTD (c*4)(R8)(DX*1), Y11 \
	VPBROADCASTD (c*4)(R8), Y10 \
	BPROD(Y8, Y10, Y11, Y4) \
	BPROD(Y13, Y10, Y11, Y6) \
	VPBROADCASTD (16+c*4)(R8)(DX*1), Y11 \
	VPBROADCASTD (16+c*4)(R8), Y10 \
	BPROD(Y9, Y10, Y11, Y5) \
	BPROD(Y14, Y10, Y11, Y7)

// The table kernels' scale epilogues: one float32 scale per 32 for
// both halves (LSCALEF), two (LSCALE2: Q3_K's per 16), or one E8M0 byte
// per 32 (LSCALEE: MXFP4's, converted by E8M0F into Y8 and Y9).
#define LSCALEF \
	BSCALE1(Y4, Y6, 0) \
	BSCALE1(Y5, Y7, 0)

#define LSCALE2 \
	BSCALE1(Y4, Y6, 0) \
	BSCALE1(Y5, Y7, 64)

#define LSCALEE \
	E8M0F((DI), Y8, Y10, Y11) \
	E8M0F(8(DI), Y9, Y10, Y11) \
	MOVQ R12, AX \
	VMOVAPS Y8, Y13 \
	BSCALE(Y4, Y0) \
	VMOVAPS Y9, Y13 \
	BSCALE(Y6, Y1) \
	VMOVAPS Y8, Y13 \
	BSCALE(Y5, Y0) \
	VMOVAPS Y9, Y13 \
	BSCALE(Y7, Y1)

// E8M0F converts the 8 E8M0 bytes at src into 8 float32 in y, as
// model.MXFP4Scale does: bits (e−1)<<23 for e ≥ 2, else the subnormal
// 0x00200000<<e; t1 and t2 are temps.
#define E8M0F(src, y, t1, t2) \
	VPMOVZXBD src, y \
	VMOVDQU e8den<>(SB), t2 \
	VPSLLVD y, t2, t2 \
	VPSUBD e8one<>(SB), y, t1 \
	VPSLLD $23, t1, t1 \
	VPCMPGTD e8one<>(SB), y, y \
	VPBLENDVB y, t1, t2, y

DATA e8one<>+0(SB)/8, $0x0000000100000001
DATA e8one<>+8(SB)/8, $0x0000000100000001
DATA e8one<>+16(SB)/8, $0x0000000100000001
DATA e8one<>+24(SB)/8, $0x0000000100000001
GLOBL e8one<>(SB), RODATA|NOPTR, $32

DATA e8den<>+0(SB)/8, $0x0020000000200000
DATA e8den<>+8(SB)/8, $0x0020000000200000
DATA e8den<>+16(SB)/8, $0x0020000000200000
DATA e8den<>+24(SB)/8, $0x0020000000200000
GLOBL e8den<>(SB), RODATA|NOPTR, $32

// LUT1 is the body of the one-token table-type kernels (qs *byte,
// sc *float32, xa *uint8, xm *int8, xd *float32, table *[16]int8, nb int,
// res *[GroupRows]float32): byteGroup1Q6AVX2 straight from a compact
// table-type group (famLUT: qs [nb][256]), SCALE its scales' epilogue
// (LSCALEF, LSCALE2, LSCALEE) and bs its scale bytes a block. The same
// integer sums and float operations as on the group expanded
// (expandLUT), so the same bits, without writing the expansion. It asks
// for the indices 1 KiB ahead, as NIB1 does: 15.5 → 17.8 GB/s for
// IQ4_XS and MXFP4 on one EPYC core (BenchmarkMatMulDRAM).
#define LUT1(SCALE, bs) \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ xa+16(FP), R8 \
	MOVQ xm+24(FP), DX \
	SUBQ R8, DX \
	MOVQ xd+32(FP), R12 \
	MOVQ table+40(FP), AX \
	VBROADCASTI128 (AX), Y2 \
	MOVQ nb+48(FP), CX \
	MOVL $0x0f0f0f0f, AX \
	MOVD AX, X3 \
	VPBROADCASTD X3, Y3 \
	VMOVDQU ones16<>(SB), Y15 \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	TESTQ CX, CX \
	JZ lutdone \
lutblock: \
	AHEAD4 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7 \
	LCHUNK1(0) \
	LCHUNK1(1) \
	LCHUNK1(2) \
	LCHUNK1(3) \
	SCALE \
	ADDQ $256, SI \
	ADDQ $bs, DI \
	ADDQ $32, R8 \
	ADDQ $4, R12 \
	DECQ CX \
	JNZ lutblock \
lutdone: \
	MOVQ res+56(FP), AX \
	VMOVUPS Y0, (AX) \
	VMOVUPS Y1, 32(AX) \
	VZEROUPPER \
	RET

// func expandLUTAVX2(dst, src *byte, table *[16]int8, nb int)
//
// expandLUTGo for nb blocks: each famNib block's 4 chunks of 64 bytes
// (two 32-byte halves each) become the byte block's chunks c (the low
// nibbles' table values) and 4+c (the high nibbles'), by VPSHUFB on the
// table broadcast to both 128-bit lanes.
TEXT ·expandLUTAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ table+16(FP), AX
	MOVQ nb+24(FP), CX
	VBROADCASTI128 (AX), Y15
	MOVL $0x0f0f0f0f, AX
	MOVD AX, X14
	VPBROADCASTD X14, Y14
	TESTQ CX, CX
	JZ done

block:
#define HALF(off, doff) \
	VMOVDQU off(SI), Y0 \
	VPSRLW $4, Y0, Y1 \
	VPAND Y14, Y0, Y0 \
	VPAND Y14, Y1, Y1 \
	VPSHUFB Y0, Y15, Y0 \
	VPSHUFB Y1, Y15, Y1 \
	VMOVDQU Y0, doff(DI) \
	VMOVDQU Y1, (doff+256)(DI)
	HALF(0, 0)
	HALF(32, 32)
	HALF(64, 64)
	HALF(96, 96)
	HALF(128, 128)
	HALF(160, 160)
	HALF(192, 192)
	HALF(224, 224)
	ADDQ $256, SI
	ADDQ $512, DI
	DECQ CX
	JNZ block

done:
	VZEROUPPER
	RET

// func expandScalesAVX2(dst, src *float32, nb int)
//
// Each block's 16 float32 scales (src [nb][16]) written twice (dst
// [nb][2][16]), as Q6_K's two halves read them.
TEXT ·expandScalesAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	TESTQ CX, CX
	JZ sdone

sblock:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y0, 64(DI)
	VMOVUPS Y1, 96(DI)
	ADDQ $64, SI
	ADDQ $128, DI
	DECQ CX
	JNZ sblock

sdone:
	VZEROUPPER
	RET

// func expandScalesE8M0AVX2(dst *float32, src *byte, nb int)
//
// expandScalesAVX2 from E8M0 bytes (src [nb][16]), converted by E8M0F.
TEXT ·expandScalesE8M0AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	TESTQ CX, CX
	JZ edone

eblock:
	E8M0F((SI), Y0, Y2, Y3)
	E8M0F(8(SI), Y1, Y2, Y3)
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y0, 64(DI)
	VMOVUPS Y1, 96(DI)
	ADDQ $16, SI
	ADDQ $128, DI
	DECQ CX
	JNZ eblock

edone:
	VZEROUPPER
	RET

// func byteGroup1LUTAVX2(qs *byte, sc *float32, xa *uint8, xm *int8, xd *float32, table *[16]int8, nb int, res *[GroupRows]float32)
//
// One float32 scale per 32 (sc [nb][16]: IQ4_XS, MXFP4), for both halves.
TEXT ·byteGroup1LUTAVX2(SB), NOSPLIT, $0-64
	LUT1(LSCALEF, 64)

// func byteGroup1LUT2AVX2(qs *byte, sc *float32, xa *uint8, xm *int8, xd *float32, table *[16]int8, nb int, res *[GroupRows]float32)
//
// Two per 32 (sc [nb][2][16]: Q3_K).
TEXT ·byteGroup1LUT2AVX2(SB), NOSPLIT, $0-64
	LUT1(LSCALE2, 128)

// func byteGroup1LUTEAVX2(qs *byte, sc *byte, xa *uint8, xm *int8, xd *float32, table *[16]int8, nb int, res *[GroupRows]float32)
//
// One E8M0 byte per 32 (sc [nb][16]: MXFP4).
TEXT ·byteGroup1LUTEAVX2(SB), NOSPLIT, $0-64
	LUT1(LSCALEE, 16)
