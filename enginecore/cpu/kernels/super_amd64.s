//go:build goexperiment.simd

#include "textflag.h"

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
	PREFETCHT0 2048(SI); PREFETCHT0 2112(SI); PREFETCHT0 2176(SI); PREFETCHT0 2240(SI)
	PREFETCHT0 2304(SI); PREFETCHT0 2368(SI); PREFETCHT0 2432(SI); PREFETCHT0 2496(SI)
	PREFETCHT0 2560(SI); PREFETCHT0 2624(SI); PREFETCHT0 2688(SI); PREFETCHT0 2752(SI)
	PREFETCHT0 2816(SI); PREFETCHT0 2880(SI); PREFETCHT0 2944(SI); PREFETCHT0 3008(SI)
	PREFETCHT0 3072(SI); PREFETCHT0 3136(SI); PREFETCHT0 3200(SI); PREFETCHT0 3264(SI)
	PREFETCHT0 3328(SI); PREFETCHT0 3392(SI); PREFETCHT0 3456(SI); PREFETCHT0 3520(SI)
	PREFETCHT0 3584(SI); PREFETCHT0 3648(SI); PREFETCHT0 3712(SI); PREFETCHT0 3776(SI)
	PREFETCHT0 3840(SI); PREFETCHT0 3904(SI); PREFETCHT0 3968(SI); PREFETCHT0 4032(SI)
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
// every SIMD level): one row times one group, rows 0–7 and 8–15 in two
// halves, with the integer sums and the float operations of the AMX
// kernel (archsimd's version spilled registers through legacy-SSE moves,
// which cost a state transition each: 500× slower).
//
// Registers: Y0/Y1 acc, Y6/Y7 I1 and Y2/Y3 I2 of rows 0–7/8–15, Y4/Y5 a
// block's int16 sums (NCHUNK2), Y8–Y12 temps, Y14 ones16, Y15 0x0f
// bytes; SI qs, DX the block's scales and mins, R8 x, R9 block sums, R12
// xd, DI d and dmin, CX super-blocks left, BX blocks left.
#define SCHUNK(off, lo, hi) \
	VPBROADCASTD lo(R8), Y11 \
	VPBROADCASTD hi(R8), Y12 \
	SCHUNK1(off, Y4) \
	SCHUNK1(off+32, Y5)

#define SCHUNK1(off, s) \
	VMOVDQU off(SI), Y8 \
	VPAND Y15, Y8, Y9 \
	VPSRLW $4, Y8, Y10 \
	VPAND Y15, Y10, Y10 \
	VPMADDUBSW Y11, Y9, Y9 \
	VPADDW Y9, s, s \
	VPMADDUBSW Y12, Y10, Y10 \
	VPADDW Y10, s, s

DATA snibmask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA snibmask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA snibmask<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA snibmask<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL snibmask<>(SB), RODATA|NOPTR, $32

DATA sones16<>+0(SB)/8, $0x0001000100010001
DATA sones16<>+8(SB)/8, $0x0001000100010001
DATA sones16<>+16(SB)/8, $0x0001000100010001
DATA sones16<>+24(SB)/8, $0x0001000100010001
GLOBL sones16<>(SB), RODATA|NOPTR, $32

// func superRowAVX2(qs *byte, k *byte, x *int8, xd *float32, sums *int16, nb int, res *[16]float32)
TEXT ·superRowAVX2(SB), NOSPLIT, $0-56
	MOVQ qs+0(FP), SI
	MOVQ k+8(FP), DX
	MOVQ x+16(FP), R8
	MOVQ xd+24(FP), R12
	MOVQ sums+32(FP), R9
	MOVQ nb+40(FP), CX
	MOVQ CX, DI
	SHLQ $5, DI
	ADDQ DX, DI // d and dmin: after the nb blocks' 32 bytes
	SHRQ $3, CX
	VMOVDQU snibmask<>(SB), Y15
	VMOVDQU sones16<>(SB), Y14
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	TESTQ CX, CX
	JZ sdone
sblock:
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	MOVQ $8, BX
sblk:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	PREFETCHT0 1216(SI)
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	SCHUNK(0, 0, 16)
	SCHUNK(64, 4, 20)
	SCHUNK(128, 8, 24)
	SCHUNK(192, 12, 28)
	VPMADDWD Y14, Y4, Y4
	VPMADDWD Y14, Y5, Y5
	VPMOVZXBD (DX), Y8
	VPMULLD Y8, Y4, Y4
	VPADDD Y4, Y6, Y6
	VPMOVZXBD 8(DX), Y8
	VPMULLD Y8, Y5, Y5
	VPADDD Y5, Y7, Y7
	MOVWLSX (R9), AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9
	VPMOVZXBD 16(DX), Y8
	VPMULLD Y9, Y8, Y8
	VPADDD Y8, Y2, Y2
	VPMOVZXBD 24(DX), Y8
	VPMULLD Y9, Y8, Y8
	VPADDD Y8, Y3, Y3
	ADDQ $256, SI
	ADDQ $32, R8
	ADDQ $32, DX
	ADDQ $2, R9
	DECQ BX
	JNZ sblk
	VBROADCASTSS (R12), Y9
	VBROADCASTSS ssign<>(SB), Y12
	VCVTPH2PS (DI), Y10
	VMULPS Y9, Y10, Y10
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y10, Y6, Y0
	VCVTPH2PS 32(DI), Y10
	VXORPS Y12, Y10, Y10
	VMULPS Y9, Y10, Y10
	VCVTDQ2PS Y2, Y2
	VFMADD231PS Y10, Y2, Y0
	VCVTPH2PS 16(DI), Y10
	VMULPS Y9, Y10, Y10
	VCVTDQ2PS Y7, Y7
	VFMADD231PS Y10, Y7, Y1
	VCVTPH2PS 48(DI), Y10
	VXORPS Y12, Y10, Y10
	VMULPS Y9, Y10, Y10
	VCVTDQ2PS Y3, Y3
	VFMADD231PS Y10, Y3, Y1
	ADDQ $4, R12
	ADDQ $64, DI
	DECQ CX
	JNZ sblock
sdone:
	MOVQ res+48(FP), AX
	VMOVUPS Y0, (AX)
	VMOVUPS Y1, 32(AX)
	VZEROUPPER
	RET

DATA ssign<>+0(SB)/4, $0x80000000
GLOBL ssign<>(SB), RODATA|NOPTR, $4

// func superRows2AVX2(qs *byte, k *byte, x *int8, xstep int, xd *float32, xdstep int, sums *int16, sstep int, nb, half int, res *[2][8]float32)
//
// superRowAVX2 for a precise token's two level rows at once (x and
// x+xstep, their scales and sums likewise), sharing each unpacked chunk,
// and one half of the group per call (rows 8·half to 8·half+7): res[l]
// is level l's. Registers: Y0/Y1 acc, Y6/Y7 I1, Y2/Y3 I2, Y4/Y5 a block's
// int16 sums of level 0/1; Y8–Y13 temps, Y14 ones16, Y15 0x0f bytes; SI
// qs, DX scales and mins, R8/R10 x, R9/R11 sums, R12/R13 xd, DI d and
// dmin, CX super-blocks left, BX blocks left.
#define S2ROW(xr, s, lo, hi) \
	VPBROADCASTD lo(xr), Y11 \
	VPMADDUBSW Y11, Y9, Y12 \
	VPADDW Y12, s, s \
	VPBROADCASTD hi(xr), Y11 \
	VPMADDUBSW Y11, Y10, Y12 \
	VPADDW Y12, s, s

#define S2CHUNK(off, lo, hi) \
	VMOVDQU off(SI), Y8 \
	VPAND Y15, Y8, Y9 \
	VPSRLW $4, Y8, Y10 \
	VPAND Y15, Y10, Y10 \
	S2ROW(R8, Y4, lo, hi) \
	S2ROW(R10, Y5, lo, hi)

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
	VMOVDQU snibmask<>(SB), Y15
	VMOVDQU sones16<>(SB), Y14
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
	VBROADCASTSS ssign<>(SB), Y13
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
