//go:build goexperiment.simd

#include "textflag.h"
#include "nibavx2.h"
#include "byteavx2.h"

// The 4-bit and Q8_0 kernels of nib4_amd64.s and byte_amd64.s at 256
// bits, for AVX2 + FMA CPUs (with F16C for float16 scales). Go 1.26's
// archsimd versions in avx2.go run at under 1 GMAC/s (spilled registers,
// float16 converted by hand); these run at the speed of the hardware. A
// 64-byte chunk of a 16-row group is read as two halves, rows 0–7 and
// 8–15; per row, the integer sums and the float operations and their
// order are those of the AVX-512 and pure-Go kernels, so the results have
// the same bits:
//
//	nibble: acc += float(Σ) · (d·xd), then acc += m · xs (per 32-block)
//	byte:   acc += float(Σ) · (d·xd)
//
// AVX2 has 16 vector registers, so the four-token kernels do one half
// per call (half 0 or 1: rows 0–7 or 8–15) with four accumulators and
// four sums; the one-token kernels do both halves at once.

// Scale loads (LDH, LDF: byteavx2.h). LDQ40M is Q4_0's M, which is not
// stored: D (just loaded into Y13)·(-8).
#define LDQ40M(off, y) VMULPS minus8x8<>(SB), Y13, y

DATA minus8x8<>+0(SB)/8, $0xc1000000c1000000
DATA minus8x8<>+8(SB)/8, $0xc1000000c1000000
DATA minus8x8<>+16(SB)/8, $0xc1000000c1000000
DATA minus8x8<>+24(SB)/8, $0xc1000000c1000000
GLOBL minus8x8<>(SB), RODATA|NOPTR, $32

#define NCHUNK4(off, lo, hi) \
	NUNPACK(off) \
	NTOKEN(R8, Y4, lo, hi) \
	NTOKEN(R9, Y5, lo, hi) \
	NTOKEN(R10, Y6, lo, hi) \
	NTOKEN(R11, Y7, lo, hi)

// NSCALE adds the int16 sums s into acc with d in Y13, m in Y14, xd at
// (xdr), xs at (xsr); t1, t2 are temps.
#define NSCALE(s, acc, xdr, xsr, t1, t2) \
	VPMADDWD ones16<>(SB), s, s \
	VCVTDQ2PS s, s \
	VBROADCASTSS (xdr), t1 \
	VMULPS t1, Y13, t1 \
	VFMADD231PS t1, s, acc \
	VBROADCASTSS (xsr), t2 \
	VFMADD231PS t2, Y14, acc

// NIB4 is the body of the four-token nibble kernels:
// (qs *byte, sc *scale, xq *int8, in int, xd, xs *float32, nb int,
// res *[4][16]float32, half int); LD loads scales and LDM the offsets
// (LD, or LDQ40M), hs is one half's scale bytes (16 or 32), bs one
// block's (64 or 128; 32 for Q4_0); CHUNK and SCALE are NCHUNK4 and
// NSCALE (int16 sums), or NCHUNK4V and NSCALEV (AVX-VNNI, int32 sums).
//
// Registers: Y0–Y3 acc, Y4–Y7 int16 sums, Y8 chunk half, Y9 low and Y10
// high nibbles, Y11/Y12 temps, Y13 d, Y14 m, Y15 0x0f bytes. SI qs, DI
// scales, R8–R11 x rows, R12 xd, R13 xs (token 0's; token t is t·nb·4
// bytes on, BX = nb·4), CX blocks left, DX in.
#define NIB4(LD, LDM, hs, bs, CHUNK, SCALE) \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ xq+16(FP), R8 \
	MOVQ in+24(FP), DX \
	MOVQ xd+32(FP), R12 \
	MOVQ xs+40(FP), R13 \
	MOVQ nb+48(FP), CX \
	MOVQ half+64(FP), AX \
	MOVQ AX, R14 \
	SHLQ $5, R14 \
	ADDQ R14, SI \
	IMULQ $hs, AX \
	ADDQ AX, DI \
	LEAQ (R8)(DX*1), R9 \
	LEAQ (R9)(DX*1), R10 \
	LEAQ (R10)(DX*1), R11 \
	MOVQ CX, BX \
	SHLQ $2, BX \
	VMOVDQU nibmask<>(SB), Y15 \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3 \
	TESTQ CX, CX \
	JZ done \
block: \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7 \
	CHUNK(0, 0, 16) \
	CHUNK(64, 4, 20) \
	CHUNK(128, 8, 24) \
	CHUNK(192, 12, 28) \
	LD(0, Y13) \
	LDM(bs/2, Y14) \
	SCALE(Y4, Y0, R12, R13, Y11, Y12) \
	LEAQ (R12)(BX*1), AX \
	LEAQ (R13)(BX*1), R14 \
	SCALE(Y5, Y1, AX, R14, Y11, Y12) \
	ADDQ BX, AX \
	ADDQ BX, R14 \
	SCALE(Y6, Y2, AX, R14, Y11, Y12) \
	ADDQ BX, AX \
	ADDQ BX, R14 \
	SCALE(Y7, Y3, AX, R14, Y11, Y12) \
	ADDQ $256, SI \
	ADDQ $bs, DI \
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
	MOVQ half+64(FP), R14 \
	SHLQ $5, R14 \
	ADDQ R14, AX \
	VMOVUPS Y0, (AX) \
	VMOVUPS Y1, 64(AX) \
	VMOVUPS Y2, 128(AX) \
	VMOVUPS Y3, 192(AX) \
	VZEROUPPER \
	RET

// NCHUNK1 adds one chunk half's products into s; Y11/Y12 hold the x
// bytes for its low/high nibbles.
#define NCHUNK1(off, s) \
	NUNPACK(off) \
	VPMADDUBSW Y11, Y9, Y9 \
	VPADDW Y9, s, s \
	VPMADDUBSW Y12, Y10, Y10 \
	VPADDW Y10, s, s

#define NCHUNK2(off, lo, hi) \
	VPBROADCASTD lo(R8), Y11 \
	VPBROADCASTD hi(R8), Y12 \
	NCHUNK1(off, Y4) \
	NCHUNK1(off+32, Y5)

// NIB1 is the body of the one-token nibble kernels (qs, sc, xq, xd, xs,
// nb, res *[16]float32): Y0/Y1 acc of rows 0–7/8–15, Y4/Y5 their sums,
// Y2/Y3 temps; the rest as in NIB4. Decode at batch 1 streams every
// weight from DRAM once, so each block asks for the one four blocks on
// (1 KiB, four lines) ahead of the hardware prefetcher: 18 → 22 GB/s
// for Q4_0 on one EPYC core (BenchmarkMatMulDRAM). A prefetch past the
// end of the matrix does not fault.
#define NIB1(LD, LDM, hs, bs, CHUNK, SCALE) \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ xq+16(FP), R8 \
	MOVQ xd+24(FP), R12 \
	MOVQ xs+32(FP), R13 \
	MOVQ nb+40(FP), CX \
	VMOVDQU nibmask<>(SB), Y15 \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	TESTQ CX, CX \
	JZ done \
block: \
	AHEAD4 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	CHUNK(0, 0, 16) \
	CHUNK(64, 4, 20) \
	CHUNK(128, 8, 24) \
	CHUNK(192, 12, 28) \
	LD(0, Y13) \
	LDM(bs/2, Y14) \
	SCALE(Y4, Y0, R12, R13, Y2, Y3) \
	LD(hs, Y13) \
	LDM(bs/2+hs, Y14) \
	SCALE(Y5, Y1, R12, R13, Y2, Y3) \
	ADDQ $256, SI \
	ADDQ $bs, DI \
	ADDQ $32, R8 \
	ADDQ $4, R12 \
	ADDQ $4, R13 \
	DECQ CX \
	JNZ block \
done: \
	MOVQ res+48(FP), AX \
	VMOVUPS Y0, (AX) \
	VMOVUPS Y1, 32(AX) \
	VZEROUPPER \
	RET

// BCHUNK1 adds chunk off's products for both halves: rows 0–7 into sa,
// rows 8–15 into sb.
#define BCHUNK1(off, sa, sb) \
	VPBROADCASTD off(R8)(DX*1), Y11 \
	VPBROADCASTD off(R8), Y10 \
	VMOVDQU (off*16)(SI), Y8 \
	BPROD(Y8, Y10, Y11, sa) \
	VMOVDQU (off*16+32)(SI), Y9 \
	BPROD(Y9, Y10, Y11, sb)

// The one-token K-quant byte kernels (bytek_amd64.s has the four-token
// ones and the layouts): both halves at once, Y4/Y5 the sums of rows
// 0–7 over chunks 0–3/4–7, Y6/Y7 rows 8–15.
#define BLOCK1Q6 \
	BCHUNK1(0, Y4, Y6) \
	BCHUNK1(4, Y4, Y6) \
	BCHUNK1(8, Y4, Y6) \
	BCHUNK1(12, Y4, Y6) \
	BCHUNK1(16, Y5, Y7) \
	BCHUNK1(20, Y5, Y7) \
	BCHUNK1(24, Y5, Y7) \
	BCHUNK1(28, Y5, Y7) \
	BSCALE1(Y4, Y6, 0) \
	BSCALE1(Y5, Y7, 64)

#define BLOCK1Q5 \
	BCHUNK1(0, Y4, Y6) \
	BCHUNK1(4, Y4, Y6) \
	BCHUNK1(8, Y4, Y6) \
	BCHUNK1(12, Y4, Y6) \
	BCHUNK1(16, Y5, Y7) \
	BCHUNK1(20, Y5, Y7) \
	BCHUNK1(24, Y5, Y7) \
	BCHUNK1(28, Y5, Y7) \
	VPADDD Y5, Y4, Y4 \
	VPADDD Y7, Y6, Y6 \
	BSCALE1(Y4, Y6, 0) \
	VBROADCASTSS (R13), Y14 \
	VMOVUPS 64(DI), Y13 \
	VFMADD231PS Y14, Y13, Y0 \
	VMOVUPS 96(DI), Y13 \
	VFMADD231PS Y14, Y13, Y1

// BYTE1K is the body of the one-token K-quant byte kernels (qs *byte,
// sc *float32, xa *uint8, xm *int8, xd, xs *float32, nb int,
// res *[16]float32); registers as in byteGroup1Q8AVX2, R13 xs. Like
// NIB1 and BYTE1Q8 it asks for the weights 1 KiB ahead (two 512-byte
// blocks on, eight lines): 18–19 → 22–23 GB/s for Q8_0 and Q6_K on one
// EPYC core (BenchmarkMatMulDRAM).
#define BYTE1K(BLOCK) \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ xa+16(FP), R8 \
	MOVQ xm+24(FP), DX \
	SUBQ R8, DX \
	MOVQ xd+32(FP), R12 \
	MOVQ xs+40(FP), R13 \
	MOVQ nb+48(FP), CX \
	VMOVDQU ones16<>(SB), Y15 \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	TESTQ CX, CX \
	JZ done \
block: \
	AHEAD8 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7 \
	BLOCK \
	ADDQ $512, SI \
	ADDQ $128, DI \
	ADDQ $32, R8 \
	ADDQ $4, R12 \
	ADDQ $4, R13 \
	DECQ CX \
	JNZ block \
done: \
	MOVQ res+56(FP), AX \
	VMOVUPS Y0, (AX) \
	VMOVUPS Y1, 32(AX) \
	VZEROUPPER \
	RET

// AVX-VNNI (Alder Lake, Sapphire Rapids and later; no AVX-512 needed):
// VPDPBUSDY(d, s2, s3) is {vex} vpdpbusd ymm_d, ymm_s2, ymm_s3, four
// u8 (s2) × s8 (s3) products added into each int32 lane of d. Go's
// assembler only knows the EVEX form, which needs AVX-512, so it is
// spelled in bytes from the register numbers. The *V kernels below are
// the 4-bit and Q8_0 kernels with it: the same int32 sums (no int16
// stage saturates, see nibGroup1), no vpmaddwd, the same float
// operations.
#define VPDPBUSDY(d, s2, s3) BYTE $0xC4; BYTE $(((1-((d)>>3))<<7) | 0x40 | ((1-((s3)>>3))<<5) | 0x02); BYTE $(((15-(s2))<<3) | 0x05); BYTE $0x50; BYTE $(0xC0 | (((d)&7)<<3) | ((s3)&7))

// NTOKENV is NTOKEN with int32 sums in Y<sn>.
#define NTOKENV(xr, sn, lo, hi) \
	VPBROADCASTD lo(xr), Y11 \
	VPDPBUSDY(sn, 9, 11) \
	VPBROADCASTD hi(xr), Y11 \
	VPDPBUSDY(sn, 10, 11)

#define NCHUNK4V(off, lo, hi) \
	NUNPACK(off) \
	NTOKENV(R8, 4, lo, hi) \
	NTOKENV(R9, 5, lo, hi) \
	NTOKENV(R10, 6, lo, hi) \
	NTOKENV(R11, 7, lo, hi)

// NSCALEV is NSCALE for int32 sums.
#define NSCALEV(s, acc, xdr, xsr, t1, t2) \
	VCVTDQ2PS s, s \
	VBROADCASTSS (xdr), t1 \
	VMULPS t1, Y13, t1 \
	VFMADD231PS t1, s, acc \
	VBROADCASTSS (xsr), t2 \
	VFMADD231PS t2, Y14, acc

// NCHUNK2V is NCHUNK2 with AVX-VNNI: rows 0–7 into Y4, 8–15 into Y5.
#define NCHUNK2V(off, lo, hi) \
	VPBROADCASTD lo(R8), Y11 \
	VPBROADCASTD hi(R8), Y12 \
	NUNPACK(off) \
	VPDPBUSDY(4, 9, 11) \
	VPDPBUSDY(4, 10, 12) \
	VMOVDQU (off+32)(SI), Y8 \
	VPAND Y15, Y8, Y9 \
	VPSRLW $4, Y8, Y10 \
	VPAND Y15, Y10, Y10 \
	VPDPBUSDY(5, 9, 11) \
	VPDPBUSDY(5, 10, 12)

// BPRODV is BPROD with AVX-VNNI: the sign-applied weights into Y12,
// then |x| (u8, in xan) times them into Y<sn>.
#define BPRODV(w, xan, xm, sn) \
	VPXOR xm, w, Y12 \
	VPSUBB xm, Y12, Y12 \
	VPDPBUSDY(sn, xan, 12)

#define BTOKENV(xr, sn, off) \
	VPBROADCASTD off(xr)(DX*1), Y11 \
	VPBROADCASTD off(xr), Y10 \
	BPRODV(Y8, 10, Y11, sn)

#define BCHUNK4V(off) \
	VMOVDQU (off*16)(SI), Y8 \
	BTOKENV(R8, 4, off) \
	BTOKENV(R9, 5, off) \
	BTOKENV(R10, 6, off) \
	BTOKENV(R11, 7, off)

#define BCHUNK1V(off, sa, sb) \
	VPBROADCASTD off(R8)(DX*1), Y11 \
	VPBROADCASTD off(R8), Y10 \
	VMOVDQU (off*16)(SI), Y8 \
	BPRODV(Y8, 10, Y11, sa) \
	VMOVDQU (off*16+32)(SI), Y9 \
	BPRODV(Y9, 10, Y11, sb)

// BQ8CHUNKS adds the 8 chunks of a Q8_0 block for one token: chunks 0–3
// into Y4 (rows 0–7) and Y6 (8–15), 4–7 into Y5 and Y7; BQ8CHUNKSV the
// same with AVX-VNNI.
#define BQ8CHUNKS \
	BCHUNK1(0, Y4, Y6); BCHUNK1(4, Y4, Y6); BCHUNK1(8, Y4, Y6); BCHUNK1(12, Y4, Y6) \
	BCHUNK1(16, Y5, Y7); BCHUNK1(20, Y5, Y7); BCHUNK1(24, Y5, Y7); BCHUNK1(28, Y5, Y7)

#define BQ8CHUNKSV \
	BCHUNK1V(0, 4, 6); BCHUNK1V(4, 4, 6); BCHUNK1V(8, 4, 6); BCHUNK1V(12, 4, 6) \
	BCHUNK1V(16, 5, 7); BCHUNK1V(20, 5, 7); BCHUNK1V(24, 5, 7); BCHUNK1V(28, 5, 7)

// BYTE4Q8 and BYTE1Q8 are the bodies of the Q8_0 kernels for four
// tokens (one half) and one token; CHUNK4 is BCHUNK4 (vpmaddubsw) or
// BCHUNK4V (AVX-VNNI), CHUNKS BQ8CHUNKS or BQ8CHUNKSV.
#define BYTE4Q8(CHUNK4) \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ xa+16(FP), R8 \
	MOVQ xm+24(FP), DX \
	SUBQ R8, DX \
	MOVQ in+32(FP), AX \
	LEAQ (R8)(AX*1), R9 \
	LEAQ (R9)(AX*1), R10 \
	LEAQ (R10)(AX*1), R11 \
	MOVQ xd+40(FP), R12 \
	MOVQ nb+48(FP), CX \
	MOVQ half+64(FP), AX \
	SHLQ $4, AX \
	ADDQ AX, DI \
	SHLQ $1, AX \
	ADDQ AX, SI \
	MOVQ CX, BX \
	SHLQ $2, BX \
	VMOVDQU ones16<>(SB), Y15 \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3 \
	TESTQ CX, CX \
	JZ done4 \
block4: \
	BZERO4 \
	CHUNK4(0) \
	CHUNK4(4) \
	CHUNK4(8) \
	CHUNK4(12) \
	CHUNK4(16) \
	CHUNK4(20) \
	CHUNK4(24) \
	CHUNK4(28) \
	BSCALE4(LDH, 0) \
	ADDQ $512, SI \
	ADDQ $32, DI \
	ADDQ $32, R8 \
	ADDQ $32, R9 \
	ADDQ $32, R10 \
	ADDQ $32, R11 \
	ADDQ $4, R12 \
	DECQ CX \
	JNZ block4 \
done4: \
	MOVQ res+56(FP), AX \
	MOVQ half+64(FP), R14 \
	SHLQ $5, R14 \
	ADDQ R14, AX \
	VMOVUPS Y0, (AX) \
	VMOVUPS Y1, 64(AX) \
	VMOVUPS Y2, 128(AX) \
	VMOVUPS Y3, 192(AX) \
	VZEROUPPER \
	RET

// BYTE1Q8 prefetches as BYTE1K does.
#define BYTE1Q8(CHUNKS) \
	MOVQ qs+0(FP), SI \
	MOVQ sc+8(FP), DI \
	MOVQ xa+16(FP), R8 \
	MOVQ xm+24(FP), DX \
	SUBQ R8, DX \
	MOVQ xd+32(FP), R12 \
	MOVQ nb+40(FP), CX \
	VMOVDQU ones16<>(SB), Y15 \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	TESTQ CX, CX \
	JZ done1 \
block1: \
	AHEAD8 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7 \
	CHUNKS \
	VPADDD Y5, Y4, Y4 \
	VPADDD Y7, Y6, Y6 \
	MOVQ R12, AX \
	VCVTPH2PS (DI), Y13 \
	BSCALE(Y4, Y0) \
	VCVTPH2PS 16(DI), Y13 \
	BSCALE(Y6, Y1) \
	ADDQ $512, SI \
	ADDQ $32, DI \
	ADDQ $32, R8 \
	ADDQ $4, R12 \
	DECQ CX \
	JNZ block1 \
done1: \
	MOVQ res+48(FP), AX \
	VMOVUPS Y0, (AX) \
	VMOVUPS Y1, 32(AX) \
	VZEROUPPER \
	RET

// func cpuF16C() bool: CPUID leaf 1, ECX bit 29.
TEXT ·cpuF16C(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $29, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET

// func nibGroup4AVX2H(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)
TEXT ·nibGroup4AVX2H(SB), NOSPLIT, $0-72
	NIB4(LDH, LDH, 16, 64, NCHUNK4, NSCALE)

// func nibGroup4AVX2Q(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)
//
// Q4_0: float16 D only ([nb][16]), M = D·(-8).
TEXT ·nibGroup4AVX2Q(SB), NOSPLIT, $0-72
	NIB4(LDH, LDQ40M, 16, 32, NCHUNK4, NSCALE)

// func nibGroup4AVX2F(qs *byte, sc *float32, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)
TEXT ·nibGroup4AVX2F(SB), NOSPLIT, $0-72
	NIB4(LDF, LDF, 32, 128, NCHUNK4, NSCALE)

// func nibGroup1AVX2H(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)
TEXT ·nibGroup1AVX2H(SB), NOSPLIT, $0-56
	NIB1(LDH, LDH, 16, 64, NCHUNK2, NSCALE)

// func nibGroup1AVX2Q(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)
TEXT ·nibGroup1AVX2Q(SB), NOSPLIT, $0-56
	NIB1(LDH, LDQ40M, 16, 32, NCHUNK2, NSCALE)

// func nibGroup1AVX2F(qs *byte, sc *float32, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)
TEXT ·nibGroup1AVX2F(SB), NOSPLIT, $0-56
	NIB1(LDF, LDF, 32, 128, NCHUNK2, NSCALE)

// func byteGroup4Q8AVX2(qs *byte, sc *uint16, xa *uint8, xq *int8, in int, xd *float32, nb int, res *[4][GroupRows]float32, half int)
//
// Registers: Y0–Y3 acc, Y4–Y7 int32 sums, Y8 chunk half, Y9 its |w|
// (AVX2), Y10–Y12 temps, Y13 d, Y14 temp, Y15 int16 ones. SI qs, DI
// scales, R8–R11 |x| rows, DX signed q rows − |x| rows (AVX-VNNI: sign
// rows − |x| rows), R12 xd of token 0, BX nb·4, CX blocks left.
TEXT ·byteGroup4Q8AVX2(SB), NOSPLIT, $0-72
	BYTE4Q8(BCHUNK4)

// func byteGroup1Q8AVX2(qs *byte, sc *uint16, xa *uint8, xm *int8, xd *float32, nb int, res *[GroupRows]float32)
//
// One token, both halves: Y0/Y1 acc of rows 0–7/8–15, Y4/Y5 the sums of
// rows 0–7 over chunks 0–3/4–7 (as byteGroup1 adds them), Y6/Y7 rows 8–15.
TEXT ·byteGroup1Q8AVX2(SB), NOSPLIT, $0-56
	BYTE1Q8(BQ8CHUNKS)

// func byteGroup1Q6AVX2(qs *byte, sc *float32, xa *uint8, xm *int8, xd, xs *float32, nb int, res *[GroupRows]float32)
TEXT ·byteGroup1Q6AVX2(SB), NOSPLIT, $0-64
	BYTE1K(BLOCK1Q6)

// func byteGroup1Q5AVX2(qs *byte, sc *float32, xa *uint8, xm *int8, xd, xs *float32, nb int, res *[GroupRows]float32)
TEXT ·byteGroup1Q5AVX2(SB), NOSPLIT, $0-64
	BYTE1K(BLOCK1Q5)

// func nibGroup4AVXVNNIH(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)
//
// The *AVXVNNI* kernels are the AVX2 ones of the same name with AVX-VNNI
// (see VPDPBUSDY): 4-bit with float16 (H), Q4_0 (Q) or float32 (F)
// scales, and Q8_0.
TEXT ·nibGroup4AVXVNNIH(SB), NOSPLIT, $0-72
	NIB4(LDH, LDH, 16, 64, NCHUNK4V, NSCALEV)

// func nibGroup4AVXVNNIQ(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)
TEXT ·nibGroup4AVXVNNIQ(SB), NOSPLIT, $0-72
	NIB4(LDH, LDQ40M, 16, 32, NCHUNK4V, NSCALEV)

// func nibGroup4AVXVNNIF(qs *byte, sc *float32, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)
TEXT ·nibGroup4AVXVNNIF(SB), NOSPLIT, $0-72
	NIB4(LDF, LDF, 32, 128, NCHUNK4V, NSCALEV)

// func nibGroup1AVXVNNIH(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)
TEXT ·nibGroup1AVXVNNIH(SB), NOSPLIT, $0-56
	NIB1(LDH, LDH, 16, 64, NCHUNK2V, NSCALEV)

// func nibGroup1AVXVNNIQ(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)
TEXT ·nibGroup1AVXVNNIQ(SB), NOSPLIT, $0-56
	NIB1(LDH, LDQ40M, 16, 32, NCHUNK2V, NSCALEV)

// func nibGroup1AVXVNNIF(qs *byte, sc *float32, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)
TEXT ·nibGroup1AVXVNNIF(SB), NOSPLIT, $0-56
	NIB1(LDF, LDF, 32, 128, NCHUNK2V, NSCALEV)

// func byteGroup4Q8AVXVNNI(qs *byte, sc *uint16, xa *uint8, xm *int8, in int, xd *float32, nb int, res *[4][GroupRows]float32, half int)
TEXT ·byteGroup4Q8AVXVNNI(SB), NOSPLIT, $0-72
	BYTE4Q8(BCHUNK4V)

// func byteGroup1Q8AVXVNNI(qs *byte, sc *uint16, xa *uint8, xm *int8, xd *float32, nb int, res *[GroupRows]float32)
TEXT ·byteGroup1Q8AVXVNNI(SB), NOSPLIT, $0-56
	BYTE1Q8(BQ8CHUNKSV)
