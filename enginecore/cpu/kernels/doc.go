// Package kernels is the CPU backend's matrix arithmetic: weight matrices
// of any supported GGUF type repacked into 16-row groups ([Pack],
// [Matrix]), activations quantized to 8-bit blocks once per matmul
// ([Activations]), and matmuls over ranges of row groups
// ([Matrix.MulGroups]) that the backend's workers split between them.
//
// Like llama.cpp's quantized CPU path, a quantized matmul multiplies
// integers: weights stay 4- or 8-bit, activations become int8 blocks of 32
// with a float32 scale, and only the per-block sums are scaled in float.
// Packed families (see pack.go): F32/F16/BF16 → float32; Q4_0, Q4_1, Q4_K
// → 4-bit with per-32 scale and offset (Q4_0's offset implicit); Q8_0,
// Q5_0, Q6_K, Q5_K, Q5_1 → int8 with per-16/32 scales (and offsets for
// Q5_K and Q5_1). Q5_0 packs as q−16 and runs Q8_0's kernels, Q5_1 runs
// Q5_K's (one sub-block), at 1.55× and 1.67× the file's bytes. The
// low-bit types ride the byte family too (decodelow.go): IQ4_NL and
// Q2_K (its scales folded into q, its offsets per 16 in Matrix.mins,
// added by a small FMA kernel, mins_amd64.s) run Q8_0's kernels, Q3_K,
// IQ4_XS and MXFP4 Q6_K's, at 2.3–4× the file's bytes; below the
// AVX-512 level IQ4_NL, IQ4_XS, MXFP4 and Q3_K keep 4-bit indices
// (famLUT, lut.go, 0.53–0.75 bytes a weight), each group expanded into
// the byte layout (VPSHUFB on the type's table, lut_amd64.s) as a matmul
// reaches it, for the same kernels and bits. From
// the VNNI level on, Q4_K keeps the file's scale bytes and Q6_K packs as
// famQ6 (6 bits a weight), so that memory-bound decode reads no more
// bytes than the file holds ([Packing]); from the AVX-512 level, F16 and
// BF16 stay 16-bit, converted in the float kernels (float_amd64.s).
// Packing copies the weights, so
// the source tensors (possibly mmapped) are not read afterwards.
//
// Kernels come at six levels ([Level]), picked once from the build and
// the CPU: AMX, AVX-512 VNNI, AVX-512, AVX2 with AVX-VNNI and AVX2+FMA
// via simd/archsimd,
// in files built with `//go:build goexperiment.simd && amd64` (so
// GOEXPERIMENT=simd is needed
// to get them), and pure Go (plain `go build`, other CPUs, and VMs whose
// hypervisor hides the AVX state from Go). The quantized kernels, which
// carry decode, batched decode and prefill, are Go assembly, one and four
// tokens at a time, because Go 1.26 spills the archsimd versions'
// registers: at AVX2 those ran at under 1 GMAC/s per thread, the assembly
// at 30–50. AVX-512 (nib4_amd64.s, byte_amd64.s) has float16-scaled
// 4-bit, Q8_0 and Q5_0; AVX2 (avx2_amd64.s) has every quantized type
// (4-bit, Q8_0/Q5_0, Q6_K, Q5_K/Q5_1), and an AVX-512 CPU runs it for the types its own
// assembly lacks ([Matrix.Kernel] names the kernel); with AVX-VNNI its
// 4-bit and Q8_0/Q5_0 kernels use the VEX-encoded VPDPBUSD, spelled in bytes
// (avx2_amd64.s's VPDPBUSDY). With AVX-512 VNNI
// every quantized type has one- and four-token kernels built on
// VPDPBUSD (vnni_amd64.s; 1.5–2× the AVX-512 ones), the one-token ones
// running a span of groups per call so decode pays no Go call per 16
// rows. At the AMX level (Sapphire Rapids and later, after Linux grants
// the process the tile state) rows that fill tiles of 16 — prefill and batches of 16 or more —
// run in the tile unit (amx_amd64.s): one TDPBSUD/TDPBSSD per block of 32
// (16 for Q6_K) for 16 tokens × 16 rows, then the one-token kernels'
// float epilogue, so a token's result has the same bits in a tile as
// alone; 2–4× the AVX-512 kernels. Activations are quantized a row at a
// time in assembly (quant_amd64.s). Every level computes the same
// integer sums and float operations in the same order, so all SIMD
// levels give the same bits (TestLevelsAgree). Tests run every level the
// machine has against the same float64 product of the dequantized
// weights, and check that work splits and batch composition never change
// a result's bits.
//
// Attention runs over one 16-position KV block at a time for the rows
// of a tile ([BlockScores], [BlockSoftmax], [BlockAccum]: scores, online
// softmax, weighted values), two rows per call in AVX2 assembly
// (attn_amd64.s, also used at the AVX-512 level), with every row's bits
// independent of the rows it shares a call with.
//
// It imports enginecore/model (types, reference dequantization) and
// nothing else from this repository.
//
// Usage:
//
//	m, err := kernels.Pack(tensor)  // W [Out][In]
//	var a kernels.Activations
//	a.Reset(x, numTok, m.In)
//	if m.Quantized() { a.Quantize(0, numTok) }
//	m.MulGroups(out, &a, 0, m.NumGroups()) // out [numTok][Out]
package kernels
