//go:build goexperiment.simd

#include "textflag.h"

// AMX (Advanced Matrix Extensions) tiles for prefill and batched decode:
// one 16-row group times tiles of 16 tokens per call, one TDPB*D per
// block of 32 elements (16 for Q6_K: the blocks' scales keep K that
// small), each followed by the float epilogue of the one-token kernels,
// so every output has the bits the one-token kernels give it. Go's
// assembler has no AMX mnemonics: the instructions are spelled as bytes,
// with the registers fixed below.
//
// Tiles (amxConfig): C [16 tokens][16 rows] int32; A [16 tokens][K]
// int8 activations; B [K/4][16 rows × 4] weights in the "VNNI" layout
// (B[k/4][4r + k%4] = W[r][k]), which is a byte block's own packed
// layout; a 4-bit block is unpacked into it (low nibbles are elements
// 0–15, high 16–31).

#define LDTILECFG_AX BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00
#define TILERELEASE BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0

// Tile set 0: A tmm1, B tmm2, C tmm0; set 1: A tmm4, B tmm5, C tmm3.
// A rows are read at [R8 + R9·1]; unpacked B rows at [R11 + AX·1] (+512
// for set 1), byte-block B rows at [SI + AX·1]; C is stored at
// [R11 + AX·1 + 1024] (set 0) or +2048 (set 1). AX = 64 throughout.
#define TILEZERO0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0
#define TILEZERO1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8
#define LOADA0 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x0c; BYTE $0x08
#define LOADA1 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x08
#define LOADBUF0 BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x14; BYTE $0x03
#define LOADBUF1 BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0xac; BYTE $0x03; BYTE $0x00; BYTE $0x02; BYTE $0x00; BYTE $0x00
#define LOADBSI0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x14; BYTE $0x06
#define LOADBSI1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x06
#define DPBSUD0 BYTE $0xc4; BYTE $0xe2; BYTE $0x6a; BYTE $0x5e; BYTE $0xc1
#define DPBSUD1 BYTE $0xc4; BYTE $0xe2; BYTE $0x52; BYTE $0x5e; BYTE $0xdc
#define DPBSSD0 BYTE $0xc4; BYTE $0xe2; BYTE $0x6b; BYTE $0x5e; BYTE $0xc1
#define DPBSSD1 BYTE $0xc4; BYTE $0xe2; BYTE $0x53; BYTE $0x5e; BYTE $0xdc
#define STOREC0 BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x84; BYTE $0x03; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00
#define STOREC1 BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x9c; BYTE $0x03; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00

// UNPACK writes 4-bit chunk c of the block at SI as rows c (low
// nibbles) and 4+c (high nibbles) of a B tile at DI; Z31 = 0x0f bytes.
#define UNPACK(c) \
	VMOVDQU64 (64*c)(SI), Z22 \
	VPANDD Z31, Z22, Z23 \
	VPSRLW $4, Z22, Z22 \
	VPANDD Z31, Z22, Z22 \
	VMOVDQU64 Z23, (64*c)(DI) \
	VMOVDQU64 Z22, (256+64*c)(DI)

// UNPACKALL unpacks the group's nb blocks (qs) into buf, once per call.
#define UNPACKALL \
	MOVL $0x0f0f0f0f, DX \
	VPBROADCASTD DX, Z31 \
	MOVQ qs+8(FP), SI \
	MOVQ buf+80(FP), DI \
unpack: \
	UNPACK(0); UNPACK(1); UNPACK(2); UNPACK(3) \
	ADDQ $256, SI \
	ADDQ $512, DI \
	DECQ CX \
	JNZ unpack

// ISSUE0/1 multiply the B tile at SI by the A rows at R8 in tile set
// 0/1 with the instruction DP, store the sums (C at 1024(R11) or
// 2048(R11)), and step SI by bstep and R8 by astep to the next block.
#define ISSUE0(DP, bstep, astep) \
	LOADBSI0; LOADA0; TILEZERO0; DP; STOREC0 \
	ADDQ $bstep, SI; ADDQ $astep, R8

#define ISSUE1(DP, bstep, astep) \
	LOADBSI1; LOADA1; TILEZERO1; DP; STOREC1 \
	ADDQ $bstep, SI; ADDQ $astep, R8

// EPIDM adds token k's block sums (C row k at c+64k(R11)) into acc:
// acc += float(Σ)·(d·xd), then acc += m·xs, with d in Z16, m in Z17,
// xd and xs at 4k(R12) and 4k(R13): the one-token kernels' operations
// for 4-bit blocks and Q5_K. EPID omits the offset (Q8_0, Q6_K).
#define EPIDM(c, k, acc) \
	VCVTDQ2PS (c+64*k)(R11), Z18 \
	VMULPS.BCST (4*k)(R12), Z16, Z19 \
	VFMADD231PS Z19, Z18, acc \
	VFMADD231PS.BCST (4*k)(R13), Z17, acc

#define EPID(c, k, acc) \
	VCVTDQ2PS (c+64*k)(R11), Z18 \
	VMULPS.BCST (4*k)(R12), Z16, Z19 \
	VFMADD231PS Z19, Z18, acc

#define EPI16(E, c) \
	E(c, 0, Z0); E(c, 1, Z1); E(c, 2, Z2); E(c, 3, Z3) \
	E(c, 4, Z4); E(c, 5, Z5); E(c, 6, Z6); E(c, 7, Z7) \
	E(c, 8, Z8); E(c, 9, Z9); E(c, 10, Z10); E(c, 11, Z11) \
	E(c, 12, Z12); E(c, 13, Z13); E(c, 14, Z14); E(c, 15, Z15)

// Scale loads into Z16 (d) and Z17 (m) from the block's scales at DI.
#define SCH VCVTPH2PS (DI), Z16; VCVTPH2PS 32(DI), Z17
#define SCF VMOVUPS (DI), Z16; VMOVUPS 64(DI), Z17
#define SCH1 VCVTPH2PS (DI), Z16
#define SCQ VCVTPH2PS (DI), Z16; VMULPS.BCST minus8<>(SB), Z16, Z17

DATA minus8<>+0(SB)/4, $-8.0
GLOBL minus8<>(SB), RODATA|NOPTR, $4
#define SCF1 VMOVUPS (DI), Z16
#define SCF1HI VMOVUPS 64(DI), Z16

// NEXT steps the scales by scstep and xd, xs to the next block.
#define NEXT(scstep) ADDQ $scstep, DI; ADDQ R10, R12; ADDQ R10, R13

// Per-kernel issue (I0, I1) and epilogue (E0: sums at 1024, E1: at 2048).
#define NIBH_I0 ISSUE0(DPBSUD0, 512, 32)
#define NIBH_I1 ISSUE1(DPBSUD1, 512, 32)
#define NIBH_E0 SCH; EPI16(EPIDM, 1024); NEXT(64)
#define NIBH_E1 SCH; EPI16(EPIDM, 2048); NEXT(64)
#define NIBQ_E0 SCQ; EPI16(EPIDM, 1024); NEXT(32)
#define NIBQ_E1 SCQ; EPI16(EPIDM, 2048); NEXT(32)
#define NIBF_E0 SCF; EPI16(EPIDM, 1024); NEXT(128)
#define NIBF_E1 SCF; EPI16(EPIDM, 2048); NEXT(128)
#define Q8_I0 ISSUE0(DPBSSD0, 512, 32)
#define Q8_I1 ISSUE1(DPBSSD1, 512, 32)
#define Q8_E0 SCH1; EPI16(EPID, 1024); NEXT(32)
#define Q8_E1 SCH1; EPI16(EPID, 2048); NEXT(32)
#define Q5_E0 SCF; EPI16(EPIDM, 1024); NEXT(128)
#define Q5_E1 SCF; EPI16(EPIDM, 2048); NEXT(128)
// Q6_K runs half blocks of 16 (scales per 16): set 0 always has a
// block's first half, set 1 its second.
#define Q6_I0 ISSUE0(DPBSSD0, 256, 16)
#define Q6_I1 ISSUE1(DPBSSD1, 256, 16)
#define Q6_E0 SCF1; EPI16(EPID, 1024)
#define Q6_E1 SCF1HI; EPI16(EPID, 2048); NEXT(128)

#define ZERO16 \
	VPXORD Z0, Z0, Z0; VPXORD Z1, Z1, Z1; VPXORD Z2, Z2, Z2; VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4; VPXORD Z5, Z5, Z5; VPXORD Z6, Z6, Z6; VPXORD Z7, Z7, Z7 \
	VPXORD Z8, Z8, Z8; VPXORD Z9, Z9, Z9; VPXORD Z10, Z10, Z10; VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12; VPXORD Z13, Z13, Z13; VPXORD Z14, Z14, Z14; VPXORD Z15, Z15, Z15

// STORE16(r, s) stores the 16 accumulators as rows r, r+s, r+2s, …,
// leaving r past the last.
#define STORE16(r, s) \
	VMOVUPS Z0, (r); ADDQ s, r; VMOVUPS Z1, (r); ADDQ s, r; VMOVUPS Z2, (r); ADDQ s, r; VMOVUPS Z3, (r); ADDQ s, r \
	VMOVUPS Z4, (r); ADDQ s, r; VMOVUPS Z5, (r); ADDQ s, r; VMOVUPS Z6, (r); ADDQ s, r; VMOVUPS Z7, (r); ADDQ s, r \
	VMOVUPS Z8, (r); ADDQ s, r; VMOVUPS Z9, (r); ADDQ s, r; VMOVUPS Z10, (r); ADDQ s, r; VMOVUPS Z11, (r); ADDQ s, r \
	VMOVUPS Z12, (r); ADDQ s, r; VMOVUPS Z13, (r); ADDQ s, r; VMOVUPS Z14, (r); ADDQ s, r; VMOVUPS Z15, (r); ADDQ s, r

// ADD16(r, s) adds the 16 accumulators into rows r, r+s, r+2s, … (a
// precise token's residual row into its token's output: mem + acc, the
// bits of add16), leaving r past the last.
#define ADDROW(z, r, s) VADDPS (r), z, z; VMOVUPS z, (r); ADDQ s, r
#define ADD16(r, s) \
	ADDROW(Z0, r, s); ADDROW(Z1, r, s); ADDROW(Z2, r, s); ADDROW(Z3, r, s) \
	ADDROW(Z4, r, s); ADDROW(Z5, r, s); ADDROW(Z6, r, s); ADDROW(Z7, r, s) \
	ADDROW(Z8, r, s); ADDROW(Z9, r, s); ADDROW(Z10, r, s); ADDROW(Z11, r, s) \
	ADDROW(Z12, r, s); ADDROW(Z13, r, s); ADDROW(Z14, r, s); ADDROW(Z15, r, s)

// Every kernel has the signature
//
//	func xTilesAMX(cfg *byte, qs *byte, sc unsafe.Pointer, xq *int8, in int, xdT, xsT *float32, stride, nb, tiles int, buf *byte, res *float32, ldres, add int)
//
// for one group: qs [nb][256 or 512] its blocks, sc their scales; xq the
// tokens' rows (row stride in); xdT, xsT the tokens' block scales and
// sums, transposed (token k of block j at 4k + j·stride bytes); buf
// [nb][512] scratch for unpacked 4-bit blocks; res the tiles' rows of 16
// results, ldres bytes apart (64 into a scratch, 4·Out straight into a
// matmul's output), stored, or with add ≠ 0 added to what res holds.
//
// BEGIN loads the tile configuration and checks for work; PREP(B)
// readies the B tiles (unpacks 4-bit blocks into buf); TILES runs every
// tile over the blocks, software-pipelined on the two tile sets: block
// j+1 is multiplied while block j's sums go through the float epilogue.
// Registers: SI B tiles, R8 A rows, R9 in (A stride), DI scales, R12 xd,
// R13 xs, R10 stride, R11 frame (C at 1024 and 2048), AX 64, CX blocks
// (half blocks for Q6_K) not yet multiplied, BX, DX, R14 the tile's xq,
// xdT, xsT; Z0–Z15 accumulators. Frame: 0(SP) tiles left, 8(SP) res;
// R11 is SP+16 rounded up to 64 bytes: Go aligns SP to 8 only, and a C
// tile stored or read across cache lines costs 20–30% of the kernel
// (the 2,048² Q4_0 product at 128 tokens: 2.3 ms straddling, 1.9 ms
// aligned).
#define BEGIN \
	MOVQ cfg+0(FP), AX \
	LDTILECFG_AX \
	MOVQ in+32(FP), R9 \
	MOVQ stride+56(FP), R10 \
	LEAQ 79(SP), R11 \
	ANDQ $~63, R11 \
	MOVQ tiles+72(FP), AX \
	MOVQ AX, 0(SP) \
	MOVQ res+88(FP), AX \
	MOVQ AX, 8(SP) \
	MOVQ nb+64(FP), CX \
	TESTQ CX, CX \
	JZ done \
	CMPQ 0(SP), $0 \
	JEQ done

// TILES(bsrc, blocks, I0, I1, E0, E1): bsrc is the argument that holds
// the B tiles (buf or qs); blocks shifts nb to the pipeline's count.
#define TILES(bsrc, shift, I0, I1, E0, E1) \
	MOVQ xq+24(FP), BX \
	MOVQ xdT+40(FP), DX \
	MOVQ xsT+48(FP), R14 \
	MOVQ $64, AX \
tile: \
	MOVQ bsrc(FP), SI \
	MOVQ sc+16(FP), DI \
	MOVQ BX, R8 \
	MOVQ DX, R12 \
	MOVQ R14, R13 \
	MOVQ nb+64(FP), CX \
	SHLQ $shift, CX \
	ZERO16 \
	I0 \
	DECQ CX \
loop: \
	TESTQ CX, CX \
	JZ last0 \
	I1 \
	DECQ CX \
	E0 \
	TESTQ CX, CX \
	JZ last1 \
	I0 \
	DECQ CX \
	E1 \
	JMP loop \
last0: \
	E0 \
	JMP tiledone \
last1: \
	E1 \
tiledone: \
	MOVQ 8(SP), CX \
	MOVQ ldres+96(FP), AX \
	CMPQ add+104(FP), $0 \
	JNE addtile \
	STORE16(CX, AX) \
	JMP stored \
addtile: \
	ADD16(CX, AX) \
stored: \
	MOVQ $64, AX \
	MOVQ CX, 8(SP) \
	MOVQ R9, CX \
	SHLQ $4, CX \
	ADDQ CX, BX \
	ADDQ $64, DX \
	ADDQ $64, R14 \
	DECQ 0(SP) \
	JNZ tile \
done: \
	TILERELEASE \
	VZEROUPPER \
	RET

// nibTilesAMXH: 4-bit blocks with float16 scale and offset (Q4_0, Q4_1).
TEXT ·nibTilesAMXH(SB), 0, $3200-112
	BEGIN
	UNPACKALL
	TILES(buf+80, 0, NIBH_I0, NIBH_I1, NIBH_E0, NIBH_E1)

// nibTilesAMXQ: 4-bit blocks with float16 scale, offset -8·scale (Q4_0).
TEXT ·nibTilesAMXQ(SB), 0, $3200-112
	BEGIN
	UNPACKALL
	TILES(buf+80, 0, NIBH_I0, NIBH_I1, NIBQ_E0, NIBQ_E1)

// nibTilesAMXF: 4-bit blocks with float32 scale and offset (Q4_K).
TEXT ·nibTilesAMXF(SB), 0, $3200-112
	BEGIN
	UNPACKALL
	TILES(buf+80, 0, NIBH_I0, NIBH_I1, NIBF_E0, NIBF_E1)

// q8TilesAMX: Q8_0, float16 scales, no offsets.
TEXT ·q8TilesAMX(SB), 0, $3200-112
	BEGIN
	TILES(qs+8, 0, Q8_I0, Q8_I1, Q8_E0, Q8_E1)

// q5TilesAMX: Q5_K, float32 scale and offset per 32.
TEXT ·q5TilesAMX(SB), 0, $3200-112
	BEGIN
	TILES(qs+8, 0, Q8_I0, Q8_I1, Q5_E0, Q5_E1)

// q6TilesAMX: Q6_K, float32 scales per 16, no offsets.
TEXT ·q6TilesAMX(SB), 0, $3200-112
	BEGIN
	TILES(qs+8, 1, Q6_I0, Q6_I1, Q6_E0, Q6_E1)

// func cpuAMX() bool: CPUID leaf 7 EDX bits 24 (AMX-TILE) and 25
// (AMX-INT8), and XCR0 bits 17–18 (the OS manages the tile state).
TEXT ·cpuAMX(SB), NOSPLIT, $0-1
	MOVL $7, AX
	XORL CX, CX
	CPUID
	SHRL $24, DX
	ANDL $3, DX
	CMPL DX, $3
	JNE noamx
	MOVL $1, AX
	XORL CX, CX
	CPUID
	BTL $27, CX // OSXSAVE
	JCC noamx
	XORL CX, CX
	XGETBV
	SHRL $17, AX
	ANDL $3, AX
	CMPL AX, $3
	JNE noamx
	MOVB $1, ret+0(FP)
	RET
noamx:
	MOVB $0, ret+0(FP)
	RET
