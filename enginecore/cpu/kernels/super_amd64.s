//go:build goexperiment.simd

#include "textflag.h"
#include "nibavx2.h"

// The super form's AMX kernel (super.go): per super-block of 256, the
// group's weights become two K = 64 byte tiles per pair of blocks, w
// times the high and the low three bits of each block's 6-bit scale
// (hi·w, lo·w ≤ 105), so that 8·Σ(hi·w·q) + Σ(lo·w·q) = Σⱼ scⱼ·Cⱼ
// exactly; the mins' Σⱼ mⱼ·Sⱼ come from the rows' block sums by
// VPDPWSSD. Tiles (amxConfig64): C tmm0 (hi) and tmm3 (lo) [16 rows]
// [16] int32, A tmm1 [16 rows][64] int8, B tmm2 (hi) and tmm5 (lo)
// [16][64] in the VNNI layout. Spelled in bytes, as amx_amd64.s.

#define LDTILECFG_AX BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00
#define TILERELEASE BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0
// tileloadd (SI)(AX*1), tmm2; 1024(SI)(AX*1), tmm5; (R8)(R9*1), tmm1
#define LOADBHI BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x14; BYTE $0x06
#define LOADBLO BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0xac; BYTE $0x06; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00
#define LOADA BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x0c; BYTE $0x08
// tdpbsud tmm0 += tmm1·tmm2; tmm3 += tmm1·tmm5
#define DPHI BYTE $0xc4; BYTE $0xe2; BYTE $0x6a; BYTE $0x5e; BYTE $0xc1
#define DPLO BYTE $0xc4; BYTE $0xe2; BYTE $0x52; BYTE $0x5e; BYTE $0xd9
// tilestored tmm0, (R11)(AX*1); tmm3, 1024(R11)(AX*1)
#define STOREHI BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x03
#define STORELO BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x9c; BYTE $0x03; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00
#define ZEROHI BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0
#define ZEROLO BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8

// CHUNK multiplies one K = 64 chunk: A at R8 (stride R9), B at SI.
#define CHUNK LOADBHI; LOADBLO; LOADA; DPHI; DPLO; ADDQ $2048, SI; ADDQ $64, R8

// PLANE(c, o) unpacks 4-bit chunk c of the block at SI+o·256 into its
// rows c (low nibbles) and 4+c (high) of the hi and lo tiles at
// DI+(o/2)·2048+(o%2)·512 (hi) and +1024 (lo): each byte times the row's
// hi (Z29) or lo (Z28) scale, replicated in both words of its row's
// dword (a byte product ≤ 105 never carries into the next byte).
#define PLANE(c, o) \
	VMOVDQU64 (o*256+64*c)(SI), Z22 \
	VPANDD Z31, Z22, Z23 \
	VPSRLW $4, Z22, Z22 \
	VPANDD Z31, Z22, Z22 \
	VPMULLW Z29, Z23, Z21 \
	VMOVDQU64 Z21, ((o/2)*2048+(o%2)*512+64*c)(DI) \
	VPMULLW Z28, Z23, Z21 \
	VMOVDQU64 Z21, ((o/2)*2048+1024+(o%2)*512+64*c)(DI) \
	VPMULLW Z29, Z22, Z21 \
	VMOVDQU64 Z21, ((o/2)*2048+(o%2)*512+256+64*c)(DI) \
	VPMULLW Z28, Z22, Z21 \
	VMOVDQU64 Z21, ((o/2)*2048+1024+(o%2)*512+256+64*c)(DI)

// BLOCK(o) readies block o of the super-block: its scales (bytes at
// DX+32·o) split into hi and lo, then its four chunks.
#define BLOCK(o) \
	VPMOVZXBD (32*o)(DX), Z28 \
	VPSRLD $3, Z28, Z29 \
	VPANDD Z30, Z28, Z28 \
	VPSLLD $16, Z29, Z26 \
	VPORD Z26, Z29, Z29 \
	VPSLLD $16, Z28, Z26 \
	VPORD Z26, Z28, Z28 \
	PLANE(0, o); PLANE(1, o); PLANE(2, o); PLANE(3, o)

// MINS(i, z): z's dword r = mins of row r of blocks 2i and 2i+1, as an
// int16 pair (the mins are at DX+32·o+16).
#define MINS(i, z) \
	VPMOVZXBD (64*i+16)(DX), z \
	VPMOVZXBD (64*i+48)(DX), Z26 \
	VPSLLD $16, Z26, Z26 \
	VPORD Z26, z, z

// EPI(k, STORE): row k of the tile: I1 = 8·hi + lo (C at R11), I2 =
// Σ mins·sums (pairs at R13+16k), acc (R14+64k) += float(I1)·(d·xd) then
// float(I2)·(−dmin·xd), xd at R12+4k; STORE puts the new acc (Z22) back:
// ACCS into acc, ACCO into the output row at R8 (the last super-block of
// a tile of level 0), ACCA added to that row (a later level), R8 then
// stepping SI to the next row.
#define EPI(k, STORE) \
	VPSLLD $3, (64*k)(R11), Z18 \
	VPADDD (1024+64*k)(R11), Z18, Z18 \
	VCVTDQ2PS Z18, Z18 \
	VPXORD Z19, Z19, Z19 \
	VPDPWSSD.BCST (16*k)(R13), Z24, Z19 \
	VPDPWSSD.BCST (16*k+4)(R13), Z25, Z19 \
	VPDPWSSD.BCST (16*k+8)(R13), Z26, Z19 \
	VPDPWSSD.BCST (16*k+12)(R13), Z27, Z19 \
	VCVTDQ2PS Z19, Z19 \
	VMULPS.BCST (4*k)(R12), Z16, Z20 \
	VMULPS.BCST (4*k)(R12), Z17, Z21 \
	VMOVUPS (64*k)(R14), Z22 \
	VFMADD231PS Z20, Z18, Z22 \
	VFMADD231PS Z21, Z19, Z22 \
	STORE(k)

#define ACCS(k) VMOVUPS Z22, (64*k)(R14)
#define ACCO(k) VMOVUPS Z22, (R8); ADDQ SI, R8
#define ACCA(k) VADDPS (R8), Z22, Z22; VMOVUPS Z22, (R8); ADDQ SI, R8

#define EPI16(STORE) \
	EPI(0, STORE); EPI(1, STORE); EPI(2, STORE); EPI(3, STORE) \
	EPI(4, STORE); EPI(5, STORE); EPI(6, STORE); EPI(7, STORE) \
	EPI(8, STORE); EPI(9, STORE); EPI(10, STORE); EPI(11, STORE) \
	EPI(12, STORE); EPI(13, STORE); EPI(14, STORE); EPI(15, STORE)

// PREFETCH8 asks for the 512 bytes at o(SI).
#define PREFETCH8(o) \
	PREFETCHT0 o(SI); PREFETCHT0 (o+64)(SI); PREFETCHT0 (o+128)(SI); PREFETCHT0 (o+192)(SI) \
	PREFETCHT0 (o+256)(SI); PREFETCHT0 (o+320)(SI); PREFETCHT0 (o+384)(SI); PREFETCHT0 (o+448)(SI)

DATA signbit<>+0(SB)/4, $0x80000000
GLOBL signbit<>(SB), RODATA|NOPTR, $4

// func superTilesAMX(cfg *byte, qs *byte, k *byte, xq *int8, in int, xdT *float32, xsT *int32, nb, tiles int, prep *byte, acc *float32, out *float32, ldo int, tinfo *int64)
//
// Super-blocks outer, tiles inner: a super-block's weight tiles (8 KiB
// at prep) are built once and stay in L1 while every tile reads them;
// the tiles' float sums live in acc. In the last super-block, tile t
// with tinfo[t] = off | mode (mode in the low 2 bits) writes its rows
// to out+off, ldo bytes apart: mode 1 stores them (level 0), mode 2 adds
// them (later levels, whose level 0 is there already); mode 0 leaves
// them in acc. Frame: 0(SP) super-blocks left, 8(SP) tinfo of the tile,
// 16(SP) qs of the super-block, 24(SP) its scales, 32(SP) its d and
// dmin, 40(SP) its byte offset in a row (256·sb: A and xsT), 48(SP)
// 64·sb (xdT); R11 = the C tiles' 64-byte-aligned 2 KiB.
TEXT ·superTilesAMX(SB), 0, $2240-112
	MOVQ cfg+0(FP), AX
	LDTILECFG_AX
	LEAQ 127(SP), R11
	ANDQ $~63, R11
	MOVQ in+32(FP), R9
	MOVQ nb+56(FP), CX
	SHRQ $3, CX
	JZ done
	CMPQ tiles+64(FP), $0
	JEQ done
	MOVQ CX, 0(SP)
	MOVQ qs+8(FP), AX
	MOVQ AX, 16(SP)
	MOVQ k+16(FP), AX
	MOVQ AX, 24(SP)
	MOVQ nb+56(FP), BX
	SHLQ $5, BX
	ADDQ BX, AX
	MOVQ AX, 32(SP)
	MOVQ $0, 40(SP)
	MOVQ $0, 48(SP)
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $7, AX
	VPBROADCASTD AX, Z30

superblock:
	MOVQ 16(SP), SI
	MOVQ 24(SP), DX
	MOVQ prep+72(FP), DI
	BLOCK(0); BLOCK(1); BLOCK(2); BLOCK(3); BLOCK(4); BLOCK(5); BLOCK(6); BLOCK(7)
	MINS(0, Z24); MINS(1, Z25); MINS(2, Z27)
	VMOVDQU64 Z27, Z23
	MINS(3, Z27)
	VMOVDQU64 Z23, Z26
	MOVQ 32(SP), BX
	VCVTPH2PS (BX), Z16
	VCVTPH2PS 32(BX), Z17
	VPXORD.BCST signbit<>(SB), Z17, Z17

	// The next super-block's weights (the next group's first, after the
	// last) come from DRAM while the tiles run.
	MOVQ 16(SP), SI
	PREFETCH8(2048); PREFETCH8(2560); PREFETCH8(3072); PREFETCH8(3584)
	MOVQ 24(SP), SI
	PREFETCHT0 256(SI); PREFETCHT0 320(SI); PREFETCHT0 384(SI); PREFETCHT0 448(SI)

	// Every tile of 16 rows against this super-block.
	MOVQ xq+24(FP), R10
	ADDQ 40(SP), R10
	MOVQ xdT+40(FP), R12
	ADDQ 48(SP), R12
	MOVQ xsT+48(FP), R13
	ADDQ 40(SP), R13
	MOVQ acc+80(FP), R14
	MOVQ nb+56(FP), DI
	SHLQ $3, DI        // xdT per tile: nb/8 · 64 bytes
	MOVQ DI, DX
	SHLQ $2, DX        // xsT per tile: nb/8 · 256 bytes
	MOVQ tiles+64(FP), CX
	MOVQ tinfo+104(FP), BX
	MOVQ BX, 8(SP)

tile:
	MOVQ R10, R8
	MOVQ prep+72(FP), SI
	MOVQ $64, AX
	ZEROHI; ZEROLO
	CHUNK; CHUNK; CHUNK; CHUNK
	STOREHI; STORELO
	CMPQ 0(SP), $1
	JNE keep
	MOVQ 8(SP), BX
	MOVQ (BX), BX
	MOVQ BX, R8
	ANDQ $3, BX
	JZ keep
	ANDQ $~3, R8
	ADDQ out+88(FP), R8
	MOVQ ldo+96(FP), SI
	CMPQ BX, $1
	JNE add
	EPI16(ACCO)
	JMP epidone
add:
	EPI16(ACCA)
	JMP epidone
keep:
	EPI16(ACCS)
epidone:
	ADDQ $8, 8(SP)
	MOVQ R9, BX
	SHLQ $4, BX
	ADDQ BX, R10
	ADDQ DI, R12
	ADDQ DX, R13
	ADDQ $1024, R14
	DECQ CX
	JNZ tile

	ADDQ $2048, 16(SP)
	ADDQ $256, 24(SP)
	ADDQ $64, 32(SP)
	ADDQ $256, 40(SP)
	ADDQ $64, 48(SP)
	DECQ 0(SP)
	JNZ superblock

done:
	TILERELEASE
	VZEROUPPER
	RET

// The super form below AMX tiles, at 256 bits (AVX2 + FMA + F16C, so
// every level): superRows2AVX2 multiplies a precise token's two level
// rows by one group, sharing each unpacked chunk (one row alone runs as
// the same row twice), one half of the group (rows 8·half to 8·half+7)
// per call, with the integer sums and the float operations of the AMX
// kernel.
//
// func superRows2AVX2(qs *byte, k *byte, x *int8, xstep int, xd *float32, xdstep int, sums *int16, sstep int, nb, half int, res *[2][8]float32)
//
// The rows are x and x+xstep, their scales xd and xd+xdstep, their block
// sums sums and sums+sstep; res[l] is row l's. Registers: Y0/Y1 acc,
// Y6/Y7 I1, Y2/Y3 I2, Y4/Y5 a block's int16 sums of row 0/1; Y8–Y13
// temps, Y14 ones16, Y15 0x0f bytes; SI qs, DX scales and mins, R8/R10 x,
// R9/R11 sums, R12/R13 xd, DI d and dmin, CX super-blocks left, BX blocks
// left.
#define S2CHUNK(off, lo, hi) \
	NUNPACK(off) \
	NTOKEN(R8, Y4, lo, hi) \
	NTOKEN(R10, Y5, lo, hi)

#define S2SCALE(xdr, i1, i2, acc) \
	VBROADCASTSS (xdr), Y10 \
	VMULPS Y10, Y8, Y11 \
	VCVTDQ2PS i1, i1 \
	VFMADD231PS Y11, i1, acc \
	VMULPS Y10, Y9, Y11 \
	VCVTDQ2PS i2, i2 \
	VFMADD231PS Y11, i2, acc

TEXT ·superRows2AVX2(SB), NOSPLIT, $0-88
	MOVQ half+72(FP), AX
	MOVQ qs+0(FP), SI
	MOVQ AX, BX
	SHLQ $5, BX
	ADDQ BX, SI // the half's 32 bytes of every chunk
	MOVQ k+8(FP), DX
	MOVQ nb+64(FP), CX
	MOVQ CX, DI
	SHLQ $5, DI
	ADDQ DX, DI // d and dmin: after the nb blocks' 32 bytes
	MOVQ AX, BX
	SHLQ $4, BX
	ADDQ BX, DI // the half's 8 float16
	SHLQ $3, AX
	ADDQ AX, DX // the half's 8 scales and 8 mins
	MOVQ x+16(FP), R8
	MOVQ R8, R10
	ADDQ xstep+24(FP), R10
	MOVQ xd+32(FP), R12
	MOVQ R12, R13
	ADDQ xdstep+40(FP), R13
	MOVQ sums+48(FP), R9
	MOVQ R9, R11
	ADDQ sstep+56(FP), R11
	SHRQ $3, CX
	VMOVDQU nibmask<>(SB), Y15
	VMOVDQU ones16<>(SB), Y14
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	TESTQ CX, CX
	JZ s2done
s2super:
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	MOVQ $8, BX
s2blk:
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	S2CHUNK(0, 0, 16)
	S2CHUNK(64, 4, 20)
	S2CHUNK(128, 8, 24)
	S2CHUNK(192, 12, 28)
	VPMADDWD Y14, Y4, Y4
	VPMADDWD Y14, Y5, Y5
	VPMOVZXBD (DX), Y8
	VPMULLD Y8, Y4, Y4
	VPADDD Y4, Y6, Y6
	VPMULLD Y8, Y5, Y5
	VPADDD Y5, Y7, Y7
	VPMOVZXBD 16(DX), Y8
	MOVWLSX (R9), AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	VPMULLD Y11, Y8, Y12
	VPADDD Y12, Y2, Y2
	MOVWLSX (R11), AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	VPMULLD Y11, Y8, Y12
	VPADDD Y12, Y3, Y3
	ADDQ $256, SI
	ADDQ $32, R8
	ADDQ $32, R10
	ADDQ $32, DX
	ADDQ $2, R9
	ADDQ $2, R11
	DECQ BX
	JNZ s2blk
	VBROADCASTSS signbit<>(SB), Y13
	VCVTPH2PS (DI), Y8
	VCVTPH2PS 32(DI), Y9
	VXORPS Y13, Y9, Y9
	S2SCALE(R12, Y6, Y2, Y0)
	S2SCALE(R13, Y7, Y3, Y1)
	ADDQ $4, R12
	ADDQ $4, R13
	ADDQ $64, DI
	DECQ CX
	JNZ s2super
s2done:
	MOVQ res+80(FP), AX
	VMOVUPS Y0, (AX)
	VMOVUPS Y1, 32(AX)
	VZEROUPPER
	RET
