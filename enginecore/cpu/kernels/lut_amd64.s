//go:build goexperiment.simd

#include "textflag.h"

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
