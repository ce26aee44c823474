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
// → 4-bit with per-32 scale and offset; Q8_0, Q6_K, Q5_K → int8 with
// per-16/32 scales (and offsets for Q5_K). Packing copies the weights, so
// the source tensors (possibly mmapped) are not read afterwards.
//
// Kernels come at three levels ([Level]), picked once from the build and
// the CPU: AVX-512 and AVX2+FMA via simd/archsimd, in files built with
// `//go:build goexperiment.simd && amd64` (so GOEXPERIMENT=simd is needed
// to get them; the one- and four-token 4-bit kernels with float16 scales
// (decode, batched decode and prefill) and the Q8_0 kernels (tied
// embeddings as the LM head) are Go assembly in nib4_amd64.s and
// byte_amd64.s under the same constraint, because Go 1.26 spills the
// archsimd versions' registers), and pure Go (plain `go build`, other CPUs, and VMs whose
// hypervisor hides the AVX state from Go). Tests run every level the
// machine has against the same float64 product of the dequantized
// weights, and check that work splits and batch composition never change
// a result's bits.
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
